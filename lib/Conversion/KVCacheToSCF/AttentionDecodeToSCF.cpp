//===- AttentionDecodeToSCF.cpp - decode rows in blocks of keys -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The CPU's decode kernel: the pass of a query row over its keys for the
// query heads of some KV heads (docs/Design.md, "CPU attention"), in
// blocks of kBlockKeys keys; per block each KV head in turn, the query
// heads of its group (up to 8 per pass) as the rows of one micro-kernel:
//
// - the block's K rows each converted to f32 once (widened, or a
//   token_head cache's codes decoded, its scales folded into the scores
//   and weights), each dotted with every head's q as 16 partial sums
//   (fused multiply-adds; with AVX512-BF16, bf16 pair products), reduced
//   by shuffles to one vector of the block's scores per head (for 1, 2, 4
//   or 8 heads in sweeps of the head row: dotsOfHeadsTogether);
// - per head the score transform, the mask, the online softmax on that
//   vector (one max, one rescale, one vector 2^x), the weights stored;
// - P V per 16 elements of the value head, each V chunk converted once.
//
// A task of all the KV heads (AttentionToSCF.cpp chooses it for decode
// batches with enough sequences per thread) reads each block's token rows
// whole, head after head. Each block starts with loads of every cache line
// of the next block's rows of the task's KV heads (loadNextBlock). With
// pages of a multiple of kBlockKeys tokens a block is one kvcache.tile of
// its page (one page lookup per block, KV head and cache); other blocks
// look up and prefetch a row per key.
//
//===----------------------------------------------------------------------===//

#include "AttentionCPU.h"
#include "../KernelCommon/Fp8ToInteger.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// Keys of one block: one vector of scores per head.
constexpr int64_t kBlockKeys = kDotLanes;
/// Vectors of q a sweep of dotsOfHeadsTogether holds (half the register
/// file of AVX-512).
constexpr int64_t kQueryVectors = 16;

/// Where the rows of a block's keys lie in one cache: in one tile of the
/// block's page (kvcache.tile: one page lookup per block), or at a page
/// and slot per key.
struct BlockRows {
  /// kBlockKeys x head_size rows of the head (null: no tile).
  Value tile;
  /// Per key: its row of the tile.
  SmallVector<Value> rows;
  /// Per key, without a tile: its page and slot.
  SmallVector<std::pair<Value, Value>> slots;
};

/// One row's kernel. Its buffers (heap: a parallel iteration allocates
/// nothing on the stack) live for the row: per query head of the task
/// (kvHeads x group) its scaled q row, its running max and sum and its
/// output row, and the weights of a pass's heads [headsPerPass][kBlockKeys].
class DecodeBlockPass {
public:
  DecodeBlockPass(KernelBuilder &k, AttentionOpInterface op,
                  AttentionClauses &clauses, OnlineSoftmax &softmax,
                  Value batch, Value position, int64_t headsPerPass,
                  bool bf16Dot)
      : k(k), op(op), clauses(clauses), softmax(softmax), batch(batch),
        position(position), headsPerPass(headsPerPass) {
    f32 = k.b.getF32Type();
    chunkType = VectorType::get({kDotLanes}, f32);
    auto params = KVCacheParams::get(op.getKeyCache().getType());
    headSize = params.headSize;
    rowType = VectorType::get({headSize}, f32);
    valueSize = op.getValueHeadSize();
    tiled = params.hasStaticPages() && params.pageSize % kBlockKeys == 0;
    group = getQueryGroup(op);
    auto isBF16 = [](Type type) { return isa<BFloat16Type>(type); };
    dotBF16 = bf16Dot && isBF16(params.elementType) &&
              isBF16(cast<MemRefType>(op.getQ().getType()).getElementType()) &&
              !op.getCosSin() && headSize % kBF16DotElements == 0 &&
              llvm::isPowerOf2_64(headsPerPass);
    rowScales = bool(params.scales);
    codeFactor = getUnscaledDecodeFactor(params.elementType);
  }

