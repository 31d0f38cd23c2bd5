//===- Fp8ToNVVM.cpp - fp8 conversions to NVVM's cvt instructions ---------===//
//
// Part of the kvcache-mlir project.
//
// The GPU lowering of the target-neutral fp8 conversions (arith.extf of fp8
// codes; the saturating clamp + arith.truncf of truncateToFp8Saturated),
// chosen per chip as MLIR's ArithToAMDGPU chooses by chipset. On sm_89 and
// newer the conversion instructions do both, two codes at a time:
// cvt.rn.satfinite.{e4m3,e5m2}x2.f32 rounds to nearest even and saturates
// like the contract's encoder (+-inf included; the clamp is not needed), and
// cvt.rn.f16x2.{e4m3,e5m2}x2 decodes to f16, which holds every fp8 value
// exactly. Only their NaN codes are replaced: NVIDIA documents a NaN
// result, not its sign or (E5M2) its mantissa, and the contract fixes both.
// Host code, older chips and shapes the pairs do not fit (odd vectors) take
// the integer lowering of Fp8ToInteger.h.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"
#include "KVCache/Conversion/Passes.h"
#include "../KernelCommon/Fp8ToInteger.h"
#include "../KernelCommon/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir {
#define GEN_PASS_DEF_KVCACHEFP8TONVVM
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;
using namespace mlir::kvcache;

/// The vector of the elements of `pairs` (each a vector<2xT>), in order.
/// (vector.shuffle, vector.extract and vector.from_elements: the ops the
/// GPU pipeline lowers to LLVM directly.)
static Value concatenatePairs(OpBuilder &b, Location loc,
                              ArrayRef<Value> pairs) {
  SmallVector<Value> elements;
  for (Value pair : pairs)
    for (int64_t i : {0, 1})
      elements.push_back(
          vector::ExtractOp::create(b, loc, pair, ArrayRef<int64_t>{i}));
  auto type = VectorType::get({int64_t(elements.size())},
                              elements.front().getType());
  return vector::FromElementsOp::create(b, loc, type, elements);
}

/// Elements `i` and `i + 1` of the 1-D vector `values`, as a vector<2xT>.
static Value getPair(OpBuilder &b, Location loc, Value values, int64_t i) {
  return vector::ShuffleOp::create(b, loc, values, values,
                                   ArrayRef<int64_t>{i, i + 1});
}

/// fp8 `codes` (a scalar or a vector of even length) as f16, exactly, with
/// nvvm.convert.f8x2.to.f16x2 (a scalar as a pair holding it twice).
static Value decodeFp8ToF16WithNVVM(OpBuilder &b, Location loc,
                                    Value codes) {
  Type storage = getElementTypeOrSelf(codes.getType());
  ShapedArith a{b, loc, codes.getType()};
  auto vector = dyn_cast<VectorType>(codes.getType());
  auto pairType = VectorType::get({2}, b.getI8Type());
  auto halvesType = VectorType::get({2}, b.getF16Type());
  Value bytes = arith::BitcastOp::create(b, loc, a.like(b.getI8Type()), codes);
  if (!vector) {
    Value pair = vector::BroadcastOp::create(b, loc, pairType, bytes);
    Value halves = NVVM::ConvertF8x2ToF16x2Op::create(
        b, loc, halvesType, pair, /*relu=*/false, storage);
    return vector::ExtractOp::create(b, loc, halves, ArrayRef<int64_t>{0});
  }
  SmallVector<Value> pairs;
  for (int64_t i = 0; i < vector.getNumElements(); i += 2)
    pairs.push_back(NVVM::ConvertF8x2ToF16x2Op::create(
        b, loc, halvesType, getPair(b, loc, bytes, i), /*relu=*/false,
        storage));
  return concatenatePairs(b, loc, pairs);
}

/// The codes of `values` (f32, a scalar or a vector of even length) from
/// nvvm.convert.f32x2.to.f8x2 (cvt.rn.satfinite), as i8 of the same shape
/// and before the NaN codes are set.
static Value convertPairsWithNVVM(OpBuilder &b, Location loc, Value values,
                                  Type storage) {
  auto pairType = VectorType::get({2}, b.getI8Type());
  // cvt puts its first operand in the upper byte: element 1 of the pair.
  auto convert = [&](Value low, Value high) -> Value {
    return NVVM::ConvertF32x2ToF8x2Op::create(
        b, loc, pairType, high, low, NVVM::FPRoundingMode::RN,
        NVVM::SaturationMode::SATFINITE, /*relu=*/false, storage);
  };
  auto vector = dyn_cast<VectorType>(values.getType());
  if (!vector)
    return vector::ExtractOp::create(b, loc, convert(values, values),
                                     ArrayRef<int64_t>{0});
  SmallVector<Value> pairs;
  for (int64_t i = 0; i < vector.getNumElements(); i += 2)
    pairs.push_back(convert(
        vector::ExtractOp::create(b, loc, values, ArrayRef<int64_t>{i}),
        vector::ExtractOp::create(b, loc, values, ArrayRef<int64_t>{i + 1})));
  return concatenatePairs(b, loc, pairs);
}

