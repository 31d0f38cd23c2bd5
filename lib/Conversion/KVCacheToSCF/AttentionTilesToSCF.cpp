//===- AttentionTilesToSCF.cpp - attention over row tiles -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The CPU's register-blocked attention kernel for a tile of query rows of
// one sequence and one KV head. Its lanes are the tile's (row, query head)
// pairs, row-major (the GQA group's heads side by side), up to kTileLanes
// in vectors of kDotLanes, so a tile is a small matrix multiplication
// twice per block of kBlockKeys keys:
//
// - q^T packed once per tile (scaled; kDotLanes lanes x kDotLanes head
//   elements transposed by shuffles);
// - the block's K and V head rows, converted once to f32 buffers (widened,
//   or dequantized with their scales);
// - per vector of lanes, the block's scores S^T = K q^T in kBlockKeys
//   accumulators: per head element one vector of q^T and one broadcast
//   K[j][d] per key;
// - keys a lane's row does not see (causal limit, window, chunk, the
//   block's end) masked to -inf, only in blocks some row does not see
//   whole; ALiBi's bias per lane;
// - the online softmax per lane, vectorised across lanes: the max and the
//   rescale from those registers, then one vector 2^x per key in a loop;
// - P V with kValueRows lanes' output rows x kMaxValueChunks vectors of
//   the head in accumulators, each V vector loaded once per row group for
//   its rows' broadcast weights, the rows rescaled once per block.
//
//===----------------------------------------------------------------------===//

#include "AttentionCPU.h"
#include "../KernelCommon/Rope.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// Lanes of a tile: the (row, query head) pairs it computes, in vectors of
/// kDotLanes.
constexpr int64_t kTileLanes = 128;
/// Keys of one block: one rescale of the tile's output rows per block, and
/// the score micro-kernel's accumulators (one vector of lanes per key).
constexpr int64_t kBlockKeys = 16;
/// Output rows, and vectors of each, the P V micro-kernel accumulates in
/// registers at once.
constexpr int64_t kValueRows = 4;
constexpr int64_t kMaxValueChunks = 4;

/// One tile's kernel, step by step. The buffers live for the tile (heap: a
/// parallel iteration allocates nothing on the stack). Lane l holds row
/// min(l / group, rows - 1) of the tile, query head l % group of the KV
/// head's group; the steps run over the vectors of lanes that hold the
/// tile's rows (`laneVectors`); lanes past them (a group that does not
/// divide kDotLanes, the last vector of a short tile) repeat the tile's
/// last row and are never written.
class RowTileKernel {
public:
  RowTileKernel(KernelBuilder &k, AttentionOpInterface op, Value batch,
                Value kvHead, Value firstRow, Value rows, bool checked)
      : k(k), op(op), clauses(k, op), softmax(k),
        rope(k, op, op.getQ(), op.getCosSin(), op.getPositions(), checked),
        batch(batch), kvHead(kvHead), firstRow(firstRow), rows(rows) {
    auto params = KVCacheParams::get(op.getKeyCache().getType());
    headSize = params.headSize;
    valueSize = op.getValueHeadSize();
    group = getQueryGroup(op);
    f32 = k.b.getF32Type();
    laneType = VectorType::get({kDotLanes}, f32);
    laneIndexType = VectorType::get({kDotLanes}, k.b.getI32Type());
    rowType = VectorType::get({headSize}, f32);
    valueRowType = VectorType::get({valueSize}, f32);
    usedLanes = k.mul(rows, k.index(group));
    laneVectors = k.ceilDiv(usedLanes, k.index(kDotLanes));
  }

  void run(Value sequenceRow, Value cached);

private:
  void allocate();
  void initializeLanes(Value firstPosition, Value cached);
  void packQueries(Value lanes, Value firstPosition);
  void loadBlock(Value first, Value end);
  void scoreBlock(Value first, Value crosses);
  SmallVector<Value> maskScores(Value first, Value lanes,
                                ArrayRef<Value> blockScores);
  SmallVector<Value> capScores(ArrayRef<Value> blockScores);
  SmallVector<Value> biasScores(Value first, Value lanes,
                                ArrayRef<Value> blockScores);
  void accumulateValues();
  void writeRows();