  void run(Value firstKVHead, Value kvHeads, Value begin, Value end,
           AttentionDecodeBlocks::QueryFn query,
           AttentionDecodeBlocks::QueryFn storedQuery,
           AttentionDecodeBlocks::InitFn init,
           AttentionDecodeBlocks::WriteFn write);

private:
  SmallVector<Value> blockStep(Value first, Value begin, Value end,
                               ValueRange carried);
  SmallVector<Value> scoreBlock(const BlockRows &keyRows,
                                ArrayRef<Value> tokens, Value skip,
                                Value count);
  SmallVector<Value> dotsPerHead(const BlockRows &keyRows);
  SmallVector<Value> dotsOfHeadsTogether(const BlockRows &keyRows);
  void accumulateValues(const BlockRows &valueRows, ArrayRef<Value> rescales);
  MemRefType getTileType(Value cache);
  BlockRows locate(Value cache, Value first, ArrayRef<Value> tokens);
  Value loadChunk(Value cache, const BlockRows &rows, int64_t key,
                  Value element, VectorType type);
  Value loadKeyChunk(Value cache, const BlockRows &rows, Value key,
                     Value element, VectorType type);
  Value loadSlotChunk(Value cache, Value page, Value slot, Value element,
                      VectorType type);
  Value convertChunk(Value stored, VectorType type);
  Value blockScales(Value cache, const BlockRows &rows, ArrayRef<Value> tokens);
  void loadNextBlock(Value first, Value end);

  Value allocBuffer(ArrayRef<int64_t> shape, ValueRange sizes = {},
                    Type element = {}) {
    return memref::AllocOp::create(
        k.b, k.loc, MemRefType::get(shape, element ? element : f32), sizes,
        k.b.getI64IntegerAttr(64));
  }

  KernelBuilder &k;
  AttentionOpInterface op;
  AttentionClauses &clauses;
  OnlineSoftmax &softmax;
  Value batch, position;
  int64_t headsPerPass, group, headSize, valueSize;
  Type f32;
  VectorType chunkType, rowType;
  /// Whether the blocks are tiles of their pages (pages of a multiple of
  /// kBlockKeys tokens): then they start at multiples of kBlockKeys.
  bool tiled;
  /// Whether q . K takes AVX512-BF16's dot product of bf16 pairs (the
  /// pass's `bf16Dot`, a bf16 cache and q, no rope clause, heads of a
  /// multiple of kBF16DotElements, a power of two heads per pass): q kept
  /// unscaled in bf16 (queryRows), the scale applied to the scores.
  bool dotBF16 = false;
  /// A cache with one scale per head row (canLower): its codes converted
  /// to f32 without the scale (their values / codeFactor), and the row
  /// scales (times codeFactor) folded into the block's scores (K) and
  /// weights (V), one multiply per head and block.
  bool rowScales = false;
  float codeFactor = 1.0f;
  /// [task heads][head size] q (f32 scaled, or bf16 as stored with
  /// dotBF16), [task heads][2] max and sum, [task
  /// heads][value head size] output, [headsPerPass][kBlockKeys] weights.
  Value queryRows, stats, output, weights;
  /// The pass being emitted: its KV head, its first row of the buffers,
  /// its heads' q rows and slopes.
  Value kvHead, passRow, firstKVHead, kvHeads;
  /// The block being emitted: its first key and the row's last.
  Value blockFirst, blockLast;
  /// [heads per pass][kDotLanes]: dotsOfHeadsTogether's group vectors.
  Value groupScores;
  SmallVector<Value> slopes;
};

