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
// - Block (row, KV head, split), or (row, block of a KV head's group,
//   split) when the group takes several blocks (plan.headBlocks, MLA above
//   64 heads: each block reads the latent rows); warp w handles the
//   16-head tile w / dSplit and output columns [(w % dSplit) * D /
//   dSplit, ...) of it.
//   Every warp of a tile computes the tile's scores S = Q K^T itself
//   (cheap on tensor cores), so warps never exchange softmax state; at
//   MLA's 576 (splitScores) each over its 1 / dSplit of q's dims (a
//   quarter, or half in blocks of 33-64 heads), the partial scores summed
//   through shared memory.
// - A step streams keysPerStep keys of K and of V (8 KiB each; 4 KiB in
//   the 4-stage plan of one warp per tile) into shared memory with
//   cp.async through `stages` buffers, K and V in separate groups: the
//   scores of step s are computed while V of step s lands, both while
//   steps s + 1 .. s + stages - 1 are in flight. Each thread copies
//   16-byte chunks of one key row, one lookup (kvcache.tile) per cache and
//   step, K's and V's both at the top of the step (V's copies, after the
//   scores, find their address ready); a query tile's threads look up where
//   they copy, and neither for a step past the tile's last (the prologue
//   and each step issue stages - 1 steps ahead). K and V are separate kernel
//   parameters (they may come from different collections), so the two
//   lookups are not merged. Rows are padded by 16 bytes so that the 8 row
//   addresses of an ldmatrix hit distinct banks.
// - Fragments: q (A, row-major) from global memory once per row; K (B of
//   Q K^T) with ldmatrix from the [key][d] rows; V (B of P V) with
//   ldmatrix.trans; P (A of P V) is the score accumulator rounded to the
//   K/V type (docs/Contract.md 3.3 allows it), repacked in registers.
// - Online softmax in the log2 domain, per key tile: one max (two xor
//   shuffles within a quad) per step; the exponentials use a max that a
//   row takes only when its max grows past it by more than 8 (log2), and
//   only then are the lane's output tiles and sums rescaled, behind a
//   branch (updateSoftmax); a finite initial max (no -inf tests), row sums
//   kept per lane and summed across the quad once at the end. Only the
//   last step, which can hold keys past the end, masks scores.
// - A quantized cache (f16/bf16 q, scale groups of 16 or more): the codes
//   stream through `stages` code buffers the same way; after its wait each
//   thread dequantizes the chunks it copied (`stored * scale` in f32, the
//   scale loaded when the copy was issued and parked in shared memory,
//   rounded once to q's type) into one K (V) tile, and a barrier later the
//   fragments are read from it as above. Every fp8, i8 code is exact in f16
//   and bf16; the rounding of `stored * scale` is the one an f16 (bf16)
//   cache has. With one scale per key row (token_head, tensor) K's tile
//   holds the codes' values alone and each score is multiplied by its
//   key's scale instead (q . (c s) = (q . c) s, rounded once in f32, not
//   once per element to q's type); V keeps the per-element scaling, since
//   a probability times a scale, rounded to f16, could underflow.
//
//===----------------------------------------------------------------------===//

#include "AttentionMMA.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

