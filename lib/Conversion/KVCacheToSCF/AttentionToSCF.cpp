//===- AttentionToSCF.cpp - attention_ragged to loops -----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Paged attention on the CPU (attention_ragged, and mla_attention_ragged,
// whose V rows are the first v_head_size elements of the K rows it
// already read). One parallel task per (sequence, KV head,
// tile of rows), or per (sequence, tile of rows) with every KV head for a
// decode batch of enough sequences per thread: a tile whose rows times the
// GQA group's heads fill at
// least one vector of lanes takes the register-blocked row-tile kernel
// (AttentionTilesToSCF.cpp), unless the op has a soft cap or a group of
// more than 128 heads, a compile-time choice per op; the rest (decode rows,
// those ops) take the per-row loop here: for each
// query row and head, one pass over its keys with the online softmax of
// KernelCommon/Softmax.h (running max, running sum, rescaled f32
// accumulator), so it is numerically stable without a second pass: the
// decode kernel's (AttentionDecodeToSCF.cpp) where it takes the op, this
// file's KeyPass otherwise. The
// optional clauses (docs/Contract.md 3.3): the key loop runs over the
// row's window, chunk or cached tokens only; a soft cap or ALiBi bias
// transforms each score in natural units before it moves to the log2
// domain; a sink starts the softmax state as one more logit with no value;
// `lse` receives ln(2) * (max + log2(sum)).
//
//===----------------------------------------------------------------------===//

#include "AttentionCPU.h"
#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/Fp8ToInteger.h"
#include "../KernelCommon/KernelLowering.h"
#include "../KernelCommon/Quantization.h"
#include "../KernelCommon/Rope.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// The most scale groups of a quantized head row the CPU loop reads (one
/// unrolled dequantizing load each).
constexpr int64_t kMaxScaleGroupsPerRow = 64;
/// The largest head the CPU kernels lower: each holds a head's q row and
/// output accumulator as whole vectors, so their IR and compile time grow
/// with the head (3.4 s at 4096 elements for a decode step, 58 s at 65536).
/// Seven times MLA's 576; a larger head gets an error, not a minute-long
/// compile.
constexpr int64_t kMaxCPUHeadSize = 4096;
/// Query heads that share one pass over the keys at most (each holds its
/// q row and output accumulator in registers).
constexpr int64_t kMaxHeadsPerPass = 8;
/// The OpenMP runtime's thread count, asked when the pass does not know
/// the threads of the parallel loops.
constexpr StringLiteral kOpenMPThreadsFunction = "omp_get_max_threads";

/// Declares `i32 omp_get_max_threads()` in the module of `op` (once).
void declareOpenMPThreads(OpBuilder &b, Operation *op) {
  Operation *table = SymbolTable::getNearestSymbolTable(op);
  if (!table || SymbolTable::lookupSymbolIn(table, kOpenMPThreadsFunction))
    return;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&table->getRegion(0).front());
  auto function = func::FuncOp::create(
      b, op->getLoc(), kOpenMPThreadsFunction,
      b.getFunctionType({}, {b.getI32Type()}));
  function.setPrivate();
}

/// Sequences per thread from which a decode task takes all the KV heads of
/// its sequence (AttentionDecodeToSCF.cpp): fewer tasks, each reading whole
/// token rows.
constexpr int64_t kSequencesPerThread = 4;
/// How many keys ahead the key loop prefetches K and V rows.
constexpr int64_t kPrefetchKeys = 8;
/// Keys of one block of the key loop (one softmax rescale per block).
constexpr int64_t kBlockKeys = 8;

/// One pass over the keys [begin, end) of a row for some query heads of one
/// KV group: in blocks of kBlockKeys keys (one max, one rescale and one
/// vector 2^x per block and head: OnlineSoftmax::updateBlock), then the
/// keys left one at a time. Each K and V row is read once for all heads
/// (MLA: each latent row once, its first valueType elements the V row);
/// the rows kPrefetchKeys keys ahead are prefetched.
struct KeyPass {
  KernelBuilder &k;
  AttentionClauses &clauses;
  OnlineSoftmax &softmax;
  Value keys, values, batch, kvHead, position, end;
  /// f32 x head_size (K rows, queries) and f32 x the value head size (V
  /// rows, the softmax's accumulators).
  VectorType accType, valueType;
  /// Per head: q (scaled, f32) and the ALiBi slope (or null).
  ArrayRef<Value> queries, slopes;