  Value allocBuffer(ArrayRef<int64_t> shape, Type element) {
    auto type = MemRefType::get(shape, element);
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
  void storeScalar(Value value, Value buffer, ValueRange indices) {
    memref::StoreOp::create(k.b, k.loc, value, buffer, indices);
  }
  /// for (lanes = 0; lanes < laneVectors * kDotLanes; lanes += kDotLanes).
  void forEachLaneVector(function_ref<void(Value)> body) {
    k.forLoop(k.index(0), k.mul(laneVectors, k.index(kDotLanes)),
              k.index(kDotLanes), body);
  }
  Value minusInfinity() {
    return k.splat(k.f32(-std::numeric_limits<float>::infinity()), laneType);
  }
  Value isMinusInfinity(Value v) {
    return arith::CmpFOp::create(k.b, k.loc, arith::CmpFPredicate::OEQ, v,
                                 minusInfinity());
  }
  /// The tile row of lane `lane` (an index): min(lane / group, rows - 1).
  Value rowOfLane(Value lane) {
    return k.minu(k.divu(lane, k.index(group)), k.sub(rows, k.index(1)));
  }
  /// The query head of lane `lane` (an index).
  Value headOfLane(Value lane) {
    return k.add(k.mul(kvHead, k.index(group)),
                 k.remu(lane, k.index(group)));
  }

  KernelBuilder &k;
  AttentionOpInterface op;
  AttentionClauses clauses;
  OnlineSoftmax softmax;
  /// The rope clause on q, applied as q is packed.
  QueryRope rope;
  Value batch, kvHead, firstRow, rows, usedLanes, laneVectors;
  /// head_size, and the elements of a V row from the start of a row of the
  /// value cache (`v_head_size` for MLA).
  int64_t headSize, valueSize, group;
  Type f32;
  VectorType laneType, laneIndexType, rowType, valueRowType;
  /// q^T [head_size][kTileLanes] (scaled), the block's K and V rows
  /// [kBlockKeys][head_size] (one buffer when the keys are the values:
  /// MLA), its scores then weights [kBlockKeys][kTileLanes], the lanes'
  /// rescale factors [kTileLanes], output rows [kTileLanes][valueSize],
  /// softmax states (max, sum) [2][kTileLanes]
  /// (f32), and the keys [begin, end) each lane's row sees and (with ALiBi)
  /// its position [3][kTileLanes] (i32).
  Value queries, keys, values, scores, rescales, output, stats, ranges;
  /// With ALiBi, each lane's slope [kTileLanes] (its row's position is the
  /// third row of `ranges`).
  Value slopes;
  SmallVector<Value> buffers;
};

void RowTileKernel::run(Value sequenceRow, Value cached) {
  allocate();
  Value firstPosition = k.rowPosition(cached, firstRow, sequenceRow);
  Value lastPosition = k.add(firstPosition, k.sub(rows, k.index(1)));
  // Rows' key ranges only move forward with the position: the tile's keys
  // run from its first row's begin to its last row's end, and a block
  // within [last row's begin, first row's end = wholeEnd) is seen whole by
  // every row.
  Value tileBegin, wholeEnd, lastBegin, tileEnd;
  std::tie(tileBegin, wholeEnd) = getKeyRange(k, op, firstPosition, cached);
  std::tie(lastBegin, tileEnd) = getKeyRange(k, op, lastPosition, cached);
  initializeLanes(firstPosition, cached);
  k.forLoop(tileBegin, tileEnd, k.index(kBlockKeys), [&](Value first) {
    loadBlock(first, tileEnd);
    scoreBlock(first, arith::OrIOp::create(
                          k.b, k.loc, k.ult(first, lastBegin),
                          k.ult(wholeEnd, k.add(first, k.index(kBlockKeys)))));
    accumulateValues();
  });
  writeRows();
  for (Value buffer : buffers)
    memref::DeallocOp::create(k.b, k.loc, buffer);
}

void RowTileKernel::allocate() {
  queries = allocBuffer({headSize, kTileLanes}, f32);
  keys = allocBuffer({kBlockKeys, headSize}, f32);
  values = op.getValueCache() == op.getKeyCache()
               ? keys
               : allocBuffer({kBlockKeys, headSize}, f32);
  scores = allocBuffer({kBlockKeys, kTileLanes}, f32);
  rescales = allocBuffer({kTileLanes}, f32);
  output = allocBuffer({kTileLanes, valueSize}, f32);
  stats = allocBuffer({2, kTileLanes}, f32);
  ranges = allocBuffer({3, kTileLanes}, k.b.getI32Type());
  if (op.getAlibi())
    slopes = allocBuffer({kTileLanes}, f32);
}

/// Per lane: its row's key range (and with ALiBi its head's slope and its
/// row's position), the softmax state before the first key (empty, or the
/// head's sink with weight 1) and an output row of zeros; per vector of
/// lanes q^T.
void RowTileKernel::initializeLanes(Value firstPosition, Value cached) {
  Value zero = k.index(0), one = k.index(1);
  forEachLaneVector([&](Value lanes) {
    packQueries(lanes, firstPosition);
    k.forLoop(lanes, k.add(lanes, k.index(kDotLanes)), one, [&](Value lane) {
      Value head = headOfLane(lane);
      Value position = k.add(firstPosition, rowOfLane(lane));
      auto [begin, end] = getKeyRange(k, op, position, cached);
      storeScalar(k.toI32(begin), ranges, {zero, lane});
      storeScalar(k.toI32(end), ranges, {one, lane});
      if (slopes) {
        storeScalar(clauses.loadSlope(head), slopes, {lane});
        storeScalar(k.toI32(position), ranges, {k.index(2), lane});
      }
      Value sink = clauses.loadSinkLogit(head);
      storeScalar(sink ? sink
                       : k.f32(-std::numeric_limits<float>::infinity()),
                  stats, {zero, lane});
      storeScalar(k.f32(sink ? 1 : 0), stats, {one, lane});
      store(k.splatConstant(valueRowType, 0), output, {lane, zero});
    });
  });
}

/// `rows`, kDotLanes vectors of kDotLanes f32, transposed: log2(kDotLanes)
/// butterfly stages, each exchanging blocks of s elements between rows s
/// apart (two shuffles per pair of rows), instead of kDotLanes^2 extracts.
SmallVector<Value> transposeLanes(KernelBuilder &k, SmallVector<Value> rows) {
  for (int64_t s = 1; s < kDotLanes; s *= 2) {
    SmallVector<int64_t> low, high;
    for (int64_t j = 0; j < kDotLanes; ++j) {
      bool second = j & s;
      low.push_back(second ? kDotLanes + j - s : j);
      high.push_back(second ? kDotLanes + j : j + s);
    }
    for (int64_t i = 0; i < kDotLanes; ++i) {
      if (i & s)
        continue;
      Value a = rows[i], b = rows[i + s];
      rows[i] = vector::ShuffleOp::create(k.b, k.loc, a, b, low);
      rows[i + s] = vector::ShuffleOp::create(k.b, k.loc, a, b, high);
    }
  }
  return rows;
}

/// q^T of the lanes from `lanes`, scaled once (scores in the log2 domain):
/// per `chunk` elements of the head, the lanes' q chunks (rotated with a
/// rope clause, the tile's first row at `firstPosition`; zero-padded to
/// kDotLanes) transposed into `chunk` vectors of lanes.
void RowTileKernel::packQueries(Value lanes, Value firstPosition) {
  Value q = op.getQ();
  int64_t chunk = getDotLanes(headSize);
  auto chunkType = VectorType::get(
      {chunk}, cast<MemRefType>(q.getType()).getElementType());
  Value scale = k.splat(k.f32(clauses.queryScale()), laneType);
  SmallVector<Value> rowsOf, heads, rotary;
  for (int64_t i = 0; i < kDotLanes; ++i) {
    Value lane = k.add(lanes, k.index(i));
    rowsOf.push_back(k.add(firstRow, rowOfLane(lane)));
    heads.push_back(headOfLane(lane));
    rotary.push_back(rope.rotaryPosition(
        rowsOf.back(), k.add(firstPosition, rowOfLane(lane))));
  }
  k.forLoop(k.index(0), k.index(headSize), k.index(chunk), [&](Value d) {
    SmallVector<Value> laneChunks;
    for (auto [row, head, position] : llvm::zip(rowsOf, heads, rotary)) {
      Value part = rope.rotate(load(chunkType, q, {row, head, d}), row, head,
                               d, position);
      part = k.widen(part, chunkType.clone(f32));
      if (chunk < kDotLanes)
        part = vector::InsertStridedSliceOp::create(
            k.b, k.loc, part, k.splatConstant(laneType, 0),
            ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1});
      laneChunks.push_back(k.fmul(part, scale));
    }
    SmallVector<Value> columns = transposeLanes(k, laneChunks);
    for (int64_t i = 0; i < chunk; ++i)
      store(columns[i], queries, {k.add(d, k.index(i)), lanes});
  });
}