void DecodeBlockPass::run(Value firstKVHeadArg, Value kvHeadsArg, Value begin,
                          Value end, AttentionDecodeBlocks::QueryFn query,
                          AttentionDecodeBlocks::QueryFn storedQuery,
                          AttentionDecodeBlocks::InitFn init,
                          AttentionDecodeBlocks::WriteFn write) {
  firstKVHead = firstKVHeadArg;
  kvHeads = kvHeadsArg;
  Value taskHeads = k.mul(kvHeads, k.index(group));
  Value firstHead = k.mul(firstKVHead, k.index(group));
  queryRows = allocBuffer({ShapedType::kDynamic, headSize}, taskHeads,
                          dotBF16 ? k.b.getBF16Type() : f32);
  stats = allocBuffer({ShapedType::kDynamic, 2}, taskHeads);
  output = allocBuffer({ShapedType::kDynamic, valueSize}, taskHeads);
  weights = allocBuffer({headsPerPass, kBlockKeys});
  groupScores = allocBuffer({headsPerPass, kDotLanes});
  Value zero = k.index(0), one = k.index(1);
  k.forLoop(zero, taskHeads, one, [&](Value i) {
    Value head = k.add(firstHead, i);
    vector::StoreOp::create(k.b, k.loc,
                            dotBF16 ? storedQuery(head) : query(head),
                            queryRows,
                            ValueRange{i, zero});
    SoftmaxState state = init(head);
    memref::StoreOp::create(k.b, k.loc, state.max, stats, ValueRange{i, zero});
    memref::StoreOp::create(k.b, k.loc, state.sum, stats, ValueRange{i, one});
    vector::StoreOp::create(k.b, k.loc, state.acc, output, ValueRange{i, zero});
  });
  // Tiles: from the block of `begin` (the keys before it masked), if any.
  Value start = begin;
  if (tiled)
    start = k.select(k.ult(begin, end),
                     k.sub(begin, k.remu(begin, k.index(kBlockKeys))), begin);
  // Per block, the task's KV heads in turn: a block's rows of all of them
  // are read close together in time (one stream per page instead of one
  // per page and head, which the hardware fetches at a lower rate).
  k.forLoop(start, end, k.index(kBlockKeys), [&](Value first) {
    if (tiled)
      loadNextBlock(first, end);
    k.forLoop(zero, kvHeads, one, [&](Value h) {
      kvHead = k.add(firstKVHead, h);
      k.forLoop(zero, k.index(group), k.index(headsPerPass), [&](Value p) {
        passRow = k.add(k.mul(h, k.index(group)), p);
        slopes.clear();
        SmallVector<Value> carried;
        for (int64_t i = 0; i < headsPerPass; ++i) {
          Value row = k.add(passRow, k.index(i));
          slopes.push_back(clauses.loadSlope(k.add(firstHead, row)));
          carried.push_back(
              memref::LoadOp::create(k.b, k.loc, stats, ValueRange{row, zero}));
          carried.push_back(
              memref::LoadOp::create(k.b, k.loc, stats, ValueRange{row, one}));
        }
        SmallVector<Value> next = blockStep(first, begin, end, carried);
        for (int64_t i = 0; i < headsPerPass; ++i) {
          Value row = k.add(passRow, k.index(i));
          memref::StoreOp::create(k.b, k.loc, next[2 * i], stats,
                                  ValueRange{row, zero});
          memref::StoreOp::create(k.b, k.loc, next[2 * i + 1], stats,
                                  ValueRange{row, one});
        }
      });
    });
  });
  auto valueType = VectorType::get({valueSize}, f32);
  k.forLoop(zero, taskHeads, one, [&](Value i) {
    SoftmaxState state{
        memref::LoadOp::create(k.b, k.loc, stats, ValueRange{i, zero}),
        memref::LoadOp::create(k.b, k.loc, stats, ValueRange{i, one}),
        vector::LoadOp::create(k.b, k.loc, valueType, output,
                               ValueRange{i, zero})};
    write(state, k.add(firstHead, i));
  });
  for (Value buffer : {queryRows, stats, output, weights, groupScores})
    memref::DeallocOp::create(k.b, k.loc, buffer);
}

