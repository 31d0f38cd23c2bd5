//===- AttentionTilesToSCF.cpp - attention over row tiles -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The CPU's register-blocked attention kernel for a tile of query rows of
// one sequence and one KV head. Its kTileLanes lanes are the tile's (row,
// query head) pairs, row-major (the GQA group's heads side by side), so a
// tile is a small matrix multiplication twice per block of kBlockKeys keys:
//
// - the block's K and V head rows, converted once to f32 buffers (widened,
//   or dequantized with their scales);
// - scores S^T = K q^T with the lanes along the tile: for each element d of
//   the head, one vector of q^T[d] (packed once per tile, scaled) per
//   kDotLanes lanes and one broadcast K[j][d] per key, kScoreKeys x
//   kLaneVectors accumulators in registers;
// - keys a lane's row does not see (causal limit, window, chunk, the
//   block's end) masked to -inf, only in blocks some row does not see
//   whole;
// - the online softmax per lane, vectorised across lanes: one max, one
//   rescale and one vector 2^x per key and lane vector;
// - P V with the lanes' output rows in accumulators (kValueRows rows x
//   kMaxValueChunks vectors of the head), each V row's vectors loaded once
//   per row group for its rows' broadcast weights, the rows rescaled once
//   per block.
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

/// Vectors of lanes of a tile, and its lanes: the (row, query head) pairs
/// it computes.
constexpr int64_t kLaneVectors = 4;
constexpr int64_t kTileLanes = kDotLanes * kLaneVectors;
/// Keys of one block: one rescale of the tile's output rows per block.
constexpr int64_t kBlockKeys = 16;
/// Keys whose scores the score micro-kernel accumulates in registers at
/// once (kScoreKeys x kLaneVectors vectors).
constexpr int64_t kScoreKeys = 4;
/// Output rows, and vectors of each, the P V micro-kernel accumulates in
/// registers at once.
constexpr int64_t kValueRows = 4;
constexpr int64_t kMaxValueChunks = 4;

/// The query heads of a KV head in `op`.
int64_t getGroup(AttentionRaggedOp op) {
  int64_t qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  return qHeads / KVCacheParams::get(op.getKeyCache().getType()).numHeads;
}

/// One tile's kernel, step by step. The f32 buffers live for the tile
/// (heap: a parallel iteration allocates nothing on the stack).
class RowTileKernel {
public:
  RowTileKernel(KernelBuilder &k, AttentionRaggedOp op, Value batch,
                Value kvHead, Value firstRow, Value rows)
      : k(k), op(op), clauses(k, op), softmax(k), batch(batch),
        kvHead(kvHead), firstRow(firstRow), rows(rows) {
    auto params = KVCacheParams::get(op.getKeyCache().getType());
    headSize = params.headSize;
    group = getGroup(op);
    f32 = k.b.getF32Type();
    laneType = VectorType::get({kDotLanes}, f32);
    laneIndexType = VectorType::get({kDotLanes}, k.b.getI32Type());
    rowType = VectorType::get({headSize}, f32);
  }

  void run(Value sequenceRow, Value cached);

private:
  void allocate();
  void computeLaneRanges(Value firstPosition, Value cached);
  void packQueries();
  void initializeState();
  void loadBlock(Value first, Value end);
  void computeScores();
  void maskScores(Value first);
  void updateSoftmax();
  void accumulateValues();
  void writeRows();