/// encodeF32ToStorage of `values` (f32) to fp8 `storage` with
/// nvvm.convert.f32x2.to.f8x2, NaN codes set as the contract says.
static Value encodeFp8WithNVVM(OpBuilder &b, Location loc, Value values,
                               Type storage) {
  ShapedArith a{b, loc, values.getType()};
  Value codes = convertPairsWithNVVM(b, loc, values, storage);
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO,
                                      values, values);
  Value bits = arith::BitcastOp::create(b, loc, a.like(b.getI32Type()), values);
  Value sign = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, a.constantInt(24, 32)),
      a.constantInt(0x80, 32));
  int64_t nanCode = isa<Float8E4M3FNType>(storage) ? 0x7F : 0x7E;
  Value nan = arith::TruncIOp::create(
      b, loc, a.like(b.getI8Type()),
      arith::OrIOp::create(b, loc, sign, a.constantInt(nanCode, 32)));
  codes = arith::SelectOp::create(b, loc, isNaN, nan, codes);
  return arith::BitcastOp::create(b, loc, a.like(storage), codes);
}

namespace {

/// Whether the conversion instructions take values of `type`, two at a time:
/// a scalar or a 1-D vector of even length.
bool fitsPairs(Type type) {
  auto vector = dyn_cast<VectorType>(type);
  return !vector ||
         (vector.getRank() == 1 && vector.getNumElements() % 2 == 0);
}

/// Whether `op` runs on the GPU: inside a gpu.module or a gpu.launch body.
bool isInGPUCode(Operation *op) {
  return op->getParentOfType<gpu::GPUModuleOp>() ||
         op->getParentOfType<gpu::LaunchOp>();
}

/// `arith.extf` of fp8 codes to f16 (or f32: through f16) in GPU code.
struct DecodeFp8WithNVVM : OpRewritePattern<arith::ExtFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::ExtFOp op,
                                PatternRewriter &rewriter) const override {
    Type result = getElementTypeOrSelf(op.getType());
    if (!isFp8StorageType(getElementTypeOrSelf(op.getIn().getType())) ||
        !(result.isF16() || result.isF32()) ||
        !fitsPairs(op.getIn().getType()) || !isInGPUCode(op))
      return rewriter.notifyMatchFailure(op, "not a GPU decoding of pairs");
    Value halves = decodeFp8ToF16WithNVVM(rewriter, op.getLoc(), op.getIn());
    if (result.isF32())
      halves = arith::ExtFOp::create(rewriter, op.getLoc(), op.getType(),
                                     halves);
    rewriter.replaceOp(op, halves);
    return success();
  }
};

/// The saturating fp8 truncation of truncateToFp8Saturated in GPU code.
struct EncodeFp8WithNVVM : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    Value values = matchFp8Saturation(op);
    if (!values || !fitsPairs(values.getType()) || !isInGPUCode(op))
      return rewriter.notifyMatchFailure(op, "not a GPU encoding of pairs");
    // cvt.rn.satfinite saturates by itself: the clamp goes.
    rewriter.replaceOp(op,
                       encodeFp8WithNVVM(rewriter, op.getLoc(), values,
                                         getElementTypeOrSelf(op.getType())));
    return success();
  }
};

} // namespace

void mlir::kvcache::populateFp8ToNVVMConversionPatterns(
    RewritePatternSet &patterns, StringRef chip) {
  // The instructions where they exist, before the integer lowering.
  if (hasFp8ConversionInstructions(chip))
    patterns.add<DecodeFp8WithNVVM, EncodeFp8WithNVVM>(patterns.getContext(),
                                                       /*benefit=*/2);
  populateFp8ToIntegerPatterns(patterns, /*benefit=*/1);
}

namespace {
struct KVCacheFp8ToNVVMPass
    : impl::KVCacheFp8ToNVVMBase<KVCacheFp8ToNVVMPass> {
  using Base::Base;

  void runOnOperation() override {
    // Reported at the root's location, without a dump of the IR.
    Location loc = getOperation()->getLoc();
    if (failed(verifyChip(chip, [&] {
          return mlir::emitError(loc, "kvcache-fp8-to-nvvm: ");
        })))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateFp8ToNVVMConversionPatterns(patterns, chip);
    if (failed(applyFp8ConversionPatterns(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