/// The keys [first, first + kBlockKeys) within [begin, end) (their tokens
/// past `end` repeat the last one, those before `begin` are the page's
/// earlier tokens: their scores are -inf, their weights 0 times a finite
/// row) for the pass's heads; the next block's rows of its KV head
/// prefetched.
SmallVector<Value> DecodeBlockPass::blockStep(Value first, Value begin,
                                              Value end, ValueRange carried) {
  Value count = k.minu(k.index(kBlockKeys), k.sub(end, first));
  Value skip = k.sub(k.maxu(begin, first), first);
  Value last = k.sub(end, k.index(1));
  blockFirst = first;
  blockLast = last;
  SmallVector<Value> tokens;
  for (int64_t j = 0; j < kBlockKeys; ++j)
    tokens.push_back(k.minu(k.add(first, k.index(j)), last));
  Value keys = op.getKeyCache(), values = op.getValueCache();
  // Blocks that are not tiles: the next block's rows of the KV head
  // prefetched, a row per key (tiles are loaded ahead by run()).
  SmallVector<Value> caches{keys};
  if (values != keys)
    caches.push_back(values);
  for (Value cache : tiled ? ArrayRef<Value>() : ArrayRef<Value>(caches))
    for (int64_t j = kBlockKeys; j < 2 * kBlockKeys; ++j)
      prefetchHeadRow(k, cache, batch, k.minu(k.add(first, k.index(j)), last),
                      kvHead);
  BlockRows keyRows = locate(keys, first, tokens);
  SmallVector<Value> scores = scoreBlock(keyRows, tokens, skip, count);
  BlockRows valueRows =
      values == keys ? keyRows : locate(values, first, tokens);
  // Row scales of V go into the weights P V takes (not into the sum).
  Value valueScales =
      rowScales ? blockScales(values, valueRows, tokens) : Value();
  SmallVector<Value> next, rescales;
  for (auto [i, score] : llvm::enumerate(scores)) {
    OnlineSoftmax::BlockTerms terms = softmax.weighBlock(
        {carried[2 * i], carried[2 * i + 1], Value()}, score);
    vector::StoreOp::create(
        k.b, k.loc,
        valueScales ? k.fmul(terms.weights, valueScales) : terms.weights,
        weights, ValueRange{k.index(int64_t(i)), k.index(0)});
    rescales.push_back(terms.rescale);
    next.append({terms.max, terms.sum});
  }
  accumulateValues(valueRows, rescales);
  return next;
}

/// The kBlockKeys x head_size rows of a head that kvcache.tile views.
MemRefType DecodeBlockPass::getTileType(Value cache) {
  auto params = KVCacheParams::get(cache.getType());
  return MemRefType::get(
      {kBlockKeys, params.headSize}, params.elementType,
      StridedLayoutAttr::get(k.b.getContext(), ShapedType::kDynamic,
                             {params.numHeads * params.headSize, 1}));
}

/// The rows of the block's keys `tokens` (the first `first`) in `cache`.
BlockRows DecodeBlockPass::locate(Value cache, Value first,
                                  ArrayRef<Value> tokens) {
  BlockRows rows;
  if (tiled) {
    rows.tile = TileOp::create(k.b, k.loc, getTileType(cache), cache, batch,
                               first, kvHead);
    for (Value token : tokens)
      rows.rows.push_back(k.sub(token, first));
    return rows;
  }
  for (Value token : tokens)
    rows.slots.push_back(k.lookup(cache, batch, token, /*servesWrite=*/false));
  return rows;
}

/// The elements [element, element + width of `type`) of key `key`'s head
/// row in `cache`, as `type` (f32).
Value DecodeBlockPass::loadChunk(Value cache, const BlockRows &rows,
                                 int64_t key, Value element, VectorType type) {
  if (!rows.tile)
    return loadSlotChunk(cache, rows.slots[key].first, rows.slots[key].second,
                         element, type);
  auto stored = type.clone(KVCacheParams::get(cache.getType()).elementType);
  return convertChunk(vector::LoadOp::create(k.b, k.loc, stored, rows.tile,
                                             ValueRange{rows.rows[key], element}),
                      type);
}

/// The chunk at (`page`, `slot`) of the pass's KV head as `type`.
Value DecodeBlockPass::loadSlotChunk(Value cache, Value page, Value slot,
                                     Value element, VectorType type) {
  if (!rowScales)
    return loadHeadChunkAsF32(k, cache, page, slot, kvHead, element, type);
  auto stored = type.clone(KVCacheParams::get(cache.getType()).elementType);
  return convertChunk(PageLoadOp::create(k.b, k.loc, stored, cache, page, slot,
                                         kvHead, element),
                      type);
}

/// A chunk as stored, as `type`: widened (or as stored, bf16 for
/// dotBF16), or with rowScales its codes decoded without the scale.
Value DecodeBlockPass::convertChunk(Value stored, VectorType type) {
  if (!rowScales)
    return k.widen(stored, type);
  float factor;
  Value values = decodeStorageToF32Unscaled(k.b, k.loc, stored, factor);
  assert(factor == codeFactor && "blockScales multiplies by codeFactor");
  (void)factor;
  return values;
}

