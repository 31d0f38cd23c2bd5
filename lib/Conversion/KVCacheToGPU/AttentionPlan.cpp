//===- AttentionPlan.cpp - the static shape of the attention kernel -------===//
//
// Part of the kvcache-mlir project.
//
// How the attention kernel maps a head onto threads (lanes per key, slice
// width), how many keys a step takes, how many query heads a pass over the
// keys carries, and whether K/V go through shared memory with cp.async, all
// within 48 KiB of shared memory; the tensor-core and query-tile plans; and
// the keys a row, a tile and a split see.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "../KernelCommon/KernelLowering.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

namespace {
constexpr int64_t kSharedBytes = 48 * 1024;
/// Query heads one pass over the keys handles at most (each holds a running
/// (m, l, o) in registers).
constexpr int64_t kMaxHeadsPerPass = 8;
/// The smallest GQA group the tensor-core kernel takes (docs/Design.md).
constexpr int64_t kMinTensorCoreGroup = 1;
/// Registers per thread the tensor-core plan may estimate (more: CUDA
/// cores, which take the group in passes); the split-scores plan, one block
/// per SM (.minnctapersm 1), may take all 255.
constexpr int64_t kMaxTensorCoreRegisters = 224;
constexpr int64_t kMaxSplitScoreRegisters = 255;
/// Query heads of one block of the split-scores plan (MLA's latent rows):
/// four 16-head tiles of 2 warps each (8 warps' partial scores next to two
/// stages of 16 latent rows: 45,568 of 48 KiB of shared memory,
/// docs/Design.md), or two tiles of 4 warps where the clauses leave four
/// tiles too few registers (getMaxSplitScoreHeads). Larger groups take
/// several blocks (plan.headBlocks).
constexpr int64_t kMaxSplitScoreHeads = 64;

/// The most query heads of a split-scores block for `op`'s clauses on
/// `chip`: a block of 64 heads takes all 255 registers, and ptxas spilled
/// 4-36 bytes (with q's 4-byte loads) with a soft cap and lse, a sink, or
/// ALiBi and a soft cap (sm_90), and on sm_80 also with ALiBi, a window, a
/// chunk or lse alone. Those clauses (softcap, ALiBi and sinks anywhere)
/// take blocks of 32.
int64_t getMaxSplitScoreHeads(AttentionOpInterface op, StringRef chip) {
  bool spills = op.getSinks() || op.getAlibi() || op.getSoftcap();
  if (getChipVersion(chip) < 90)
    spills = spills || op.getWindow() || op.getChunk() || op.getLse();
  return spills ? kMaxSplitScoreHeads / 2 : kMaxSplitScoreHeads;
}

/// The warps of a decode block's 16-row tile, which share its output
/// columns: four per block when the group is small. Split scores: 2 per
/// tile, each with half of q's dims and 256 output columns (72 + 128
/// registers: 16 warps of 128 registers spilled, docs/Design.md), so a
/// step's 68 mma.sync per warp carry its fixed costs; where the clauses make
/// that spill (blocks of 32, getMaxSplitScoreHeads), 4 per tile with a
/// quarter of the dims and 128 columns each.
int64_t getDecodeWarpsPerTile(int64_t mTiles, bool splitScores,
                              int64_t maxSplitHeads) {
  if (!splitScores)
    return std::max<int64_t>(1, 4 / mTiles);
  if (maxSplitHeads >= kMaxSplitScoreHeads)
    return 2;
  return 8 / std::max<int64_t>(mTiles, 2);
}

/// Registers per thread of the tensor-core kernel: q's A fragments held
/// across the key loop (headSize / 4, or its share of `scoreSplit` warps;
/// 8 when q is staged in shared memory and read per step), the output tiles (valueSize / (2 dSplit)), the
/// scores of a step (keysPerStep / 2) and ~40 for addresses and the softmax
/// state.
int64_t estimateTensorCoreRegisters(int64_t headSize, int64_t valueSize,
                                    int64_t dSplit, int64_t keysPerStep,
                                    bool stagedQueries, int64_t scoreSplit) {
  return 40 + (stagedQueries ? 8 : headSize / (4 * scoreSplit)) +
         valueSize / (2 * dSplit) + keysPerStep / 2;
}

/// The element type of the tensor-core kernel's mma.sync operands, or null
/// when the attention has none: the cache's f16 or bf16, or over a quantized
/// cache with scale groups of 16 elements or more (each 16-code chunk
/// dequantized with one scale) q's f16 or bf16.
Type getMmaType(const AttentionPlan &plan, int64_t scaleGroup) {
  Type type = plan.dequantize ? plan.rowsElementType : plan.elementType;
  if (!(type.isF16() || type.isBF16()) ||
      (plan.dequantize && scaleGroup % 16 != 0))
    return Type();
  return type;
}

/// The shared memory one block may take (bytes): what the chip's blocks can
/// opt into (sm_80: 163 KiB; sm_86, sm_87, sm_89: 99 KiB; sm_90 and newer:
/// 227 KiB), 48 KiB on older chips.
int64_t getMaxSharedBytesPerBlock(StringRef chip) {
  int64_t version = getChipVersion(chip);
  if (version >= 90)
    return 227 * 1024;
  if (version == 80)
    return 163 * 1024;
  if (version > 80)
    return 99 * 1024;
  return kSharedBytes;
}

/// Shared memory of the tensor-core plan's K and V buffers (and, over a
/// quantized cache, its code buffers and chunk scales) with `keysPerStep`
/// keys a step: 0 when a quantized cache leaves some thread without a chunk
/// to copy. Sets plan.chunksPerThread.
int64_t planKeyValueBuffers(AttentionPlan &plan, int64_t warps,
                            int64_t keysPerStep, int64_t stages) {
  constexpr int64_t kMmaBytes = 2;
  int64_t sharedRow = plan.headSize + 16 / kMmaBytes;
  // K and V tiles even when V's fragments come from K's (sharesKeyTiles):
  // the plan, and so the registers of its steps, stay attention_ragged's.
  int64_t kvBytes = 2 * stages * keysPerStep * sharedRow * kMmaBytes;
  // A quantized cache: codes of `stages` steps, one dequantized tile, and
  // each thread's chunk scales of `stages` steps, for K and for V.
  int64_t chunks = keysPerStep * plan.headSize * plan.elementBytes / 16;
  plan.chunksPerThread = 0;
  if (!plan.dequantize)
    return kvBytes;
  plan.chunksPerThread = chunks / (warps * 32);
  if (plan.chunksPerThread < 1)
    return 0;
  return 2 * (stages * keysPerStep * plan.headSize * plan.elementBytes +
              keysPerStep * sharedRow * kMmaBytes + stages * chunks * 4);
}

/// Turns `plan` into the tensor-core plan when the attention qualifies: f16
/// or bf16 mma operands (getMmaType), sm_80 or newer, head_size 64, 128 or
/// 256 (or MLA's 576 in the decode kernel, q's dims split over the warps
/// of a tile: plan.splitScores, in blocks of at most `maxSplitHeads`
/// heads), a group of at most 256 heads, the registers within
/// kMaxTensorCoreRegisters (kMaxSplitScoreRegisters); over a quantized
/// cache, every thread copies codes each step. With `tileRows` > 1, the
/// query-tile plan: the M rows are (row, head) pairs of `tileRows` rows of
/// one sequence (`causal`: the attention's mask, for its keys per step).
bool planTensorCores(AttentionPlan &plan, const GPUKernelTarget &target,
                     int64_t scaleGroup, int64_t tileRows, bool causal,
                     int64_t maxSplitHeads) {
  Type mmaType = getMmaType(plan, scaleGroup);
  // DeepSeek's latent rows (576 = 512 + 64), whose values are the keys:
  // neither q nor, next to two stages of K, q in shared memory fits (its 16
  // rows take 18 KiB), so each of the 4 (2) warps of a tile holds a quarter
  // (half) of q's dims (docs/Design.md).
  bool splitScores =
      plan.headSize == 576 && plan.sharesKeyTiles() && tileRows == 1;
  if (!target.tensorCores || !mmaType || getChipVersion(target.chip) < 80 ||
      !(plan.headSize == 64 || plan.headSize == 128 || plan.headSize == 256 ||
        splitScores) ||
      plan.group < kMinTensorCoreGroup)
    return false;
  constexpr int64_t kMmaBytes = 2;
  int64_t sharedRow = plan.headSize + 16 / kMmaBytes;
  int64_t mTiles, dSplit, keysPerStep, stages = 2, headBlocks = 1;
  if (tileRows == 1) {
    // The fewest blocks that split the group evenly, each within
    // maxSplitHeads.
    while (splitScores && (plan.group % headBlocks != 0 ||
                           plan.group / headBlocks > maxSplitHeads))
      ++headBlocks;
    mTiles =
        llvm::PowerOf2Ceil(llvm::divideCeil(plan.group / headBlocks, 16));
    dSplit = getDecodeWarpsPerTile(mTiles, splitScores, maxSplitHeads);
    // 8 KiB of K (and of V) per step, at most 32 keys (64 keys of a head
    // of 64 spilled).
    keysPerStep =
        std::clamp<int64_t>(8192 / (plan.headSize * kMmaBytes), 16, 32);
    // One warp per tile (groups of 64 and more) holds q's A fragments and
    // all headSize output columns in registers: 170-250 of them, 2-3 blocks
    // per SM. Those take 16 keys per step in 4 stages (the same shared
    // memory), so 3 steps (24 KiB at head 128) per block are in flight and
    // 2 blocks already keep 48 KiB in flight per SM.
    if (dSplit == 1) {
      stages = 2 * keysPerStep / 16;
      keysPerStep = 16;
    }
  } else {
    // Query tiles: 8 warps, one 16-row tile each (two per tile, each with
    // half of the output columns, at head 256, so that q's fragments and
    // the output fit in registers). In dynamic shared memory: 64 keys per
    // step (the softmax and the output's rescale once per 64 keys) in 4
    // stages (three steps in flight while one is computed; a power of two,
    // so a step's buffer is a mask, not a division) where the chip's shared
    // memory per block holds them, else 2 stages, then fewer keys.
    mTiles = llvm::divideCeil(tileRows * plan.group, 16);
    dSplit = std::max<int64_t>(1, 8 / mTiles);
    int64_t limit = getMaxSharedBytesPerBlock(target.chip);
    auto fits = [&](int64_t keys, int64_t stageCount) {
      int64_t bytes =
          planKeyValueBuffers(plan, mTiles * dSplit, keys, stageCount);
      return bytes > 0 && bytes <= limit;
    };
    // 64 keys per step at head 64, and at 128 for a causal GQA 2-8 over
    // an f16/bf16 cache on sm_90 and newer (3.8 PTX instructions per
    // mma.sync at GQA 4, 5.0 with 32 keys); elsewhere 64 keys spilled 16-40
    // bytes in ptxas (sm_90: GQA 1, 16 and 32, noncausal at every group,
    // head 256; sm_80: GQA 2-8 too), so 32.
    bool wideSteps = plan.headSize == 64 ||
                     (plan.headSize == 128 && causal && !plan.dequantize &&
                      plan.group >= 2 && plan.group <= 8 &&
                      getChipVersion(target.chip) >= 90);
    keysPerStep = wideSteps ? 64 : 32;
    stages = 4;
    while (!fits(keysPerStep, stages) && (stages > 2 || keysPerStep > 16)) {
      if (stages > 2) {
        stages /= 2;
      } else {
        keysPerStep /= 2;
        stages = 4;
      }
    }
  }
  int64_t warps = mTiles * dSplit;
  int64_t kvBytes = planKeyValueBuffers(plan, warps, keysPerStep, stages);
  // Split scores: K tiles alone, and each warp's partial scores (16 bytes
  // per lane and 8 keys).
  int64_t scoreSplit = splitScores ? dSplit : 1;
  if (splitScores)
    kvBytes = kvBytes / 2 + warps * keysPerStep * 64;
  // A warp's output columns: ldmatrix.x4 reads V in blocks of 16.
  if (kvBytes == 0 || plan.valueSize % (16 * dSplit) != 0)
    return false;
  // q goes through shared memory when the warps of a tile share it and it
  // fits.
  int64_t sharedLimit =
      tileRows > 1 ? getMaxSharedBytesPerBlock(target.chip) : kSharedBytes;
  int64_t queryBytes = mTiles * 16 * sharedRow * kMmaBytes;
  bool stageQueries =
      dSplit > 1 && !splitScores && kvBytes + queryBytes <= sharedLimit;
  if (warps > 16 || kvBytes > sharedLimit ||
      estimateTensorCoreRegisters(plan.headSize, plan.valueSize, dSplit,
                                  keysPerStep, stageQueries, scoreSplit) >
          (splitScores ? kMaxSplitScoreRegisters : kMaxTensorCoreRegisters))
    return false;
  plan.tensorCores = true;
  plan.mmaType = mmaType;
  plan.tileRows = tileRows;
  plan.headBlocks = headBlocks;
  plan.mTiles = mTiles;
  plan.dSplit = dSplit;
  plan.keysPerStep = keysPerStep;
  plan.stages = stages;
  plan.threads = warps * 32;
  plan.headsPerPass = plan.blockHeads();
  plan.sharedRow = sharedRow;
  plan.asyncCopy = true;
  plan.stageQueries = stageQueries;
  plan.splitScores = splitScores;
  plan.sharedBytes = kvBytes + (stageQueries ? queryBytes : 0);
  plan.dynamicSharedMemory = tileRows > 1;
  return true;
}
} // namespace

