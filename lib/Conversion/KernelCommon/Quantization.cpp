//===- Quantization.cpp - codes of quantized caches to values ------------===//
//
// Part of the kvcache-mlir project.
//
// fp8 conversions stay target-neutral here: arith.extf decodes (through
// f16, which holds every fp8 value exactly: both lowerings convert in
// 16-bit lanes), and a clamp to +-max_finite followed by arith.truncf
// encodes. arith.truncf rounds to nearest even but does not saturate (E4M3FN
// has no infinity: out-of-range values would become NaN), hence the clamp;
// minimumf and maximumf keep NaN a NaN, and the lowerings give it the
// contract's code with its sign. Which instructions run is decided later,
// per target: Fp8ToInteger.h (integer arithmetic, the CPU) and
// kvcache-fp8-to-nvvm (sm_89+ conversion instructions in GPU code).
//
//===----------------------------------------------------------------------===//

#include "Quantization.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

#include <numeric>

using namespace mlir;
using namespace mlir::kvcache;

bool mlir::kvcache::isFp8StorageType(Type type) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(type);
}

Value mlir::kvcache::decodeStorageToF32(OpBuilder &b, Location loc,
                                        Value codes) {
  Type storage = getElementTypeOrSelf(codes.getType());
  ShapedArith a{b, loc, codes.getType()};
  Type f32 = a.like(b.getF32Type());
  if (storage.isSignlessInteger(8))
    return arith::SIToFPOp::create(b, loc, f32, codes);
  assert(isFp8StorageType(storage) && "not a storage type");
  Value halves = arith::ExtFOp::create(b, loc, a.like(b.getF16Type()), codes);
  return arith::ExtFOp::create(b, loc, f32, halves);
}

Value mlir::kvcache::truncateToFp8Saturated(OpBuilder &b, Location loc,
                                            Value values, Type storage) {
  ShapedArith a{b, loc, values.getType()};
  float limit = getMaxFinite(storage);
  Value clamped = arith::MaximumFOp::create(
      b, loc,
      arith::MinimumFOp::create(b, loc, values, a.constantF32(limit)),
      a.constantF32(-limit));
  return arith::TruncFOp::create(b, loc, a.like(storage), clamped);
}

/// The operand of `bound` (a minimumf or maximumf) other than the constant
/// `limit` (a scalar or splat), or null when it has no such operand.
static Value getOperandBoundedBy(Operation *bound, float limit) {
  APFloat constant(0.0f);
  if (!bound || !matchPattern(bound->getOperand(1), m_ConstantFloat(&constant)))
    return {};
  if (constant.compare(APFloat(limit)) != APFloat::cmpEqual)
    return {};
  return bound->getOperand(0);
}

Value mlir::kvcache::matchFp8Saturation(arith::TruncFOp truncf) {
  Type storage = getElementTypeOrSelf(truncf.getType());
  if (!isFp8StorageType(storage) ||
      !getElementTypeOrSelf(truncf.getIn().getType()).isF32())
    return {};
  std::optional<arith::RoundingMode> rounding = truncf.getRoundingmode();
  if (rounding && *rounding != arith::RoundingMode::to_nearest_even)
    return {};
  float limit = getMaxFinite(storage);
  // maximumf(minimumf(x, limit), -limit) or minimumf(maximumf(x, -limit),
  // limit).
  Operation *outer = truncf.getIn().getDefiningOp();
  if (auto max = dyn_cast_or_null<arith::MaximumFOp>(outer)) {
    Value inner = getOperandBoundedBy(max, -limit);
    return getOperandBoundedBy(
        dyn_cast_or_null<arith::MinimumFOp>(
            inner ? inner.getDefiningOp() : nullptr),
        limit);
  }
  if (auto min = dyn_cast_or_null<arith::MinimumFOp>(outer)) {
    Value inner = getOperandBoundedBy(min, limit);
    return getOperandBoundedBy(
        dyn_cast_or_null<arith::MaximumFOp>(
            inner ? inner.getDefiningOp() : nullptr),
        -limit);
  }
  return {};
}

Value mlir::kvcache::encodeF32ToStorage(OpBuilder &b, Location loc,
                                        Value values, Type storage) {
  if (isFp8StorageType(storage))
    return truncateToFp8Saturated(b, loc, values, storage);
  assert(storage.isSignlessInteger(8) && "not a storage type");
  ShapedArith a{b, loc, values.getType()};
  Type i32 = a.like(b.getI32Type()), i8 = a.like(b.getI8Type());
  // 1.5 * 2^23: adding it to |x| < 2^22 rounds x to an integer (ties to
  // even) held in the low mantissa bits.
  constexpr float kRoundingBias = 0x1.8p23f;
  constexpr int64_t kRoundingBiasBits = 0x4B400000;
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO,
                                      values, values);
  Value limit = a.constantF32(127.0f);
  Value clamped = arith::MinNumFOp::create(
      b, loc, arith::MaxNumFOp::create(b, loc, values, a.constantF32(-127.0f)),
      limit);
  Value shifted =
      arith::AddFOp::create(b, loc, clamped, a.constantF32(kRoundingBias));
  Value integer = arith::SubIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32, shifted),
      a.constantInt(kRoundingBiasBits, 32));
  integer =
      arith::SelectOp::create(b, loc, isNaN, a.constantInt(0, 32), integer);
  return arith::TruncIOp::create(b, loc, i8, integer);
}

