//===- AttentionMMA.cpp - attention_ragged on tensor cores ------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The attention kernel for f16/bf16 caches on sm_80 and newer: the query
// heads of a KV group are the rows (M) of m16n8k16 mma.sync tiles, so one
// pass over K/V serves any group size (multi-query included) and the key
// loop's instruction count per byte of K/V does not grow with the group.
// Same launch, grid and workspace as the CUDA-core kernel
// (docs/KernelABI.md); the plan (AttentionPlan.cpp) says when it is used.
//
// - Block (row, KV head, split); warp w handles the 16-head tile
//   w / dSplit and output columns [(w % dSplit) * D / dSplit, ...) of it.
//   Every warp of a tile computes the tile's scores S = Q K^T itself
//   (cheap on tensor cores), so warps never exchange softmax state.
// - A step streams keysPerStep keys of K and of V (8 KiB each; 4 KiB in
//   the 4-stage plan of one warp per tile) into shared memory with
//   cp.async through `stages` buffers, K and V in separate groups: the
//   scores of step s are computed while V of step s lands, both while
//   steps s + 1 .. s + stages - 1 are in flight. Each thread copies
//   16-byte chunks of one key row, one lookup (kvcache.tile) per cache and
//   step, K's and V's both at the top of the step (V's copies, after the
//   scores, find their address ready). K and V are separate kernel
//   parameters (they may come from different collections), so the two
//   lookups are not merged. Rows are padded by 16 bytes so that the 8 row
//   addresses of an ldmatrix hit distinct banks.
// - Fragments: q (A, row-major) from global memory once per row; K (B of
//   Q K^T) with ldmatrix from the [key][d] rows; V (B of P V) with
//   ldmatrix.trans; P (A of P V) is the score accumulator rounded to the
//   K/V type (docs/Contract.md 3.3 allows it), repacked in registers.
// - Online softmax in the log2 domain, per key tile: one max (two xor
//   shuffles within a quad) and one rescale of the accumulator per step,
//   a finite initial max (no -inf tests), row sums kept per lane and
//   summed across the quad once at the end. Only the last step, which can
//   hold keys past the end, masks scores.
// - A quantized cache (f16/bf16 q, scale groups of 16 or more): the codes
//   stream through `stages` code buffers the same way; after its wait each
//   thread dequantizes the chunks it copied (`stored * scale` in f32, the
//   scale loaded when the copy was issued and parked in shared memory,
//   rounded once to q's type) into one K (V) tile, and a barrier later the
//   fragments are read from it as above. Every fp8, i8 code is exact in f16
//   and bf16; the rounding of `stored * scale` is the one an f16 (bf16)
//   cache has.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "../KernelCommon/Softmax.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <limits>

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

namespace {

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

class TensorCoreAttention {
public:
  TensorCoreAttention(GPUKernel &kernel, AttentionRaggedOp op,
                      const AttentionPlan &plan);
  void emit();

private:
  void emitRow(const KeyRange &range);
  /// The lane's A fragments of q, one per 16 columns of the head.
  SmallVector<SmallVector<Value>> loadQueries(Value row);
  /// Copies q into shared memory (sharedQ), zero rows past the group.
  void stageQueries(Value row);
  /// The A fragment of q's columns [16 kk, 16 kk + 16).
  SmallVector<Value> queryFragment(ArrayRef<SmallVector<Value>> queries,
                                   int64_t kk);
  /// The row this thread copies for `step` of `cache` (a lookup) and the
  /// bytes of each chunk (0 past the end: zero fill, from a valid row).
  struct CopySource {
    Value tile, count;
  };
  CopySource copySource(const KeyRange &range, Value step, Value cache);
  /// Copies `source`, the keys of `step`, into buffer `step % stages` of
  /// `shared` and commits them as one group.
  void issueCopies(const CopySource &source, Value step, Value shared);
  TileState emitStep(const KeyRange &range, Value step,
                     ArrayRef<SmallVector<Value>> queries,
                     const TileState &state, bool masked);
  SmallVector<Accumulator> computeScores(Value buffer,
                                         ArrayRef<SmallVector<Value>> queries);
  void accumulateValues(Value buffer, ArrayRef<SmallVector<Value>> probs,
                        SmallVector<Accumulator> &out);
  void writeResult(const KeyRange &range, const TileState &state);