FailureOr<AttentionPlans>
attention::makeAttentionPlans(AttentionOpInterface op,
                              const GPUKernelTarget &target) {
  auto params = KVCacheParams::get(op.getKeyCache().getType());
  if (!hasUnitInnerStride({op.getQ(), op.getOut()}))
    return op.emitOpError("cannot be lowered: q and out need a unit "
                          "innermost stride (copy them into contiguous "
                          "buffers)");
  AttentionPlan plan;
  plan.headSize = params.headSize;
  plan.valueSize = op.getValueHeadSize();
  plan.valuesAreKeys = op.getValueCache() == op.getKeyCache();
  plan.kvHeads = params.numHeads;
  plan.qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  plan.group = plan.qHeads / plan.kvHeads;
  plan.elementType = params.elementType;
  plan.elementBytes = llvm::divideCeil(params.elementType.getIntOrFloatBitWidth(), 8);
  plan.rowsElementType =
      cast<MemRefType>(op.getQ().getType()).getElementType();
  plan.dequantize = static_cast<bool>(params.scales);
  // A dequantizing slice lies within one scale group.
  int64_t scaleGroup = params.scales.groupSize(params.headSize);
  plan.scaleGroup = scaleGroup;
  // Lanes per key: a power of two dividing head_size, at most 32; the
  // fewest that keep a lane's slice within 16 bytes (one vector access, few
  // registers for q and the accumulators), else as many as divide it. Head
  // sizes like 80, 96 or 112 so get slices of 5-7 elements instead of 40,
  // 24 or 56 (which spilled).
  int64_t maxLanes = std::min<int64_t>(
      int64_t(1) << llvm::countr_zero(uint64_t(params.headSize)), 32);
  plan.lanes = 1;
  // Dequantized slices count as 2 bytes an element (8 per lane, as f16):
  // 16 one-byte codes per lane held 254 registers at head 128, GQA 4.
  int64_t laneBytes = plan.dequantize ? std::max<int64_t>(plan.elementBytes, 2)
                                      : plan.elementBytes;
  while (plan.lanes < maxLanes &&
         ((params.headSize / plan.lanes) * laneBytes > 16 ||
          scaleGroup % (params.headSize / plan.lanes) != 0))
    plan.lanes *= 2;
  plan.width = params.headSize / plan.lanes;
  if (scaleGroup % plan.width != 0)
    return op.emitOpError("cannot be lowered to the GPU: the scale groups "
                          "of ")
           << scaleGroup << " elements are narrower than a lane's slice of "
           << plan.width << " (at most 32 lanes per key); use a larger G";
  int64_t sliceBytes = plan.width * plan.elementBytes;
  // cp.async exists from sm_80; older chips load K and V straight from the
  // cache, and so does a dequantizing kernel.
  plan.asyncCopy = (sliceBytes == 4 || sliceBytes == 8 || sliceBytes == 16) &&
                   getChipVersion(target.chip) >= 80 && !plan.dequantize;
  // q and out slices: aligned as far as their layouts and the slice allow.
  auto qType = cast<MemRefType>(op.getQ().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  KVCacheParams rowParams = params;
  rowParams.elementType = plan.rowsElementType;
  KVCacheParams outParams = rowParams;
  outParams.headSize = plan.valueSize;
  int64_t rowBytes =
      llvm::divideCeil(plan.rowsElementType.getIntOrFloatBitWidth(), 8);
  int64_t rowWidth =
      std::min(getRowVectorWidth(rowParams, qType, target.vectorBytes),
               getRowVectorWidth(outParams, outType, target.vectorBytes));
  plan.rowAlignment =
      getAccessAlignment(plan.width * rowBytes, rowWidth * rowBytes);
  plan.keysPerStep = std::max<int64_t>(target.attentionThreads / plan.lanes, 1);
  // Head indices are computed in 32-bit-safe ranges on the device.
  if (plan.qHeads >= (int64_t(1) << 31))
    return op.emitOpError("cannot be lowered to the GPU: q has ")
           << plan.qHeads << " heads, more than 2^31 - 1";
  // As few passes as 8 heads per pass allow, the heads spread evenly over
  // them (a group of 12: 2 passes of 6, not 8 + 4 with 4 idle slots).
  // Wide slices (head sizes with few factors of two) hold fewer heads per
  // pass: about 64 floats of q and accumulators per thread at most.
  int64_t maxHeads = std::clamp<int64_t>(64 / plan.width, 1, kMaxHeadsPerPass);
  plan.headsPerPass = llvm::divideCeil(plan.group,
                                llvm::divideCeil(plan.group, maxHeads));
  // Shared memory: K and V slices of two steps (cp.async) and the partial
  // states (D + 2 floats) of every key group and head of a pass. Reduce the
  // keys per step first, then the heads per pass.
  // K and V slices even when the values are the keys (valuesAreKeys): the
  // plan stays attention_ragged's.
  auto sharedBytes = [&](int64_t keys, int64_t heads) {
    int64_t kv = plan.asyncCopy ? 2 * 2 * keys * plan.headSize * plan.elementBytes : 0;
    return kv + keys * heads * (plan.headSize + 2) * 4;
  };
  while (plan.keysPerStep > 1 &&
         sharedBytes(plan.keysPerStep, plan.headsPerPass) > kSharedBytes)
    plan.keysPerStep /= 2;
  while (plan.headsPerPass > 1 && sharedBytes(plan.keysPerStep, plan.headsPerPass) > kSharedBytes)
    plan.headsPerPass /= 2;
  if (sharedBytes(plan.keysPerStep, plan.headsPerPass) > kSharedBytes)
    return op.emitOpError("cannot be lowered to the GPU: one key of ")
           << plan.headSize
           << " elements needs more than 48 KiB of shared memory; use a "
              "smaller head size";
  plan.threads = plan.keysPerStep * plan.lanes;
  plan.sharedBytes = sharedBytes(plan.keysPerStep, plan.headsPerPass);
  AttentionPlans plans{plan, std::nullopt};
  // Quantized values narrower than the head: the tensor-core kernel
  // dequantizes whole V rows of their own.
  if (plan.valueSize != plan.headSize && plan.dequantize)
    return plans;
  bool causal = !op.getNoncausal();
  int64_t maxSplitHeads = getMaxSplitScoreHeads(op, target.chip);
  planTensorCores(plans.decode, target, scaleGroup, /*tileRows=*/1, causal,
                  maxSplitHeads);
  // A rope clause rotates q's pairs where the fragments load them.
  plans.decode.quadQueries = plans.decode.splitScores &&
                             getChipVersion(target.chip) >= 90 &&
                             getAccessAlignment(8, rowWidth * rowBytes) == 8 &&
                             !op.getCosSin();
  // The query-tile kernel, when a tile holds more than one row: M rows of
  // 128 (64 at head 256, whose output columns take twice the registers).
  int64_t tileHeight = plan.headSize > 128 ? 64 : 128;
  int64_t tileRows = tileHeight / plan.group;
  if (plans.decode.tensorCores && tileRows > 1 &&
      planTensorCores(plan, target, scaleGroup, tileRows, causal,
                      maxSplitHeads))
    plans.queryTiles = plan;
  return plans;
}

int64_t AttentionPlan::estimatedBlocksPerSM() const {
  constexpr int64_t kWarpsPerSM = 64, kRegistersPerSM = 65536,
                    kSharedPerSM = 228 * 1024, kSharedPerBlock = 1024;
  int64_t warps = llvm::divideCeil(threads, 32);
  int64_t registers =
      tensorCores
          ? estimateTensorCoreRegisters(headSize, valueSize, dSplit,
                                        keysPerStep, stageQueries,
                                        scoreSplit())
          : std::min<int64_t>(24 + headsPerPass * (3 * width + 2), 255);
  // Registers are allocated per warp in units of 256.
  int64_t warpRegisters = llvm::alignTo(registers * 32, 256);
  int64_t byRegisters = kRegistersPerSM / warpRegisters / warps;
  int64_t byShared = kSharedPerSM / (sharedBytes + kSharedPerBlock);
  return std::max<int64_t>(
      std::min({kWarpsPerSM / warps, byRegisters, byShared}), 1);
}

KeyBounds attention::getRowKeyBounds(KernelBuilder &k, AttentionOpInterface op,
                                     Value cached, Value position) {
  Value end = op.getNoncausal() ? cached : k.add(position, k.index(1));
  // A window or chunk: the keys from its start (never empty: p is in it).
  Value first;
  if (std::optional<uint64_t> window = op.getWindow()) {
    Value w = k.index(int64_t(*window));
    first = k.sub(k.maxu(end, w), w);
  } else if (std::optional<uint64_t> size = op.getChunk()) {
    Value c = k.index(int64_t(*size));
    first = k.mul(k.divu(position, c), c);
  }
  return {first, end};
}

std::tuple<Value, Value, Value>
attention::splitKeys(KernelBuilder &k, const KeyBounds &bounds, Value split,
                     Value numSplits, int64_t keysPerStep) {
  // Each split takes ceil(numKeys / numSplits) keys. The division is one of
  // unsigned i32 (a div.u32 in PTX, where one of index is a div.u64 behind a
  // 32-bit bypass): the key count is at most max_cache_length, an i32, the
  // split count at most 65535 (grid z). The bounds stay in index: with them
  // in i32 too, ptxas used more registers in some kernels. Divisions by the
  // constant keysPerStep need no div instruction.
  Value numKeys = bounds.first ? k.sub(bounds.end, bounds.first) : bounds.end;
  Value chunk = k.toIndex(k.ceilDiv(k.toI32(numKeys), k.toI32(numSplits)));
  Value begin = k.minu(k.mul(split, chunk), numKeys);
  Value end = k.minu(k.add(begin, chunk), numKeys);
  if (bounds.first) {
    begin = k.add(bounds.first, begin);
    end = k.add(bounds.first, end);
  }
  Value numSteps = k.ceilDiv(k.sub(end, begin), k.index(keysPerStep));
  return {begin, end, numSteps};
}

KeyRange attention::planKeyRange(KernelBuilder &k, AttentionOpInterface op,
                                 Value offsets, Value keyCache, Value row,
                                 Value numSequences, Value split,
                                 Value numSplits, int64_t keysPerStep) {
  Value batch = k.sequenceOf(offsets, numSequences, row);
  Value start = k.loadOffset(offsets, batch);
  Value cached = CacheLengthOp::create(k.b, k.loc, keyCache, batch);
  Value position = k.rowPosition(cached, row, start);
  auto [begin, end, numSteps] =
      splitKeys(k, getRowKeyBounds(k, op, cached, position), split, numSplits,
                keysPerStep);
  return {row, batch, begin, end, numSteps, position};
}