Value mlir::kvcache::getNonNaNMagnitudeBits(OpBuilder &b, Location loc,
                                            Value values) {
  ShapedArith a{b, loc, values.getType()};
  Type i32 = a.like(b.getI32Type());
  Value bits = arith::AndIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32, values),
      a.constantInt(0x7FFFFFFF, 32));
  Value isNaN = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, bits,
                                      a.constantInt(0x7F800000, 32));
  return arith::SelectOp::create(b, loc, isNaN, a.constantInt(0, 32), bits);
}

Value mlir::kvcache::combineAsTree(MutableArrayRef<Value> values,
                                   function_ref<Value(Value, Value)> combine) {
  for (size_t n = values.size(); n > 1; n = (n + 1) / 2)
    for (size_t i = 0; i < n / 2; ++i)
      values[i] = combine(values[i], values[n - 1 - i]);
  return values.front();
}

Value mlir::kvcache::getHalfChunksAmax(OpBuilder &b, Location loc,
                                       ArrayRef<Value> chunks) {
  auto chunkType = cast<VectorType>(chunks.front().getType());
  Type element = chunkType.getElementType();
  assert(element.getIntOrFloatBitWidth() == 16 && "not a 16-bit float");
  int64_t width = chunkType.getNumElements();
  // |x|'s bits plus `bias` are at most 0x7FFF, the infinity's included, for
  // every non-NaN x, and wrap to a negative i16 for a NaN: a signed maximum
  // drops the NaNs, and magnitudes order like their bits.
  int64_t infinityBits = element.isF16() ? 0x7C00 : 0x7F80;
  int64_t bias = 0x7FFF - infinityBits;
  ShapedArith a{b, loc, VectorType::get({2 * width}, b.getI16Type())};
  SmallVector<int64_t> concatenation(2 * width);
  std::iota(concatenation.begin(), concatenation.end(), 0);
  SmallVector<Value> maxima;
  for (size_t i = 0; i < chunks.size(); i += 2) {
    // Two chunks side by side (an odd one out beside itself).
    Value pair = vector::ShuffleOp::create(
        b, loc, chunks[i], chunks[std::min(i + 1, chunks.size() - 1)],
        concatenation);
    Value bits = arith::BitcastOp::create(b, loc, a.shape, pair);
    maxima.push_back(arith::AddIOp::create(
        b, loc, arith::AndIOp::create(b, loc, bits, a.constantInt(0x7FFF, 16)),
        a.constantInt(bias, 16)));
  }
  Value top = vector::ReductionOp::create(
      b, loc, vector::CombiningKind::MAXSI,
      combineAsTree(maxima, [&](Value x, Value y) -> Value {
        return arith::MaxSIOp::create(b, loc, x, y);
      }));
  ShapedArith scalar{b, loc, b.getI16Type()};
  Value biasValue = scalar.constantInt(bias, 16);
  Value bits = arith::SubIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, top, biasValue), biasValue);
  Value amax = arith::BitcastOp::create(b, loc, element, bits);
  return arith::ExtFOp::create(b, loc, b.getF32Type(), amax).getResult();
}

Value mlir::kvcache::anyNaN(OpBuilder &b, Location loc, Value values) {
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO,
                                      values, values);
  if (isa<VectorType>(isNaN.getType()))
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::OR,
                                       isNaN);
  return isNaN;
}

Value mlir::kvcache::getScaleFromAmax(OpBuilder &b, Location loc, Value amax,
                                      Type storage) {
  auto constant = [&](float value) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  };
  Value quotient =
      arith::DivFOp::create(b, loc, amax, constant(getMaxFinite(storage)));
  Value isZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       amax, constant(0.0f));
  return arith::SelectOp::create(b, loc, isZero, constant(1.0f), quotient);
}

float mlir::kvcache::getMaxFinite(Type storage) {
  if (isa<Float8E4M3FNType>(storage))
    return 448.0f;
  if (isa<Float8E5M2Type>(storage))
    return 57344.0f;
  assert(storage.isSignlessInteger(8) && "not a storage type");
  return 127.0f;
}

