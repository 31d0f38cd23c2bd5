//===- AttentionToSCF.cpp - attention_ragged to loops -----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Causal paged attention on the CPU: for each query row and head, one pass
// over its keys with the online softmax of KernelCommon/Softmax.h (running
// max, running sum, rescaled f32 accumulator), so it is numerically stable
// without a second pass.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/Softmax.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::kvcache;

namespace {

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
    KernelBuilder k{rewriter, getKernelLoc(op)};
    Value offsets = op.getRowOffsets();
    Value numSequences = k.numSequences(offsets);
    k.forLoop(k.index(0), numSequences, k.index(1), [&](Value batch) {
      Value first = k.loadOffset(offsets, batch);
      Value end = k.loadOffset(offsets, k.add(batch, k.index(1)));
      Value cached = CacheLengthOp::create(k.b, k.loc, op.getKeyCache(), batch);
      k.forLoop(first, end, k.index(1), [&](Value row) {
        Value position = k.rowPosition(cached, row, first);
        emitRow(k, op, batch, row, position);
      });
    });
    rewriter.eraseOp(op);
    return success();
  }

  /// Every query head of `row`, which sees keys [0, position].
  static void emitRow(KernelBuilder &k, AttentionRaggedOp op, Value batch,
                      Value row, Value position) {
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
      // q scaled once: scores in the log2 domain.
      Value scale = k.splat(
          k.f32(OnlineSoftmax::getLog2Scale(op.getScale().convertToFloat())),
          accType);
      Value query = k.fmul(
          k.widen(vector::LoadOp::create(k.b, k.loc, rowTypeOf(q), q,
                                         ValueRange{row, head, zero}),
                  accType),
          scale);
      SoftmaxState state = unflattenStates(k.forLoop(
          zero, k.add(position, k.index(1)), k.index(1),
          flattenStates(softmax.empty(accType)),
          [&](Value token, ValueRange carried) {
            // Each cache through its own lookup table (K and V of one
            // collection share it, and CSE merges the two lookups).
            auto loadRow = [&](Value cache) {
              auto [page, slot] =
                  k.lookup(cache, batch, token, /*servesWrite=*/false);
              return loadHeadRowAsF32(k, cache, page, slot, kvHead, accType);
            };
            Value score = k.sum(k.fmul(query, loadRow(keys)));
            return flattenStates(softmax.update(unflattenStates(carried)[0],
                                                score, loadRow(values)));
          }))[0];
      vector::StoreOp::create(k.b, k.loc,
                              k.narrow(softmax.normalize(state),
                                       rowTypeOf(op.getOut())),
                              op.getOut(), ValueRange{row, head, zero});
    });
  }
};

} // namespace

void mlir::kvcache::populateAttentionToSCFConversionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionToSCF>(patterns.getContext());
}