TensorCoreAttention::TensorCoreAttention(GPUKernel &kernel,
                                         AttentionOpInterface op,
                                         const AttentionPlan &plan)
    : kernel(kernel), k(kernel.builder()), op(op), plan(plan),
      softmax(k),
      clauses(k, op, getOptionalParam(kernel, op.getSinks()),
              getOptionalParam(kernel, op.getAlibi())),
      layout{plan.valueSize, plan.qHeads} {
  std::tie(q, keys, values, offsets, out, workspace) =
      getAttentionParams(kernel, op);
  // The query-tile kernel's buffers are in dynamic shared memory.
  auto addBuffer = [&](ArrayRef<int64_t> shape, Type type) {
    return plan.dynamicSharedMemory
               ? kernel.addDynamicSharedBuffer(shape, type)
               : kernel.addSharedBuffer(shape, type);
  };
  int64_t tiles = plan.dequantize ? 1 : plan.stages;
  sharedK = addBuffer({tiles, plan.keysPerStep, plan.sharedRow}, plan.mmaType);
  sharedV = plan.sharesKeyTiles()
                ? sharedK
                : addBuffer({tiles, plan.keysPerStep, plan.sharedRow},
                            plan.mmaType);
  if (plan.dequantize) {
    SmallVector<int64_t> codes = {plan.stages, plan.keysPerStep,
                                  plan.headSize};
    codesK = addBuffer(codes, plan.elementType);
    codesV = addBuffer(codes, plan.elementType);
    SmallVector<int64_t> slots = {plan.stages,
                                  plan.threads * plan.chunksPerThread};
    // Folded K scales are parked per key row, for the lanes that hold its
    // scores.
    slotsK = addBuffer(
        foldsKeyScales() ? SmallVector<int64_t>{plan.stages, plan.keysPerStep}
                         : slots,
        k.b.getF32Type());
    slotsV = addBuffer(slots, k.b.getF32Type());
  }
  if (plan.splitScores) {
    sharedScores =
        addBuffer({plan.mTiles * plan.dSplit, plan.keysPerStep / 8, 32, 4},
                  k.b.getF32Type());
    // One block per SM is enough (.minnctapersm 1): without it ptxas
    // (sm_90) capped the 4-warp kernel at 168 registers and spilled; the
    // 8 warps of a 64-head block take all 255.
    kernel.getFunction()->setAttr("nvvm.minctasm", k.b.getI32IntegerAttr(1));
  }
  if (plan.stageQueries)
    sharedQ = addBuffer({plan.mTiles * 16, plan.sharedRow}, plan.mmaType);
  pairType = VectorType::get({2}, plan.mmaType);
  accPairType = VectorType::get({2}, k.b.getF32Type());
  columnsPerWarp = plan.valueSize / plan.dSplit;
  chunksPerRow = plan.headSize * plan.elementBytes / 16;
  // A query tile's copying threads take 4 chunks of a key row each: a
  // quarter of the lookups of one chunk per thread (a lookup-table read per
  // copying thread, key and step: 6% of the K/V bytes instead of 25%).
  int64_t chunksPerCopy = plan.tileRows > 1 && !plan.dequantize ? 4 : 1;
  copyThreads = std::min(plan.threads,
                         plan.keysPerStep * chunksPerRow / chunksPerCopy);
  // The threads of a key split its chunks evenly (72 of them in a latent
  // row of 576 elements).
  threadsPerKey = std::gcd(copyThreads / plan.keysPerStep, chunksPerRow);
  copyThreads = threadsPerKey * plan.keysPerStep;
}

void TensorCoreAttention::emit() {
  Value thread = kernel.threadId(gpu::Dimension::x);
  Value headBlock = kernel.blockId(gpu::Dimension::y);
  kvHead = plan.headBlocks == 1
               ? headBlock
               : k.divu(headBlock, k.index(plan.headBlocks));
  firstHead = k.mul(headBlock, k.index(plan.blockHeads()));
  split = kernel.blockId(gpu::Dimension::z);
  numSplits = kernel.gridDim(gpu::Dimension::z);
  Value warp = k.divu(thread, k.index(32));
  lane = k.remu(thread, k.index(32));
  groupId = k.divu(lane, k.index(4));
  tig = k.remu(lane, k.index(4));
  mTile = k.divu(warp, k.index(plan.dSplit));
  firstColumn = k.mul(k.remu(warp, k.index(plan.dSplit)),
                      k.index(columnsPerWarp));
  firstDim = k.mul(k.remu(warp, k.index(plan.scoreSplit())),
                   k.index(plan.headSize / plan.scoreSplit()));
  copyKey = k.divu(thread, k.index(threadsPerKey));
  copyChunk = k.remu(thread, k.index(threadsPerKey));
  for (int r = 0; r < 2; ++r) {
    mRow[r] = k.add(k.add(k.mul(mTile, k.index(16)), groupId),
                    k.index(8 * r));
    if (op.getAlibi())
      slopes[r] = clauses.loadSlope(std::get<1>(
          describeMRow(k.index(0), k.index(1), mRow[r])));
  }
  if (plan.tileRows > 1)
    return forEachQueryTile([&](Value batch, Value first, Value count) {
      emitTile(batch, first, count);
    });
  kernel.forEachBatchRow(q, offsets, [&](Value row, Value numSequences) {
    emitTile(k.sequenceOf(offsets, numSequences, row), row, k.index(1));
  });
}