  SmallVector<SoftmaxState> run(Value begin, ArrayRef<SoftmaxState> init) {
    Value blocks = k.divu(k.sub(end, begin), k.index(kBlockKeys));
    Value blocksEnd = k.add(begin, k.mul(blocks, k.index(kBlockKeys)));
    SmallVector<Value> blocked = k.forLoop(
        begin, blocksEnd, k.index(kBlockKeys), flattenStates(init),
        [&](Value first, ValueRange carried) {
          return flattenStates(blockStep(first, unflattenStates(carried)));
        });
    return unflattenStates(k.forLoop(
        blocksEnd, end, k.index(1), blocked,
        [&](Value token, ValueRange carried) {
          return flattenStates(keyStep(token, unflattenStates(carried)));
        }));
  }

  /// A head row as f32 and, for a token_head cache, its scale.
  struct Row {
    Value values, scale;
  };

  /// The head row of `token` of `cache` as f32 (each cache through its own
  /// lookup table: K and V of one collection share it, and CSE merges the
  /// two lookups). A token_head cache's row is its codes converted, and
  /// its one scale is returned apart: the loop folds it into the score
  /// (K) or the weight (V) instead of multiplying every element. E4M3FN
  /// codes convert to their values / 2^8 and the scale is times 2^8: the
  /// same products (scaling by 2^8 is exact), one multiply per 16 values
  /// fewer.
  Row loadRow(Value cache, Value token) {
    auto [page, slot] = k.lookup(cache, batch, token, /*servesWrite=*/false);
    auto params = KVCacheParams::get(cache.getType());
    if (!params.scales ||
        params.scales.groupSize(params.headSize) != params.headSize)
      return {loadHeadRowAsF32(k, cache, page, slot, kvHead, accType), {}};
    auto codesType = VectorType::get({params.headSize}, params.elementType);
    Value codes = PageLoadOp::create(k.b, k.loc, codesType, cache, page, slot,
                                     kvHead, k.index(0));
    // The E4M3FN decoding's exact multiply by 2^8 goes into the scale.
    float factor;
    Value values = decodeStorageToF32Unscaled(k.b, k.loc, codes, factor);
    Value scale = PageLoadScaleOp::create(k.b, k.loc, cache, page, slot,
                                          kvHead, k.index(0));
    if (factor != 1.0f)
      scale = k.fmul(scale, k.f32(factor));
    return {values, scale};
  }

  /// The V row of `token`, whose K row is `keyRow`: from the value cache,
  /// or the K row's first elements when the keys are the values (MLA).
  Row loadValueRow(const Row &keyRow, Value token) {
    if (values != keys)
      return loadRow(values, token);
    if (valueType == accType)
      return keyRow;
    return {vector::ExtractStridedSliceOp::create(
                k.b, k.loc, keyRow.values, ArrayRef<int64_t>{0},
                ArrayRef<int64_t>{valueType.getDimSize(0)},
                ArrayRef<int64_t>{1}),
            keyRow.scale};
  }

  /// The score (log2 domain) for head `i` of key row `key` at `token`
  /// whose dot product with q is `dot`.
  Value scoreFromDot(int64_t i, Value dot, const Row &key, Value token) {
    if (key.scale)
      dot = k.fmul(dot, key.scale);
    return clauses.transformScore(dot, slopes[i], token, position);
  }

  /// The score (log2 domain) of key row `key` at `token` for head `i`.
  Value score(int64_t i, const Row &key, Value token) {
    return scoreFromDot(i, k.sum(k.fmul(queries[i], key.values)), key,
                        token);
  }

