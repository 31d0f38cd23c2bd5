//===- AttentionKernels.h - the attention kernels ---------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Private to lib/Conversion/KVCacheToGPU: the static plan of the attention
// kernel and the two kernels of attention_ragged (the attention kernel,
// AttentionToGPU.cpp, and the split-merge kernel, AttentionMerge.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONKERNELS_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONKERNELS_H

#include "GPUKernel.h"
#include "../KernelCommon/Quantization.h"
#include "../KernelCommon/Rope.h"
#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"
#include "KVCache/IR/KVCacheOps.h"

#include <optional>

namespace mlir::kvcache::attention {

/// Static shape of the attention kernel.
struct AttentionPlan {
  int64_t headSize;
  /// Elements of a V row and of an output row (head_size, or MLA's
  /// v_head_size: the first elements of the K row).
  int64_t valueSize;
  /// The value cache is the key cache (MLA, whose values are the keys'
  /// first valueSize elements; or attention_ragged given one cache twice):
  /// the kernels read each K row once and no V rows (on tensor cores: over
  /// a cache without scales, sharesKeyTiles).
  bool valuesAreKeys = false;
  int64_t kvHeads, qHeads;
  /// Query heads per KV head (GQA group).
  int64_t group;
  /// Heads of the group one pass over the keys handles (groups of up to 8:
  /// all of them; larger groups take several passes, so registers stay
  /// bounded).
  int64_t headsPerPass;
  /// Threads that share one key, each holding a `width`-element slice of
  /// the head: a power of two <= 32.
  int64_t lanes;
  int64_t width;
  /// Keys one step of the block handles (one per key group of `lanes`
  /// threads).
  int64_t keysPerStep;
  /// keysPerStep * lanes.
  int64_t threads;
  /// K and V are streamed through shared memory with cp.async (a slice is
  /// 4, 8 or 16 bytes, the chip is sm_80 or newer).
  bool asyncCopy;
  /// The alignment (bytes) a q/out slice access may claim.
  int64_t rowAlignment;
  /// The cache's element type (codes of a quantized cache).
  Type elementType;
  int64_t elementBytes;
  /// The element type of q and out (the cache's, or any float type over a
  /// quantized cache).
  Type rowsElementType;
  /// A quantized cache (with scales). On CUDA cores K and V slices are
  /// read dequantized to f32 (page_load with an f32 result), each within
  /// one scale group, straight from the cache (no cp.async); on tensor
  /// cores see `mmaType`.
  bool dequantize = false;

  /// The tensor-core kernel (AttentionMMA.cpp): the group's query heads are
  /// the rows of m16n8k16 mma.sync tiles; fields below describe it. When
  /// false, the CUDA-core kernel (AttentionToGPU.cpp) and the fields above.
  bool tensorCores = false;
  /// The element type of the mma.sync operands: the cache's (f16 or bf16),
  /// or over a quantized cache q's (f16 or bf16). A quantized cache's codes
  /// then stream through shared memory by cp.async, and each thread
  /// dequantizes the 16-code chunks it copied (`stored * scale`, rounded
  /// once to mmaType) into the tile the fragments are read from.
  Type mmaType;
  /// Scales of a quantized cache's chunks each copying thread holds per
  /// step (chunks of 16 codes: within one scale group).
  int64_t chunksPerThread = 0;
  /// Elements per scale of a quantized cache (head_size for tensor and
  /// token_head scales).
  int64_t scaleGroup = 0;
  /// Blocks that share a KV head's group in the decode kernel (grid y is
  /// kvHeads * headBlocks): block y takes query heads [y * blockHeads(),
  /// + blockHeads()) of KV head y / headBlocks. More than 1 when the
  /// group's tiles do not fit one block (MLA's latent rows above 64 heads:
  /// each block reads the latent rows for its heads).
  int64_t headBlocks = 1;
  /// Query heads of one block: group / headBlocks.
  int64_t blockHeads() const { return group / headBlocks; }
  /// The grid's y dimension: kvHeads * headBlocks.
  int64_t gridHeads() const { return kvHeads * headBlocks; }
  /// 16-head tiles of a block's heads (a power of two; heads past them are
  /// zero rows).
  int64_t mTiles = 0;
  /// Warps per 16-head tile: each computes the tile's scores and owns
  /// headSize / dSplit columns of its output.
  int64_t dSplit = 1;
  /// Elements of one K/V row in shared memory: headSize plus 16 bytes, so
  /// the 8 rows an ldmatrix reads fall in different banks.
  int64_t sharedRow = 0;
  /// q is copied once per row into shared memory (dSplit > 1: the warps of
  /// a tile all need it) when it fits, instead of each warp loading it.
  bool stageQueries = false;
  /// q's dims are split over the dSplit warps of a tile (MLA's 576-element
  /// latent rows, whose q fits neither a warp's registers nor, next to the
  /// K tiles, 48 KiB of shared memory): each warp computes the scores over
  /// its headSize / dSplit dims, and the warps of the tile sum them through
  /// shared memory.
  bool splitScores = false;
  /// splitScores on sm_90 and newer, q's rows allowing 8-byte accesses:
  /// q's A fragments come from 8-byte loads traded within each quad (whole
  /// 32-byte sectors) instead of 4-byte loads (on sm_80 the block of 64
  /// heads spilled 8 bytes with them).
  bool quadQueries = false;
  /// Warps that share q's dims: dSplit when splitScores, else 1.
  int64_t scoreSplit() const { return splitScores ? dSplit : 1; }
  /// Shared-memory stages of K and of V (a power of two >= 2): while step s
  /// is computed, steps s + 1 .. s + stages - 1 are in flight.
  int64_t stages = 2;
  /// Query rows of one sequence a block attends together (the query-tile
  /// kernel, docs/Design.md): the M rows of the mma tiles are the (row,
  /// query head) pairs of the tile, row-major. 1: the decode kernel, a
  /// block per row.
  int64_t tileRows = 1;
  /// The kernel checks a rope clause's rotary positions against its table
  /// (convert-kvcache-to-gpu's `checked`).
  bool checked = false;