void TensorCoreAttention::forEachQueryTile(
    function_ref<void(Value batch, Value first, Value count)> body) {
  // Slot s of the grid's x blocks is tile t - 1 - s % t of sequence s / t,
  // where t = ceil(max_seq_length / tileRows) (the host launches that many
  // slots per sequence), bounded so that the slots fit in i32 (the
  // divisions are div.u32). Each slot also takes the tiles t, 2 t, ...
  // after its own, so every row is attended whatever max_seq_length says.
  constexpr int64_t kMaxSlots = std::numeric_limits<int32_t>::max();
  Value tileRows = k.index(plan.tileRows);
  Value numSequences = k.numSequences(offsets);
  Value maxSlots = k.index(kMaxSlots);
  Value slotsPerSequence = k.toIndex(k.divu(
      k.toI32(maxSlots), k.toI32(k.minu(numSequences, maxSlots))));
  Value wanted = k.ceilDiv(MaxSeqLengthOp::create(k.b, k.loc, keys), tileRows);
  Value tilesPerSequence =
      k.maxu(k.minu(wanted, slotsPerSequence), k.index(1));
  Value slots = k.mul(numSequences, tilesPerSequence);
  k.forLoop(
      kernel.blockId(gpu::Dimension::x), slots,
      kernel.gridDim(gpu::Dimension::x), [&](Value slot) {
        Value batch =
            k.toIndex(k.divu(k.toI32(slot), k.toI32(tilesPerSequence)));
        Value tile =
            k.sub(k.sub(tilesPerSequence, k.index(1)),
                  k.sub(slot, k.mul(batch, tilesPerSequence)));
        Value start = k.loadOffset(offsets, batch);
        Value end = k.loadOffset(offsets, k.add(batch, k.index(1)));
        Value numRows = k.sub(k.maxu(end, start), start);
        k.forLoop(k.mul(tile, tileRows), numRows,
                  k.mul(tilesPerSequence, tileRows), [&](Value offset) {
                    body(batch, k.add(start, offset),
                         k.minu(k.sub(numRows, offset), tileRows));
                  });
      });
}

std::tuple<Value, Value, Value>
TensorCoreAttention::describeMRow(Value first, Value count, Value m) {
  Value group = k.index(plan.blockHeads());
  if (plan.tileRows == 1) {
    // One row: the M rows are the block's heads, padded to whole tiles with
    // copies of its last head.
    Value local = m;
    Value valid = k.b.createOrFold<arith::ConstantIntOp>(k.loc, 1, 1);
    if (plan.mTiles * 16 > plan.blockHeads()) {
      valid = k.ult(m, group);
      local = k.minu(m, k.index(plan.blockHeads() - 1));
    }
    return {first, k.add(firstHead, local), valid};
  }
  Value token = k.divu(m, group);
  Value head = k.add(firstHead, k.remu(m, group));
  // Rows past the tile read the tile's last row (a valid address).
  Value row = k.add(first, k.minu(token, k.sub(count, k.index(1))));
  return {row, head, k.ult(token, count)};
}

