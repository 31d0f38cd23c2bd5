//===- AttentionToSCF.cpp - attention_ragged to loops -----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Causal paged attention on the CPU: for each query row and head, one pass
// over its keys with an online softmax (running max, running sum, rescaled
// f32 accumulator), so it is numerically stable without a second pass.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/KernelBuilders.h"

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

struct AttentionToSCF : OpRewritePattern<AttentionRaggedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionRaggedOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasUnitInnerStride(op.getQ()) || !hasUnitInnerStride(op.getOut()))
      return rewriter.notifyMatchFailure(op, "q/out need a unit inner stride");
    Location loc = getKernelLoc(op);
    Value q = op.getQ(), out = op.getOut(), offsets = op.getRowOffsets();
    Value keys = op.getKeyCache(), values = op.getValueCache();
    auto params = PagedCacheParams::get(keys.getType());
    int64_t qHeads = cast<MemRefType>(q.getType()).getDimSize(1);
    int64_t group = qHeads / params.numHeads;
    Type f32 = rewriter.getF32Type();
    auto rowType = VectorType::get({params.headSize}, params.elementType);
    auto accType = VectorType::get({params.headSize}, f32);

    auto index = [&](OpBuilder &b, int64_t value) -> Value {
      return arith::ConstantIndexOp::create(b, loc, value);
    };
    auto forLoop = [&](OpBuilder &b, Value lower, Value upper, ValueRange init,
                       function_ref<SmallVector<Value>(OpBuilder &, Value,
                                                       ValueRange)>
                           body) {
      return scf::ForOp::create(
          b, loc, lower, upper, index(b, 1), init,
          [&](OpBuilder &bb, Location, Value iv, ValueRange args) {
            scf::YieldOp::create(bb, loc, body(bb, iv, args));
          });
    };
    auto widen = [&](OpBuilder &b, Value row) -> Value {
      if (row.getType() == accType)
        return row;
      return arith::ExtFOp::create(b, loc, accType, row);
    };

    Value zero = index(rewriter, 0);
    Value numSequences = getNumSequences(rewriter, loc, offsets);
    forLoop(rewriter, zero, numSequences, {}, [&](OpBuilder &b, Value batch,
                                                  ValueRange) {
      Value first = loadOffset(b, loc, offsets, batch);
      Value next = arith::AddIOp::create(b, loc, batch, index(b, 1));
      Value end = loadOffset(b, loc, offsets, next);
      Value cached = CacheLengthOp::create(b, loc, keys, batch);
      forLoop(b, first, end, {}, [&](OpBuilder &rb, Value row, ValueRange) {
        // Row r sits at position cache_length + r - first and sees keys
        // [0, position].
        Value position = arith::AddIOp::create(
            rb, loc, cached, arith::SubIOp::create(rb, loc, row, first));
        Value numKeys = arith::AddIOp::create(rb, loc, position, index(rb, 1));
        forLoop(rb, zero, index(rb, qHeads), {}, [&](OpBuilder &hb, Value head,
                                                     ValueRange) {
          Value kvHead =
              arith::DivUIOp::create(hb, loc, head, index(hb, group));
          // The scale is folded into q once.
          Value scale = vector::BroadcastOp::create(
              hb, loc, accType,
              arith::ConstantOp::create(hb, loc, op.getScaleAttr()));
          Value query = arith::MulFOp::create(
              hb, loc,
              widen(hb, vector::LoadOp::create(hb, loc, rowType, q,
                                               ValueRange{row, head, zero})),
              scale);
          Value negInf = arith::ConstantOp::create(
              hb, loc, hb.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
          Value zeroF = arith::ConstantOp::create(hb, loc, hb.getF32FloatAttr(0));
          Value zeroAcc = arith::ConstantOp::create(
              hb, loc, DenseElementsAttr::get(accType, hb.getF32FloatAttr(0)));
          auto keyLoop = forLoop(
              hb, zero, numKeys, {negInf, zeroF, zeroAcc},
              [&](OpBuilder &kb, Value token, ValueRange state) {
                Value max = state[0], sum = state[1], acc = state[2];
                Value slot;
                Value page = createLookup(kb, loc, keys, batch, token,
                                          /*servesWrite=*/false, &slot);
                auto loadRow = [&](Value cache) {
                  return widen(kb, PageLoadOp::create(kb, loc, rowType, cache,
                                                      page, slot, kvHead,
                                                      zero));
                };
                Value score = vector::ReductionOp::create(
                    kb, loc, vector::CombiningKind::ADD,
                    arith::MulFOp::create(kb, loc, query, loadRow(keys)));
                Value newMax = arith::MaximumFOp::create(kb, loc, max, score);
                Value rescale = math::ExpOp::create(
                    kb, loc, arith::SubFOp::create(kb, loc, max, newMax));
                Value weight = math::ExpOp::create(
                    kb, loc, arith::SubFOp::create(kb, loc, score, newMax));
                Value newSum = arith::AddFOp::create(
                    kb, loc, arith::MulFOp::create(kb, loc, sum, rescale),
                    weight);
                auto splat = [&](Value scalar) -> Value {
                  return vector::BroadcastOp::create(kb, loc, accType, scalar);
                };
                Value newAcc = vector::FMAOp::create(
                    kb, loc, splat(weight), loadRow(values),
                    arith::MulFOp::create(kb, loc, acc, splat(rescale)));
                return SmallVector<Value>{newMax, newSum, newAcc};
              });
          Value sum = vector::BroadcastOp::create(hb, loc, accType,
                                                  keyLoop.getResult(1));
          Value result = arith::DivFOp::create(hb, loc, keyLoop.getResult(2), sum);
          Value narrow =
              rowType == accType
                  ? result
                  : arith::TruncFOp::create(hb, loc, rowType, result).getResult();
          vector::StoreOp::create(hb, loc, narrow, out,
                                  ValueRange{row, head, zero});
          return SmallVector<Value>{};
        });
        return SmallVector<Value>{};
      });
      return SmallVector<Value>{};
    });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::kvcache::populateAttentionToSCFConversionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<AttentionToSCF>(patterns.getContext());
}
