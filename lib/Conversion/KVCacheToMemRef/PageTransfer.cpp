//===- PageTransfer.cpp - send_pages, recv_pages messages -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The pages as bytes, cut into runs consecutive on both sides: a long run is
// one non-blocking message straight from and into `blocks` (and the
// per-page scales), all of them in flight at once and waited for at the
// end; short runs are grouped into blocking messages (each a rendezvous
// that waits for the other process to be scheduled), packed on a side whose
// ids in the group are not consecutive.
//
//===----------------------------------------------------------------------===//

#include "PageTransfer.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::kvcache;

Value PageTransfer::bytesPerPage(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  Value bytes = index(type.getElementTypeBitWidth() / 8);
  for (int64_t d = 1; d < type.getRank(); ++d)
    bytes = mul(bytes, dim(memref, d));
  return bytes;
}

Value PageTransfer::pageAddress(Value memref, Value page) {
  auto type = cast<MemRefType>(memref.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value aligned =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value elementBytes = index(type.getElementTypeBitWidth() / 8);
  return add(aligned, add(mul(metadata.getOffset(), elementBytes),
                          mul(page, bytesPerPage(memref))));
}

Value PageTransfer::pageBytes(Value memref, Value first, Value count) {
  return makeByteMemRef(pageAddress(memref, first),
                        mul(count, bytesPerPage(memref)));
}

void PageTransfer::forEachRun(Value src, Value dst, Value count, Value maxPages,
                              function_ref<void(Value, Value)> body) {
  Value zero = index(0), one = index(1);
  scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{zero},
      [&](OpBuilder &, Location, Value i, ValueRange carried) {
        Value start = carried[0];
        Value next = add(i, one);
        // src[next] is read in bounds: clamped to the last pair.
        Value last = arith::SubIOp::create(b, loc, count, one);
        Value peek = arith::MinUIOp::create(b, loc, next, last);
        Value continues = arith::AndIOp::create(
            b, loc, eq(loadIndex(src, peek), add(loadIndex(src, i), one)),
            eq(loadIndex(dst, peek), add(loadIndex(dst, i), one)));
        Value length = arith::SubIOp::create(b, loc, next, start);
        Value ends = arith::OrIOp::create(
            b, loc,
            arith::OrIOp::create(b, loc, eq(next, count), eq(length, maxPages)),
            arith::XOrIOp::create(b, loc, continues,
                                  arith::ConstantIntOp::create(b, loc, 1, 1)));
        auto ifOp = scf::IfOp::create(b, loc, ends, /*withElse=*/false);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          body(start, length);
        }
        Value newStart = arith::SelectOp::create(b, loc, ends, next, start);
        scf::YieldOp::create(b, loc, newStart);
      });
}