  /// D += A B on tensor cores (m16n8k16, f32 accumulation).
  Accumulator mma(ArrayRef<Value> a, ArrayRef<Value> b, const Accumulator &c);
  /// `tiles` 8x8 matrices of `shared` at `indices` (this lane's address).
  SmallVector<Value> ldmatrix(Value shared, ValueRange indices, int64_t tiles,
                              bool transpose);
  void waitGroups(int64_t pending);

  /// Quantized caches: the scale of each chunk this thread copies for
  /// `step` of `cache` (0 past the end), loaded when the copy is issued.
  SmallVector<Value> loadChunkScales(const KeyRange &range, Value step,
                                     Value cache);
  /// Parks `scales` in this thread's slots of buffer `step % stages`.
  void storeChunkScales(ArrayRef<Value> scales, Value step, Value slots);
  /// Dequantizes this thread's chunks of buffer `buffer` of `codes` with
  /// its parked scales into `tile`, then waits for the block.
  void dequantizeChunks(Value buffer, Value codes, Value slots, Value tile);
  /// The buffer of the fragments' tiles for step buffer `buffer` (a
  /// quantized cache has one dequantized tile).
  Value tileBuffer(Value buffer) {
    return plan.dequantize ? k.index(0) : buffer;
  }

  GPUKernel &kernel;
  KernelBuilder &k;
  AttentionRaggedOp op;
  const AttentionPlan &plan;
  SplitWorkspace layout;
  Value q, keys, values, offsets, out, workspace;
  Value sharedK, sharedV, sharedQ;
  /// Quantized caches: the code buffers the copies land in, and the
  /// threads' chunk scales ([stages][threads * chunksPerThread]).
  Value codesK, codesV, slotsK, slotsV;
  Value kvHead, split, numSplits, lane, groupId, tig, mTile, firstColumn;
  /// The key row (within a step) and first chunk this thread copies.
  Value copyKey, copyChunk;
  VectorType pairType, accPairType;
  /// Threads that copy (a step may hold fewer 16-byte chunks than the
  /// block has threads: the others only commit empty groups).
  int64_t columnsPerWarp, chunksPerRow, copyThreads, threadsPerKey;
};

TensorCoreAttention::TensorCoreAttention(GPUKernel &kernel,
                                         AttentionRaggedOp op,
                                         const AttentionPlan &plan)
    : kernel(kernel), k(kernel.builder()),
      op(op), plan(plan),
      layout{plan.headSize, plan.qHeads} {
  std::tie(q, keys, values, offsets, out, workspace) =
      getAttentionParams(kernel, op);
  int64_t tiles = plan.dequantize ? 1 : plan.stages;
  sharedK = kernel.addSharedBuffer({tiles, plan.keysPerStep, plan.sharedRow},
                                   plan.mmaType);
  sharedV = kernel.addSharedBuffer({tiles, plan.keysPerStep, plan.sharedRow},
                                   plan.mmaType);
  if (plan.dequantize) {
    SmallVector<int64_t> codes = {plan.stages, plan.keysPerStep,
                                  plan.headSize};
    codesK = kernel.addSharedBuffer(codes, plan.elementType);
    codesV = kernel.addSharedBuffer(codes, plan.elementType);
    SmallVector<int64_t> slots = {plan.stages,
                                  plan.threads * plan.chunksPerThread};
    slotsK = kernel.addSharedBuffer(slots, k.b.getF32Type());
    slotsV = kernel.addSharedBuffer(slots, k.b.getF32Type());
  }
  if (plan.stageQueries)
    sharedQ = kernel.addSharedBuffer({plan.mTiles * 16, plan.sharedRow},
                                     plan.mmaType);
  pairType = VectorType::get({2}, plan.mmaType);
  accPairType = VectorType::get({2}, k.b.getF32Type());
  columnsPerWarp = plan.headSize / plan.dSplit;
  chunksPerRow = plan.headSize * plan.elementBytes / 16;
  copyThreads = std::min(plan.threads, plan.keysPerStep * chunksPerRow);
  threadsPerKey = copyThreads / plan.keysPerStep;
}

void TensorCoreAttention::emit() {
  Value thread = kernel.threadId(gpu::Dimension::x);
  kvHead = kernel.blockId(gpu::Dimension::y);
  split = kernel.blockId(gpu::Dimension::z);
  numSplits = kernel.gridDim(gpu::Dimension::z);
  Value warp = k.divu(thread, k.index(32));
  lane = k.remu(thread, k.index(32));
  groupId = k.divu(lane, k.index(4));
  tig = k.remu(lane, k.index(4));
  mTile = k.divu(warp, k.index(plan.dSplit));
  firstColumn = k.mul(k.remu(warp, k.index(plan.dSplit)),
                      k.index(columnsPerWarp));
  copyKey = k.divu(thread, k.index(threadsPerKey));
  copyChunk = k.remu(thread, k.index(threadsPerKey));
  kernel.forEachBatchRow(q, offsets, [&](Value row, Value numSequences) {
    emitRow(planKeyRange(k, offsets, keys, row, numSequences, split,
                         numSplits, plan.keysPerStep));
  });
}

void TensorCoreAttention::emitRow(const KeyRange &range) {
  SmallVector<SmallVector<Value>> queries = loadQueries(range.row);
  // Groups in flight at the top of step s: K(s), V(s), ...,
  // K(s + stages - 2), V(s + stages - 2).
  k.ifThen(k.ult(k.index(0), range.numSteps), [&] {
    for (int64_t s = 0; s + 1 < plan.stages; ++s) {
      Value step = k.index(s);
      for (auto [cache, codes, slots, shared] :
           {std::tuple{keys, codesK, slotsK, sharedK},
            std::tuple{values, codesV, slotsV, sharedV}}) {
        CopySource source = copySource(range, step, cache);
        if (plan.dequantize)
          storeChunkScales(loadChunkScales(range, step, cache), step, slots);
        issueCopies(source, step, plan.dequantize ? codes : shared);
      }
    }
  });
  TileState init;
  // A finite initial max: exp2(max - newMax) is 0 for the first keys, and a
  // step of masked keys (-inf scores) leaves the state as it was.
  for (int r = 0; r < 2; ++r) {
    init.max[r] = k.f32(-std::numeric_limits<float>::max());
    init.sum[r] = k.f32(0);
  }
  for (int64_t n = 0; n < columnsPerWarp / 8; ++n)
    init.out.push_back({k.f32(0), k.f32(0), k.f32(0), k.f32(0)});
  Value fullSteps =
      k.divu(k.sub(range.end, range.begin), k.index(plan.keysPerStep));
  SmallVector<Value> loop = k.forLoop(
      k.index(0), fullSteps, k.index(1), init.flatten(),
      [&](Value step, ValueRange carried) {
        return emitStep(range, step, queries, TileState::unflatten(carried),
                        /*masked=*/false)
            .flatten();
      });
  SmallVector<Type> types;
  for (Value v : loop)
    types.push_back(v.getType());
  TileState state = TileState::unflatten(k.ifThenElse(
      k.ult(fullSteps, range.numSteps), types,
      [&] {
        return emitStep(range, fullSteps, queries,
                        TileState::unflatten(loop), /*masked=*/true)
            .flatten();
      },
      [&] { return loop; }));
  // The copies of the step past the last (zero-fill) land before the
  // buffers are reused, and every warp is done reading them.
  waitGroups(0);
  gpu::BarrierOp::create(k.b, k.loc);
  writeResult(range, state);
}

SmallVector<SmallVector<Value>>
TensorCoreAttention::loadQueries(Value row) {
  // A fragment of columns [16 kk, 16 kk + 16): a0a1 (row g, columns 2 tig),
  // a2a3 (row g + 8), a4a5 (row g, columns 2 tig + 8), a6a7 (row g + 8).
  // Rows past the group are zeros.
  if (sharedQ) {
    stageQueries(row);
    return {};
  }
  SmallVector<SmallVector<Value>> fragments;
  Value zero = k.splatConstant(pairType, 0);
  int64_t alignment = std::min<int64_t>(4, plan.rowAlignment);
  for (int64_t kk = 0; kk < plan.headSize / 16; ++kk) {
    SmallVector<Value> fragment;
    for (auto [rowOffset, columnOffset] :
         {std::pair<int64_t, int64_t>{0, 0}, {8, 0}, {0, 8}, {8, 8}}) {
      Value local = k.add(k.add(k.mul(mTile, k.index(16)), groupId),
                          k.index(rowOffset));
      bool padded = plan.mTiles * 16 > plan.group;
      Value valid = padded ? k.ult(local, k.index(plan.group)) : Value();
      if (padded)
        local = k.minu(local, k.index(plan.group - 1));
      Value head = k.add(k.mul(kvHead, k.index(plan.group)), local);
      Value column = k.add(k.mul(tig, k.index(2)), k.index(16 * kk + columnOffset));
      Value pair = vector::LoadOp::create(k.b, k.loc, pairType, q,
                                          ValueRange{row, head, column},
                                          /*nontemporal=*/false,
                                          llvm::Align(alignment));
      fragment.push_back(padded ? k.select(valid, pair, zero) : pair);
    }
    fragments.push_back(fragment);
  }
  return fragments;
}

void TensorCoreAttention::stageQueries(Value row) {
  // The warps sharing a tile need all of its q: the block copies q once
  // into shared memory (zero rows past the group), then each warp reads its
  // A fragments with ldmatrix.x4 (matrices: rows 0-7 and 8-15 of columns
  // 16 kk .. + 8, then of 16 kk + 8 .. + 16).
  int64_t chunkBytes = std::min<int64_t>(16, plan.rowAlignment);
  int64_t chunkElements = std::max<int64_t>(chunkBytes / 2, 1);
  auto chunkType = VectorType::get({chunkElements}, plan.mmaType);
  int64_t chunksPerQRow = plan.headSize / chunkElements;
  int64_t total = plan.mTiles * 16 * chunksPerQRow;
  Value thread = kernel.threadId(gpu::Dimension::x);
  Value zero = k.splatConstant(chunkType, 0);
  for (int64_t first = 0; first < total; first += plan.threads) {
    auto copy = [&] {
      Value index = k.add(thread, k.index(first));
      Value local = k.divu(index, k.index(chunksPerQRow));
      Value column = k.mul(k.remu(index, k.index(chunksPerQRow)),
                           k.index(chunkElements));
      Value valid = k.ult(local, k.index(plan.group));
      Value head = k.add(k.mul(kvHead, k.index(plan.group)),
                         k.minu(local, k.index(plan.group - 1)));
      Value chunk = vector::LoadOp::create(k.b, k.loc, chunkType, q,
                                           ValueRange{row, head, column},
                                           /*nontemporal=*/false,
                                           llvm::Align(chunkBytes));
      vector::StoreOp::create(k.b, k.loc, k.select(valid, chunk, zero), sharedQ,
                              ValueRange{local, column});
    };
    if (first + plan.threads <= total)
      copy();
    else
      k.ifThen(k.ult(thread, k.index(total - first)), copy);
  }
  gpu::BarrierOp::create(k.b, k.loc);
  // The fragments are read from shared memory where the scores need them
  // (queryFragment), not held in registers across the key loop.
}

SmallVector<Value>
TensorCoreAttention::queryFragment(ArrayRef<SmallVector<Value>> queries,
                                   int64_t kk) {
  if (!sharedQ)
    return queries[kk];
  Value matrix = k.divu(lane, k.index(8));
  Value rowInTile = k.add(k.add(k.mul(mTile, k.index(16)), k.remu(lane, k.index(8))),
                          k.mul(k.remu(matrix, k.index(2)), k.index(8)));
  Value columnHalf = k.mul(k.divu(matrix, k.index(2)), k.index(8));
  return ldmatrix(sharedQ,
                  ValueRange{rowInTile, k.add(columnHalf, k.index(16 * kk))}, 4,
                  false);
}

TensorCoreAttention::CopySource
TensorCoreAttention::copySource(const KeyRange &range, Value step,
                                Value cache) {
  // Key row `copyKey` of the step; past the end, the zero-fill form from a
  // valid row (range.begin).
  MLIRContext *ctx = k.b.getContext();
  Value key = k.add(range.begin,
                    k.add(k.mul(step, k.index(plan.keysPerStep)), copyKey));
  Value valid = k.ult(key, range.end);
  key = k.select(valid, key, range.begin);
  Value count = k.select(valid, k.index(16 / plan.elementBytes), k.index(0));
  auto tileType = MemRefType::get(
      {1, plan.headSize}, plan.elementType,
      StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                             {plan.kvHeads * plan.headSize, 1}));
  return {TileOp::create(k.b, k.loc, tileType, cache, range.batch, key, kvHead),
          count};
}

