//===- MergeStatesToSCF.cpp - merge_states to loops -------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache.merge_states on the CPU: for each row and query head, the two
// log-sum-exps give the merged one and the two weights (f32), then a loop
// over the head, kMaxChunk elements at a time, combines the outputs,
// rounded once to their element type (docs/Contract.md 3.3). Each chunk of
// both rows is loaded before the merged chunk is stored, so `out` may be
// `out_a`.
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

/// Elements of a head combined per vector operation: 64 f32 lanes, four
/// AVX-512 registers. A head of any size loops over chunks, so that no
/// vector grows with the head (a vector of the whole head made the IR, and
/// the compile time, grow with it).
constexpr int64_t kMaxChunk = 64;

/// The chunk for a head of `headSize` elements: the largest power of two
/// that divides it, at most kMaxChunk (1 for an odd or empty head).
int64_t chunkFor(int64_t headSize) {
  int64_t chunk = 1;
  while (chunk < kMaxChunk && headSize % (2 * chunk) == 0 && headSize > 0)
    chunk *= 2;
  return chunk;
}

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
    int64_t headSize = outType.getDimSize(2);
    int64_t chunk = chunkFor(headSize);
    auto rowType = VectorType::get({chunk}, outType.getElementType());
    auto accType = VectorType::get({chunk}, k.b.getF32Type());
    Value zero = k.index(0);
    Value rows = memref::DimOp::create(k.b, k.loc, op.getOut(), 0);
    k.parallelLoop(zero, rows, [&](Value row) {
      k.forLoop(zero, k.index(outType.getDimSize(1)), k.index(1),
                [&](Value head) {
        SmallVector<Value, 2> at = {row, head};
        auto lse = [&](Value memref) -> Value {
          return memref::LoadOp::create(k.b, k.loc, memref, at);
        };
        MergedWeights merged =
            mergeLogSumExps(k, lse(op.getLseA()), lse(op.getLseB()));
        Value weightA = k.splat(merged.weightA, accType);
        Value weightB = k.splat(merged.weightB, accType);
        k.forLoop(zero, k.index(headSize), k.index(chunk), [&](Value d) {
          SmallVector<Value, 3> indices = {row, head, d};
          auto load = [&](Value memref) {
            return k.widen(
                vector::LoadOp::create(k.b, k.loc, rowType, memref, indices),
                accType);
          };
          Value a = load(op.getOutA()), b = load(op.getOutB());
          Value out = k.fadd(k.fmul(a, weightA), k.fmul(b, weightB));
          vector::StoreOp::create(k.b, k.loc, k.narrow(out, rowType),
                                  op.getOut(), indices);
        });
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
