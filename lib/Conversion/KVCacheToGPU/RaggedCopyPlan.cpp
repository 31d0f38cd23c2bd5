//===- RaggedCopyPlan.cpp - the shape of a ragged-copy kernel -----------===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "RaggedCopyPlan.h"
#include "../KernelCommon/KernelLowering.h"
#include "../KernelCommon/Rope.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kvcache;

KVCacheParams mlir::kvcache::getRowParams(const KVCacheParams &cacheParams,
                                  MemRefType rowsType) {
  KVCacheParams params = cacheParams;
  params.elementType = rowsType.getElementType();
  return params;
}

RaggedCopyPlan::RaggedCopyPlan(const KVCacheParams &cacheParams,
                               const RaggedCopy &copy,
                               const GPUKernelTarget &target) {
  auto rowsType = cast<MemRefType>(copy.rows.getType());
  KVCacheParams params = getRowParams(cacheParams, rowsType);
  width = getRaggedChunkWidth(cacheParams, rowsType, target.vectorBytes);
  if (copy.rope)
    width = RopeEmitter::fitWidth(width, copy.rope.rotaryDims,
                                  params.headSize);
  bool converts = params.elementType != cacheParams.elementType;
  quantizes = converts && copy.isStore();
  chunksPerGroup = params.scales.groupSize(params.headSize) / width;
  checked = target.checked;
  headSize = params.headSize;
  int64_t chunksPerRow = params.rowElements() / width;
  rowsPerTile = std::clamp<int64_t>(
      kWarpSize * target.chunksInFlight / chunksPerRow, 1, kWarpSize);
  // A quantizing store's scale groups span consecutive lanes' chunks: it
  // rotates chunk by chunk (RopeEmitter::rotateRowChunk).
  if (copy.rope && !quantizes) {
    int64_t rotaryDims = copy.rope.rotaryDims;
    if (headSize > rotaryDims)
      segments.push_back({(headSize - rotaryDims) / width, 1, false});
    if (!copy.rope.halfStyle && width > 1)
      segments.push_back({rotaryDims / width, 1, true});
    else
      segments.push_back({rotaryDims / 2 / width, 2, true});
  } else {
    segments.push_back({headSize / width, 1, false});
  }
  for (RowSegment &segment : segments) {
    segment.unitsPerRow = params.numHeads * segment.unitsPerHead;
    int64_t laneUnits = llvm::divideCeil(tileUnits(segment), kWarpSize);
    // Rounded up: a tile of several rows then takes one pass (its pairs'
    // chunks are at most a warp's chunks in flight).
    segment.unitsPerLane = std::min<int64_t>(
        laneUnits,
        llvm::divideCeil(target.chunksInFlight, segment.chunksPerUnit));
    segment.passes = llvm::divideCeil(laneUnits, segment.unitsPerLane);
  }
  warps = std::max<int64_t>(target.threadsPerBlock / kWarpSize, 1);
}