void TensorCoreAttention::issueCopies(const CopySource &source, Value step,
                                      Value shared) {
  // This thread's chunks of its key row: chunk copyChunk + i *
  // threadsPerKey, so the threads of a key read consecutive 16-byte chunks.
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(k.b.getContext());
  int64_t chunkElements = 16 / plan.elementBytes;
  SmallVector<Value> tokens;
  auto copy = [&] {
    Value buffer = k.remu(step, k.index(plan.stages));
    for (int64_t i = 0; i < chunksPerRow / threadsPerKey; ++i) {
      Value element = k.mul(k.add(copyChunk, k.index(i * threadsPerKey)),
                            k.index(chunkElements));
      tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
          k.b, k.loc, tokenType, shared, ValueRange{buffer, copyKey, element},
          source.tile, ValueRange{k.index(0), element},
          k.b.getIndexAttr(chunkElements), source.count, k.b.getUnitAttr()));
    }
  };
  if (copyThreads == plan.threads) {
    copy();
    nvgpu::DeviceAsyncCreateGroupOp::create(k.b, k.loc, tokenType, tokens);
    return;
  }
  // Every thread commits a group (empty past copyThreads), so the waits'
  // group counts hold for all of them.
  k.ifThen(k.ult(kernel.threadId(gpu::Dimension::x), k.index(copyThreads)),
           copy);
  NVVM::CpAsyncCommitGroupOp::create(k.b, k.loc);
}