  Value allocBuffer(ArrayRef<int64_t> shape) {
    auto type = MemRefType::get(shape, f32);
    Value buffer =
        memref::AllocOp::create(k.b, k.loc, type, k.b.getI64IntegerAttr(64));
    buffers.push_back(buffer);
    return buffer;
  }
  Value load(VectorType type, Value buffer, ValueRange indices) {
    return vector::LoadOp::create(k.b, k.loc, type, buffer, indices);
  }
  void store(Value vector, Value buffer, ValueRange indices) {
    vector::StoreOp::create(k.b, k.loc, vector, buffer, indices);
  }
  Value loadScalar(Value buffer, ValueRange indices) {
    return memref::LoadOp::create(k.b, k.loc, buffer, indices);
  }
  Value laneConstant(Type type, int64_t v) {
    auto vectorType = VectorType::get({kDotLanes}, type);
    Attribute element = isa<FloatType>(type)
                            ? Attribute(k.b.getFloatAttr(type, double(v)))
                            : Attribute(k.b.getIntegerAttr(type, v));
    return arith::ConstantOp::create(
        k.b, k.loc, vectorType, DenseElementsAttr::get(vectorType, element));
  }
  Value minusInfinity() {
    return k.splat(k.f32(-std::numeric_limits<float>::infinity()), laneType);
  }
  Value isMinusInfinity(Value v) {
    return arith::CmpFOp::create(k.b, k.loc, arith::CmpFPredicate::OEQ, v,
                                 minusInfinity());
  }
  /// The query head of lane `lane` (an index).
  Value headOfLane(Value lane) {
    return k.add(k.mul(kvHead, k.index(group)),
                 k.remu(lane, k.index(group)));
  }

  KernelBuilder &k;
  AttentionRaggedOp op;
  AttentionClauses clauses;
  OnlineSoftmax softmax;
  Value batch, kvHead, firstRow, rows;
  int64_t headSize, group;
  Type f32;
  VectorType laneType, laneIndexType, rowType;
  /// Per vector of lanes, the keys [begin, end) of each lane's row (i32).
  SmallVector<Value> laneBegins, laneEnds;
  /// q^T [head_size][kTileLanes] (scaled), the block's K and V rows
  /// [kBlockKeys][head_size], its scores then weights [kBlockKeys]
  /// [kTileLanes], the lanes' rescale factors [kTileLanes], output rows
  /// [kTileLanes][head_size] and final max and sum [2][kTileLanes].
  Value queries, keys, values, scores, rescales, output, stats;
  SmallVector<Value> buffers;
};

void RowTileKernel::run(Value sequenceRow, Value cached) {
  allocate();
  Value firstPosition = k.rowPosition(cached, firstRow, sequenceRow);
  Value lastPosition = k.add(firstPosition, k.sub(rows, k.index(1)));
  auto indexConstant = [&](int64_t v) { return k.index(v); };
  // Rows' key ranges only move forward with the position: the tile's keys
  // run from its first row's begin to its last row's end, and a block
  // within [last row's begin, first row's end = wholeEnd) is seen whole by
  // every row.
  Value tileBegin, wholeEnd, lastBegin, tileEnd;
  std::tie(tileBegin, wholeEnd) =
      getKeyRange(k, op, firstPosition, cached, indexConstant);
  std::tie(lastBegin, tileEnd) =
      getKeyRange(k, op, lastPosition, cached, indexConstant);
  computeLaneRanges(firstPosition, cached);
  packQueries();
  initializeState();
  k.forLoop(tileBegin, tileEnd, k.index(kBlockKeys), [&](Value first) {
    loadBlock(first, tileEnd);
    computeScores();
    Value crosses = arith::OrIOp::create(
        k.b, k.loc, k.ult(first, lastBegin),
        k.ult(wholeEnd, k.add(first, k.index(kBlockKeys))));
    k.ifThen(crosses, [&] { maskScores(first); });
    updateSoftmax();
    accumulateValues();
  });
  writeRows();
  for (Value buffer : buffers)
    memref::DeallocOp::create(k.b, k.loc, buffer);
}

void RowTileKernel::allocate() {
  queries = allocBuffer({headSize, kTileLanes});
  keys = allocBuffer({kBlockKeys, headSize});
  values = allocBuffer({kBlockKeys, headSize});
  scores = allocBuffer({kBlockKeys, kTileLanes});
  rescales = allocBuffer({kTileLanes});
  output = allocBuffer({kTileLanes, headSize});
  stats = allocBuffer({2, kTileLanes});
}