std::pair<TileRows, TileKeys>
TensorCoreAttention::planTile(Value batch, Value first, Value count) {
  TileRows rows{batch, first, count, {}, {}, {}, {}, {}, {}};
  Value start = k.loadOffset(offsets, batch);
  Value cached = CacheLengthOp::create(k.b, k.loc, keys, batch);
  for (int r = 0; r < 2; ++r) {
    std::tie(rows.row[r], rows.head[r], rows.valid[r]) =
        describeMRow(first, count, mRow[r]);
    rows.position[r] = k.rowPosition(cached, rows.row[r], start);
  }
  // One row and no padding: the second M row's head is 8 after the first,
  // so its stores take the same address plus an offset (16 fewer
  // registers at group 64).
  if (plan.tileRows == 1 && plan.mTiles * 16 == plan.blockHeads())
    rows.head[1] = k.add(rows.head[0], k.index(8));
  // The tile's keys: from its first row's first key to its last row's
  // last (both bounds grow with the position).
  KeyBounds firstRow = getRowKeyBounds(
      k, op, cached, k.rowPosition(cached, first, start));
  KeyBounds lastRow = getRowKeyBounds(
      k, op, cached,
      k.rowPosition(cached, k.add(first, k.sub(count, k.index(1))), start));
  Value begin, end, numSteps;
  std::tie(begin, end, numSteps) =
      splitKeys(k, {firstRow.first, lastRow.end}, split, numSplits,
                plan.keysPerStep);
  TileKeys tileKeys{begin, end, numSteps, k.index(0), Value()};
  // Steps with only keys every row sees: from the last row's first key to
  // the first row's last (within the split).
  Value keysPerStep = k.index(plan.keysPerStep);
  auto stepsTo = [&](Value key) {
    return k.divu(k.sub(k.maxu(key, begin), begin), keysPerStep);
  };
  if (lastRow.first)
    tileKeys.firstFull = k.minu(
        k.ceilDiv(k.sub(k.maxu(lastRow.first, begin), begin), keysPerStep),
        numSteps);
  // One row: its keys end at the split's end.
  tileKeys.endFull =
      plan.tileRows == 1
          ? k.divu(k.sub(end, begin), keysPerStep)
          : k.maxu(tileKeys.firstFull, stepsTo(k.minu(firstRow.end, end)));
  for (int r = 0; r < 2; ++r) {
    // One row: the block's keys are the row's.
    if (plan.tileRows == 1) {
      rows.keyFirst[r] = begin;
      rows.keyEnd[r] = end;
      continue;
    }
    KeyBounds own = getRowKeyBounds(k, op, cached, rows.position[r]);
    rows.keyFirst[r] = own.first ? k.maxu(own.first, begin) : begin;
    rows.keyEnd[r] = k.minu(own.end, end);
  }
  return {rows, tileKeys};
}

void TensorCoreAttention::emitTile(Value batch, Value first, Value count) {
  TileRows rows;
  TileKeys tileKeys;
  std::tie(rows, tileKeys) = planTile(batch, first, count);
  SmallVector<SmallVector<Value>> queries = loadQueries(rows);
  // Groups in flight at the top of step s: K(s), V(s), ...,
  // K(s + stages - 2), V(s + stages - 2) (a query tile's are empty past
  // its last step).
  k.ifThen(k.ult(k.index(0), tileKeys.numSteps), [&] {
    for (int64_t s = 0; s + 1 < plan.stages; ++s) {
      Value step = k.index(s);
      for (bool isKey : {true, false}) {
        Value cache = isKey ? keys : values;
        CopySource source = isKey || !plan.sharesKeyTiles()
                                ? copySource(batch, tileKeys, step, cache)
                                : CopySource{};
        if (plan.dequantize)
          storeChunkScales(loadChunkScales(batch, tileKeys, step, cache),
                           step, isKey ? slotsK : slotsV);
        if (isKey)
          issueCopies(source, step, plan.dequantize ? codesK : sharedK);
        else
          issueValueCopies(source, step);
      }
    }
  });
  TileState state;
  // A finite initial max: exp2(max - newMax) is 0 for the first keys, and a
  // step of masked keys (-inf scores) leaves the state as it was.
  for (int r = 0; r < 2; ++r) {
    state.max[r] = k.f32(-std::numeric_limits<float>::max());
    state.sum[r] = k.f32(0);
  }
  for (int64_t n = 0; n < columnsPerWarp / 8; ++n)
    state.out.push_back({k.f32(0), k.f32(0), k.f32(0), k.f32(0)});
  // Masked steps only where a row's window or chunk starts, and from where
  // the first row's causal limit (or the split's end) falls.
  if (op.getWindow() || op.getChunk())
    state = emitSteps(tileKeys, rows, k.index(0), tileKeys.firstFull,
                      queries, state, /*masked=*/true);
  state = emitSteps(tileKeys, rows, tileKeys.firstFull, tileKeys.endFull,
                    queries, state, /*masked=*/false);
  state = emitSteps(tileKeys, rows, tileKeys.endFull, tileKeys.numSteps,
                    queries, state, /*masked=*/true);
  // The copies of the step past the last (zero-fill) land before the
  // buffers are reused, and every warp is done reading them.
  waitGroups(0);
  gpu::BarrierOp::create(k.b, k.loc);
  writeResult(rows, state);
}