/// With rowScales, the scales of the block's keys `tokens` (rows `rows`)
/// in `cache`, times codeFactor, as one vector.
Value DecodeBlockPass::blockScales(Value cache, const BlockRows &rows,
                                   ArrayRef<Value> tokens) {
  SmallVector<Value> scales;
  for (auto [j, token] : llvm::enumerate(tokens)) {
    auto [page, slot] = rows.tile ? k.lookup(cache, batch, token,
                                             /*servesWrite=*/false)
                                  : rows.slots[j];
    scales.push_back(PageLoadScaleOp::create(k.b, k.loc, cache, page, slot,
                                             kvHead, k.index(0)));
  }
  Value vector = vector::FromElementsOp::create(k.b, k.loc, chunkType, scales);
  if (codeFactor != 1.0f)
    vector = k.fmul(vector, k.splatConstant(chunkType, codeFactor));
  return vector;
}

/// loadChunk of the block's key `key` (an index).
Value DecodeBlockPass::loadKeyChunk(Value cache, const BlockRows &rows,
                                    Value key, Value element,
                                    VectorType type) {
  Value token = k.minu(k.add(blockFirst, key), blockLast);
  if (!rows.tile) {
    auto [page, slot] = k.lookup(cache, batch, token, /*servesWrite=*/false);
    return loadSlotChunk(cache, page, slot, element, type);
  }
  auto stored = type.clone(KVCacheParams::get(cache.getType()).elementType);
  return convertChunk(
      vector::LoadOp::create(k.b, k.loc, stored, rows.tile,
                             ValueRange{k.sub(token, blockFirst), element}),
      type);
}

/// Loads the next block's rows of the task's KV heads (the last block's
/// again when there is no later one) into the caches (loadRowsAhead).
void DecodeBlockPass::loadNextBlock(Value first, Value end) {
  Value last = k.sub(end, k.index(1));
  Value lastBlock = k.sub(last, k.remu(last, k.index(kBlockKeys)));
  Value ahead = k.minu(k.add(first, k.index(kBlockKeys)), lastBlock);
  SmallVector<Value> caches{op.getKeyCache()};
  if (op.getValueCache() != op.getKeyCache())
    caches.push_back(op.getValueCache());
  loadRowsAhead(k, caches, batch, ahead, kBlockKeys, firstKVHead, kvHeads);
}

/// Per head, the scores (log2 domain) of the block's keys `tokens` (rows
/// `keyRows`) as one vector, -inf before lane `skip` and from lane `count`
/// on.
/// Per head, the dot products of the block's keys as one vector: each
/// head's 16 partial sums of a key reduced by the tree of reducePartialDots,
/// built as the keys come (after each key the pending vectors of equal
/// level are paired, a binary counter: at most log2(kBlockKeys) vectors per
/// head instead of kBlockKeys).
SmallVector<Value> DecodeBlockPass::dotsPerHead(const BlockRows &keyRows) {
  Value keys = op.getKeyCache();
  SmallVector<Value> queries;
  for (int64_t i = 0; i < headsPerPass; ++i)
    queries.push_back(vector::LoadOp::create(
        k.b, k.loc, rowType, queryRows,
        ValueRange{k.add(passRow, k.index(i)), k.index(0)}));
  SmallVector<SmallVector<Value>> pending(queries.size());
  for (int64_t j = 0; j < kBlockKeys; ++j) {
    Value row = loadChunk(keys, keyRows, j, k.index(0), rowType);
    for (auto [i, query] : llvm::enumerate(queries)) {
      Value sum = partialDot(k, query, row, kDotLanes);
      int64_t segment = kDotLanes;
      for (int64_t pairs = j; pairs % 2; pairs /= 2, segment /= 2) {
        sum = halveSegments(k, pending[i].back(), sum, segment);
        pending[i].pop_back();
      }
      pending[i].push_back(sum);
    }
  }
  SmallVector<Value> dots;
  for (auto &sums : pending)
    dots.push_back(sums.front());
  return dots;
}