void TensorCoreAttention::waitGroups(int64_t pending) {
  // cp.async.wait_group: nvgpu's wait needs a group token, and creating one
  // would commit an extra (empty) group.
  NVVM::CpAsyncWaitGroupOp::create(k.b, k.loc, pending);
}

TileState TensorCoreAttention::emitStep(const KeyRange &range, Value step,
                                        ArrayRef<SmallVector<Value>> queries,
                                        const TileState &state, bool masked) {
  Value buffer = k.remu(step, k.index(plan.stages));
  Value next = k.add(step, k.index(plan.stages - 1));
  // K(step) has landed for every thread (the groups after it: V(step) and
  // stages - 2 steps of K and V); buffer next % stages was last read in
  // the previous step, before this barrier.
  int64_t pending = 2 * plan.stages - 3;
  waitGroups(pending);
  gpu::BarrierOp::create(k.b, k.loc);
  // Both lookups of step `next` at once: V's row address is ready (and,
  // when K and V share a lookup table, its line is in L1) long before V's
  // copies are issued, after the scores.
  CopySource nextK = copySource(range, next, keys);
  CopySource nextV = copySource(range, next, values);
  // The scales' lookups next to the tiles' (one load of each table entry).
  SmallVector<Value> scalesK, scalesV;
  if (plan.dequantize) {
    scalesK = loadChunkScales(range, next, keys);
    scalesV = loadChunkScales(range, next, values);
  }
  issueCopies(nextK, next, plan.dequantize ? codesK : sharedK);
  if (plan.dequantize)
    dequantizeChunks(buffer, codesK, slotsK, sharedK);
  SmallVector<Accumulator> scores =
      computeScores(tileBuffer(buffer), queries);
  if (plan.dequantize)
    storeChunkScales(scalesK, next, slotsK);

  // Softmax over the step's keys, rows groupID (r = 0) and groupID + 8, in
  // the log2 domain: a scale c > 0 applies to the row max and inside
  // exp2(s c - max) (one fma per score); any other scale multiplies the
  // scores first.
  float scale = OnlineSoftmax::getLog2Scale(op.getScale().convertToFloat());
  Value log2Scale = k.f32(scale > 0 ? scale : 1.0f);
  if (!(scale > 0))
    for (Accumulator &tile : scores)
      for (Value &s : tile)
        s = k.fmul(s, k.f32(scale));
  Value minusInf = k.f32(-std::numeric_limits<float>::infinity());
  Value stepBegin =
      k.add(range.begin, k.mul(step, k.index(plan.keysPerStep)));
  TileState updated;
  Value rescale[2];
  if (masked)
    for (size_t n = 0; n < scores.size(); ++n)
      for (int64_t i = 0; i < 4; ++i) {
        Value key = k.add(stepBegin, k.add(k.mul(tig, k.index(2)),
                                           k.index(8 * n + i % 2)));
        scores[n][i] = k.select(k.ult(key, range.end), scores[n][i], minusInf);
      }
  for (int r = 0; r < 2; ++r) {
    Value max = state.max[r];
    Value local = scores[0][2 * r];
    for (const Accumulator &tile : scores)
      for (int i = 0; i < 2; ++i)
        local = k.fmax(local, tile[2 * r + i]);
    updated.max[r] = k.fmax(max, k.fmul(k.laneMax(local, 4), log2Scale));
    rescale[r] = k.exp2Approx(k.fsub(max, updated.max[r]));
    Value negativeMax = arith::NegFOp::create(k.b, k.loc, updated.max[r]);
    Value sum = k.fmul(state.sum[r], rescale[r]);
    for (Accumulator &tile : scores)
      for (int i = 0; i < 2; ++i) {
        Value &s = tile[2 * r + i];
        s = k.exp2Approx(k.fma(s, log2Scale, negativeMax));
        sum = k.fadd(sum, s);
      }
    updated.sum[r] = sum;
  }
  // P as A fragments of 16 keys: tiles 2j and 2j + 1 of the scores.
  SmallVector<SmallVector<Value>> probs;
  auto pack = [&](Value x, Value y) {
    Value pair = vector::FromElementsOp::create(k.b, k.loc, accPairType,
                                                ValueRange{x, y});
    return k.narrow(pair, pairType);
  };
  for (size_t j = 0; j + 1 < scores.size(); j += 2)
    probs.push_back({pack(scores[j][0], scores[j][1]),
                     pack(scores[j][2], scores[j][3]),
                     pack(scores[j + 1][0], scores[j + 1][1]),
                     pack(scores[j + 1][2], scores[j + 1][3])});
  updated.out = state.out;
  for (Accumulator &tile : updated.out)
    for (int64_t i = 0; i < 4; ++i)
      tile[i] = k.fmul(tile[i], rescale[i / 2]);

  // V(step) has landed (after it: stages - 2 steps of K and V, and
  // K(next)); buffer next % stages of V was read before this barrier.
  waitGroups(pending);
  gpu::BarrierOp::create(k.b, k.loc);
  issueCopies(nextV, next, plan.dequantize ? codesV : sharedV);
  if (plan.dequantize)
    dequantizeChunks(buffer, codesV, slotsV, sharedV);
  accumulateValues(tileBuffer(buffer), probs, updated.out);
  if (plan.dequantize)
    storeChunkScales(scalesV, next, slotsV);
  return updated;
}