TileState TensorCoreAttention::emitSteps(const TileKeys &tileKeys,
                                         const TileRows &rows, Value from,
                                         Value to,
                                         ArrayRef<SmallVector<Value>> queries,
                                         const TileState &state,
                                         bool masked) {
  // One row's masked steps are at most its last: a branch, not a loop
  // (ptxas then allocates the decode kernel's registers as before).
  if (masked && plan.tileRows == 1) {
    SmallVector<Value> carried = state.flatten();
    SmallVector<Type> types;
    for (Value v : carried)
      types.push_back(v.getType());
    return TileState::unflatten(k.ifThenElse(
        k.ult(from, to), types,
        [&] {
          return emitStep(tileKeys, rows, from, queries, state, masked)
              .flatten();
        },
        [&] { return carried; }));
  }
  return TileState::unflatten(k.forLoop(
      from, to, k.index(1), state.flatten(),
      [&](Value step, ValueRange carried) {
        return emitStep(tileKeys, rows, step, queries,
                        TileState::unflatten(carried), masked)
            .flatten();
      }));
}

TileState TensorCoreAttention::emitStep(const TileKeys &tileKeys,
                                        const TileRows &rows, Value step,
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
  // The decode kernel's lookups of step `next` at once: V's row address is
  // ready (and, when K and V share a lookup table, its line is in L1) long
  // before V's copies are issued, after the scores. A query tile looks up
  // where it copies (copySource).
  CopySource nextK = copySource(rows.batch, tileKeys, next, keys);
  CopySource nextV = plan.sharesKeyTiles()
                         ? CopySource{}
                         : copySource(rows.batch, tileKeys, next, values);
  // The scales' lookups next to the tiles' (one load of each table entry).
  SmallVector<Value> scalesK, scalesV;
  if (plan.dequantize) {
    scalesK = loadChunkScales(rows.batch, tileKeys, next, keys);
    scalesV = loadChunkScales(rows.batch, tileKeys, next, values);
  }
  issueCopies(nextK, next, plan.dequantize ? codesK : sharedK);
  if (plan.dequantize)
    dequantizeChunks(buffer, codesK, slotsK, sharedK,
                     /*scaled=*/!foldsKeyScales());
  SmallVector<Accumulator> scores =
      computeScores(tileBuffer(buffer), queries);
  if (foldsKeyScales())
    scaleScores(scores, buffer);
  if (plan.dequantize)
    storeChunkScales(scalesK, next, slotsK);

  // Softmax over the step's keys, rows groupID (r = 0) and groupID + 8, in
  // the log2 domain: a scale c > 0 applies to the row max and inside
  // exp2(s c - max) (one fma per score); any other scale multiplies the
  // scores first.
  // A soft cap or ALiBi transforms the scores into the log2 domain first.
  float scale = OnlineSoftmax::getLog2Scale(op.getScale().convertToFloat());
  bool transforms = clauses.transformsScores();
  Value log2Scale = k.f32(scale > 0 && !transforms ? scale : 1.0f);
  Value stepBegin =
      k.add(tileKeys.begin, k.mul(step, k.index(plan.keysPerStep)));
  if (transforms)
    transformScores(scores, rows, stepBegin);
  else if (!(scale > 0))
    for (Accumulator &tile : scores)
      for (Value &s : tile)
        s = k.fmul(s, k.f32(scale));
  Value minusInf = k.f32(-std::numeric_limits<float>::infinity());
  // A masked step keeps the keys each row sees: its own [keyFirst,
  // keyEnd) (the split's keys cut to its window or chunk and causal limit).
  // Rows start apart only in a tile with a window or chunk.
  bool startsApart = plan.tileRows > 1 && (op.getWindow() || op.getChunk());
  if (masked)
    for (size_t n = 0; n < scores.size(); ++n)
      for (int64_t i = 0; i < 4; ++i) {
        Value key = scoreKey(stepBegin, n, i);
        Value seen = k.ult(key, rows.keyEnd[i / 2]);
        if (startsApart)
          seen = k.andi(k.uge(key, rows.keyFirst[i / 2]), seen);
        scores[n][i] = k.select(seen, scores[n][i], minusInf);
      }
  SoftmaxStep softmaxStep = updateSoftmax(scores, state, log2Scale);
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
  TileState updated = rescaleState(state, softmaxStep);

  // V(step) has landed (after it: stages - 2 steps of K and V, and
  // K(next)); buffer next % stages of V was read before this barrier.
  waitGroups(pending);
  gpu::BarrierOp::create(k.b, k.loc);
  issueValueCopies(nextV, next);
  if (plan.dequantize)
    dequantizeChunks(buffer, codesV, slotsV, sharedV);
  accumulateValues(tileBuffer(buffer), probs, updated.out);
  if (plan.dequantize)
    storeChunkScales(scalesV, next, slotsV);
  return updated;
}