/// The K and V rows of keys [first, first + kBlockKeys) as f32, each read
/// once (MLA: the latent rows once, the V rows their start); rows at or past `end` are zeros (their scores are masked: a zero
/// V row keeps 0 x garbage out of the output). No software prefetch: the
/// block's 2 x kBlockKeys rows are independent loads the core overlaps,
/// and prefetching the next block's rows (as the per-row loop does) was
/// 3-6% slower (prefill 2x1024 and 128 over 4096, f32, one thread, three
/// runs each way).
void RowTileKernel::loadBlock(Value first, Value end) {
  Value count = k.minu(k.index(kBlockKeys), k.sub(end, first));
  SmallVector<std::pair<Value, Value>> sources = {{op.getKeyCache(), keys}};
  if (values != keys)
    sources.push_back({op.getValueCache(), values});
  k.forLoop(k.index(0), count, k.index(1), [&](Value j) {
    Value token = k.add(first, j);
    for (auto [cache, buffer] : sources) {
      auto [page, slot] = k.lookup(cache, batch, token, /*servesWrite=*/false);
      store(loadHeadRowAsF32(k, cache, page, slot, kvHead, rowType), buffer,
            {j, k.index(0)});
    }
  });
  k.forLoop(count, k.index(kBlockKeys), k.index(1), [&](Value j) {
    for (auto [cache, buffer] : sources)
      store(k.splatConstant(rowType, 0), buffer, {j, k.index(0)});
  });
}

