//===- AttentionMMA.h - the tensor-core attention kernel --------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Private to lib/Conversion/KVCacheToGPU: the state of the tensor-core
// attention kernel (AttentionMMA.cpp: the key loop and the result;
// AttentionMMASoftmax.cpp: the online softmax of a step;
// AttentionMMAData.cpp: q fragments, K/V copies and their dequantization,
// ldmatrix and mma.sync).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONMMA_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONMMA_H

#include "AttentionKernels.h"
#include "../KernelCommon/AttentionClauses.h"

#include <array>

namespace mlir::kvcache::attention {

/// An m16n8 f32 accumulator fragment: c0, c1 (row groupID, columns
/// 2 * tig, 2 * tig + 1) and c2, c3 (row groupID + 8, same columns).
using Accumulator = std::array<Value, 4>;

/// The running softmax state of the lane's two rows (groupID, groupID + 8):
/// max in the log2 domain, the lane's partial sum, the output tiles.
struct TileState {
  Value max[2], sum[2];
  SmallVector<Accumulator> out;

  SmallVector<Value> flatten() const {
    SmallVector<Value> values = {max[0], max[1], sum[0], sum[1]};
    for (const Accumulator &tile : out)
      values.append(tile.begin(), tile.end());
    return values;
  }
  static TileState unflatten(ValueRange values) {
    TileState state;
    for (int r = 0; r < 2; ++r) {
      state.max[r] = values[r];
      state.sum[r] = values[2 + r];
    }
    for (size_t i = 4; i < values.size(); i += 4)
      state.out.push_back({values[i], values[i + 1], values[i + 2], values[i + 3]});
    return state;
  }
};

/// What a step's softmax (updateSoftmax) leaves for the state of the lane's
/// two rows: `state` with the max each row's probabilities use, and either
/// the state after the step (`keeps` null) or, where the output tiles are
/// rescaled later (rescaleState), the old sums and tiles, the step's sums
/// of probabilities, and whether both rows kept their max.
struct SoftmaxStep {
  TileState state;
  Value keeps;
};

/// The query rows of one block: `count` rows (1 to plan.tileRows) of
/// sequence `batch` from ragged row `first`; and the lane's two M rows
/// (r = 0: groupID, r = 1: groupID + 8 of its warp's 16-row tile): the
/// ragged row (clamped into the tile), the query head, whether the M row
/// holds a (row, head) pair of the tile, the row's position and the keys
/// it sees in the block's split, [keyFirst, keyEnd).
struct TileRows {
  Value batch, first, count;
  Value row[2], head[2], valid[2], position[2], keyFirst[2], keyEnd[2];
};

/// The keys a block's split covers for its tile: [begin, end), in
/// `numSteps` steps; the steps [firstFull, endFull) hold only keys that
/// every row of the tile sees (no masking).
struct TileKeys {
  Value begin, end, numSteps, firstFull, endFull;
};

class TensorCoreAttention {
public:
  TensorCoreAttention(GPUKernel &kernel, AttentionOpInterface op,
                      const AttentionPlan &plan);
  void emit();

private:
  /// Calls `body` for each query tile of the block (grid x): tiles of
  /// plan.tileRows rows of one sequence, sequence-major, the last tiles of
  /// a sequence (the most keys under a causal mask) first.
  void forEachQueryTile(function_ref<void(Value batch, Value first,
                                          Value count)> body);
  void emitTile(Value batch, Value first, Value count);
  /// The tile's rows and the keys of this block's split.
  std::pair<TileRows, TileKeys> planTile(Value batch, Value first,
                                         Value count);
  /// Runs steps [from, to) of the key loop from `state`.
  TileState emitSteps(const TileKeys &keys, const TileRows &rows, Value from,
                      Value to, ArrayRef<SmallVector<Value>> queries,
                      const TileState &state, bool masked);
  /// The lane's A fragments of q, one per 16 columns of the head.
  SmallVector<SmallVector<Value>> loadQueries(const TileRows &rows);
  /// plan.quadQueries: the A fragment of q's columns [16 kk, + 16) of the
  /// warp's share, from 8-byte loads traded within each quad.
  SmallVector<Value> loadQueryFragmentByQuads(const TileRows &rows,
                                              int64_t kk);
  /// Copies q into shared memory (sharedQ), zero rows past the tile.
  void stageQueries(const TileRows &rows);
  /// The ragged row and query head of M row `m` (an index) of the tile at
  /// `first` with `count` rows, and whether it holds one.
  std::tuple<Value, Value, Value> describeMRow(Value first, Value count,
                                               Value m);
  /// The A fragment of q's columns [16 kk, 16 kk + 16).
  SmallVector<Value> queryFragment(ArrayRef<SmallVector<Value>> queries,
                                   int64_t kk);
  /// The row this thread copies for `step` of `cache`: its lookup
  /// (`tile`), or in a query tile the key to look up where the copies are
  /// issued, if the step is one of the tile's (`issued`: the prologue and
  /// the steps issue `stages - 1` steps ahead); and the bytes of each chunk
  /// (0 past the end: zero fill, from a valid row).
  struct CopySource {
    Value tile, batch, cache, key, count, issued;
  };
  /// The type of a copied key row (kvcache.tile of one row).
  MemRefType copyRowType();
  CopySource copySource(Value batch, const TileKeys &keys, Value step,
                        Value cache);
  /// Copies `source`, the keys of `step`, into buffer `step % stages` of
  /// `shared` and commits them as one group.
  void issueCopies(const CopySource &source, Value step, Value shared);
  /// V's copies of `step` (to codesV or sharedV), or, when the V fragments
  /// come from the K tiles (plan.sharesKeyTiles), an empty group: the
  /// waits count K and V groups alike.
  void issueValueCopies(const CopySource &source, Value step);
  TileState emitStep(const TileKeys &keys, const TileRows &rows, Value step,
                     ArrayRef<SmallVector<Value>> queries,
                     const TileState &state, bool masked);
  /// The online softmax of a step (AttentionMMASoftmax.cpp): turns
  /// `scores` (scaled, masked) into probabilities against the max each row
  /// uses, which it takes anew only past kRescaleThreshold, rescaling the
  /// sums and output tiles then (behind a branch), at once or, where
  /// rescalesLate(), in rescaleState.
  SoftmaxStep updateSoftmax(SmallVector<Accumulator> &scores,
                            const TileState &state, Value log2Scale);
  /// The state after the step (the probabilities packed): `step`'s, or
  /// where it is left to do, its sums added to the old ones rescaled with
  /// the output tiles unless both rows kept their max.
  TileState rescaleState(const TileState &state, const SoftmaxStep &step);
  /// `state` unless `keeps`, else (a branch) with the max of each row's
  /// and `maxima`'s, its sums and output tiles rescaled to it.
  TileState rescaled(const TileState &state, ArrayRef<Value> maxima,
                     Value keeps);
  /// Whether the output tiles are rescaled after the probabilities are
  /// packed (fewer registers live: over a quantized cache the decode
  /// kernel spilled 8 bytes in ptxas, sm_90, i8 block<32>, the other way)
  /// rather than before the exponentials (one select a row less; at MQA 64
  /// the decode kernel took 217 registers instead of 168 the other way).
  bool rescalesLate() const { return plan.dequantize && plan.tileRows == 1; }
  SmallVector<Accumulator> computeScores(Value buffer,
                                         ArrayRef<SmallVector<Value>> queries);
  /// plan.splitScores: the sums of the tile's warps' partial `scores`
  /// (over their shares of q's dims), the same in each of them.
  void sumPartialScores(SmallVector<Accumulator> &scores);
  void accumulateValues(Value buffer, ArrayRef<SmallVector<Value>> probs,
                        SmallVector<Accumulator> &out);
  void writeResult(const TileRows &rows, const TileState &state);