/// dotsPerHead for a power-of-two number of heads H, with fewer vectors
/// live: the head row goes in sweeps of elements whose q chunks of all H
/// heads fill at most kQueryVectors vectors (64 elements at 4 heads: 16
/// vectors, where the whole rows took 32, the register file, and spilled
/// converted K rows), each K chunk converted once. Per key, its H vectors
/// of partial sums are halved together into one (H segments of 16 / H
/// lanes, head-major), and the keys of each group of 16 / H are halved
/// together as they come into one vector of their scores, key-major (lane
/// H x key + head); the sweeps' group vectors are added, and a transpose
/// by shuffles gives each head's vector of the block's 16 scores.
SmallVector<Value> DecodeBlockPass::dotsOfHeadsTogether(
    const BlockRows &keyRows) {
  Value keys = op.getKeyCache();
  int64_t heads = headsPerPass;
  int64_t keysPerGroup = kBlockKeys / heads;
  int64_t sweep = std::min(headSize, std::max<int64_t>(
                                         kDotLanes,
                                         kQueryVectors * kDotLanes / heads));
  // A loop over the groups of keys (not unrolled: in one block of straight
  // code LLVM interleaves the keys' chains and spills them); each group's
  // vector, summed over the sweeps, in groupScores.
  Value zero = k.index(0);
  for (int64_t first = 0; first < headSize; first += sweep) {
    int64_t width = std::min(sweep, headSize - first);
    // dotBF16: q and the K rows as stored (bf16).
    auto chunkRowType =
        VectorType::get({width}, dotBF16 ? k.b.getBF16Type() : f32);
    SmallVector<Value> qChunks;
    for (int64_t i = 0; i < heads; ++i)
      qChunks.push_back(vector::LoadOp::create(
          k.b, k.loc, chunkRowType, queryRows,
          ValueRange{k.add(passRow, k.index(i)), k.index(first)}));
    k.forLoop(zero, k.index(heads), k.index(1), [&](Value g) {
      SmallVector<Value> pending;
      int64_t segment = kDotLanes;
      for (int64_t j = 0; j < keysPerGroup; ++j) {
        Value key = k.add(k.mul(g, k.index(keysPerGroup)), k.index(j));
        Value row =
            loadKeyChunk(keys, keyRows, key, k.index(first), chunkRowType);
        SmallVector<Value> sums;
        for (Value query : qChunks)
          sums.push_back(dotBF16 ? dotBF16Pairs(k, query, row)
                                 : partialDot(k, query, row, kDotLanes));
        for (segment = kDotLanes; sums.size() > 1; segment /= 2) {
          SmallVector<Value> halved;
          for (size_t i = 0; i < sums.size(); i += 2)
            halved.push_back(halveSegments(k, sums[i], sums[i + 1], segment));
          sums = std::move(halved);
        }
        Value sum = sums.front();
        for (int64_t pairs = j; pairs % 2 && segment > 1;
             pairs /= 2, segment /= 2) {
          sum = halveSegments(k, pending.back(), sum, segment);
          pending.pop_back();
        }
        pending.push_back(sum);
      }
      Value group = pending.front();
      if (first > 0)
        group = k.fadd(vector::LoadOp::create(k.b, k.loc, chunkType,
                                              groupScores, ValueRange{g, zero}),
                       group);
      vector::StoreOp::create(k.b, k.loc, group, groupScores,
                              ValueRange{g, zero});
    });
  }
  SmallVector<Value> groups;
  for (int64_t g = 0; g < heads; ++g)
    groups.push_back(vector::LoadOp::create(
        k.b, k.loc, chunkType, groupScores, ValueRange{k.index(g), zero}));
  SmallVector<Value> dots = transposeGroupScores(k, groups);
  if (dotBF16)
    for (Value &dot : dots)
      dot = k.fmul(dot, k.splatConstant(chunkType, clauses.queryScale()));
  return dots;
}