/// Lane l holds row min(l / group, rows - 1) of the tile: lanes past the
/// tile's rows (a tile cut by the sequence's end, a group that does not
/// divide kTileLanes) repeat its last row and are never written.
void RowTileKernel::computeLaneRanges(Value firstPosition, Value cached) {
  auto i32 = k.b.getI32Type();
  Value lastRow = k.splat(k.toI32(k.sub(rows, k.index(1))), laneIndexType);
  Value first = k.splat(k.toI32(firstPosition), laneIndexType);
  Value cachedLanes = k.splat(k.toI32(cached), laneIndexType);
  auto i32Constant = [&](int64_t v) { return laneConstant(i32, v); };
  for (int64_t v = 0; v < kLaneVectors; ++v) {
    SmallVector<int32_t> laneRows;
    for (int64_t lane = 0; lane < kDotLanes; ++lane)
      laneRows.push_back((v * kDotLanes + lane) / group);
    Value laneRow = arith::ConstantOp::create(
        k.b, k.loc, laneIndexType,
        DenseElementsAttr::get(laneIndexType, ArrayRef<int32_t>(laneRows)));
    Value position = k.add(first, k.minu(laneRow, lastRow));
    auto [begin, end] = getKeyRange(k, op, position, cachedLanes, i32Constant);
    laneBegins.push_back(begin);
    laneEnds.push_back(end);
  }
}

/// q^T, scaled once (scores in the log2 domain): each lane's q row loaded
/// once and stored as a column.
void RowTileKernel::packQueries() {
  Value q = op.getQ();
  auto qRowType = VectorType::get(
      {headSize}, cast<MemRefType>(q.getType()).getElementType());
  Value scale = k.splat(k.f32(clauses.queryScale()), rowType);
  Value lastRow = k.sub(rows, k.index(1));
  k.forLoop(k.index(0), k.index(kTileLanes), k.index(1), [&](Value lane) {
    Value row = k.add(firstRow, k.minu(k.divu(lane, k.index(group)), lastRow));
    Value qRow = k.fmul(k.widen(load(qRowType, q, {row, headOfLane(lane),
                                                   k.index(0)}),
                                rowType),
                        scale);
    for (int64_t d = 0; d < headSize; ++d)
      memref::StoreOp::create(k.b, k.loc,
                              vector::ExtractOp::create(k.b, k.loc, qRow, d),
                              queries, ValueRange{k.index(d), lane});
  });
}

/// The lanes' softmax states before the first key (`stats`: the running
/// max, log2 domain, and the running sum): empty, or each lane's head's
/// sink with weight 1. The output rows start at 0.
void RowTileKernel::initializeState() {
  for (int64_t v = 0; v < kLaneVectors; ++v) {
    Value max = minusInfinity(), sum = laneConstant(f32, 0);
    if (op.getSinks()) {
      SmallVector<Value> sinks;
      for (int64_t lane = 0; lane < kDotLanes; ++lane)
        sinks.push_back(clauses.loadSinkLogit(
            headOfLane(k.index(v * kDotLanes + lane))));
      max = vector::FromElementsOp::create(k.b, k.loc, laneType, sinks);
      sum = laneConstant(f32, 1);
    }
    store(max, stats, {k.index(0), k.index(v * kDotLanes)});
    store(sum, stats, {k.index(1), k.index(v * kDotLanes)});
  }
  k.forLoop(k.index(0), k.index(kTileLanes), k.index(1), [&](Value lane) {
    store(k.splatConstant(rowType, 0), output, {lane, k.index(0)});
  });
}

/// The K and V rows of keys [first, first + kBlockKeys) as f32, each read
/// once; rows at or past `end` are zeros (their scores are masked: a zero
/// V row keeps 0 x garbage out of the output). The next block's rows are
/// prefetched.
void RowTileKernel::loadBlock(Value first, Value end) {
  Value count = k.minu(k.index(kBlockKeys), k.sub(end, first));
  Value keyCache = op.getKeyCache(), valueCache = op.getValueCache();
  Value lastKey = k.sub(end, k.index(1));
  k.forLoop(k.index(0), count, k.index(1), [&](Value j) {
    Value token = k.add(first, j);
    prefetchHeadRows(k, {keyCache, valueCache}, batch,
                     k.minu(k.add(token, k.index(kBlockKeys)), lastKey),
                     kvHead);
    for (auto [cache, buffer] :
         {std::pair(keyCache, keys), std::pair(valueCache, values)}) {
      auto [page, slot] = k.lookup(cache, batch, token, /*servesWrite=*/false);
      store(loadHeadRowAsF32(k, cache, page, slot, kvHead, rowType), buffer,
            {j, k.index(0)});
    }
  });
  k.forLoop(count, k.index(kBlockKeys), k.index(1), [&](Value j) {
    for (Value buffer : {keys, values})
      store(k.splatConstant(rowType, 0), buffer, {j, k.index(0)});
  });
}

