//===- EmulateConversions.cpp - NVVM fp8 conversions to runtime calls -----===//
//
// Part of the kvcache-mlir project.
//
// The patterns of `kvcache-emulate-nvvm` for the fp8 conversion
// instructions of sm_89+: calls of `__kvemu_cvt_f32x2_to_f8x2` and
// `__kvemu_cvt_f8x2_to_f16x2`, which model them bit for bit.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::kvcache;

/// The runtime's code of fp8 type `type`, or nothing for another type.
static std::optional<emulator::Fp8Format> getFp8Format(Type type) {
  if (isa<Float8E5M2Type>(type))
    return emulator::Fp8Format::E5M2;
  if (isa<Float8E4M3FNType>(type))
    return emulator::Fp8Format::E4M3FN;
  return std::nullopt;
}

static Value createFormatConstant(OpBuilder &builder, Location loc,
                                  emulator::Fp8Format format) {
  return createI32Constant(builder, loc, static_cast<int32_t>(format));
}

static Value bitcastIfNeeded(OpBuilder &builder, Location loc, Type type,
                             Value value) {
  if (value.getType() == type)
    return value;
  return LLVM::BitcastOp::create(builder, loc, type, value);
}

namespace {

/// `nvvm.convert.f32x2.to.f8x2` (rn, satfinite, no relu, to f8E4M3FN or
/// f8E5M2) -> `__kvemu_cvt_f32x2_to_f8x2`.
struct EncodeFp8Pattern final : EmulatorPattern<NVVM::ConvertF32x2ToF8x2Op> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(NVVM::ConvertF32x2ToF8x2Op op,
                                PatternRewriter &rewriter) const override {
    std::optional<emulator::Fp8Format> format = getFp8Format(op.getDstTy());
    if (!format || op.getRnd() != NVVM::FPRoundingMode::RN ||
        op.getSat() != NVVM::SaturationMode::SATFINITE || op.getRelu())
      return state.reportError(
          op.emitOpError("is not modelled by the GPU emulator: it models "
                         "the conversion to f8E4M3FN or f8E5M2 with "
                         "rnd = rn, sat = satfinite and no relu"));
    Location loc = op.getLoc();
    FailureOr<LLVM::CallOp> packed = state.call(
        rewriter, op, RuntimeFunction::__kvemu_cvt_f32x2_to_f8x2,
        {createFormatConstant(rewriter, loc, *format), op.getA(), op.getB()});
    if (failed(packed))
      return failure();
    Value codes = LLVM::TruncOp::create(rewriter, loc, rewriter.getI16Type(),
                                        packed->getResult());
    rewriter.replaceOp(
        op, bitcastIfNeeded(rewriter, loc, op.getDst().getType(), codes));
    return success();
  }
};

/// `nvvm.convert.f8x2.to.f16x2` (no relu, from f8E4M3FN or f8E5M2) ->
/// `__kvemu_cvt_f8x2_to_f16x2`.
struct DecodeFp8Pattern final : EmulatorPattern<NVVM::ConvertF8x2ToF16x2Op> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(NVVM::ConvertF8x2ToF16x2Op op,
                                PatternRewriter &rewriter) const override {
    std::optional<emulator::Fp8Format> format = getFp8Format(op.getSrcType());
    if (!format || op.getRelu())
      return state.reportError(
          op.emitOpError("is not modelled by the GPU emulator: it models "
                         "the conversion from f8E4M3FN or f8E5M2 without "
                         "relu"));
    Location loc = op.getLoc();
    Value formatCode = createFormatConstant(rewriter, loc, *format);
    Value codes = LLVM::ZExtOp::create(
        rewriter, loc, rewriter.getI32Type(),
        bitcastIfNeeded(rewriter, loc, rewriter.getI16Type(), op.getSrc()));
    FailureOr<LLVM::CallOp> halves =
        state.call(rewriter, op, RuntimeFunction::__kvemu_cvt_f8x2_to_f16x2,
                   {formatCode, codes});
    if (failed(halves))
      return failure();
    rewriter.replaceOp(op, bitcastIfNeeded(rewriter, loc, op.getDst().getType(),
                                           halves->getResult()));
    return success();
  }
};

} // namespace

void mlir::kvcache::populateFp8ConversionPatterns(RewritePatternSet &patterns,
                                                  EmulatorState &state) {
  patterns.add<EncodeFp8Pattern, DecodeFp8Pattern>(patterns.getContext(),
                                                   state);
}
