//===- AttentionDecodeToSCF.cpp - decode rows in blocks of keys -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The CPU's decode kernel: the pass of a query row over its keys for the
// query heads of one KV group (up to 8; docs/Design.md, "CPU attention"),
// in blocks of kBlockKeys keys, the GQA group as the rows of one
// micro-kernel:
//
// - the block's K rows each converted to f32 once (widened), each dotted
//   with every head's q as 16 partial sums (one multiply and a fused
//   multiply-add per 16 elements), each head's partial sums of the 16 keys
//   reduced by one shuffle tree to one vector of the block's scores;
// - per head the score transform (soft cap, ALiBi), -inf for the keys past
//   the row's end, then the online softmax on that vector: one max, one
//   rescale factor, one vector 2^x, the weights stored;
// - P V per 16 elements of the value head: every head's output chunk
//   rescaled once, each V chunk converted once and added to every head
//   with its broadcast weight.
//
// The K and V rows of the next block are prefetched: a task reads one
// head row of each token, num_heads head rows apart.
//
//===----------------------------------------------------------------------===//

#include "AttentionCPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// Keys of one block: one vector of scores per head.
constexpr int64_t kBlockKeys = kDotLanes;

/// One pass's kernel. Its buffers (heap: a parallel iteration allocates
/// nothing on the stack) live for the pass: the heads' output rows
/// [heads][value head size] and the block's weights [heads][kBlockKeys].
class DecodeBlockPass {
public:
  DecodeBlockPass(KernelBuilder &k, AttentionOpInterface op,
                  AttentionClauses &clauses, OnlineSoftmax &softmax,
                  Value batch, Value kvHead, Value position,
                  ArrayRef<Value> queries, ArrayRef<Value> slopes)
      : k(k), op(op), clauses(clauses), softmax(softmax), batch(batch),
        kvHead(kvHead), position(position), queries(queries), slopes(slopes) {
    f32 = k.b.getF32Type();
    chunkType = VectorType::get({kDotLanes}, f32);
    rowType = VectorType::get(
        {KVCacheParams::get(op.getKeyCache().getType()).headSize}, f32);
    valueSize = op.getValueHeadSize();
  }

  SmallVector<SoftmaxState> run(Value begin, Value end,
                                ArrayRef<SoftmaxState> init);

private:
  SmallVector<Value> blockStep(Value first, Value end, ValueRange carried);
  SmallVector<Value> scoreBlock(ArrayRef<Value> tokens, Value count);
  void accumulateValues(ArrayRef<Value> tokens, ArrayRef<Value> rescales);

  Value allocBuffer(ArrayRef<int64_t> shape) {
    return memref::AllocOp::create(k.b, k.loc, MemRefType::get(shape, f32),
                                   k.b.getI64IntegerAttr(64));
  }

  KernelBuilder &k;
  AttentionOpInterface op;
  AttentionClauses &clauses;
  OnlineSoftmax &softmax;
  Value batch, kvHead, position;
  ArrayRef<Value> queries, slopes;
  Type f32;
  VectorType chunkType, rowType;
  int64_t valueSize;
  Value output, weights;
};

SmallVector<SoftmaxState> DecodeBlockPass::run(Value begin, Value end,
                                               ArrayRef<SoftmaxState> init) {
  int64_t heads = queries.size();
  output = allocBuffer({heads, valueSize});
  weights = allocBuffer({heads, kBlockKeys});
  SmallVector<Value> stats;
  for (auto [i, state] : llvm::enumerate(init)) {
    vector::StoreOp::create(k.b, k.loc, state.acc, output,
                            ValueRange{k.index(int64_t(i)), k.index(0)});
    stats.append({state.max, state.sum});
  }
  stats = k.forLoop(begin, end, k.index(kBlockKeys), stats,
                    [&](Value first, ValueRange carried) {
                      return blockStep(first, end, carried);
                    });
  SmallVector<SoftmaxState> states;
  for (int64_t i = 0; i < heads; ++i)
    states.push_back(
        {stats[2 * i], stats[2 * i + 1],
         vector::LoadOp::create(k.b, k.loc, init[i].acc.getType(), output,
                                ValueRange{k.index(i), k.index(0)})});
  memref::DeallocOp::create(k.b, k.loc, output);
  memref::DeallocOp::create(k.b, k.loc, weights);
  return states;
}