SmallVector<Accumulator>
TensorCoreAttention::computeScores(Value buffer,
                                   ArrayRef<SmallVector<Value>> queries) {
  // B fragments of K^T for 8 keys x 32 columns with one ldmatrix.x4: lane l
  // addresses key 8 n + l % 8, columns 32 kk + 8 (l / 8); its registers are
  // b0b1, b2b3 of columns 32 kk and of 32 kk + 16.
  int64_t keyTiles = plan.keysPerStep / 8, columnSteps = plan.headSize / 16;
  Value rowInTile = k.remu(lane, k.index(8));
  Value matrix = k.divu(lane, k.index(8));
  SmallVector<Accumulator> scores(keyTiles, {k.f32(0), k.f32(0), k.f32(0), k.f32(0)});
  for (int64_t kk = 0; kk < columnSteps; kk += 2) {
    int64_t tiles = kk + 1 < columnSteps ? 4 : 2;
    SmallVector<Value> first = queryFragment(queries, kk), second;
    if (tiles == 4)
      second = queryFragment(queries, kk + 1);
    Value column = k.add(k.mul(k.remu(matrix, k.index(tiles)), k.index(8)),
                         k.index(16 * kk));
    for (int64_t n = 0; n < keyTiles; ++n) {
      Value key = k.add(rowInTile, k.index(8 * n));
      SmallVector<Value> b =
          ldmatrix(sharedK, ValueRange{buffer, key, column}, tiles, false);
      scores[n] = mma(first, {b[0], b[1]}, scores[n]);
      if (tiles == 4)
        scores[n] = mma(second, {b[2], b[3]}, scores[n]);
    }
  }
  return scores;
}