  /// Prefetches the K and V head rows of `token` (clamped to the last key).
  void prefetch(Value token) {
    token = k.minu(token, k.sub(end, k.index(1)));
    prefetchHeadRow(k, keys, batch, token, kvHead);
    if (values != keys)
      prefetchHeadRow(k, values, batch, token, kvHead);
  }

  SmallVector<SoftmaxState> keyStep(Value token,
                                    ArrayRef<SoftmaxState> states) {
    prefetch(k.add(token, k.index(kPrefetchKeys)));
    Row keyRow = loadRow(keys, token);
    SmallVector<Value> scores;
    for (size_t i = 0; i < queries.size(); ++i)
      scores.push_back(score(i, keyRow, token));
    Row valueRow = loadValueRow(keyRow, token);
    SmallVector<SoftmaxState> next;
    for (size_t i = 0; i < queries.size(); ++i)
      next.push_back(softmax.update(states[i], scores[i], valueRow.values,
                                    valueRow.scale));
    return next;
  }

  /// The scores (log2 domain) of the block's keys `keyRows` at `tokens`
  /// for head `i`, from the dot products `dots` (one vector); `keyScales`
  /// the rows' scales as one vector (or null: no scales).
  Value blockScores(int64_t i, Value dots, ArrayRef<Row> keyRows,
                    ArrayRef<Value> tokens, Value keyScales) {
    if (!clauses.transformsScores())
      return keyScales ? k.fmul(dots, keyScales) : dots;
    SmallVector<Value> elements;
    for (auto [j, row] : llvm::enumerate(keyRows))
      elements.push_back(scoreFromDot(
          i, vector::ExtractOp::create(k.b, k.loc, dots, int64_t(j)), row,
          tokens[j]));
    return vector::FromElementsOp::create(
        k.b, k.loc, cast<VectorType>(dots.getType()), elements);
  }

  /// kBlockKeys keys from `first`: each K row loaded once for the partial
  /// dot products of every head (no reduction across a vector; the IR uses
  /// a row for every head before it loads the next), each head's reduced
  /// by one tree for the block; then the V rows, loaded once, and per head
  /// the block's softmax update (OnlineSoftmax::updateBlock). Measured
  /// against adding each V row to every head in turn: that was slower.
  SmallVector<SoftmaxState> blockStep(Value first,
                                      ArrayRef<SoftmaxState> states) {
    SmallVector<Value> tokens;
    for (int64_t j = 0; j < kBlockKeys; ++j) {
      tokens.push_back(k.add(first, k.index(j)));
      prefetch(k.add(tokens[j], k.index(kPrefetchKeys)));
    }
    int64_t lanes = getDotLanes(accType.getDimSize(0));
    SmallVector<SmallVector<Value>> partials(queries.size());
    SmallVector<Row> keyRows;
    for (Value token : tokens) {
      keyRows.push_back(loadRow(keys, token));
      for (auto [i, query] : llvm::enumerate(queries))
        partials[i].push_back(
            partialDot(k, query, keyRows.back().values, lanes));
    }
    SmallVector<Value> rows, scales;
    for (auto [token, keyRow] : llvm::zip(tokens, keyRows)) {
      Row row = loadValueRow(keyRow, token);
      rows.push_back(row.values);
      scales.push_back(row.scale);
    }
    // Each row's scale, one vector per block: one multiply per head for
    // the block's scores, not one per key.
    auto scalesVector = [&](ArrayRef<Value> rowScales) -> Value {
      if (!rowScales.front())
        return {};
      return vector::FromElementsOp::create(
          k.b, k.loc, VectorType::get({kBlockKeys}, k.b.getF32Type()),
          rowScales);
    };
    SmallVector<Value> keyScaleValues;
    for (const Row &row : keyRows)
      keyScaleValues.push_back(row.scale);
    Value keyScales = scalesVector(keyScaleValues);
    Value valueScales = scalesVector(scales);
    SmallVector<SoftmaxState> next;
    for (size_t i = 0; i < queries.size(); ++i) {
      Value dots = reducePartialDots(k, partials[i], lanes);
      next.push_back(softmax.updateBlock(
          states[i], blockScores(i, dots, keyRows, tokens, keyScales), rows,
          valueScales));
    }
    return next;
  }
};

