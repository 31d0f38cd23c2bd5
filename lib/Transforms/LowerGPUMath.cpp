//===- LowerGPUMath.cpp - kvcache-lower-gpu-math ----------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//
//
// Math ops of GPU kernels without libdevice: the exact ones as the LLVM
// intrinsics NVPTX selects one instruction for, the transcendental ones
// that have an accurate f32 polynomial in MLIR as that polynomial. What
// convert-gpu-to-nvvm would otherwise do is call a libdevice function for
// each of them, which only links where a CUDA toolkit is installed.
// Arithmetic on floats of 8 bits or fewer, which LLVM has no type for, is
// an error here: convert-gpu-to-nvvm would turn it into integer operands of
// float instructions, IR that does not verify.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kvcache {
#define GEN_PASS_DEF_KVCACHELOWERGPUMATH
#include "KVCache/Transforms/Passes.h.inc"
} // namespace mlir::kvcache

using namespace mlir;

/// The transcendental ops whose MLIR polynomial is accurate over the whole
/// f32 range (no range reduction that loses digits at large arguments, as
/// sin and cos would).
static bool isApproximated(StringRef name) {
  return llvm::is_contained(
      {math::ExpOp::getOperationName(), math::ExpM1Op::getOperationName(),
       math::LogOp::getOperationName(), math::Log2Op::getOperationName(),
       math::Log1pOp::getOperationName(), math::TanhOp::getOperationName(),
       math::ErfOp::getOperationName(), math::ErfcOp::getOperationName()},
      name);
}

/// The float type of 8 bits or fewer (f8E4M3FN, f8E5M2, f6*, f4*, ...)
/// that `type` is or holds, or null.
static FloatType getNarrowFloat(Type type) {
  auto element = dyn_cast<FloatType>(getElementTypeOrSelf(type));
  return element && element.getWidth() <= 8 ? element : FloatType();
}

/// Whether `op` computes on the values of its operands and results, as
/// opposed to moving, selecting or reinterpreting them: arith and math ops
/// (conversions included: the ones to and from fp8 that the GPU pipelines
/// lower are gone before this pass, kvcache-fp8-to-nvvm) and the vector
/// dialect's arithmetic.
static bool computesOnValues(Operation *op) {
  if (isa<arith::ConstantOp, arith::BitcastOp, arith::SelectOp>(op))
    return false;
  if (isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
    return true;
  return isa<vector::ReductionOp, vector::MultiDimReductionOp,
             vector::ContractionOp, vector::FMAOp, vector::OuterProductOp,
             vector::ScanOp>(op);
}

/// Emits an error at the first op of `module` that computes on floats of
/// 8 bits or fewer.
static LogicalResult checkNarrowFloatArithmetic(Operation *module) {
  WalkResult walk = module->walk([](Operation *op) {
    if (!computesOnValues(op))
      return WalkResult::advance();
    FloatType narrow;
    for (Type type : llvm::concat<const Type>(op->getOperandTypes(),
                                              op->getResultTypes()))
      if ((narrow = getNarrowFloat(type)))
        break;
    if (!narrow)
      return WalkResult::advance();
    op->emitError() << "computes on " << narrow
                    << " values, which GPU code cannot (LLVM has no "
                       "float type of 8 bits or fewer): compute in f16 or "
                       "f32 instead (the GPU pipelines lower arith.extf of "
                       "f8E4M3FN and f8E5M2 to f16 and f32, and "
                       "arith.truncf from f32 of values clamped to "
                       "+-max_finite with arith.minimumf and "
                       "arith.maximumf: kvcache-fp8-to-nvvm)";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

namespace {
/// `SourceOp` on floats (scalars or vectors) as a call of the LLVM
/// intrinsic `intrinsic` on the same operands: the math op's semantics
/// exactly. A generic `llvm.call_intrinsic`, because convert-gpu-to-nvvm
/// marks the LLVM dialect's own intrinsic ops (`llvm.intr.sqrt`, ...)
/// illegal so as to call libdevice instead.
template <typename SourceOp>
struct MathToIntrinsic : OpRewritePattern<SourceOp> {
  MathToIntrinsic(MLIRContext *context, StringRef intrinsic)
      : OpRewritePattern<SourceOp>(context), intrinsic(intrinsic) {}

  LogicalResult matchAndRewrite(SourceOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op->getResult(0).getType();
    if (!isa<FloatType>(getElementTypeOrSelf(type)))
      return rewriter.notifyMatchFailure(op, "not a float");
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(
        op, type, rewriter.getStringAttr(intrinsic), op->getOperands());
    return success();
  }

  StringRef intrinsic;
};

/// `math.rsqrt %x` as `1 / sqrt(x)`, both correctly rounded (libdevice's
/// __nv_rsqrtf is the approximate rsqrt.approx).
struct RsqrtToDivSqrt : OpRewritePattern<math::RsqrtOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::RsqrtOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!isa<FloatType>(getElementTypeOrSelf(type)))
      return rewriter.notifyMatchFailure(op, "not a float");
    Location loc = op.getLoc();
    Value one = arith::ConstantOp::create(
        rewriter, loc, type, rewriter.getOneAttr(type));
    Value root = math::SqrtOp::create(rewriter, loc, op.getOperand());
    rewriter.replaceOpWithNewOp<arith::DivFOp>(op, one, root);
    return success();
  }
};

struct KVCacheLowerGPUMath
    : kvcache::impl::KVCacheLowerGPUMathBase<KVCacheLowerGPUMath> {
  void runOnOperation() override {
    if (failed(checkNarrowFloatArithmetic(getOperation())))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    MLIRContext *context = &getContext();
    patterns.add<MathToIntrinsic<math::AbsFOp>>(context, "llvm.fabs");
    patterns.add<MathToIntrinsic<math::CeilOp>>(context, "llvm.ceil");
    patterns.add<MathToIntrinsic<math::FloorOp>>(context, "llvm.floor");
    patterns.add<MathToIntrinsic<math::TruncOp>>(context, "llvm.trunc");
    patterns.add<MathToIntrinsic<math::RoundEvenOp>>(context, "llvm.roundeven");
    patterns.add<MathToIntrinsic<math::RoundOp>>(context, "llvm.round");
    patterns.add<MathToIntrinsic<math::FmaOp>>(context, "llvm.fma");
    patterns.add<MathToIntrinsic<math::CopySignOp>>(context, "llvm.copysign");
    patterns.add<MathToIntrinsic<math::SqrtOp>>(context, "llvm.sqrt");
    patterns.add<RsqrtToDivSqrt>(context);
    // f16 and bf16 through f32, then the f32 polynomial.
    populateMathF32ExpansionPatterns(patterns, isApproximated);
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