Value TensorCoreAttention::scoreKey(Value stepBegin, size_t n, int64_t i) {
  return k.add(stepBegin,
               k.add(k.mul(tig, k.index(2)), k.index(8 * n + i % 2)));
}

void TensorCoreAttention::transformScores(SmallVector<Accumulator> &scores,
                                          const TileRows &rows,
                                          Value stepBegin) {
  Value scale = k.f32(op.getScale().convertToFloat());
  for (size_t n = 0; n < scores.size(); ++n)
    for (int64_t i = 0; i < 4; ++i)
      scores[n][i] = clauses.transformScore(
          k.fmul(scores[n][i], scale), slopes[i / 2],
          scoreKey(stepBegin, n, i), rows.position[i / 2]);
}

void TensorCoreAttention::writeResult(const TileRows &rows,
                                      const TileState &state) {
  Value sums[2] = {k.laneSum(state.sum[0], 4), k.laneSum(state.sum[1], 4)};
  Value isFirstColumnWarp = k.eq(firstColumn, k.index(0));
  for (int r = 0; r < 2; ++r) {
    Value row = rows.row[r], head = rows.head[r];
    auto body = [&] {
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
        // The sink joins the softmax once, here or in the merge kernel.
        AttentionClauses::SinkTerms terms{state.max[r], sums[r], Value()};
        if (Value sink = clauses.loadSinkLogit(head))
          terms = clauses.addSinkTerms(softmax, state.max[r], sums[r], sink);
        forEachPair([&](Value column, Value pair) {
          if (terms.rescale)
            pair = k.fmul(pair, k.splat(terms.rescale, accPairType));
          Value normalized =
              clauses.normalize(softmax, {terms.max, terms.sum, pair});
          vector::StoreOp::create(
              k.b, k.loc, k.narrow(normalized, pairType), out,
              ValueRange{row, head, column}, /*nontemporal=*/false,
              llvm::Align(std::min<int64_t>(4, plan.rowAlignment)));
        });
        if (Value lse = getOptionalParam(kernel, op.getLse()))
          k.ifThen(k.andi(isFirstColumnWarp, k.eq(tig, k.index(0))), [&] {
            memref::StoreOp::create(k.b, k.loc,
                                    clauses.logSumExp(terms.max, terms.sum),
                                    lse, ValueRange{row, head});
          });
      };
      auto writePartial = [&] {
        // This split's partial state, unnormalised (docs/KernelABI.md); the
        // max of a split without keys of this row is -inf, as the merge
        // kernel expects.
        Value record = layout.recordOffset(
            k, layout.rowHeadOffset(k, row, head, numSplits), split);
        forEachPair([&](Value column, Value pair) {
          vector::StoreOp::create(k.b, k.loc, pair, workspace,
                                  ValueRange{layout.accOffset(k, record, column)});
        });
        k.ifThen(k.andi(isFirstColumnWarp, k.eq(tig, k.index(0))), [&] {
          Value max = k.select(k.uge(rows.keyFirst[r], rows.keyEnd[r]),
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
    k.ifThen(rows.valid[r], body);
  }
}

void attention::emitTensorCoreAttention(GPUKernel &kernel,
                                        AttentionOpInterface op,
                                        const AttentionPlan &plan) {
  TensorCoreAttention(kernel, op, plan).emit();
}