/// scores[j][lane] = K[j] . q^T[lane], kScoreKeys keys at a time: per head
/// element one vector of q^T per lane vector and one broadcast K element
/// per key, kScoreKeys x kLaneVectors fused multiply-adds.
void RowTileKernel::computeScores() {
  k.forLoop(k.index(0), k.index(kBlockKeys), k.index(kScoreKeys),
            [&](Value firstKey) {
    SmallVector<Value> keyRows;
    for (int64_t j = 0; j < kScoreKeys; ++j)
      keyRows.push_back(k.add(firstKey, k.index(j)));
    SmallVector<Value> zeros(kScoreKeys * kLaneVectors,
                             laneConstant(f32, 0));
    SmallVector<Value> sums = k.forLoop(
        k.index(0), k.index(headSize), k.index(1), zeros,
        [&](Value d, ValueRange acc) {
          SmallVector<Value> q, next;
          for (int64_t v = 0; v < kLaneVectors; ++v)
            q.push_back(load(laneType, queries, {d, k.index(v * kDotLanes)}));
          for (auto [j, keyRow] : llvm::enumerate(keyRows)) {
            Value key = k.splat(loadScalar(keys, {keyRow, d}), laneType);
            for (int64_t v = 0; v < kLaneVectors; ++v)
              next.push_back(
                  k.vectorFma(q[v], key, acc[j * kLaneVectors + v]));
          }
          return next;
        });
    for (auto [j, keyRow] : llvm::enumerate(keyRows))
      for (int64_t v = 0; v < kLaneVectors; ++v)
        store(sums[j * kLaneVectors + v], scores,
              {keyRow, k.index(v * kDotLanes)});
  });
}

/// -inf for the keys of the block from `first` a lane's row does not see.
void RowTileKernel::maskScores(Value first) {
  k.forLoop(k.index(0), k.index(kBlockKeys), k.index(1), [&](Value j) {
    Value token = k.splat(k.toI32(k.add(first, j)), laneIndexType);
    for (int64_t v = 0; v < kLaneVectors; ++v) {
      SmallVector<Value> at{j, k.index(v * kDotLanes)};
      Value seen =
          k.andi(k.uge(token, laneBegins[v]), k.ult(token, laneEnds[v]));
      store(k.select(seen, load(laneType, scores, at), minusInfinity()),
            scores, at);
    }
  });
}

/// The block's online-softmax update per vector of lanes: the new max, the
/// factor the lanes' output rows are rescaled by (to `rescales`), the
/// weights 2^(score - max) (over the scores) and the new sum. A lane that
/// has seen no key yet keeps max -inf and weights 0.
void RowTileKernel::updateSoftmax() {
  k.forLoop(k.index(0), k.index(kTileLanes), k.index(kDotLanes),
            [&](Value lanes) {
    SmallVector<Value> maxAt{k.index(0), lanes}, sumAt{k.index(1), lanes};
    Value oldMax = load(laneType, stats, maxAt);
    Value max = k.forLoop(k.index(0), k.index(kBlockKeys), k.index(1),
                          {oldMax}, [&](Value j, ValueRange carried) {
      return SmallVector<Value>{
          k.fmax(carried[0], load(laneType, scores, {j, lanes}))};
    })[0];
    Value zero = laneConstant(f32, 0);
    Value rescale = k.select(isMinusInfinity(oldMax), zero,
                             k.exp2Inline(k.fsub(oldMax, max)));
    Value base = k.select(isMinusInfinity(max), zero, max);
    Value sum = k.forLoop(k.index(0), k.index(kBlockKeys), k.index(1),
                          {k.fmul(load(laneType, stats, sumAt), rescale)},
                          [&](Value j, ValueRange carried) {
      Value weight =
          k.exp2Inline(k.fsub(load(laneType, scores, {j, lanes}), base));
      store(weight, scores, {j, lanes});
      return SmallVector<Value>{k.fadd(carried[0], weight)};
    })[0];
    store(rescale, rescales, {lanes});
    store(max, stats, maxAt);
    store(sum, stats, sumAt);
  });
}