struct AttentionToSCF : OpInterfaceRewritePattern<AttentionOpInterface> {
  AttentionToSCF(MLIRContext *ctx, bool checked, int64_t threads,
                 bool bf16Dot)
      : OpInterfaceRewritePattern(ctx), checked(checked), threads(threads),
        bf16Dot(bf16Dot) {}
  /// Whether a rope clause's rotary positions are checked against the table.
  bool checked;
  /// The threads the parallel loop runs on (0: the OpenMP runtime's
  /// count, asked at run time).
  int64_t threads;
  /// Whether the target has AVX512-BF16 (the decode kernel's bf16 q . K).
  bool bf16Dot;

  LogicalResult matchAndRewrite(AttentionOpInterface op,
                                PatternRewriter &rewriter) const override {
    if (!hasUnitInnerStride({op.getQ(), op.getOut()}))
      return op.emitOpError("cannot be lowered: q and out need a unit "
                            "innermost stride (copy them into contiguous "
                            "buffers)");
    if (failed(QueryRope::checkStrides(op)))
      return failure();
    // A head row is read one scale group at a time, unrolled: bound the
    // number of reads per key.
    auto params = KVCacheParams::get(op.getKeyCache().getType());
    if (params.headSize > kMaxCPUHeadSize)
      return op.emitOpError("cannot be lowered to the CPU: a head of ")
             << params.headSize << " elements is over " << kMaxCPUHeadSize
             << ", the largest the CPU kernels hold in vectors; use a head "
                "size of at most "
             << kMaxCPUHeadSize;
    if (params.scales &&
        params.headSize / params.scales.groupSize(params.headSize) >
            kMaxScaleGroupsPerRow)
      return op.emitOpError("cannot be lowered to the CPU: a head of ")
             << params.headSize << " elements holds more than "
             << kMaxScaleGroupsPerRow << " scale groups of "
             << params.scales.groupSize(params.headSize)
             << "; use block<G> with G >= head_size / "
             << kMaxScaleGroupsPerRow;
    KernelBuilder k{rewriter, getKernelLoc(op)};
    Value offsets = op.getRowOffsets();
    Value numSequences = k.numSequences(offsets);
    // One parallel task per (sequence, KV head, tile of rows), in that
    // order: a thread's consecutive tasks read the same keys. The tiles of
    // every sequence are counted: ceil(longest sequence's rows / tile rows).
    int64_t tileRows = AttentionRowTiles::getTileRows(op);
    Value longest =
        k.forLoop(k.index(0), numSequences, k.index(1), {k.index(0)},
                  [&](Value batch, ValueRange carried) -> SmallVector<Value> {
                    Value rows = k.sub(
                        k.loadOffset(offsets, k.add(batch, k.index(1))),
                        k.loadOffset(offsets, batch));
                    return {k.maxu(carried[0], rows)};
                  })[0];
    Value tiles = k.ceilDiv(longest, k.index(tileRows));
    Value numKVHeads = k.index(params.numHeads);
    Value kvHeads = getKVHeadsPerTask(k, op, numSequences, longest);
    Value headTasks = k.divu(numKVHeads, kvHeads);
    Value tasks = k.mul(k.mul(numSequences, headTasks), tiles);
    k.parallelLoop(k.index(0), tasks, [&](Value task) {
      Value tile = k.remu(task, tiles);
      Value rest = k.divu(task, tiles);
      emitTask(k, op, k.divu(rest, headTasks),
               k.mul(k.remu(rest, headTasks), kvHeads), kvHeads, tile,
               tileRows, checked, bf16Dot);
    });
    rewriter.eraseOp(op);
    return success();
  }

