//===- KernelLowering.h - what kernel-op lowerings share ---------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// What the kernel-op lowerings share besides KernelBuilder: the location of
// generated ops, vector widths, the check for caches no lowering supports
// and the driver that applies kernel patterns and reports leftovers.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_KERNELLOWERING_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_KERNELLOWERING_H

#include "KVCache/IR/KVCacheTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kvcache {

/// The location of the ops a kernel op lowers to: named after the kernel op,
/// so run-time check messages name the op the user wrote
/// ("kvcache.store_ragged (kvcache.lookup) at ...").
Location getKernelLoc(Operation *op);

/// Whether every memref of `memrefs` has a unit innermost stride (its rows
/// can be vector-loaded).
bool hasUnitInnerStride(ValueRange memrefs);

/// Elements per vector access when moving token rows of a cache with
/// `params` to or from `rows` (null for cache-to-cache copies): the largest
/// power of two with at most `maxBytes` bytes that divides head_size and,
/// when `rows` is given, every stride and the offset of `rows`, so each
/// access is aligned to its width.
int64_t getRowVectorWidth(const KVCacheParams &params, MemRefType rows,
                          int64_t maxBytes = 16);

/// Elements per chunk of store_ragged / gather_ragged between `rows` and a
/// cache with `cacheParams`: getRowVectorWidth in the rows' element type
/// (a quantizing store or a dequantizing gather moves chunks of rows), and
/// then within one scale group.
int64_t getRaggedChunkWidth(const KVCacheParams &cacheParams,
                            MemRefType rows, int64_t maxBytes);

/// Applies the kernel-op lowering `patterns` to `root` in one walk (no
/// folding: the code around the kernels stays as the patterns wrote it),
/// then fails if an op with the KernelOpInterface is left: the patterns
/// explain their failures with errors; an op left without one is reported
/// as having no lowering in `passName`.
LogicalResult applyKernelLoweringPatterns(Operation *root,
                                          RewritePatternSet &&patterns,
                                          StringRef passName);

/// The vector (or scalar, for width 1) type of `width` cache elements.
Type getChunkType(const KVCacheParams &params, int64_t width);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_KERNELLOWERING_H
