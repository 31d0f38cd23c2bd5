//===- MergeStatesToGPU.cpp - merge_states to a GPU kernel ------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache.merge_states as one kernel (docs/KernelABI.md): block (x, y)
// merges rows x, x + gridDim.x, ... of query head y. Every thread reads the
// row's two log-sum-exps and computes the merged one and the two weights
// (f32, ex2.approx and lg2.approx: no libdevice); thread t combines the
// vectors t, t + blockDim.x, ... of the head (16 bytes where the layouts
// allow), rounded once to the element type. Each element is read and
// written by the same thread, so `out` may be `out_a`; a barrier separates
// the reads of the log-sum-exps from thread 0's write of the merged one, so
// `lse` may be `lse_a`.
//
//===----------------------------------------------------------------------===//

#include "AttentionToGPU.h"
#include "GPUKernel.h"
#include "../KernelCommon/AttentionClauses.h"
#include "../KernelCommon/KernelLowering.h"
#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"
#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::kvcache;

namespace {

struct MergeStatesToGPU : OpRewritePattern<MergeStatesOp> {
  MergeStatesToGPU(MLIRContext *ctx, const GPUKernelTarget &target)
      : OpRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(MergeStatesOp op,
                                PatternRewriter &rewriter) const override {
    auto outType = cast<MemRefType>(op.getOut().getType());
    if (!hasUnitInnerStride({op.getOutA(), op.getOutB(), op.getOut()}))
      return op.emitOpError("cannot be lowered: the outs need a unit "
                            "innermost stride (copy them into contiguous "
                            "buffers)");
    // Elements per vector access: 16 bytes where the head size and all
    // three outs' layouts allow it (1 for a non-unit innermost stride).
    KVCacheParams params{};
    params.elementType = outType.getElementType();
    params.headSize = outType.getDimSize(2);
    int64_t width = target.vectorBytes;
    for (Value rows : {op.getOutA(), op.getOutB(), op.getOut()})
      width = std::min(width, getRowVectorWidth(
                                  params, cast<MemRefType>(rows.getType()),
                                  target.vectorBytes));
    KernelBuilder host{rewriter, getKernelLoc(op)};
    Value rows = memref::DimOp::create(rewriter, host.loc, op.getOut(), 0);
    int64_t vectors = params.headSize / width;
    LaunchShape shape{host.minu(rows, host.index(target.maxBlocks)),
                      host.index(outType.getDimSize(1)), host.index(1),
                      std::clamp<int64_t>(vectors, 32, target.threadsPerBlock)};
    if (failed(emitGuardedKernel(
            rewriter, op, host.ult(host.index(0), rows), shape,
            [&](GPUKernel &kernel) { emitBody(kernel, op, width, vectors); })))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }

  static void emitBody(GPUKernel &kernel, MergeStatesOp op, int64_t width,
                       int64_t vectors) {
    GPUKernelBuilder &k = kernel.builder();
    auto outType = cast<MemRefType>(op.getOut().getType());
    int64_t elementBytes =
        llvm::divideCeil(outType.getElementType().getIntOrFloatBitWidth(), 8);
    llvm::Align align(getAccessAlignment(width * elementBytes,
                                         width * elementBytes));
    auto rowType = VectorType::get({width}, outType.getElementType());
    auto accType = VectorType::get({width}, k.b.getF32Type());
    Value head = kernel.blockId(gpu::Dimension::y);
    Value thread = kernel.threadId(gpu::Dimension::x);
    Value numRows = memref::DimOp::create(k.b, k.loc, kernel.param(op.getOut()), 0);
    k.forLoop(kernel.blockId(gpu::Dimension::x), numRows,
              kernel.gridDim(gpu::Dimension::x), [&](Value row) {
      SmallVector<Value, 2> at = {row, head};
      auto lse = [&](Value operand) -> Value {
        return memref::LoadOp::create(k.b, k.loc, kernel.param(operand), at);
      };
      MergedWeights merged =
          mergeLogSumExps(k, lse(op.getLseA()), lse(op.getLseB()));
      k.forLoop(thread, k.index(vectors), kernel.blockDim(gpu::Dimension::x),
                [&](Value vector) {
        Value d = k.mul(vector, k.index(width));
        auto load = [&](Value operand) {
          return k.widen(
              vector::LoadOp::create(k.b, k.loc, rowType, kernel.param(operand),
                                     ValueRange{row, head, d},
                                     /*nontemporal=*/false, align),
              accType);
        };
        Value a = load(op.getOutA()), b = load(op.getOutB());
        Value out = k.vectorFma(k.splat(merged.weightA, accType), a,
                                k.fmul(b, k.splat(merged.weightB, accType)));
        vector::StoreOp::create(k.b, k.loc, k.narrow(out, rowType),
                                kernel.param(op.getOut()),
                                ValueRange{row, head, d},
                                /*nontemporal=*/false, align);
      });
      if (Value lseOut = op.getLse()) {
        // Every thread has read lse_a (which may be lse) of this row.
        gpu::BarrierOp::create(k.b, k.loc);
        k.ifThen(k.eq(thread, k.index(0)), [&] {
          memref::StoreOp::create(k.b, k.loc, merged.lse,
                                  kernel.param(lseOut), at);
        });
        // ... and the next row's reads come after this write.
        gpu::BarrierOp::create(k.b, k.loc);
      }
    });
  }

  GPUKernelTarget target;
};

} // namespace

void mlir::kvcache::populateMergeStatesToGPUConversionPatterns(
    RewritePatternSet &patterns, const GPUKernelTarget &target) {
  patterns.add<MergeStatesToGPU>(patterns.getContext(), target);
}
