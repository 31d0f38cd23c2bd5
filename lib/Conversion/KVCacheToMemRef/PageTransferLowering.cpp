//===- PageTransferLowering.cpp - send_pages, recv_pages to mpi -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache.send_pages and kvcache.recv_pages on the lowered values of a paged
// collection (docs/Contract.md section 3.6): a handshake (the page count and
// size and the source ids one way, the receiver's verdict and destination
// ids back), then the pages as bytes, cut into runs consecutive on both
// sides: a long run is one message straight from and into `blocks` (and
// the per-page scales), short runs are packed into staging messages. The
// handshake turns the direction twice only: each turn, and each message,
// waits for the other process to be scheduled.
//
//===----------------------------------------------------------------------===//

#include "PageTransferLowering.h"
#include "../KernelCommon/RuntimeChecks.h"
#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// The MPI tags of a transfer's messages, on MPI_COMM_WORLD.
enum TransferTag : int32_t {
  HeaderTag = 0x4B50,
  SourceIdsTag,
  ReplyTag,
  PagesTag,
  ScalesTag,
};

/// The pieces of one transfer: the lowered collection, the peer, and the
/// index arithmetic and messages both sides share.
class PageTransfer {
public:
  PageTransfer(OpBuilder &b, Operation *op, ValueRange lowered, Value rank,
               int64_t directBytes)
      : b(b), loc(op->getLoc()), op(op), rank(rank), directBytes(directBytes) {
    auto type = cast<PagedCollectionType>(op->getOperand(0).getType());
    params = KVCacheParams::get(type);
    blocks = lowered[0];
    cacheLengths = lowered[1];
    lookupTable = lowered[2];
    if (params.scales && params.scales.isPaged())
      scales = lowered.back();
    comm = mpi::CommWorldOp::create(b, loc, mpi::CommType::get(b.getContext()));
  }

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  }
  Value dim(Value memref, int64_t d) {
    return memref::DimOp::create(b, loc, memref, d);
  }
  /// The i32 `memref[indices]` as an index (unsigned).
  Value loadIndex(Value memref, ValueRange indices) {
    Value value = memref::LoadOp::create(b, loc, memref, indices);
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), value);
  }
  Value i32(int64_t value) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), value);
  }
  Value allocIds(Value count) {
    return memref::AllocOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI32Type()),
        ValueRange{count});
  }
  void send(Value memref, TransferTag tag) {
    mpi::SendOp::create(b, loc, TypeRange{}, memref, i32(tag), rank, comm);
  }
  void recv(Value memref, TransferTag tag) {
    mpi::RecvOp::create(b, loc, TypeRange{}, memref, i32(tag), rank, comm);
  }

  /// Bytes of one page of `memref` (`blocks` or per-page scales): every dim
  /// but the first.
  Value bytesPerPage(Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    Value bytes = index(type.getElementTypeBitWidth() / 8);
    for (int64_t d = 1; d < type.getRank(); ++d)
      bytes = mul(bytes, dim(memref, d));
    return bytes;
  }

  /// The address (an index) of page `page` of `memref`.
  Value pageAddress(Value memref, Value page) {
    auto type = cast<MemRefType>(memref.getType());
    auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value aligned =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    Value elementBytes = index(type.getElementTypeBitWidth() / 8);
    return add(aligned, add(mul(metadata.getOffset(), elementBytes),
                            mul(page, bytesPerPage(memref))));
  }

  /// `count` pages of `memref` from page `first` as one `memref<?xi8>`: the
  /// pages of a run are one contiguous range of bytes (a dense page
  /// layout, section 3.6). MPI gets bytes, not the element type: MLIR's
  /// OpenMPI lowering has no datatype for f16, bf16 and fp8.
  Value pageBytes(Value memref, Value first, Value count) {
    return makeByteMemRef(pageAddress(memref, first),
                          mul(count, bytesPerPage(memref)));
  }

  /// Calls `body(start, length)` for each run `[start, start + length)` of
  /// the `count` page pairs `(src[i], dst[i])` in which both ids grow by
  /// one, at most `maxPages` pages long: the same runs on both sides.
  void forEachRun(Value src, Value dst, Value count, Value maxPages,
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
              arith::OrIOp::create(b, loc, eq(next, count),
                                   eq(length, maxPages)),
              arith::XOrIOp::create(
                  b, loc, continues,
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

  /// Moves the pages of the `count` pairs `(src[i], dst[i])`: the sender's
  /// side (`sending`, reading pages `src`) or the receiver's (writing pages
  /// `dst`). A run of at least `directBytes` is one message straight
  /// between the caches; shorter runs are packed, in order, into a staging
  /// buffer of at most `2 * directBytes` that goes as one message (each
  /// message waits for the other process: few large ones).
  void transferPairs(bool sending, Value src, Value dst, Value count) {
    Value ids = sending ? src : dst;
    Value pageSize = bytesPerPage(blocks), one = index(1);
    Value directPages =
        arith::CeilDivUIOp::create(b, loc, index(directBytes), pageSize);
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
    forEachRun(
        src, dst, count, maxPagesPerMessage(), [&](Value start, Value length) {
          Value end = add(start, length);
          Value direct = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::uge, length, directPages);
          auto ifOp = scf::IfOp::create(b, loc, direct, /*withElse=*/true);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          flushTo(start);
          transferRun(sending, loadIndex(ids, start), length);
          memref::StoreOp::create(b, loc, end, pending);
          // A short run joins the staged pairs; the staged ones go first when
          // the buffer cannot take it.
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
    memref::DeallocOp::create(b, loc, staging);
  }

  /// Sends (`sending`) or receives the pages `first, ..., first + count - 1`
  /// of `blocks` as one message, then those of the per-page scales.
  void transferRun(bool sending, Value first, Value count) {
    for (auto [memref, tag] :
         {std::pair{blocks, PagesTag}, std::pair{scales, ScalesTag}}) {
      if (!memref)
        continue;
      Value bytes = pageBytes(memref, first, count);
      if (sending)
        send(bytes, tag);
      else
        recv(bytes, tag);
    }
  }

  /// The pages `ids[from], ..., ids[end - 1]` through `staging`: packed and
  /// sent (`sending`), or received and unpacked; `blocks`, then the
  /// per-page scales.
  void transferStaged(bool sending, Value ids, Value from, Value end,
                      Value staging) {
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
              Value slot =
                  add(buffer,
                      mul(arith::SubIOp::create(b, loc, i, from), pageSize));
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

  /// The bytes of the staging buffer: twice `directBytes`, at most what
  /// one message can count (an i32).
  int64_t stagingBytes() const {
    return std::min<int64_t>(2 * directBytes,
                             std::numeric_limits<int32_t>::max());
  }

  /// The `count` destination ids of a reply `[verdict, ids...]`.
  Value replyIds(Value reply, Value count) {
    return memref::SubViewOp::create(b, loc, reply,
                                     ArrayRef<OpFoldResult>{b.getIndexAttr(1)},
                                     ArrayRef<OpFoldResult>{count},
                                     ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }

  /// The most pages one message holds: its byte count is an i32.
  Value maxPagesPerMessage() {
    Value limit = index(std::numeric_limits<int32_t>::max());
    Value pages = arith::DivUIOp::create(b, loc, limit, bytesPerPage(blocks));
    return arith::MaxUIOp::create(b, loc, pages, index(1));
  }

  OpBuilder &b;
  Location loc;
  Operation *op;
  Value rank;
  KVCacheParams params;
  Value blocks, cacheLengths, lookupTable, scales, comm;

private:
  /// Runs of at least this many bytes go as messages of their own; the
  /// staging buffer of shorter ones holds twice as many, so that any short
  /// run fits.
  int64_t directBytes;

  Value pointer(Value address) {
    Value address64 =
        arith::IndexCastUIOp::create(b, loc, b.getI64Type(), address);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), address64);
  }

  /// memcpy of `size` bytes from the address `from` to `to` (indices).
  void copyBytes(Value to, Value from, Value size) {
    LLVM::MemcpyOp::create(
        b, loc, pointer(to), pointer(from),
        arith::IndexCastUIOp::create(b, loc, b.getI64Type(), size),
        /*isVolatile=*/false);
  }

  /// A `memref<?xi8>` of `size` bytes at the address `start` (an index).
  Value makeByteMemRef(Value start, Value size) {
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
};

/// send_pages: the page list of the sequences, the handshake, then the runs.
struct SendPagesLowering : OpConversionPattern<SendPagesOp> {
  SendPagesLowering(const TypeConverter &converter, MLIRContext *ctx,
                    int64_t directBytes)
      : OpConversionPattern(converter, ctx), directBytes(directBytes) {}
  LogicalResult
  matchAndRewrite(SendPagesOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    PageTransfer t(rewriter, op, adaptor.getCollection(),
                   adaptor.getRank().front(), directBytes);
    Value sequences = adaptor.getSequences().front();
    Value zero = t.index(0), one = t.index(1);
    Value pageSize = t.index(t.params.pageSize);
    // The pages holding each sequence's cache_length tokens.
    auto pagesOf = [&](Value i) {
      Value tokens = t.loadIndex(t.cacheLengths, t.loadIndex(sequences, i));
      return arith::CeilDivUIOp::create(rewriter, t.loc, tokens, pageSize)
          .getResult();
    };
    Value numSequences = t.dim(sequences, 0);
    Value count =
        scf::ForOp::create(
            rewriter, t.loc, zero, numSequences, one, ValueRange{zero},
            [&](OpBuilder &, Location, Value i, ValueRange sum) {
              scf::YieldOp::create(rewriter, t.loc, t.add(sum[0], pagesOf(i)));
            })
            .getResult(0);
    Value src = t.allocIds(count);
    scf::ForOp::create(
        rewriter, t.loc, zero, numSequences, one, ValueRange{zero},
        [&](OpBuilder &, Location, Value i, ValueRange filled) {
          Value sequence = t.loadIndex(sequences, i);
          Value pages = pagesOf(i);
          scf::ForOp::create(
              rewriter, t.loc, zero, pages, one, ValueRange{},
              [&](OpBuilder &, Location, Value j, ValueRange) {
                Value page = memref::LoadOp::create(
                    rewriter, t.loc, t.lookupTable, ValueRange{sequence, j});
                memref::StoreOp::create(rewriter, t.loc, page, src,
                                        t.add(filled[0], j));
                scf::YieldOp::create(rewriter, t.loc);
              });
          scf::YieldOp::create(rewriter, t.loc, t.add(filled[0], pages));
        });
    sendHeader(t, count);
    t.send(src, SourceIdsTag);
    // [verdict, destination ids]: the ids only when the verdict is 1.
    Value reply = t.allocIds(t.add(count, one));
    t.recv(reply, ReplyTag);
    Value accepted = arith::CmpIOp::create(
        rewriter, t.loc, arith::CmpIPredicate::ne,
        memref::LoadOp::create(rewriter, t.loc, reply, ValueRange{zero}),
        t.i32(0));
    auto ifOp = scf::IfOp::create(rewriter, t.loc, accepted, false);
    rewriter.setInsertionPointToStart(ifOp.thenBlock());
    t.transferPairs(/*sending=*/true, src, t.replyIds(reply, count), count);
    rewriter.setInsertionPointAfter(ifOp);
    memref::DeallocOp::create(rewriter, t.loc, reply);
    memref::DeallocOp::create(rewriter, t.loc, src);
    rewriter.eraseOp(op);
    return success();
  }

  /// Sends `[count, bytes per page]` (i64), which the receiver checks.
  static void sendHeader(PageTransfer &t, Value count) {
    auto type = MemRefType::get({2}, t.b.getI64Type());
    Value header = memref::AllocaOp::create(t.b, t.loc, type);
    Value values[] = {count, t.bytesPerPage(t.blocks)};
    for (auto [i, value] : llvm::enumerate(values))
      memref::StoreOp::create(
          t.b, t.loc,
          arith::IndexCastUIOp::create(t.b, t.loc, t.b.getI64Type(), value),
          header, t.index(i));
    t.send(header, HeaderTag);
  }

  int64_t directBytes;
};

/// recv_pages: the header and the source ids, the checks (checked mode),
/// the verdict with the destination ids, then the runs into the
/// destination pages.
struct RecvPagesLowering : OpConversionPattern<RecvPagesOp> {
  RecvPagesLowering(const TypeConverter &converter, MLIRContext *ctx,
                    bool checked, int64_t directBytes)
      : OpConversionPattern(converter, ctx), checked(checked),
        directBytes(directBytes) {}
  LogicalResult
  matchAndRewrite(RecvPagesOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    PageTransfer t(rewriter, op, adaptor.getCollection(),
                   adaptor.getRank().front(), directBytes);
    Value zero = t.index(0);
    Value dstPages = adaptor.getDstPages().front();
    Value count = t.dim(dstPages, 0);
    auto headerType = MemRefType::get({2}, rewriter.getI64Type());
    Value header = memref::AllocaOp::create(rewriter, t.loc, headerType);
    t.recv(header, HeaderTag);
    auto headerAt = [&](int64_t i) -> Value {
      Value value = memref::LoadOp::create(rewriter, t.loc, header,
                                           ValueRange{t.index(i)});
      return arith::IndexCastUIOp::create(rewriter, t.loc,
                                          rewriter.getIndexType(), value);
    };
    Value sentCount = headerAt(0), sentBytes = headerAt(1);
    // The source ids always, whatever the verdict: the sender does not
    // wait for one before it sends them.
    Value src = t.allocIds(sentCount);
    t.recv(src, SourceIdsTag);
    Value pageBytes = t.bytesPerPage(t.blocks);
    Value accepted = arith::AndIOp::create(
        rewriter, t.loc, t.eq(sentCount, count), t.eq(sentBytes, pageBytes));
    if (checked)
      emitChecks(t, count, sentCount, pageBytes, sentBytes, dstPages);
    // [verdict, destination ids] in as many entries as the sender expects;
    // the ids (a dense copy: dst_pages may be strided) when accepted.
    Value reply = t.allocIds(t.add(sentCount, t.index(1)));
    memref::StoreOp::create(rewriter, t.loc,
                            arith::ExtUIOp::create(rewriter, t.loc,
                                                   rewriter.getI32Type(),
                                                   accepted),
                            reply, ValueRange{zero});
    Value dst = t.replyIds(reply, sentCount);
    auto copyIds = scf::IfOp::create(rewriter, t.loc, accepted, false);
    rewriter.setInsertionPointToStart(copyIds.thenBlock());
    memref::CopyOp::create(rewriter, t.loc, dstPages, dst);
    rewriter.setInsertionPointAfter(copyIds);
    t.send(reply, ReplyTag);
    auto ifOp = scf::IfOp::create(rewriter, t.loc, accepted, false);
    rewriter.setInsertionPointToStart(ifOp.thenBlock());
    t.transferPairs(/*sending=*/false, src, dst, count);
    rewriter.setInsertionPointAfter(ifOp);
    memref::DeallocOp::create(rewriter, t.loc, src);
    memref::DeallocOp::create(rewriter, t.loc, reply);
    rewriter.eraseOp(op);
    return success();
  }

  /// Checked mode, before anything is written: the sender's page count and
  /// size, the destination ids (below num_pages, none twice) and the dense
  /// page layout the runs rely on. A failure prints and aborts.
  void emitChecks(PageTransfer &t, Value count, Value sentCount,
                  Value pageBytes, Value sentBytes, Value dstPages) const {
    RuntimeChecker checker(t.b, t.op, RunsOn::Host);
    checker.emitFailure(t.eq(count, sentCount),
                        "'dst_pages' holds %lld page ids, but the sender "
                        "sends %lld pages",
                        "", count, sentCount);
    checker.emitFailure(t.eq(pageBytes, sentBytes),
                        "a page is %lld bytes here, but %lld bytes at the "
                        "sender (a different collection type or num_layers)",
                        "", pageBytes, sentBytes);
    for (Value memref : {t.blocks, t.scales}) {
      if (!memref)
        continue;
      auto metadata =
          memref::ExtractStridedMetadataOp::create(t.b, t.loc, memref);
      Value dense = t.index(1);
      auto type = cast<MemRefType>(memref.getType());
      for (int64_t d = type.getRank() - 1; d >= 0; --d) {
        checker.emitFailure(t.eq(metadata.getStrides()[d], dense),
                            "the pages are not dense: a stride is %lld "
                            "elements, but the dense layout's is %lld",
                            "", metadata.getStrides()[d], dense);
        dense = t.mul(dense, t.dim(memref, d));
      }
    }
    Value numPages = t.dim(t.blocks, 0);
    Value zero = t.index(0), one = t.index(1);
    Value marks = t.allocIds(numPages);
    Value zero32 = t.i32(0);
    scf::ForOp::create(t.b, t.loc, zero, numPages, one, ValueRange{},
                       [&](OpBuilder &, Location, Value page, ValueRange) {
                         memref::StoreOp::create(t.b, t.loc, zero32, marks,
                                                 page);
                         scf::YieldOp::create(t.b, t.loc);
                       });
    scf::ForOp::create(
        t.b, t.loc, zero, count, one, ValueRange{},
        [&](OpBuilder &, Location, Value i, ValueRange) {
          Value page = t.loadIndex(dstPages, i);
          checker.checkLess(page, numPages, "destination page id", "num_pages");
          Value mark = t.loadIndex(marks, page);
          checker.emitFailure(t.eq(mark, zero),
                              "destination page id %lld appears twice in "
                              "'dst_pages' (entry %lld is the second)",
                              "", page, i);
          memref::StoreOp::create(t.b, t.loc, t.i32(1), marks, page);
          scf::YieldOp::create(t.b, t.loc);
        });
    memref::DeallocOp::create(t.b, t.loc, marks);
  }

  bool checked;
  int64_t directBytes;
};

} // namespace

void mlir::kvcache::populatePageTransferLoweringPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns,
    bool checked, int64_t directBytes) {
  patterns.add<SendPagesLowering>(typeConverter, patterns.getContext(),
                                  directBytes);
  patterns.add<RecvPagesLowering>(typeConverter, patterns.getContext(), checked,
                                  directBytes);
}
