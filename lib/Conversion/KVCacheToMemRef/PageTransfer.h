//===- PageTransfer.h - the messages of send_pages, recv_pages --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// What both sides of a page transfer build (PageTransferLowering.cpp): the
// index arithmetic over the lowered collection and the messages that move
// the pages, in the `mpi` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_PAGETRANSFER_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_PAGETRANSFER_H

#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <limits>

namespace mlir {
namespace kvcache {

/// The MPI tags of a transfer's messages, on MPI_COMM_WORLD.
enum TransferTag : int32_t {
  HeaderTag = 0x4B50,
  SourceIdsTag,
  ReplyTag,
  PagesTag,
  ScalesTag,
};

/// The message sizes of a transfer: runs of at least `direct` bytes are
/// messages of their own; shorter ones are packed into messages of at most
/// `staging` bytes (at least `direct`: any short run fits).
struct MessageSizes {
  int64_t direct;
  int64_t staging;
};

/// The pieces of one transfer: the lowered collection, the peer, and the
/// index arithmetic and messages both sides share.
class PageTransfer {
public:
  PageTransfer(OpBuilder &b, Operation *op, ValueRange lowered, Value rank,
               MessageSizes sizes)
      : b(b), loc(op->getLoc()), op(op), rank(rank), sizes(sizes) {
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
  Value bytesPerPage(Value memref);

  /// The address (an index) of page `page` of `memref`.
  Value pageAddress(Value memref, Value page);

  /// `count` pages of `memref` from page `first` as one `memref<?xi8>`: the
  /// pages of a run are one contiguous range of bytes (a dense page
  /// layout, section 3.6). MPI gets bytes, not the element type: MLIR's
  /// OpenMPI lowering has no datatype for f16, bf16 and fp8.
  Value pageBytes(Value memref, Value first, Value count);

  /// Calls `body(start, length)` for each run `[start, start + length)` of
  /// the `count` page pairs `(src[i], dst[i])` in which both ids grow by
  /// one, at most `maxPages` pages long: the same runs on both sides.
  void forEachRun(Value src, Value dst, Value count, Value maxPages,
                  function_ref<void(Value, Value)> body);

  /// Moves the pages of the `count` pairs `(src[i], dst[i])`: the sender's
  /// side (`sending`, reading pages `src`) or the receiver's (writing pages
  /// `dst`). A run of at least `sizes.direct` is one message straight
  /// between the caches, started without waiting (MPI_Isend, MPI_Irecv):
  /// the library moves them while the walk goes on, and all are waited for
  /// at the end. Shorter runs are packed, in order, into a staging buffer of
  /// at most `sizes.staging` bytes that goes as one blocking message (each
  /// waits for the other process: few large ones).
  void transferPairs(bool sending, Value src, Value dst, Value count);

  /// Starts sending (`sending`) or receiving the pages `first, ..., first +
  /// count - 1` of `blocks` as one message, then those of the per-page
  /// scales, without waiting.
  void transferRun(bool sending, Value first, Value count);

  /// MPI_Isend (`sending`) or MPI_Irecv of `bytes`, its request appended to
  /// `requests`. !mpi.request is no memref element type: a request is kept
  /// as the i64 that kvcache-mpi-to-llvm converts it to.
  void start(bool sending, Value bytes, TransferTag tag);

  /// MPI_Wait on every request started.
  void waitAll();

  /// The pages `ids[from], ..., ids[end - 1]` as one blocking message,
  /// `blocks` then the per-page scales: straight from or into the cache
  /// when this side's ids are consecutive, else through `staging`, packed
  /// and sent (`sending`), or received and unpacked.
  void transferStaged(bool sending, Value ids, Value from, Value end,
                      Value staging);

  /// Whether `ids[from], ..., ids[end - 1]` grow by one (an i1).
  Value consecutive(Value ids, Value from, Value end);

  /// The bytes of the staging buffer: `sizes.staging`, at most what one
  /// message can count (an i32).
  int64_t stagingBytes() const {
    return std::min<int64_t>(sizes.staging,
                             std::numeric_limits<int32_t>::max());
  }

  /// The `count` destination ids of a reply `[verdict, ids...]`.
  Value replyIds(Value reply, Value count);

  /// The most pages one message holds: its byte count is an i32.
  Value maxPagesPerMessage();

  OpBuilder &b;
  Location loc;
  Operation *op;
  Value rank;
  KVCacheParams params;
  Value blocks, cacheLengths, lookupTable, scales, comm;

private:
  MessageSizes sizes;
  /// The requests of the messages in flight (`memref<?xi64>`) and their
  /// number (`memref<index>`).
  Value requests, numRequests;

  Value pointer(Value address);

  /// memcpy of `size` bytes from the address `from` to `to` (indices).
  void copyBytes(Value to, Value from, Value size);

  /// A `memref<?xi8>` of `size` bytes at the address `start` (an index).
  Value makeByteMemRef(Value start, Value size);
};

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_PAGETRANSFER_H