void TensorCoreAttention::accumulateValues(Value buffer,
                                           ArrayRef<SmallVector<Value>> probs,
                                           SmallVector<Accumulator> &out) {
  // B fragments of V for 16 keys x 16 columns with one ldmatrix.x4.trans:
  // lane l addresses key 16 j + 8 ((l / 8) % 2) + l % 8, column
  // 8 (l / 16) of the pair; registers b0b1, b2b3 of each 8 columns.
  Value rowInTile = k.remu(lane, k.index(8));
  Value matrix = k.divu(lane, k.index(8));
  Value keyHalf = k.mul(k.remu(matrix, k.index(2)), k.index(8));
  Value columnHalf = k.mul(k.divu(matrix, k.index(2)), k.index(8));
  for (size_t j = 0; j < probs.size(); ++j) {
    ArrayRef<Value> p = probs[j];
    Value key = k.add(k.add(rowInTile, keyHalf), k.index(16 * j));
    for (int64_t n = 0; n < columnsPerWarp / 8; n += 2) {
      Value column = k.add(k.add(firstColumn, columnHalf), k.index(8 * n));
      SmallVector<Value> b =
          ldmatrix(sharedV, ValueRange{buffer, key, column}, 4, true);
      out[n] = mma(p, {b[0], b[1]}, out[n]);
      out[n + 1] = mma(p, {b[2], b[3]}, out[n + 1]);
    }
  }
}