  /// D += A B on tensor cores (m16n8k16, f32 accumulation).
  Accumulator mma(ArrayRef<Value> a, ArrayRef<Value> b, const Accumulator &c);
  /// `tiles` 8x8 matrices of `shared` at `indices` (this lane's address).
  SmallVector<Value> ldmatrix(Value shared, ValueRange indices, int64_t tiles,
                              bool transpose);
  void waitGroups(int64_t pending);

  /// Quantized caches: the scale of each chunk this thread copies for
  /// `step` of `cache` (0 past the end), loaded when the copy is issued.
  SmallVector<Value> loadChunkScales(Value batch, const TileKeys &keys,
                                     Value step, Value cache);
  /// Parks `scales` in this thread's slots of buffer `step % stages` (K's
  /// folded scales: the first in its key row's slot, by the thread that
  /// copies chunk 0).
  void storeChunkScales(ArrayRef<Value> scales, Value step, Value slots);
  /// Dequantizes this thread's chunks of buffer `buffer` of `codes` with
  /// its parked scales into `tile` (without them, the codes' values alone,
  /// when `scaled` is false), then waits for the block.
  void dequantizeChunks(Value buffer, Value codes, Value slots, Value tile,
                        bool scaled = true);
  /// Whether K's scales are folded into the scores: one scale per key row
  /// (token_head, tensor). K tiles then hold the codes' values, exact in
  /// f16 and bf16, and each score is multiplied by its key's scale.
  bool foldsKeyScales() const {
    return plan.dequantize && plan.scaleGroup >= plan.headSize;
  }
  /// Multiplies each of this lane's scores of buffer `buffer` by its key's
  /// scale, parked per key row (slotsK is [stages][keysPerStep] then).
  void scaleScores(SmallVector<Accumulator> &scores, Value buffer);
  /// The buffer of the fragments' tiles for step buffer `buffer` (a
  /// quantized cache has one dequantized tile).
  Value tileBuffer(Value buffer) {
    return plan.dequantize ? k.index(0) : buffer;
  }

