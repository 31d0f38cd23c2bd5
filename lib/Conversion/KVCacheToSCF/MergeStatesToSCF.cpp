//===- MergeStatesToSCF.cpp - merge_states to loops -------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache.merge_states on the CPU: for each row and query head, the two
// log-sum-exps give the merged one and the two weights (f32), then one
// vector pass over the head combines the outputs, rounded once to their
// element type (docs/Contract.md 3.3). Both rows are loaded before the
// merged one is stored, so `out` may be `out_a`.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/AttentionClauses.h"
#include "../KernelCommon/KernelLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace mlir::kvcache;

namespace {

struct MergeStatesToSCF : OpRewritePattern<MergeStatesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MergeStatesOp op,
                                PatternRewriter &rewriter) const override {
    auto outType = cast<MemRefType>(op.getOut().getType());
    if (!hasUnitInnerStride(op.getOut()))
      return op.emitOpError("cannot be lowered: the outs need a unit "
                            "innermost stride (copy them into contiguous "
                            "buffers)");
    if (outType.isDynamicDim(2))
      return op.emitOpError("cannot be lowered for the CPU: the head size "
                            "(dim 2 of the outs) must be static (cast the "
                            "outs to a static head size)");
    KernelBuilder k{rewriter, getKernelLoc(op)};
    auto rowType = VectorType::get({outType.getDimSize(2)},
                                   outType.getElementType());
    auto accType = VectorType::get({outType.getDimSize(2)}, k.b.getF32Type());
    Value zero = k.index(0);
    Value rows = memref::DimOp::create(k.b, k.loc, op.getOut(), 0);
    k.parallelLoop(zero, rows, [&](Value row) {
      k.forLoop(zero, k.index(outType.getDimSize(1)), k.index(1),
                [&](Value head) {
        SmallVector<Value, 2> at = {row, head};
        auto lse = [&](Value memref) -> Value {
          return memref::LoadOp::create(k.b, k.loc, memref, at);
        };
        auto load = [&](Value memref) {
          return k.widen(vector::LoadOp::create(k.b, k.loc, rowType, memref,
                                                ValueRange{row, head, zero}),
                         accType);
        };
        MergedWeights merged =
            mergeLogSumExps(k, lse(op.getLseA()), lse(op.getLseB()));
        Value a = load(op.getOutA()), b = load(op.getOutB());
        Value out = k.fadd(k.fmul(a, k.splat(merged.weightA, accType)),
                           k.fmul(b, k.splat(merged.weightB, accType)));
        vector::StoreOp::create(k.b, k.loc, k.narrow(out, rowType),
                                op.getOut(), ValueRange{row, head, zero});
        if (Value lseOut = op.getLse())
          memref::StoreOp::create(k.b, k.loc, merged.lse, lseOut, at);
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::kvcache::populateMergeStatesToSCFConversionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<MergeStatesToSCF>(patterns.getContext());
}