  /// The tensor-core kernel reads its V fragments from the K tiles: one
  /// copy of each latent tile for q.K and p.V (valuesAreKeys, no
  /// dequantized tiles of their own).
  bool sharesKeyTiles() const { return valuesAreKeys && !dequantize; }

  /// Shared memory of the kernel (bytes): static, or with
  /// `dynamicSharedMemory` the launch's dynamic shared memory (the
  /// query-tile kernel, whose buffers may exceed the 48 KiB of static
  /// shared memory).
  int64_t sharedBytes;
  bool dynamicSharedMemory = false;
  /// Passes over the keys per (row, KV head).
  int64_t passes() const {
    return (group + headsPerPass - 1) / headsPerPass;
  }
  /// Blocks of this kernel one SM holds at once (sm_80/sm_90 limits: 64
  /// warps, 64 K registers, 228 KB shared memory), with the registers per
  /// thread estimated as `24 + headsPerPass * (3 * width + 2)`, a fit of
  /// the counts ptxas reports (bench/gpu/model.py: 48, 128, 240 for 1, 4,
  /// 8 heads of 8-element slices).
  int64_t estimatedBlocksPerSM() const;
};

/// The keys of a row that a block's split covers: [begin, end), in
/// `numSteps` steps of the plan's keysPerStep keys; `position` is the row's
/// position p in its sequence (ALiBi's distances are j - p).
struct KeyRange {
  Value row, batch, begin, end, numSteps, position;
};

/// The keys a row at `position` sees: [first, end) = [0, p + 1), or the
/// cached tokens [0, cache_length) when noncausal, from the start of `op`'s
/// window or chunk. `first` is null when it is always 0 (no window, no
/// chunk).
struct KeyBounds {
  Value first, end;
};
KeyBounds getRowKeyBounds(KernelBuilder &k, AttentionOpInterface op,
                          Value cached, Value position);

/// The part of `bounds` that `split` of `numSplits` covers: each split
/// takes ceil(keys / numSplits) of the keys. Returns [begin, end) and the
/// number of steps of `keysPerStep` keys.
std::tuple<Value, Value, Value> splitKeys(KernelBuilder &k,
                                          const KeyBounds &bounds,
                                          Value split, Value numSplits,
                                          int64_t keysPerStep);

/// The key range of query `row` for `split` of `numSplits`.
KeyRange planKeyRange(KernelBuilder &k, AttentionOpInterface op, Value offsets,
                      Value keyCache, Value row, Value numSequences,
                      Value split, Value numSplits, int64_t keysPerStep);

/// The kernel parameters of the op's q, key cache, value cache, row
/// offsets, out and workspace (null without one).
std::tuple<Value, Value, Value, Value, Value, Value>
getAttentionParams(GPUKernel &kernel, AttentionOpInterface op);

/// The kernel parameter of an optional operand, or null without one.
Value getOptionalParam(GPUKernel &kernel, Value operand);

/// The rope clause of `op` on q (none without one) over the kernel's
/// parameters.
QueryRope makeQueryRope(GPUKernel &kernel, AttentionOpInterface op,
                        const AttentionPlan &plan);

/// A block's result: `writeOut` (the normalised output) without a
/// workspace or with one split, else `writePartial` (the split's state).
void writeResultOrPartial(KernelBuilder &k, Value workspace, Value numSplits,
                          function_ref<void()> writeOut,
                          function_ref<void()> writePartial);

/// The tensor-core attention kernel (plan.tensorCores), same launch and
/// ABI as emitAttentionKernel's.
void emitTensorCoreAttention(GPUKernel &kernel, AttentionOpInterface op,
                             const AttentionPlan &plan);

/// The plans of `op` for `target`: the decode kernel's (a block per row),
/// and the query-tile kernel's when the attention has one (tensor cores, a
/// GQA group smaller than a tile: docs/Design.md).
struct AttentionPlans {
  AttentionPlan decode;
  std::optional<AttentionPlan> queryTiles;
};

/// The plans of `op` for `target`, or failure (with an error on `op`).
FailureOr<AttentionPlans> makeAttentionPlans(AttentionOpInterface op,
                                             const GPUKernelTarget &target);

/// The attention kernel, block (row, kv head, split) or, with
/// plan.tileRows > 1, (query tile slot, kv head, split), launched with
/// `grid` x blocks and `splits` splits. Fails when the kernel cannot be
/// created.
LogicalResult emitAttentionKernel(OpBuilder &host, AttentionOpInterface op,
                                  const AttentionPlan &plan, Value grid,
                                  Value splits);

/// The merge kernel: block (row, query head) combines the splits' partial
/// states of its row from the workspace.
LogicalResult emitAttentionMergeKernel(OpBuilder &host, AttentionOpInterface op,
                                       const AttentionPlan &plan, Value grid,
                                       Value splits);

} // namespace mlir::kvcache::attention

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONKERNELS_H