void TensorCoreAttention::writeResult(const KeyRange &range,
                                      const TileState &state) {
  Value sums[2] = {k.laneSum(state.sum[0], 4), k.laneSum(state.sum[1], 4)};
  Value isFirstColumnWarp = k.eq(firstColumn, k.index(0));
  for (int r = 0; r < 2; ++r) {
    Value local = k.add(k.add(k.mul(mTile, k.index(16)), groupId),
                        k.index(8 * r));
    auto body = [&] {
      Value head = k.add(k.mul(kvHead, k.index(plan.group)), local);
      // The lane's two columns of row r of each output tile.
      auto forEachPair = [&](function_ref<void(Value, Value)> body) {
        for (size_t n = 0; n < state.out.size(); ++n) {
          const Accumulator &tile = state.out[n];
          Value column = k.add(firstColumn, k.add(k.mul(tig, k.index(2)),
                                                  k.index(8 * n)));
          body(column, vector::FromElementsOp::create(
                           k.b, k.loc, accPairType,
                           ValueRange{tile[2 * r], tile[2 * r + 1]}));
        }
      };
      auto writeOut = [&] {
        forEachPair([&](Value column, Value pair) {
          Value normalized = k.fdiv(pair, k.splat(sums[r], accPairType));
          vector::StoreOp::create(
              k.b, k.loc, k.narrow(normalized, pairType), out,
              ValueRange{range.row, head, column}, /*nontemporal=*/false,
              llvm::Align(std::min<int64_t>(4, plan.rowAlignment)));
        });
      };
      auto writePartial = [&] {
        // This split's partial state, unnormalised (docs/KernelABI.md); an
        // empty split's max is -inf, as the merge kernel expects.
        Value record = layout.recordOffset(
            k, layout.rowHeadOffset(k, range.row, head, numSplits), split);
        forEachPair([&](Value column, Value pair) {
          vector::StoreOp::create(k.b, k.loc, pair, workspace,
                                  ValueRange{layout.accOffset(k, record, column)});
        });
        k.ifThen(k.andi(isFirstColumnWarp, k.eq(tig, k.index(0))), [&] {
          Value max = k.select(k.eq(range.numSteps, k.index(0)),
                               k.f32(-std::numeric_limits<float>::infinity()),
                               state.max[r]);
          memref::StoreOp::create(k.b, k.loc, max, workspace,
                                  ValueRange{layout.maxOffset(k, record)});
          memref::StoreOp::create(k.b, k.loc, sums[r], workspace,
                                  ValueRange{layout.sumOffset(k, record)});
        });
      };
      writeResultOrPartial(k, workspace, numSplits, writeOut, writePartial);
    };
    if (plan.mTiles * 16 > plan.group)
      k.ifThen(k.ult(local, k.index(plan.group)), body);
    else
      body();
  }
}

SmallVector<Value>
TensorCoreAttention::loadChunkScales(const KeyRange &range, Value step,
                                     Value cache) {
  // The key row of copySource, through the cache's own lookup.
  Value key = k.add(range.begin,
                    k.add(k.mul(step, k.index(plan.keysPerStep)), copyKey));
  Value valid = k.ult(key, range.end);
  auto [page, slot] = k.lookup(cache, range.batch,
                               k.select(valid, key, range.begin),
                               /*servesWrite=*/false);
  // One load per scale group: a token_head or tensor scale serves all of
  // the thread's chunks of the row.
  bool onePerRow = plan.scaleGroup >= plan.headSize;
  SmallVector<Value> scales;
  for (int64_t i = 0; i < plan.chunksPerThread; ++i) {
    if (onePerRow && i > 0) {
      scales.push_back(scales.front());
      continue;
    }
    Value element =
        k.mul(k.add(copyChunk, k.index(i * threadsPerKey)), k.index(16));
    Value scale =
        PageLoadScaleOp::create(k.b, k.loc, cache, page, slot, kvHead, element);
    // Past the end the codes are zero-filled: a zero scale keeps the
    // tile's rows zero whatever the scale of the row they were read from.
    scales.push_back(k.select(valid, scale, k.f32(0)));
  }
  return scales;
}