void PageTransfer::transferPairs(bool sending, Value src, Value dst,
                                 Value count) {
  Value ids = sending ? src : dst;
  Value pageSize = bytesPerPage(blocks), one = index(1);
  // At most one request per direct run and per memref.
  requests = memref::AllocOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI64Type()),
      ValueRange{mul(count, index(scales ? 2 : 1))});
  numRequests =
      memref::AllocaOp::create(b, loc, MemRefType::get({}, b.getIndexType()));
  memref::StoreOp::create(b, loc, index(0), numRequests);
  Value directPages =
      arith::CeilDivUIOp::create(b, loc, index(sizes.direct), pageSize);
  Value stagingPages = arith::MinUIOp::create(
      b, loc, count,
      arith::MaxUIOp::create(
          b, loc, one,
          arith::DivUIOp::create(b, loc, index(stagingBytes()), pageSize)));
  // The buffer takes the staged pages of `blocks`, then of the scales,
  // whose pages may be the larger (head_size * element bytes < 4).
  Value slotSize =
      scales ? arith::MaxUIOp::create(b, loc, pageSize, bytesPerPage(scales))
             : pageSize;
  Value staging = memref::AllocOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type()),
      ValueRange{mul(stagingPages, slotSize)});
  // The first pair not yet moved nor staged.
  Value pending =
      memref::AllocaOp::create(b, loc, MemRefType::get({}, b.getIndexType()));
  memref::StoreOp::create(b, loc, index(0), pending);
  auto flushTo = [&](Value end) {
    Value from = memref::LoadOp::create(b, loc, pending);
    auto ifOp = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, from, end),
        /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    transferStaged(sending, ids, from, end, staging);
  };
  forEachRun(src, dst, count, maxPagesPerMessage(),
             [&](Value start, Value length) {
               Value end = add(start, length);
               Value direct = arith::CmpIOp::create(
                   b, loc, arith::CmpIPredicate::uge, length, directPages);
               auto ifOp = scf::IfOp::create(b, loc, direct, /*withElse=*/true);
               OpBuilder::InsertionGuard guard(b);
               b.setInsertionPointToStart(ifOp.thenBlock());
               flushTo(start);
               transferRun(sending, loadIndex(ids, start), length);
               memref::StoreOp::create(b, loc, end, pending);
               // A short run joins the staged pairs; the staged ones go first
               // when the buffer cannot take it.
               b.setInsertionPointToStart(ifOp.elseBlock());
               Value from = memref::LoadOp::create(b, loc, pending);
               Value full = arith::CmpIOp::create(
                   b, loc, arith::CmpIPredicate::ugt,
                   arith::SubIOp::create(b, loc, end, from), stagingPages);
               auto flush = scf::IfOp::create(b, loc, full, /*withElse=*/false);
               b.setInsertionPointToStart(flush.thenBlock());
               flushTo(start);
               memref::StoreOp::create(b, loc, start, pending);
             });
  flushTo(count);
  waitAll();
  memref::DeallocOp::create(b, loc, requests);
  memref::DeallocOp::create(b, loc, staging);
}

void PageTransfer::transferRun(bool sending, Value first, Value count) {
  for (auto [memref, tag] :
       {std::pair{blocks, PagesTag}, std::pair{scales, ScalesTag}}) {
    if (memref)
      start(sending, pageBytes(memref, first, count), tag);
  }
}

void PageTransfer::start(bool sending, Value bytes, TransferTag tag) {
  auto type = mpi::RequestType::get(b.getContext());
  Value request = sending ? mpi::ISendOp::create(b, loc, Type(), type, bytes,
                                                 i32(tag), rank, comm)
                                .getReq()
                          : mpi::IRecvOp::create(b, loc, Type(), type, bytes,
                                                 i32(tag), rank, comm)
                                .getReq();
  Value handle =
      UnrealizedConversionCastOp::create(b, loc, b.getI64Type(), request)
          .getResult(0);
  Value n = memref::LoadOp::create(b, loc, numRequests);
  memref::StoreOp::create(b, loc, handle, requests, n);
  memref::StoreOp::create(b, loc, add(n, index(1)), numRequests);
}

void PageTransfer::waitAll() {
  auto type = mpi::RequestType::get(b.getContext());
  scf::ForOp::create(
      b, loc, index(0), memref::LoadOp::create(b, loc, numRequests), index(1),
      ValueRange{}, [&](OpBuilder &, Location, Value i, ValueRange) {
        Value handle = memref::LoadOp::create(b, loc, requests, i);
        Value request = UnrealizedConversionCastOp::create(b, loc, type, handle)
                            .getResult(0);
        mpi::Wait::create(b, loc, Type(), request);
        scf::YieldOp::create(b, loc);
      });
}