  /// Soft cap and ALiBi on the step's scores (log2 domain after it).
  void transformScores(SmallVector<Accumulator> &scores,
                       const TileRows &rows, Value stepBegin);
  /// The key of score element `i` of key tile `n` of a step.
  Value scoreKey(Value stepBegin, size_t n, int64_t i);

  GPUKernel &kernel;
  GPUKernelBuilder &k;
  AttentionOpInterface op;
  const AttentionPlan &plan;
  OnlineSoftmax softmax;
  AttentionClauses clauses;
  /// ALiBi slopes of the thread's two M rows (groupID, groupID + 8).
  Value slopes[2];
  /// The thread's two M rows (groupID and groupID + 8 of its warp's tile).
  Value mRow[2];
  SplitWorkspace layout;
  Value q, keys, values, offsets, out, workspace;
  Value sharedK, sharedV, sharedQ;
  /// plan.splitScores: each warp's partial scores of a step
  /// ([warp][key tile][lane][4]).
  Value sharedScores;
  /// Quantized caches: the code buffers the copies land in, and the
  /// threads' chunk scales ([stages][threads * chunksPerThread]).
  Value codesK, codesV, slotsK, slotsV;
  Value kvHead, split, numSplits, lane, groupId, tig, mTile, firstColumn;
  /// The block's first query head (kvHead * group, plus the block's share
  /// with plan.headBlocks > 1).
  Value firstHead;
  /// The first of q's dims the warp's scores cover (0 unless
  /// plan.splitScores).
  Value firstDim;
  /// The key row (within a step) and first chunk this thread copies.
  Value copyKey, copyChunk;
  VectorType pairType, accPairType;
  /// Threads that copy (a step may hold fewer 16-byte chunks than the
  /// block has threads: the others only commit empty groups).
  int64_t columnsPerWarp, chunksPerRow, copyThreads, threadsPerKey;
};

} // namespace mlir::kvcache::attention

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONMMA_H
