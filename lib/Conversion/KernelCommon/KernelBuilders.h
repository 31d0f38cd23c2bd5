//===- KernelBuilders.h - shared pieces of kernel-op lowerings --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// What convert-kvcache-to-scf and convert-kvcache-to-gpu share: vector widths,
// ragged-offset reads, the sequence search and the copy of one chunk of a
// token row, all through kvcache access ops (page addressing stays in
// convert-kvcache-to-memref).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_KERNELBUILDERS_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_KERNELBUILDERS_H

#include "KVCache/IR/KVCacheTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kvcache {

/// The location of the ops a kernel op lowers to: named after the kernel op,
/// so run-time check messages name the op the user wrote
/// ("kvcache.store_ragged (kvcache.lookup) at ...").
Location getKernelLoc(Operation *op);

/// Elements per vector access when moving token rows of a cache with
/// `params` to or from `rows` (null for cache-to-cache copies): the largest
/// power of two with at most `maxBytes` bytes that divides head_size and,
/// when `rows` is given, every stride and the offset of `rows`, so each
/// access is aligned to its width.
int64_t getRowVectorWidth(const PagedCacheParams &params, MemRefType rows,
                          int64_t maxBytes = 16);

/// `cache_length(batch)` as the base position of a write (store_ragged):
/// checked with the write on an `assert_write_mode = 1` cache.
Value createWriteCacheLength(OpBuilder &builder, Location loc, Value cache,
                             Value batch);

/// `memref[indices]` (an unsigned i32) as an index.
Value loadOffset(OpBuilder &builder, Location loc, Value memref,
                 ValueRange indices);

/// The number of sequences of a ragged offsets memref `[batch + 1]`:
/// max(size - 1, 0).
Value getNumSequences(OpBuilder &builder, Location loc, Value offsets);

/// The sequence of ragged row `row`: the largest b < numSequences with
/// offsets[b] <= row, by binary search (log2(batch) loads, no host reads).
Value emitSequenceSearch(OpBuilder &builder, Location loc, Value offsets,
                         Value numSequences, Value row);

/// Which way a row chunk moves.
enum class RowCopyDirection { ToCache, FromCache };

/// Copies `width` elements of head `head` starting at element `element`
/// between `rows[row, head, element]` and the cache at (`page`, `slot`).
void emitRowChunkCopy(OpBuilder &builder, Location loc, Value cache,
                      Value rows, Value row, Value page, Value slot,
                      Value head, Value element, int64_t width,
                      RowCopyDirection direction);

/// Copies `width` elements of (`slot`, `head`, `element`) from page `src`
/// to page `dst` of `cache`.
void emitPageChunkCopy(OpBuilder &builder, Location loc, Value cache,
                       Value src, Value dst, Value slot, Value head,
                       Value element, int64_t width);

/// `kvcache.lookup` of `token`; a lookup that only serves reads is marked
/// `read_only`, so an `assert_write_mode = 1` cache does not check it.
Value createLookup(OpBuilder &builder, Location loc, Value cache, Value batch,
                   Value token, bool servesWrite, Value *slot);

/// Emits an error on the first op under `root` that uses an f8E4M3FN cache
/// (no lowering supports them until their scales are modeled).
LogicalResult rejectCachesWithoutLowering(Operation *root);

/// Applies the kernel-op lowering `patterns` to `root` in one walk (no
/// folding: the code around the kernels stays as the patterns wrote it),
/// then fails if an op with the KernelOpInterface is left: the patterns
/// explain their failures with errors; an op left without one is reported
/// as having no lowering in `passName`.
LogicalResult applyKernelLoweringPatterns(Operation *root,
                                          RewritePatternSet &&patterns,
                                          StringRef passName);

/// The vector (or scalar, for width 1) type of `width` cache elements.
Type getChunkType(const PagedCacheParams &params, int64_t width);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_KERNELBUILDERS_H
