//===- Quantization.cpp - codes of quantized caches to values ------------===//
//
// Part of the kvcache-mlir project.
//
// Decoding fp8 codes without fp8 arithmetic: the 7 magnitude bits of an
// E4M3 (E5M2) code, shifted left by 20 (21), are an f32 bit pattern whose
// exponent field is the code's exponent field and whose mantissa starts
// with the code's mantissa. Read as an f32 it is the code's value times
// 2^(bias - 127), subnormals included (they become f32 subnormals), so one
// exact multiply by 2^(127 - bias) gives the value. The sign bit is OR-ed
// back in; NaN codes (E4M3FN: S.1111.111; E5M2: exponent 11111) get the
// f32 NaN or infinity pattern instead.
//
// Encoding runs the other way on the f32 bits. The magnitude is first
// clamped to max_finite as an integer (non-negative f32 bit patterns order
// like their values; +inf and anything above max_finite become max_finite,
// which rounding can then no longer exceed). Then one f32 add does the
// rounding: adding M = 2^(e + 20) (2^(e + 21) for E5M2), e being the
// exponent of |x| but at least the smallest normal exponent, leaves the
// sum in M's binade, so the hardware rounds |x| to the code's step, ties
// to even, subnormal codes included, and the sum's low bits count those
// steps. The code is that count plus a term of M's exponent (a mantissa
// carry rolls into the exponent, as it should): about 12 vector
// instructions per 16 values on AVX-512, the sign and the NaN code taken
// from the f32's top byte. Every f32 bit pattern was checked against the
// per-case formulation this replaced (integer ties-to-even rounding for
// normals, a 2^23 add for subnormals). i8 rounds with the 2^23 add after
// clamping to +-127.
//
// On sm_89 and newer GPUs the conversion instructions do both, two codes at
// a time: cvt.rn.satfinite.{e4m3,e5m2}x2.f32 rounds to nearest even and
// saturates like the encoder above (+-inf included), and
// cvt.rn.f16x2.{e4m3,e5m2}x2 decodes to f16, which holds every fp8 value
// exactly. Only their NaN codes are replaced: NVIDIA documents a NaN
// result, not its sign or (E5M2) its mantissa, and the contract fixes
// both.
//
//===----------------------------------------------------------------------===//

#include "Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/bit.h"

#include <numeric>

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// Builds arithmetic on scalars or vectors of one shape.
struct ShapedArith {
  OpBuilder &b;
  Location loc;
  Type shape; // the codes' type: scalar or vector

  Type like(Type element) const {
    if (auto vector = dyn_cast<VectorType>(shape))
      return vector.clone(element);
    return element;
  }
  Value constantInt(int64_t value, unsigned width) const {
    return constant(b.getIntegerAttr(b.getIntegerType(width), value));
  }
  Value constantF32(float value) const {
    return constant(b.getF32FloatAttr(value));
  }
  /// `scalar` splatted to the shape.
  Value constant(TypedAttr scalar) const {
    Type type = like(scalar.getType());
    TypedAttr value = scalar;
    if (auto vector = dyn_cast<VectorType>(type))
      value = DenseElementsAttr::get(vector, Attribute(scalar));
    return arith::ConstantOp::create(b, loc, type, value);
  }
};

} // namespace

bool mlir::kvcache::usesNVVMFp8Conversion(Fp8Conversion conversion,
                                          Type storage, Type values) {
  if (conversion != Fp8Conversion::NVVM ||
      !isa<Float8E4M3FNType, Float8E5M2Type>(storage))
    return false;
  auto vector = dyn_cast<VectorType>(values);
  return !vector ||
         (vector.getRank() == 1 && vector.getNumElements() % 2 == 0);
}

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

/// decodeStorageToF32 of fp8 codes with nvvm.convert.f8x2.to.f16x2.
static Value decodeFp8WithNVVM(OpBuilder &b, Location loc, Value codes) {
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
    return arith::ExtFOp::create(
        b, loc, b.getF32Type(),
        vector::ExtractOp::create(b, loc, halves, ArrayRef<int64_t>{0})
            .getResult());
  }
  SmallVector<Value> pairs;
  for (int64_t i = 0; i < vector.getNumElements(); i += 2)
    pairs.push_back(NVVM::ConvertF8x2ToF16x2Op::create(
        b, loc, halvesType, getPair(b, loc, bytes, i), /*relu=*/false,
        storage));
  return arith::ExtFOp::create(b, loc, a.like(b.getF32Type()),
                               concatenatePairs(b, loc, pairs));
}