  /// The KV heads of one task: all of them (token-major decode, see
  /// AttentionDecodeToSCF.cpp) when every row takes the decode kernel (no
  /// tile of rows fills a vector of lanes) and there are at least
  /// kSequencesPerThread sequences per thread, else 1.
  Value getKVHeadsPerTask(KernelBuilder &k, AttentionOpInterface op,
                          Value numSequences, Value longest) const {
    auto params = KVCacheParams::get(op.getKeyCache().getType());
    Value one = k.index(1);
    if (params.numHeads == 1 || !AttentionDecodeBlocks::canLower(op))
      return one;
    Value threadCount;
    if (threads > 0) {
      threadCount = k.index(threads);
    } else {
      declareOpenMPThreads(k.b, op);
      auto call = func::CallOp::create(k.b, k.loc, kOpenMPThreadsFunction,
                                       TypeRange{k.b.getI32Type()},
                                       ValueRange{});
      threadCount = arith::IndexCastUIOp::create(
          k.b, k.loc, k.b.getIndexType(), call.getResult(0));
    }
    Value chosen = k.uge(numSequences,
                         k.mul(threadCount, k.index(kSequencesPerThread)));
    if (AttentionRowTiles::canLower(op))
      chosen = k.andi(chosen, k.ult(k.mul(longest, k.index(getQueryGroup(op))),
                                    k.index(kDotLanes)));
    return k.select(chosen, k.index(params.numHeads), one);
  }

  /// Rows [tile * tileRows, ...) of sequence `batch` (if it has them) for
  /// the `kvHeads` KV heads from `firstKVHead`: the row-tile kernel when the
  /// op and the tile's rows fit it (one KV head after the other), the
  /// per-row loop otherwise.
  static void emitTask(KernelBuilder &k, AttentionOpInterface op, Value batch,
                       Value firstKVHead, Value kvHeads, Value tile,
                       int64_t tileRows, bool checked, bool bf16Dot) {
    Value offsets = op.getRowOffsets();
    Value first = k.loadOffset(offsets, batch);
    Value end = k.loadOffset(offsets, k.add(batch, k.index(1)));
    Value tileFirst = k.add(first, k.mul(tile, k.index(tileRows)));
    Value lastKVHead = k.add(firstKVHead, kvHeads);
    k.ifThen(k.ult(tileFirst, end), [&] {
      Value rows = k.minu(k.index(tileRows), k.sub(end, tileFirst));
      Value cached = CacheLengthOp::create(k.b, k.loc, op.getKeyCache(), batch);
      auto eachRow = [&] {
        k.forLoop(tileFirst, k.add(tileFirst, rows), k.index(1), [&](Value row) {
          Value position = k.rowPosition(cached, row, first);
          emitRow(k, op, batch, firstKVHead, kvHeads, row, position,
                  getKeyRange(k, op, position, cached), checked, bf16Dot);
        });
        return SmallVector<Value>();
      };
      if (!AttentionRowTiles::canLower(op)) {
        eachRow();
        return;
      }
      k.ifThenElse(
          AttentionRowTiles::isWorthTiling(k, op, rows), {},
          [&] {
            k.forLoop(firstKVHead, lastKVHead, k.index(1), [&](Value kvHead) {
              AttentionRowTiles::emit(k, op, batch, kvHead, tileFirst, rows,
                                      first, cached, checked);
            });
            return SmallVector<Value>();
          },
          eachRow);
    });
  }

  /// The state before the first key: empty, or the sink's logit (log2
  /// domain) with weight 1 and no value.
  static SoftmaxState initialState(KernelBuilder &k, AttentionClauses &clauses,
                                   OnlineSoftmax &softmax, Value head,
                                   VectorType accType) {
    SoftmaxState state = softmax.empty(accType);
    if (Value sink = clauses.loadSinkLogit(head)) {
      state.max = sink;
      state.sum = k.f32(1);
    }
    return state;
  }

  /// Query heads of a GQA group that share one pass over the keys: the
  /// largest divisor of the group of at most kMaxHeadsPerPass.
  static int64_t getHeadsPerPass(int64_t group) {
    for (int64_t heads = std::min(group, kMaxHeadsPerPass); heads > 1; --heads)
      if (group % heads == 0)
        return heads;
    return 1;
  }

