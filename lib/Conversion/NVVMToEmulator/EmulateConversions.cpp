//===- EmulateConversions.cpp - NVVM conversions to runtime calls --------===//
//
// Part of the kvcache-mlir project.
//
// The fp8 conversion instructions of sm_89+ as calls of the GPU emulator
// runtime (lib/ExecutionEngine/GPUEmulator/Conversions.cpp), which models
// them bit for bit:
//   i16 __kvemu_cvt_f32x2_to_f8x2(i32 e5m2, f32 high, f32 low)
//   i32 __kvemu_cvt_f8x2_to_f16x2(i32 e5m2, i16 codes)
//
//===----------------------------------------------------------------------===//

#include "EmulateConversions.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::kvcache;

/// 1 for f8E5M2, 0 for f8E4M3FN, nullopt for another type.
static std::optional<int32_t> getFp8Kind(Type type) {
  if (isa<Float8E5M2Type>(type))
    return 1;
  if (isa<Float8E4M3FNType>(type))
    return 0;
  return std::nullopt;
}

static Value bitcastIfNeeded(OpBuilder &builder, Location loc, Type type,
                             Value value) {
  if (value.getType() == type)
    return value;
  return LLVM::BitcastOp::create(builder, loc, type, value);
}

static LogicalResult rewriteEncode(NVVM::ConvertF32x2ToF8x2Op op,
                                   OpBuilder &builder,
                                   RuntimeCallBuilder callRuntime) {
  std::optional<int32_t> kind = getFp8Kind(op.getDstTy());
  if (!kind || op.getRnd() != NVVM::FPRoundingMode::RN ||
      op.getSat() != NVVM::SaturationMode::SATFINITE || op.getRelu())
    return op.emitOpError("is not modelled by the GPU emulator: it models "
                          "the conversion to f8E4M3FN or f8E5M2 with "
                          "rnd = rn, sat = satfinite and no relu");
  Location loc = op.getLoc();
  Value e5m2 = LLVM::ConstantOp::create(builder, loc, builder.getI32Type(),
                                        builder.getI32IntegerAttr(*kind));
  Value packed = callRuntime(loc, "__kvemu_cvt_f32x2_to_f8x2",
                             builder.getI16Type(), {e5m2, op.getA(), op.getB()});
  op.replaceAllUsesWith(
      bitcastIfNeeded(builder, loc, op.getDst().getType(), packed));
  op.erase();
  return success();
}

static LogicalResult rewriteDecode(NVVM::ConvertF8x2ToF16x2Op op,
                                   OpBuilder &builder,
                                   RuntimeCallBuilder callRuntime) {
  std::optional<int32_t> kind = getFp8Kind(op.getSrcType());
  if (!kind || op.getRelu())
    return op.emitOpError("is not modelled by the GPU emulator: it models "
                          "the conversion from f8E4M3FN or f8E5M2 without "
                          "relu");
  Location loc = op.getLoc();
  Value e5m2 = LLVM::ConstantOp::create(builder, loc, builder.getI32Type(),
                                        builder.getI32IntegerAttr(*kind));
  Value codes =
      bitcastIfNeeded(builder, loc, builder.getI16Type(), op.getSrc());
  Value halves = callRuntime(loc, "__kvemu_cvt_f8x2_to_f16x2",
                             builder.getI32Type(), {e5m2, codes});
  op.replaceAllUsesWith(
      bitcastIfNeeded(builder, loc, op.getDst().getType(), halves));
  op.erase();
  return success();
}

LogicalResult mlir::kvcache::rewriteFp8Conversion(
    Operation *op, OpBuilder &builder, RuntimeCallBuilder callRuntime,
    bool &handled) {
  handled = true;
  if (auto encode = dyn_cast<NVVM::ConvertF32x2ToF8x2Op>(op))
    return rewriteEncode(encode, builder, callRuntime);
  if (auto decode = dyn_cast<NVVM::ConvertF8x2ToF16x2Op>(op))
    return rewriteDecode(decode, builder, callRuntime);
  handled = false;
  return success();
}