/// The keys [first, first + kBlockKeys) before `end` (their tokens past it
/// repeat the last one: their scores are -inf, their weights 0 times a
/// finite row); the next block's rows prefetched.
SmallVector<Value> DecodeBlockPass::blockStep(Value first, Value end,
                                              ValueRange carried) {
  Value count = k.minu(k.index(kBlockKeys), k.sub(end, first));
  Value last = k.sub(end, k.index(1));
  SmallVector<Value> tokens;
  for (int64_t j = 0; j < kBlockKeys; ++j) {
    tokens.push_back(k.minu(k.add(first, k.index(j)), last));
    Value ahead = k.minu(k.add(first, k.index(kBlockKeys + j)), last);
    prefetchHeadRow(k, op.getKeyCache(), batch, ahead, kvHead);
    if (op.getValueCache() != op.getKeyCache())
      prefetchHeadRow(k, op.getValueCache(), batch, ahead, kvHead);
  }
  SmallVector<Value> scores = scoreBlock(tokens, count);
  SmallVector<Value> next, rescales;
  for (auto [i, score] : llvm::enumerate(scores)) {
    OnlineSoftmax::BlockTerms terms = softmax.weighBlock(
        {carried[2 * i], carried[2 * i + 1], Value()}, score);
    vector::StoreOp::create(k.b, k.loc, terms.weights, weights,
                            ValueRange{k.index(int64_t(i)), k.index(0)});
    rescales.push_back(terms.rescale);
    next.append({terms.max, terms.sum});
  }
  accumulateValues(tokens, rescales);
  return next;
}

/// Per head, the scores (log2 domain) of the block's keys `tokens` as one
/// vector, -inf from lane `count` on.
SmallVector<Value> DecodeBlockPass::scoreBlock(ArrayRef<Value> tokens,
                                               Value count) {
  Value keys = op.getKeyCache();
  SmallVector<SmallVector<Value>> partials(queries.size());
  for (Value token : tokens) {
    auto [page, slot] = k.lookup(keys, batch, token, /*servesWrite=*/false);
    Value row = loadHeadRowAsF32(k, keys, page, slot, kvHead, rowType);
    for (auto [i, query] : llvm::enumerate(queries))
      partials[i].push_back(partialDot(k, query, row, kDotLanes));
  }
  auto laneIndexType = VectorType::get({kBlockKeys}, k.b.getI32Type());
  SmallVector<int32_t> laneIds;
  for (int32_t j = 0; j < int32_t(kBlockKeys); ++j)
    laneIds.push_back(j);
  Value lanes = arith::ConstantOp::create(
      k.b, k.loc,
      DenseElementsAttr::get(laneIndexType, ArrayRef<int32_t>(laneIds)));
  Value seen = k.ult(lanes, k.splat(k.toI32(count), laneIndexType));
  Value minusInfinity =
      k.splatConstant(chunkType, -std::numeric_limits<float>::infinity());
  SmallVector<Value> scores;
  for (auto [i, sums] : llvm::enumerate(partials)) {
    Value dots = reducePartialDots(k, sums, kDotLanes);
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
void DecodeBlockPass::accumulateValues(ArrayRef<Value> tokens,
                                       ArrayRef<Value> rescales) {
  Value values = op.getValueCache();
  SmallVector<std::pair<Value, Value>> rows;
  for (Value token : tokens)
    rows.push_back(k.lookup(values, batch, token, /*servesWrite=*/false));
  k.forLoop(
      k.index(0), k.index(valueSize), k.index(kDotLanes), [&](Value element) {
        SmallVector<Value> acc;
        for (auto [i, rescale] : llvm::enumerate(rescales))
          acc.push_back(k.fmul(
              vector::LoadOp::create(k.b, k.loc, chunkType, output,
                                     ValueRange{k.index(int64_t(i)), element}),
              k.splat(rescale, chunkType)));
        for (auto [j, row] : llvm::enumerate(rows)) {
          Value chunk = loadHeadChunkAsF32(k, values, row.first, row.second,
                                           kvHead, element, chunkType);
          for (auto [i, sum] : llvm::enumerate(acc)) {
            Value weight = memref::LoadOp::create(
                k.b, k.loc, weights,
                ValueRange{k.index(int64_t(i)), k.index(int64_t(j))});
            sum = k.vectorFma(k.splat(weight, chunkType), chunk, sum);
          }
        }
        for (auto [i, sum] : llvm::enumerate(acc))
          vector::StoreOp::create(k.b, k.loc, sum, output,
                                  ValueRange{k.index(int64_t(i)), element});
      });
}

} // namespace

bool AttentionDecodeBlocks::canLower(AttentionOpInterface op) {
  auto params = KVCacheParams::get(op.getKeyCache().getType());
  return !params.scales && params.headSize % kDotLanes == 0 &&
         op.getValueHeadSize() % kDotLanes == 0;
}

SmallVector<SoftmaxState> AttentionDecodeBlocks::emit(
    KernelBuilder &k, AttentionOpInterface op, AttentionClauses &clauses,
    OnlineSoftmax &softmax, Value batch, Value kvHead, Value position,
    std::pair<Value, Value> keyRange, ArrayRef<Value> queries,
    ArrayRef<Value> slopes, ArrayRef<SoftmaxState> init) {
  return DecodeBlockPass(k, op, clauses, softmax, batch, kvHead, position,
                         queries, slopes)
      .run(keyRange.first, keyRange.second, init);
}