/// The block's scores and online-softmax update, per vector of lanes:
/// scores[j] = K[j] . q^T[lanes] (per head element one vector of q^T and
/// one broadcast K element per key, kBlockKeys fused multiply-adds on
/// accumulators in registers), masked when the block `crosses` a row's key
/// range and biased by ALiBi; from registers the new max and the factor
/// the lanes' output rows are rescaled by (to `rescales`); then, in a loop
/// over the stored scores, the weights 2^(score - max) (over them) and the
/// new sum. A lane that has seen no key yet keeps max -inf and weights 0.
void RowTileKernel::scoreBlock(Value first, Value crosses) {
  forEachLaneVector([&](Value lanes) {
    SmallVector<Value> zeros(kBlockKeys, k.splatConstant(laneType, 0));
    SmallVector<Value> sums = k.forLoop(
        k.index(0), k.index(headSize), k.index(1), zeros,
        [&](Value d, ValueRange acc) {
          Value q = load(laneType, queries, {d, lanes});
          SmallVector<Value> next;
          for (int64_t j = 0; j < kBlockKeys; ++j)
            next.push_back(k.vectorFma(
                q, k.splat(loadScalar(keys, {k.index(j), d}), laneType),
                acc[j]));
          return next;
        });
    // Soft-capped before the mask, which then sets -inf (the cap would
    // make -inf -softcap).
    if (op.getSoftcap())
      sums = capScores(sums);
    SmallVector<Value> blockScores = k.ifThenElse(
        crosses, SmallVector<Type>(kBlockKeys, laneType),
        [&] { return maskScores(first, lanes, sums); },
        [&] { return sums; });
    if (op.getAlibi()) {
      blockScores = biasScores(first, lanes, blockScores);
    } else if (op.getSoftcap()) {
      Value log2e = k.splat(k.f32(kLog2E), laneType);
      for (Value &score : blockScores)
        score = k.fmul(score, log2e);
    }
    SmallVector<Value> maxAt{k.index(0), lanes}, sumAt{k.index(1), lanes};
    Value oldMax = load(laneType, stats, maxAt);
    SmallVector<Value> tree(blockScores);
    Value max = k.fmax(oldMax, combineAsTree(tree, [&](Value x, Value y) {
                         return k.fmax(x, y);
                       }));
    Value zero = k.splatConstant(laneType, 0);
    Value rescale = k.select(isMinusInfinity(oldMax), zero,
                             k.exp2Inline(k.fsub(oldMax, max)));
    Value base = k.select(isMinusInfinity(max), zero, max);
    for (auto [j, score] : llvm::enumerate(blockScores))
      store(score, scores, {k.index(int64_t(j)), lanes});
    // The weights in a loop: one copy of 2^x in the code, not kBlockKeys.
    Value blockSum =
        k.forLoop(k.index(0), k.index(kBlockKeys), k.index(1),
                  {k.splatConstant(laneType, 0)},
                  [&](Value j, ValueRange sum) -> SmallVector<Value> {
                    Value weight = k.exp2Inline(
                        k.fsub(load(laneType, scores, {j, lanes}), base));
                    store(weight, scores, {j, lanes});
                    return {k.fadd(sum[0], weight)};
                  })[0];
    store(rescale, rescales, {lanes});
    store(max, stats, maxAt);
    store(k.vectorFma(load(laneType, stats, sumAt), rescale, blockSum), stats,
          sumAt);
  });
}