/// decodeStorageToF32 of fp8 codes through f16, which holds every fp8 value
/// exactly, in 16-bit lanes (half the vector work of 32-bit ones): E5M2 is
/// the high byte of an f16; an E4M3FN code shifted into an f16's exponent
/// and mantissa is its value / 2^8 (its exponent bias is 7 where f16's is
/// 15; subnormals too), and magnitude 0x7F, NaN, becomes an f16 NaN (0x7F80
/// with the code's sign) before the conversion. The f16 -> f32 extension is
/// the chip's own instruction (x86 F16C, PTX cvt.f32.f16); times 2^8 is
/// exact.
static Value decodeFp8ViaF16(OpBuilder &b, Location loc, Value codes,
                             bool unscaled = false) {
  Type storage = getElementTypeOrSelf(codes.getType());
  ShapedArith a{b, loc, codes.getType()};
  Type i8 = a.like(b.getI8Type()), i16 = a.like(b.getI16Type());
  Value byte = arith::BitcastOp::create(b, loc, i8, codes);
  Value halfBits;
  if (isa<Float8E5M2Type>(storage)) {
    halfBits = arith::ShLIOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i16, byte), a.constantInt(8, 16));
  } else {
    // Sign-extended and shifted, the sign lands in bit 15 and, wrongly, bit
    // 14 (the top exponent bit, 0 for every E4M3FN value), bits 13..7 are
    // the code's magnitude and bits 6..0 are 0. Bit 14 of shifted + 0x80 is
    // the sign flipped, except where the magnitude is 0x7F (the NaN code):
    // there the carry out of bits 13..7 flips it back. Xor-ing that bit
    // into shifted clears bit 14 for every value and sets it for the NaN
    // code: exponent 31 and a nonzero mantissa, an f16 NaN with its sign.
    // An add and one bitwise operation (x86 vpternlog), no compare.
    Value shifted = arith::ShLIOp::create(
        b, loc, arith::ExtSIOp::create(b, loc, i16, byte), a.constantInt(7, 16));
    Value carried =
        arith::AddIOp::create(b, loc, shifted, a.constantInt(0x80, 16));
    halfBits = arith::XOrIOp::create(
        b, loc, shifted,
        arith::AndIOp::create(b, loc, carried, a.constantInt(0x4000, 16)));
  }
  Value half = arith::BitcastOp::create(b, loc, a.like(b.getF16Type()),
                                        halfBits);
  Value value =
      arith::ExtFOp::create(b, loc, a.like(b.getF32Type()), half).getResult();
  if (isa<Float8E5M2Type>(storage) || unscaled)
    return value;
  return arith::MulFOp::create(b, loc, value, a.constantF32(256.0f));
}

Value mlir::kvcache::decodeStorageToF32(OpBuilder &b, Location loc,
                                        Value codes,
                                        Fp8Conversion conversion) {
  Type storage = getElementTypeOrSelf(codes.getType());
  ShapedArith a{b, loc, codes.getType()};
  Type f32 = a.like(b.getF32Type());
  if (storage.isSignlessInteger(8))
    return arith::SIToFPOp::create(b, loc, f32, codes);
  if (usesNVVMFp8Conversion(conversion, storage, codes.getType()))
    return decodeFp8WithNVVM(b, loc, codes);
  return decodeFp8ViaF16(b, loc, codes);
}

