//===- AttentionToSCF.cpp - attention_ragged to loops -----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Paged attention on the CPU: for each query row and head, one pass over its
// keys with the online softmax of KernelCommon/Softmax.h (running max,
// running sum, rescaled f32 accumulator), so it is numerically stable
// without a second pass. The optional clauses (docs/Contract.md 3.3): the
// key loop runs over the row's window, chunk or cached tokens only; a soft
// cap or ALiBi bias transforms each score in natural units before it moves
// to the log2 domain; a sink starts the softmax state as one more logit
// with no value; `lse` receives ln(2) * (max + log2(sum)).
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/Softmax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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

/// Whether the innermost stride of `memref` is 1 (rows can be vector-loaded).
bool hasUnitInnerStride(Value memref) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(cast<MemRefType>(memref.getType())
                       .getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// The head row (page, slot, head) of `cache` as `accType` (f32 x
/// head_size): widened from a float cache, or dequantized from a cache with
/// scales (page_load with an f32 result: `stored * scale`), one scale group
/// per load (a dequantizing vector lies within one group).
Value loadHeadRowAsF32(KernelBuilder &k, Value cache, Value page, Value slot,
                       Value head, VectorType accType) {
  auto params = KVCacheParams::get(cache.getType());
  if (!params.scales) {
    auto rowType = VectorType::get({params.headSize}, params.elementType);
    return k.widen(PageLoadOp::create(k.b, k.loc, rowType, cache, page, slot,
                                      head, k.index(0)),
                   accType);
  }
  int64_t group = params.scales.groupSize(params.headSize);
  if (group == params.headSize)
    return PageLoadOp::create(k.b, k.loc, accType, cache, page, slot, head,
                              k.index(0));
  auto groupType = VectorType::get({group}, k.b.getF32Type());
  Value row = arith::ConstantOp::create(
      k.b, k.loc, accType, DenseElementsAttr::get(accType, 0.0f));
  for (int64_t start = 0; start < params.headSize; start += group) {
    Value part = PageLoadOp::create(k.b, k.loc, groupType, cache, page, slot,
                                    head, k.index(start));
    row = vector::InsertStridedSliceOp::create(k.b, k.loc, part, row,
                                               ArrayRef<int64_t>{start},
                                               ArrayRef<int64_t>{1});
  }
  return row;
}

struct AttentionToSCF : OpRewritePattern<AttentionRaggedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionRaggedOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasUnitInnerStride(op.getQ()) || !hasUnitInnerStride(op.getOut()))
      return op.emitOpError("cannot be lowered: q and out need a unit "
                            "innermost stride (copy them into contiguous "
                            "buffers)");
    // A head row is read one scale group at a time, unrolled: bound the
    // number of reads per key.
    auto params = KVCacheParams::get(op.getKeyCache().getType());
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
    k.forLoop(k.index(0), numSequences, k.index(1), [&](Value batch) {
      Value first = k.loadOffset(offsets, batch);
      Value end = k.loadOffset(offsets, k.add(batch, k.index(1)));
      Value cached = CacheLengthOp::create(k.b, k.loc, op.getKeyCache(), batch);
      k.forLoop(first, end, k.index(1), [&](Value row) {
        Value position = k.rowPosition(cached, row, first);
        emitRow(k, op, batch, row, position, getKeyRange(k, op, position, cached));
      });
    });
    rewriter.eraseOp(op);
    return success();
  }

  /// The keys [begin, end) a row at `position` sees: [0, position] by
  /// default, from the window's or the chunk's start, or the `cached`
  /// tokens (noncausal).
  static std::pair<Value, Value> getKeyRange(KernelBuilder &k,
                                             AttentionRaggedOp op,
                                             Value position, Value cached) {
    Value end = k.add(position, k.index(1));
    if (op.getNoncausal())
      return {k.index(0), cached};
    if (std::optional<uint64_t> window = op.getWindow()) {
      // max(0, end - W) without going below zero in index arithmetic.
      Value w = k.index(int64_t(*window));
      return {k.sub(k.maxu(end, w), w), end};
    }
    if (std::optional<uint64_t> chunk = op.getChunk()) {
      Value c = k.index(int64_t(*chunk));
      return {k.mul(k.divu(position, c), c), end};
    }
    return {k.index(0), end};
  }

  /// The score of a key in the log2 domain from `dot` = q . k: scaled by
  /// the log2 factor when there is no score transform (q was scaled), else
  /// scale * dot, soft-capped, ALiBi-biased by slope * (token - position),
  /// then times log2(e).
  static Value transformScore(KernelBuilder &k, AttentionRaggedOp op,
                              Value dot, Value slope, Value token,
                              Value position) {
    if (!op.getSoftcap() && !op.getAlibi())
      return dot;
    Value score = k.fmul(dot, k.f32(op.getScale().convertToFloat()));
    if (std::optional<APFloat> cap = op.getSoftcap()) {
      Value c = k.f32(cap->convertToFloat());
      score = k.fmul(c, math::TanhOp::create(k.b, k.loc, k.fdiv(score, c)));
    }
    if (slope) {
      Value distance = arith::SIToFPOp::create(
          k.b, k.loc, k.b.getF32Type(),
          arith::IndexCastOp::create(k.b, k.loc, k.b.getI64Type(),
                                     k.sub(token, position)));
      score = k.fadd(score, k.fmul(slope, distance));
    }
    return k.fmul(score, k.f32(float(M_LOG2E)));
  }

  /// The state before the first key: empty, or the sink's logit (log2
  /// domain) with weight 1 and no value.
  static SoftmaxState initialState(KernelBuilder &k, OnlineSoftmax &softmax,
                                   AttentionRaggedOp op, Value head,
                                   VectorType accType) {
    SoftmaxState state = softmax.empty(accType);
    if (Value sinks = op.getSinks()) {
      Value sink = memref::LoadOp::create(k.b, k.loc, sinks, head);
      state.max = k.fmul(sink, k.f32(float(M_LOG2E)));
      state.sum = k.f32(1);
    }
    return state;
  }

  /// Writes row `row`, head `head` of out (0 for a row with no keys and no
  /// sink) and of lse (ln(2) * (max + log2(sum)): -inf when empty).
  static void writeRow(KernelBuilder &k, OnlineSoftmax &softmax,
                       AttentionRaggedOp op, const SoftmaxState &state,
                       Value row, Value head, VectorType outType) {
    Value out = softmax.normalize(state);
    if (op.getNoncausal() && !op.getSinks()) {
      Value zero = arith::ConstantOp::create(
          k.b, k.loc, cast<VectorType>(out.getType()),
          DenseElementsAttr::get(cast<VectorType>(out.getType()), 0.0f));
      Value empty = arith::CmpFOp::create(k.b, k.loc, arith::CmpFPredicate::OEQ,
                                          state.sum, k.f32(0));
      out = k.select(empty, zero, out);
    }
    vector::StoreOp::create(k.b, k.loc, k.narrow(out, outType), op.getOut(),
                            ValueRange{row, head, k.index(0)});
    if (Value lse = op.getLse()) {
      Value log2Sum = math::Log2Op::create(k.b, k.loc, state.sum);
      Value value = k.fmul(k.fadd(state.max, log2Sum), k.f32(float(M_LN2)));
      memref::StoreOp::create(k.b, k.loc, value, lse, ValueRange{row, head});
    }
  }

  /// Every query head of `row` at `position`, which sees keys
  /// `keyRange` = [begin, end).
  static void emitRow(KernelBuilder &k, AttentionRaggedOp op, Value batch,
                      Value row, Value position,
                      std::pair<Value, Value> keyRange) {
    Value q = op.getQ(), keys = op.getKeyCache(), values = op.getValueCache();
    auto params = KVCacheParams::get(keys.getType());
    int64_t qHeads = cast<MemRefType>(q.getType()).getDimSize(1);
    int64_t group = qHeads / params.numHeads;
    // q and out have their own element types (on a quantized cache any of
    // f32, f16, bf16).
    auto rowTypeOf = [&](Value rows) {
      return VectorType::get({params.headSize},
                             cast<MemRefType>(rows.getType()).getElementType());
    };
    auto accType = VectorType::get({params.headSize}, k.b.getF32Type());
    OnlineSoftmax softmax(k, OnlineSoftmax::Exp2::Math);
    Value zero = k.index(0);
    k.forLoop(zero, k.index(qHeads), k.index(1), [&](Value head) {
      Value kvHead = k.divu(head, k.index(group));
      // q scaled once: scores in the log2 domain (in natural units when a
      // score transform follows: transformScore).
      bool transforms = op.getSoftcap() || op.getAlibi();
      Value scale = k.splat(
          k.f32(transforms ? 1.0f
                           : OnlineSoftmax::getLog2Scale(
                                 op.getScale().convertToFloat())),
          accType);
      Value slope;
      if (Value alibi = op.getAlibi())
        slope = memref::LoadOp::create(k.b, k.loc, alibi, head);
      Value query = k.fmul(
          k.widen(vector::LoadOp::create(k.b, k.loc, rowTypeOf(q), q,
                                         ValueRange{row, head, zero}),
                  accType),
          scale);
      SoftmaxState state = unflattenStates(k.forLoop(
          keyRange.first, keyRange.second, k.index(1),
          flattenStates(initialState(k, softmax, op, head, accType)),
          [&](Value token, ValueRange carried) {
            // Each cache through its own lookup table (K and V of one
            // collection share it, and CSE merges the two lookups).
            auto loadRow = [&](Value cache) {
              auto [page, slot] =
                  k.lookup(cache, batch, token, /*servesWrite=*/false);
              return loadHeadRowAsF32(k, cache, page, slot, kvHead, accType);
            };
            Value score = transformScore(k, op, k.sum(k.fmul(query, loadRow(keys))),
                                         slope, token, position);
            return flattenStates(softmax.update(unflattenStates(carried)[0],
                                                score, loadRow(values)));
          }))[0];
      writeRow(k, softmax, op, state, row, head, rowTypeOf(op.getOut()));
    });
  }
};

} // namespace

void mlir::kvcache::populateAttentionToSCFConversionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionToSCF>(patterns.getContext());
}