/// `blockScores` of the lanes from `lanes` with -inf for the keys of the
/// block from `first` a lane's row does not see.
SmallVector<Value> RowTileKernel::maskScores(Value first, Value lanes,
                                             ArrayRef<Value> blockScores) {
  Value begins = load(laneIndexType, ranges, {k.index(0), lanes});
  Value ends = load(laneIndexType, ranges, {k.index(1), lanes});
  SmallVector<Value> masked;
  for (auto [j, score] : llvm::enumerate(blockScores)) {
    Value token = k.splat(k.toI32(k.add(first, k.index(int64_t(j)))),
                          laneIndexType);
    Value seen = k.andi(k.uge(token, begins), k.ult(token, ends));
    masked.push_back(k.select(seen, score, minusInfinity()));
  }
  return masked;
}

/// softcap * tanh(score / softcap) of each of `blockScores` (q scaled by
/// `scale` alone), as the per-row loop (AttentionClauses::transformScore),
/// vectorised across lanes: its tanh is marked for the polynomial that
/// convert-kvcache-to-scf expands it to (a libm call per lane otherwise).
SmallVector<Value> RowTileKernel::capScores(ArrayRef<Value> blockScores) {
  Value cap = k.splat(k.f32(op.getSoftcap()->convertToFloat()), laneType);
  SmallVector<Value> capped;
  for (Value score : blockScores) {
    Value tanh = k.tanh(k.fdiv(score, cap));
    tanh.getDefiningOp()->setAttr(kApproximateAttrName, k.b.getUnitAttr());
    capped.push_back(k.fmul(cap, tanh));
  }
  return capped;
}