void PageTransfer::transferStaged(bool sending, Value ids, Value from,
                                  Value end, Value staging) {
  // This side's pages of the group are one range of bytes: no copy (the
  // other side may pack its own).
  auto ifOp = scf::IfOp::create(b, loc, consecutive(ids, from, end),
                                /*withElse=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  for (auto [memref, tag] :
       {std::pair{blocks, PagesTag}, std::pair{scales, ScalesTag}}) {
    if (!memref)
      continue;
    Value bytes = pageBytes(memref, loadIndex(ids, from),
                            arith::SubIOp::create(b, loc, end, from));
    if (sending)
      send(bytes, tag);
    else
      recv(bytes, tag);
  }
  b.setInsertionPointToStart(ifOp.elseBlock());
  Value buffer =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, staging);
  for (auto entry :
       {std::pair{blocks, PagesTag}, std::pair{scales, ScalesTag}}) {
    Value memref = entry.first;
    TransferTag tag = entry.second;
    if (!memref)
      continue;
    Value pageSize = bytesPerPage(memref);
    Value size = mul(arith::SubIOp::create(b, loc, end, from), pageSize);
    auto eachPage = [&](bool toStaging) {
      scf::ForOp::create(
          b, loc, from, end, index(1), ValueRange{},
          [&](OpBuilder &, Location, Value i, ValueRange) {
            Value page = pageAddress(memref, loadIndex(ids, i));
            Value slot = add(
                buffer, mul(arith::SubIOp::create(b, loc, i, from), pageSize));
            copyBytes(toStaging ? slot : page, toStaging ? page : slot,
                      pageSize);
            scf::YieldOp::create(b, loc);
          });
    };
    if (sending) {
      eachPage(/*toStaging=*/true);
      send(makeByteMemRef(buffer, size), tag);
    } else {
      recv(makeByteMemRef(buffer, size), tag);
      eachPage(/*toStaging=*/false);
    }
  }
}

Value PageTransfer::consecutive(Value ids, Value from, Value end) {
  Value yes = arith::ConstantIntOp::create(b, loc, 1, 1);
  return scf::ForOp::create(
             b, loc, add(from, index(1)), end, index(1), ValueRange{yes},
             [&](OpBuilder &, Location, Value i, ValueRange all) {
               Value previous = loadIndex(
                   ids, ValueRange{arith::SubIOp::create(b, loc, i, index(1))});
               Value next = eq(loadIndex(ids, i), add(previous, index(1)));
               scf::YieldOp::create(
                   b, loc,
                   ValueRange{arith::AndIOp::create(b, loc, all[0], next)});
             })
      .getResult(0);
}

Value PageTransfer::replyIds(Value reply, Value count) {
  return memref::SubViewOp::create(
      b, loc, reply, ArrayRef<OpFoldResult>{b.getIndexAttr(1)},
      ArrayRef<OpFoldResult>{count}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}

Value PageTransfer::maxPagesPerMessage() {
  Value limit = index(std::numeric_limits<int32_t>::max());
  Value pages = arith::DivUIOp::create(b, loc, limit, bytesPerPage(blocks));
  return arith::MaxUIOp::create(b, loc, pages, index(1));
}

Value PageTransfer::pointer(Value address) {
  Value address64 =
      arith::IndexCastUIOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), address64);
}

void PageTransfer::copyBytes(Value to, Value from, Value size) {
  LLVM::MemcpyOp::create(
      b, loc, pointer(to), pointer(from),
      arith::IndexCastUIOp::create(b, loc, b.getI64Type(), size),
      /*isVolatile=*/false);
}

Value PageTransfer::makeByteMemRef(Value start, Value size) {
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto array = LLVM::LLVMArrayType::get(i64, 1);
  auto descriptorType = LLVM::LLVMStructType::getLiteral(
      ctx, {ptrType, ptrType, i64, array, array});
  Value ptr = pointer(start);
  Value size64 = arith::IndexCastUIOp::create(b, loc, i64, size);
  Value descriptor = LLVM::PoisonOp::create(b, loc, descriptorType);
  auto insert = [&](Value value, ArrayRef<int64_t> position) {
    descriptor =
        LLVM::InsertValueOp::create(b, loc, descriptor, value, position);
  };
  insert(ptr, {0});
  insert(ptr, {1});
  insert(LLVM::ConstantOp::create(b, loc, i64, 0), {2});
  insert(size64, {3, 0});
  insert(LLVM::ConstantOp::create(b, loc, i64, 1), {4, 0});
  auto type = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
  return UnrealizedConversionCastOp::create(b, loc, type, descriptor)
      .getResult(0);
}