void TensorCoreAttention::storeChunkScales(ArrayRef<Value> scales,
                                           Value step, Value slots) {
  Value buffer = k.remu(step, k.index(plan.stages));
  Value first = k.mul(kernel.threadId(gpu::Dimension::x),
                      k.index(plan.chunksPerThread));
  for (auto [i, scale] : llvm::enumerate(scales))
    memref::StoreOp::create(k.b, k.loc, scale, slots,
                            ValueRange{buffer, k.add(first, k.index(i))});
}

void TensorCoreAttention::dequantizeChunks(Value buffer, Value codes,
                                           Value slots, Value tile) {
  // This thread's own chunks: its cp.async copies have landed (the wait),
  // and the block's reads of the tile's previous step are done (the
  // barrier before).
  auto codesType = VectorType::get({16}, plan.elementType);
  Value first = k.mul(kernel.threadId(gpu::Dimension::x),
                      k.index(plan.chunksPerThread));
  for (int64_t i = 0; i < plan.chunksPerThread; ++i) {
    Value element =
        k.mul(k.add(copyChunk, k.index(i * threadsPerKey)), k.index(16));
    Value chunk = vector::LoadOp::create(k.b, k.loc, codesType, codes,
                                         ValueRange{buffer, copyKey, element});
    Value values = decodeStorageToF32(k.b, k.loc, chunk, plan.fp8Conversion);
    Value scale = memref::LoadOp::create(
        k.b, k.loc, slots, ValueRange{buffer, k.add(first, k.index(i))});
    values = k.fmul(values, k.splat(scale, cast<VectorType>(values.getType())));
    vector::StoreOp::create(
        k.b, k.loc, k.narrow(values, VectorType::get({16}, plan.mmaType)),
        tile, ValueRange{k.index(0), copyKey, element});
  }
  gpu::BarrierOp::create(k.b, k.loc);
}

Accumulator TensorCoreAttention::mma(ArrayRef<Value> a, ArrayRef<Value> b,
                                     const Accumulator &c) {
  // bf16 operands travel as i32 (MLIR 22's nvgpu.mma.sync cannot deduce
  // bf16 PTX types, so this builds nvvm.mma.sync for both types).
  MLIRContext *ctx = k.b.getContext();
  bool bf16 = plan.mmaType.isBF16();
  auto operand = [&](Value pair) -> Value {
    return bf16 ? LLVM::BitcastOp::create(k.b, k.loc, k.b.getI32Type(), pair)
                      .getResult()
                : pair;
  };
  SmallVector<Value> as, bs;
  for (Value v : a)
    as.push_back(operand(v));
  for (Value v : b)
    bs.push_back(operand(v));
  Type f32 = k.b.getF32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  NVVM::MMATypes type = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  Value result = NVVM::MmaOp::create(
      k.b, k.loc, resultType, as, bs, ValueRange(c), {16, 8, 16},
      std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{type, type},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  Accumulator d;
  for (int64_t i = 0; i < 4; ++i)
    d[i] = LLVM::ExtractValueOp::create(k.b, k.loc, result, i);
  return d;
}

SmallVector<Value> TensorCoreAttention::ldmatrix(Value shared,
                                                 ValueRange indices,
                                                 int64_t tiles,
                                                 bool transpose) {
  auto type = VectorType::get({tiles, 2}, plan.mmaType);
  Value matrices = nvgpu::LdMatrixOp::create(k.b, k.loc, type, shared, indices,
                                             transpose, tiles);
  SmallVector<Value> registers;
  for (int64_t i = 0; i < tiles; ++i)
    registers.push_back(vector::ExtractOp::create(k.b, k.loc, matrices,
                                                  ArrayRef<int64_t>{i}));
  return registers;
}

} // namespace

void attention::emitTensorCoreAttention(GPUKernel &kernel,
                                        AttentionRaggedOp op,
                                        const AttentionPlan &plan) {
  TensorCoreAttention(kernel, op, plan).emit();
}