/// `blockScores` of the lanes from `lanes` (q scaled by `scale` alone)
/// plus slope * (key - position) per lane, in the log2 domain: the per-row
/// loop's score transform (AttentionClauses::transformScore), vectorised
/// across lanes. -inf stays -inf.
SmallVector<Value> RowTileKernel::biasScores(Value first, Value lanes,
                                             ArrayRef<Value> blockScores) {
  Value laneSlopes = load(laneType, slopes, {lanes});
  Value positions = load(laneIndexType, ranges, {k.index(2), lanes});
  Value log2e = k.splat(k.f32(kLog2E), laneType);
  SmallVector<Value> biased;
  for (auto [j, score] : llvm::enumerate(blockScores)) {
    // key - position in i32 (exact), then to f32, as the per-row loop.
    Value token = k.splat(k.toI32(k.add(first, k.index(int64_t(j)))),
                          laneIndexType);
    Value distance = arith::SIToFPOp::create(k.b, k.loc, laneType,
                                             k.sub(token, positions));
    biased.push_back(
        k.fmul(k.vectorFma(laneSlopes, distance, score), log2e));
  }
  return biased;
}

/// output[lane] = output[lane] * rescale[lane] + sum over the block's keys
/// of weight[j][lane] * V[j], kValueRows lanes x `chunks` vectors of the
/// head at a time, for the lanes that hold the tile's rows.
void RowTileKernel::accumulateValues() {
  int64_t lanes = getDotLanes(valueSize);
  int64_t chunks = std::min(kMaxValueChunks, valueSize / lanes);
  while ((valueSize / lanes) % chunks)
    --chunks;
  auto chunkType = VectorType::get({lanes}, f32);
  Value rowGroups = k.ceilDiv(usedLanes, k.index(kValueRows));
  k.forLoop(k.index(0), rowGroups, k.index(1), [&](Value rowGroup) {
    Value firstLane = k.mul(rowGroup, k.index(kValueRows));
    SmallVector<Value> laneOf;
    for (int64_t r = 0; r < kValueRows; ++r)
      laneOf.push_back(k.add(firstLane, k.index(r)));
    k.forLoop(k.index(0), k.index(valueSize), k.index(chunks * lanes),
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
  k.forLoop(k.index(0), usedLanes, k.index(1), [&](Value lane) {
    SoftmaxState laneState{loadScalar(stats, {k.index(0), lane}),
                           loadScalar(stats, {k.index(1), lane}),
                           load(valueRowType, output, {lane, k.index(0)})};
    Value row = k.add(firstRow, k.divu(lane, k.index(group)));
    writeAttentionRow(k, clauses, softmax, op, laneState, row,
                      headOfLane(lane));
  });
}

} // namespace

bool AttentionRowTiles::canLower(AttentionOpInterface op) {
  return getQueryGroup(op) <= kTileLanes;
}

int64_t AttentionRowTiles::getTileRows(AttentionOpInterface op) {
  return std::max<int64_t>(1, kTileLanes / getQueryGroup(op));
}

Value AttentionRowTiles::isWorthTiling(KernelBuilder &k, AttentionOpInterface op,
                                       Value rows) {
  return k.uge(k.mul(rows, k.index(getQueryGroup(op))), k.index(kDotLanes));
}

void AttentionRowTiles::emit(KernelBuilder &k, AttentionOpInterface op,
                             Value batch, Value kvHead, Value firstRow,
                             Value rows, Value sequenceRow, Value cached,
                             bool checked) {
  RowTileKernel(k, op, batch, kvHead, firstRow, rows, checked)
      .run(sequenceRow, cached);
}
