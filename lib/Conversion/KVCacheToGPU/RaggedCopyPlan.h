//===- RaggedCopyPlan.h - the shape of a ragged-copy kernel -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The static shape of the store_ragged / gather_ragged kernel
// (RaggedCopyToGPU.cpp): chunk width, rows per warp tile, the parts of a
// row and the units a lane moves of each per pass.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOGPU_RAGGEDCOPYPLAN_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOGPU_RAGGEDCOPYPLAN_H

#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"
#include "../KernelCommon/KernelBuilder.h"

#include "llvm/ADT/STLExtras.h"

namespace mlir::kvcache {

/// Lanes of a warp.
constexpr int64_t kWarpSize = 32;

/// A part of every head of a row that the kernel moves in units of one
/// kind, `unitsPerHead` of them, unit u at u * width: all of the head in
/// chunks; or, with a rope clause on float rows, the elements that do not
/// rotate, in chunks, and the rotary part (from element o): in chunks of
/// pairs, unit u the pairs at u * width (RopeEmitter::getPairElements),
/// whose two chunks a lane reads, rotates with one read of their cos and
/// sin and writes, or, for interleaved pairs in chunks wider than one
/// element, in chunks of whole pairs, unit u at element o + u * width.
struct RowSegment {
  int64_t unitsPerHead, chunksPerUnit;
  bool rotates;
  /// Units of a tile's row, and of a lane's pass.
  int64_t unitsPerRow = 0, unitsPerLane = 0;
  /// Passes over a tile: more than one only for a row wider than a warp's
  /// chunks in flight (then rowsPerTile is 1).
  int64_t passes = 0;
};

/// The shape of a ragged-copy kernel.
struct RaggedCopyPlan {
  RaggedCopyPlan(const KVCacheParams &params, const RaggedCopy &copy,
                 const GPUKernelTarget &target);

  /// Units of segment `segment` of a warp's tile.
  int64_t tileUnits(const RowSegment &segment) const {
    return rowsPerTile * segment.unitsPerRow;
  }
  int64_t threads() const { return warps * kWarpSize; }
  /// Whether every segment takes one pass (the lanes' units are the same in
  /// every tile).
  bool onePass() const {
    return llvm::all_of(segments,
                        [](const RowSegment &s) { return s.passes == 1; });
  }

  /// Elements of a chunk.
  int64_t width;
  int64_t headSize;
  /// Consecutive rows a warp moves at once, at most one per lane.
  int64_t rowsPerTile;
  /// The parts of a row, moved one after the other.
  SmallVector<RowSegment, 2> segments;
  int64_t warps;
  /// A store of float rows into a cache with scales: the chunks are
  /// quantized; a scale group is `chunksPerGroup` consecutive chunks, held
  /// by as many consecutive lanes.
  bool quantizes = false;
  int64_t chunksPerGroup = 0;
  /// A NaN quantized into an i8 cache fails a device assertion.
  bool checked = false;
};

/// The chunks of a ragged copy are of the rows' element type: a gather into
/// float rows from a quantized cache dequantizes (page_load with a float
/// result), a store of float rows quantizes (getRaggedChunkWidth).
KVCacheParams getRowParams(const KVCacheParams &cacheParams,
                           MemRefType rowsType);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOGPU_RAGGEDCOPYPLAN_H