  /// The query heads of the `kvHeads` KV heads from `firstKVHead` in `row`
  /// at `position`, which sees keys `keyRange` = [begin, end): the heads
  /// of a group in passes of getHeadsPerPass, each pass reading every K and
  /// V row once for all its heads (one online-softmax state per head), each
  /// q row rotated as it is loaded with a rope clause. The decode kernel
  /// takes all the KV heads in one pass over the keys; the per-row loop
  /// (KeyPass) one KV head after the other.
  static void emitRow(KernelBuilder &k, AttentionOpInterface op, Value batch,
                      Value firstKVHead, Value kvHeads, Value row,
                      Value position, std::pair<Value, Value> keyRange,
                      bool checked, bool bf16Dot) {
    Value q = op.getQ(), keys = op.getKeyCache(), values = op.getValueCache();
    auto params = KVCacheParams::get(keys.getType());
    int64_t group = getQueryGroup(op);
    int64_t perPass = getHeadsPerPass(group);
    // q and out have their own element types (on a quantized cache any of
    // f32, f16, bf16).
    auto qRowType = VectorType::get(
        {params.headSize}, cast<MemRefType>(q.getType()).getElementType());
    auto accType = VectorType::get({params.headSize}, k.b.getF32Type());
    auto valueType = VectorType::get({op.getValueHeadSize()}, k.b.getF32Type());
    OnlineSoftmax softmax(k);
    AttentionClauses clauses(k, op);
    QueryRope rope(k, op, q, op.getCosSin(), op.getPositions(), checked);
    Value rotary = rope.rotaryPosition(row, position);
    Value zero = k.index(0);
    // q scaled once: scores in the log2 domain (in natural units when a
    // score transform follows).
    Value scale = k.splat(k.f32(clauses.queryScale()), accType);
    // q's row of `head` as stored, and as the scores use it.
    auto storedQuery = [&](Value head) -> Value {
      return vector::LoadOp::create(k.b, k.loc, qRowType, q,
                                    ValueRange{row, head, zero});
    };
    auto query = [&](Value head) {
      Value query = rope.rotate(storedQuery(head), row, head, zero, rotary);
      return k.fmul(k.widen(query, accType), scale);
    };
    auto init = [&](Value head) {
      return initialState(k, clauses, softmax, head, valueType);
    };
    auto write = [&](const SoftmaxState &state, Value head) {
      writeAttentionRow(k, clauses, softmax, op, state, row, head);
    };
    if (AttentionDecodeBlocks::canLower(op)) {
      AttentionDecodeBlocks::emit(k, op, clauses, softmax, batch, firstKVHead,
                                  kvHeads, position, keyRange, perPass, query,
                                  storedQuery, bf16Dot, init, write);
      return;
    }
    k.forLoop(firstKVHead, k.add(firstKVHead, kvHeads), k.index(1),
              [&](Value kvHead) {
      k.forLoop(zero, k.index(group), k.index(perPass), [&](Value first) {
        SmallVector<Value> heads, queries, slopes;
        SmallVector<SoftmaxState> states;
        for (int64_t i = 0; i < perPass; ++i) {
          Value head = k.add(k.mul(kvHead, k.index(group)),
                             k.add(first, k.index(i)));
          heads.push_back(head);
          slopes.push_back(clauses.loadSlope(head));
          queries.push_back(query(head));
          states.push_back(init(head));
        }
        KeyPass pass{k,       clauses,  softmax,         keys,
                     values,  batch,    kvHead,          position,
                     keyRange.second, accType, valueType, queries,
                     slopes};
        states = pass.run(keyRange.first, states);
        for (int64_t i = 0; i < perPass; ++i)
          write(states[i], heads[i]);
      });
    });
  }
};

} // namespace

void mlir::kvcache::populateAttentionToSCFConversionPatterns(
    RewritePatternSet &patterns, bool checked, int64_t threads, bool bf16Dot) {
  patterns.add<AttentionToSCF>(patterns.getContext(), checked, threads,
                               bf16Dot);
}