SmallVector<Value> DecodeBlockPass::scoreBlock(const BlockRows &keyRows,
                                               ArrayRef<Value> tokens,
                                               Value skip, Value count) {
  static_assert(kBlockKeys == kDotLanes,
                "one halving per pair of keys ends in one lane per key");
  SmallVector<Value> dots = llvm::isPowerOf2_64(headsPerPass)
                                ? dotsOfHeadsTogether(keyRows)
                                : dotsPerHead(keyRows);
  auto laneIndexType = VectorType::get({kBlockKeys}, k.b.getI32Type());
  SmallVector<int32_t> laneIds;
  for (int32_t j = 0; j < int32_t(kBlockKeys); ++j)
    laneIds.push_back(j);
  Value lanes = arith::ConstantOp::create(
      k.b, k.loc,
      DenseElementsAttr::get(laneIndexType, ArrayRef<int32_t>(laneIds)));
  Value seen = k.andi(k.uge(lanes, k.splat(k.toI32(skip), laneIndexType)),
                      k.ult(lanes, k.splat(k.toI32(count), laneIndexType)));
  Value minusInfinity =
      k.splatConstant(chunkType, -std::numeric_limits<float>::infinity());
  Value keyScales =
      rowScales ? blockScales(op.getKeyCache(), keyRows, tokens) : Value();
  SmallVector<Value> scores;
  for (auto [i, headDots] : llvm::enumerate(dots)) {
    Value dots = keyScales ? k.fmul(headDots, keyScales) : headDots;
    // Transformed (soft cap before the mask: it would make -inf finite).
    if (clauses.transformsScores()) {
      SmallVector<Value> elements;
      for (auto [j, token] : llvm::enumerate(tokens))
        elements.push_back(clauses.transformScore(
            vector::ExtractOp::create(k.b, k.loc, dots, int64_t(j)), slopes[i],
            token, position));
      dots = vector::FromElementsOp::create(k.b, k.loc, chunkType, elements);
    }
    scores.push_back(k.select(seen, dots, minusInfinity));
  }
  return scores;
}

/// output[head] = output[head] * rescale[head] + sum over the block's keys
/// of weight[head][j] * V[j], a chunk of kDotLanes elements at a time.
void DecodeBlockPass::accumulateValues(const BlockRows &valueRows,
                                       ArrayRef<Value> rescales) {
  Value values = op.getValueCache();
  k.forLoop(
      k.index(0), k.index(valueSize), k.index(kDotLanes), [&](Value element) {
        SmallVector<Value> acc;
        for (auto [i, rescale] : llvm::enumerate(rescales))
          acc.push_back(k.fmul(
              vector::LoadOp::create(
                  k.b, k.loc, chunkType, output,
                  ValueRange{k.add(passRow, k.index(int64_t(i))), element}),
              k.splat(rescale, chunkType)));
        // The odd keys into a second sum per head: two chains of fused
        // multiply-adds per head instead of one of kBlockKeys.
        SmallVector<Value> odd(acc.size());
        for (int64_t j = 0; j < kBlockKeys; ++j) {
          Value chunk = loadChunk(values, valueRows, j, element, chunkType);
          for (int64_t i = 0; i < int64_t(acc.size()); ++i) {
            Value weight = k.splat(
                memref::LoadOp::create(k.b, k.loc, weights,
                                       ValueRange{k.index(i), k.index(j)}),
                chunkType);
            Value &sum = j % 2 ? odd[i] : acc[i];
            sum = sum ? k.vectorFma(weight, chunk, sum) : k.fmul(weight, chunk);
          }
        }
        for (auto [i, sum] : llvm::enumerate(acc))
          vector::StoreOp::create(
              k.b, k.loc, k.fadd(sum, odd[i]), output,
              ValueRange{k.add(passRow, k.index(int64_t(i))), element});
      });
}

} // namespace

bool AttentionDecodeBlocks::canLower(AttentionOpInterface op) {
  auto params = KVCacheParams::get(op.getKeyCache().getType());
  // Quantized: one scale per head row (token_head), folded into the
  // block's scores and weights.
  bool scalesFit = !params.scales || params.scales.groupSize(
                                         params.headSize) == params.headSize;
  return scalesFit && params.headSize % kDotLanes == 0 &&
         op.getValueHeadSize() % kDotLanes == 0;
}

void AttentionDecodeBlocks::emit(KernelBuilder &k, AttentionOpInterface op,
                                 AttentionClauses &clauses,
                                 OnlineSoftmax &softmax, Value batch,
                                 Value firstKVHead, Value kvHeads,
                                 Value position,
                                 std::pair<Value, Value> keyRange,
                                 int64_t headsPerPass, QueryFn query,
                                 QueryFn storedQuery, bool bf16Dot,
                                 InitFn init, WriteFn write) {
  DecodeBlockPass(k, op, clauses, softmax, batch, position, headsPerPass,
                  bf16Dot)
      .run(firstKVHead, kvHeads, keyRange.first, keyRange.second, query,
           storedQuery, init, write);
}