Value mlir::kvcache::decodeStorageToF32Unscaled(OpBuilder &b, Location loc,
                                                Value codes, float &factor) {
  factor = 1.0f;
  if (!isa<Float8E4M3FNType>(getElementTypeOrSelf(codes.getType())))
    return decodeStorageToF32(b, loc, codes);
  factor = 256.0f;
  return decodeFp8ViaF16(b, loc, codes, /*unscaled=*/true);
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

/// encodeF32ToStorage of fp8 codes with nvvm.convert.f32x2.to.f8x2.
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

Value mlir::kvcache::encodeF32ToStorage(OpBuilder &b, Location loc,
                                        Value values, Type storage,
                                        Fp8Conversion conversion) {
  if (usesNVVMFp8Conversion(conversion, storage, values.getType()))
    return encodeFp8WithNVVM(b, loc, values, storage);
  ShapedArith a{b, loc, values.getType()};
  Type i32 = a.like(b.getI32Type());
  Type i8 = a.like(b.getI8Type()), codesType = a.like(storage);
  auto bitcast = [&](Type type, Value value) -> Value {
    return arith::BitcastOp::create(b, loc, type, value);
  };
  if (storage.isSignlessInteger(8)) {
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
    Value integer = arith::SubIOp::create(b, loc, bitcast(i32, shifted),
                                          a.constantInt(kRoundingBiasBits, 32));
    integer = arith::SelectOp::create(b, loc, isNaN, a.constantInt(0, 32),
                                      integer);
    return arith::TruncIOp::create(b, loc, i8, integer);
  }
  return bitcast(codesType,
                 arith::TruncIOp::create(
                     b, loc, i8, encodeF32ToFp8Words(b, loc, values, storage)));
}

Value mlir::kvcache::encodeF32ToFp8Words(OpBuilder &b, Location loc,
                                         Value values, Type storage) {
  ShapedArith a{b, loc, values.getType()};
  Type f32 = a.like(b.getF32Type()), i32 = a.like(b.getI32Type());
  auto bitcast = [&](Type type, Value value) -> Value {
    return arith::BitcastOp::create(b, loc, type, value);
  };
  bool e4m3 = isa<Float8E4M3FNType>(storage);
  assert((e4m3 || isa<Float8E5M2Type>(storage)) && "not a storage type");
  int64_t mantissaBits = e4m3 ? 3 : 2;
  int64_t shift = 23 - mantissaBits;
  int64_t minNormalExponent = e4m3 ? -6 : -14;
  int64_t minNormalBits = (127 + minNormalExponent) << 23; // 2^-6, 2^-14
  // The code is k + (bits(M) >> shift) - K (see below), of which only the
  // low 8 bits are stored: M's mantissa carries -K mod 256, an even number
  // (the rounded sum's last bit keeps k's parity), and no subtraction is
  // left.
  int64_t k = ((127 + minNormalExponent + shift) << mantissaBits) & 0xFF;
  int64_t minusK = (256 - k) & 0xFF;
  auto constant = [&](int64_t value) { return a.constantInt(value, 32); };

  Value bits = bitcast(i32, values);
  Value magnitude = arith::AndIOp::create(b, loc, bits, constant(0x7FFFFFFF));
  Value isNaN = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                      magnitude, constant(0x7F800000));
  Value maxBits = constant(
      static_cast<int64_t>(llvm::bit_cast<uint32_t>(getMaxFinite(storage))));
  magnitude = arith::MinUIOp::create(b, loc, magnitude, maxBits);
  // M = 2^(max(e, e_min) + shift) plus minusK units in its last place, for
  // |x| in [2^e, 2^(e+1)): |x| + M keeps M's exponent, so the f32 add
  // rounds |x| to a multiple of the code's step 2^(max(e, e_min) -
  // mantissa bits), ties to even, and bits(|x| + M) - bits(M) is the number
  // k of steps (2^mantissa_bits .. 2^(mantissa_bits + 1) for normals, the
  // implicit bit included; 0 .. 2^mantissa_bits for subnormals). The code
  // is (max(e, e_min) - e_min) << mantissa_bits plus k - 2^mantissa_bits
  // for normals, k for subnormals: both k + (bits(M) >> shift) - K with
  // K = (127 + e_min + shift) << mantissa_bits.
  Value exponent = arith::AndIOp::create(
      b, loc,
      arith::MaxUIOp::create(b, loc, magnitude, constant(minNormalBits)),
      constant(0x7F800000));
  Value bias = arith::AddIOp::create(b, loc, exponent,
                                     constant((shift << 23) + minusK));
  Value sum = arith::AddFOp::create(b, loc, bitcast(f32, magnitude),
                                    bitcast(f32, bias));
  // Its low 8 bits are the magnitude's code (at most 0x7E: bit 7 is 0).
  Value code = arith::AddIOp::create(
      b, loc, bitcast(i32, sum),
      arith::ShRUIOp::create(b, loc, bias, constant(shift)));
  // The sign from the f32's top byte, which for NaN is S.1111111: the
  // E4M3FN NaN code as it is; E5M2's is S.1111110.
  Value top = arith::ShRUIOp::create(b, loc, bits, constant(24));
  Value signed_ = arith::OrIOp::create(
      b, loc, arith::AndIOp::create(b, loc, top, constant(0x80)), code);
  Value nan = e4m3 ? top : arith::XOrIOp::create(b, loc, top, constant(1));
  return arith::SelectOp::create(b, loc, isNaN, nan, signed_);
}

Value mlir::kvcache::packFp8CodeWords(OpBuilder &b, Location loc,
                                      ArrayRef<Value> words, Type storage) {
  int64_t width = cast<VectorType>(words.front().getType()).getNumElements();
  auto bytesType = VectorType::get({4 * width}, b.getI8Type());
  // Little endian: word i's low byte is byte 4i.
  SmallVector<int64_t> lowBytes;
  for (int64_t i = 0; i < 2 * width; ++i)
    lowBytes.push_back(4 * i);
  SmallVector<Value> parts;
  for (size_t i = 0; i < words.size(); i += 2) {
    Value first = vector::BitCastOp::create(b, loc, bytesType, words[i]);
    if (i + 1 == words.size()) {
      parts.push_back(vector::ShuffleOp::create(
          b, loc, first, first, ArrayRef(lowBytes).take_front(width)));
      continue;
    }
    Value second = vector::BitCastOp::create(b, loc, bytesType, words[i + 1]);
    parts.push_back(
        vector::ShuffleOp::create(b, loc, first, second, lowBytes));
  }
  // The parts, concatenated in order.
  while (parts.size() > 1) {
    SmallVector<Value> joined;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      int64_t n = cast<VectorType>(parts[i].getType()).getNumElements() +
                  cast<VectorType>(parts[i + 1].getType()).getNumElements();
      SmallVector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      joined.push_back(
          vector::ShuffleOp::create(b, loc, parts[i], parts[i + 1], order));
    }
    if (parts.size() % 2)
      joined.push_back(parts.back());
    parts = std::move(joined);
  }
  auto codesType = cast<VectorType>(parts.front().getType()).clone(storage);
  return arith::BitcastOp::create(b, loc, codesType, parts.front());
}