/// output[lane] = output[lane] * rescale[lane] + sum over the block's keys
/// of weight[j][lane] * V[j], kValueRows lanes x `chunks` vectors of the
/// head at a time, for the lanes that hold the tile's rows.
void RowTileKernel::accumulateValues() {
  int64_t lanes = getDotLanes(headSize);
  int64_t chunks = std::min(kMaxValueChunks, headSize / lanes);
  while ((headSize / lanes) % chunks)
    --chunks;
  auto chunkType = VectorType::get({lanes}, f32);
  Value usedLanes = k.mul(rows, k.index(group));
  Value rowGroups = k.ceilDiv(usedLanes, k.index(kValueRows));
  k.forLoop(k.index(0), rowGroups, k.index(1), [&](Value rowGroup) {
    Value firstLane = k.mul(rowGroup, k.index(kValueRows));
    SmallVector<Value> laneOf;
    for (int64_t r = 0; r < kValueRows; ++r)
      laneOf.push_back(k.add(firstLane, k.index(r)));
    k.forLoop(k.index(0), k.index(headSize), k.index(chunks * lanes),
              [&](Value element) {
      SmallVector<Value> at, init;
      for (int64_t c = 0; c < chunks; ++c)
        at.push_back(k.add(element, k.index(c * lanes)));
      for (Value lane : laneOf) {
        Value rescale = k.splat(loadScalar(rescales, {lane}), chunkType);
        for (Value offset : at)
          init.push_back(
              k.fmul(load(chunkType, output, {lane, offset}), rescale));
      }
      SmallVector<Value> acc = k.forLoop(
          k.index(0), k.index(kBlockKeys), k.index(1), init,
          [&](Value j, ValueRange carried) {
            SmallVector<Value> rowChunks, next;
            for (Value offset : at)
              rowChunks.push_back(load(chunkType, values, {j, offset}));
            for (auto [r, lane] : llvm::enumerate(laneOf)) {
              Value weight =
                  k.splat(loadScalar(scores, {j, lane}), chunkType);
              for (auto [c, chunk] : llvm::enumerate(rowChunks))
                next.push_back(
                    k.vectorFma(weight, chunk, carried[r * chunks + c]));
            }
            return next;
          });
      for (auto [r, lane] : llvm::enumerate(laneOf))
        for (auto [c, offset] : llvm::enumerate(at))
          store(acc[r * chunks + c], output, {lane, offset});
    });
  });
}

/// Out (and lse) of the lanes that hold the tile's rows.
void RowTileKernel::writeRows() {
  k.forLoop(k.index(0), k.mul(rows, k.index(group)), k.index(1),
            [&](Value lane) {
    SoftmaxState laneState{loadScalar(stats, {k.index(0), lane}),
                           loadScalar(stats, {k.index(1), lane}),
                           load(rowType, output, {lane, k.index(0)})};
    Value row = k.add(firstRow, k.divu(lane, k.index(group)));
    writeAttentionRow(k, clauses, softmax, op, laneState, row,
                      headOfLane(lane));
  });
}

} // namespace

bool AttentionRowTiles::canLower(AttentionRaggedOp op) {
  return !op.getSoftcap() && !op.getAlibi() && getGroup(op) <= kTileLanes;
}

int64_t AttentionRowTiles::getTileRows(AttentionRaggedOp op) {
  return std::max<int64_t>(1, kTileLanes / getGroup(op));
}

Value AttentionRowTiles::isWorthTiling(KernelBuilder &k, AttentionRaggedOp op,
                                       Value rows) {
  return k.uge(k.mul(rows, k.index(getGroup(op))), k.index(kDotLanes));
}

void AttentionRowTiles::emit(KernelBuilder &k, AttentionRaggedOp op,
                             Value batch, Value kvHead, Value firstRow,
                             Value rows, Value sequenceRow, Value cached) {
  RowTileKernel(k, op, batch, kvHead, firstRow, rows).run(sequenceRow, cached);
}
