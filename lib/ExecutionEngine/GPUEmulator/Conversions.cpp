//===- Conversions.cpp - the GPU's fp8 conversion instructions -----------===//
//
// Part of the kvcache-mlir project.
//
// The emulator's model of the sm_89+ conversion instructions
// kvcache-emulate-nvvm rewrites `nvvm.convert.f32x2.to.f8x2` and
// `nvvm.convert.f8x2.to.f16x2` into:
//
//   cvt.rn.satfinite.{e4m3,e5m2}x2.f32 d, a, b   __kvemu_cvt_f32x2_to_f8x2
//   cvt.rn.f16x2.{e4m3,e5m2}x2 d, a              __kvemu_cvt_f8x2_to_f16x2
//
// Written from the instructions' definitions, independently of the
// compiler's own encoder (lib/Conversion/KernelCommon/Quantization.cpp), so
// that tests comparing the two catch a mistake in either: a value rounds to
// the nearest of the type's finite values (found by search in a table of
// them, computed in double), ties to the one with an even code, and
// saturates to +-max_finite (infinities included); zero keeps its sign. A
// NaN becomes 0x7F with the sign dropped, for both types, as NVIDIA's own
// host fallback of these conversions does (cuda_fp8.hpp); PTX documents
// only that the result is a NaN, so the kernels set NaN codes themselves
// and must not depend on this choice. Decoding gives the f16 of the exact
// value (every fp8 value is an f16) and 0x7FFF for NaN codes.
//
//===----------------------------------------------------------------------===//

#include "Runtime.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

using namespace mlir::kvcache::emulator;

namespace {

/// One fp8 type: 1 sign bit, `exponentBits`, `mantissaBits`, `bias`.
struct Fp8Type {
  int exponentBits;
  int mantissaBits;
  int bias;
  /// E4M3FN has no infinities: only exponent and mantissa all ones is NaN.
  bool finiteOnly;

  /// The value of the magnitude code `code` (0..127), or NaN.
  double value(int code) const {
    int exponent = code >> mantissaBits;
    int mantissa = code & ((1 << mantissaBits) - 1);
    int maxExponent = (1 << exponentBits) - 1;
    if (finiteOnly ? code == 0x7F : exponent == maxExponent)
      return mantissa || finiteOnly ? NAN : INFINITY;
    if (exponent == 0)
      return std::ldexp(double(mantissa), 1 - bias - mantissaBits);
    return std::ldexp(double(mantissa + (1 << mantissaBits)),
                      exponent - bias - mantissaBits);
  }

  /// Finite magnitudes by code: codes 0 .. count-1 are the finite ones, in
  /// increasing order.
  struct Table {
    std::array<double, 128> values;
    int count;
  };

  Table finiteValues() const {
    Table table{};
    table.count = 0;
    for (int code = 0; code < 128 && std::isfinite(value(code)); ++code)
      table.values[table.count++] = value(code);
    return table;
  }
};

constexpr Fp8Type kE4M3{4, 3, 7, true};
constexpr Fp8Type kE5M2{5, 2, 15, false};

/// The type of `format` (an Fp8Format).
const Fp8Type &typeOf(int32_t format) {
  return Fp8Format(format) == Fp8Format::E5M2 ? kE5M2 : kE4M3;
}

/// cvt.rn.satfinite of one f32 to the code of `fmt`.
uint8_t encode(const Fp8Type &fmt, float x) {
  static const Fp8Type::Table e4m3 = kE4M3.finiteValues();
  static const Fp8Type::Table e5m2 = kE5M2.finiteValues();
  const Fp8Type::Table &table = &fmt == &kE4M3 ? e4m3 : e5m2;
  if (std::isnan(x))
    return 0x7F;
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  double magnitude = std::fabs(double(x));
  int last = table.count - 1;
  if (magnitude >= table.values[last])
    return sign | uint8_t(last);
  // The first finite value above the magnitude, and the one below it.
  int above = 0;
  while (table.values[above] <= magnitude)
    ++above;
  int below = above - 1;
  double down = magnitude - table.values[below];
  double up = table.values[above] - magnitude;
  int code = down < up ? below : up < down ? above : (below % 2 ? above : below);
  return sign | uint8_t(code);
}

/// The f16 bits of the exact value `value` of an fp8 code: every fp8 value
/// is an f16 (E5M2 subnormals are f16 subnormals).
uint16_t toHalfBits(double value) {
  if (std::isnan(value))
    return 0x7FFF;
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  double magnitude = std::fabs(value);
  if (std::isinf(magnitude))
    return sign | 0x7C00;
  if (magnitude < 0x1p-14) // f16 subnormal or zero: steps of 2^-24
    return sign | uint16_t(std::ldexp(magnitude, 24));
  int exponent = 0;
  double fraction = std::frexp(magnitude, &exponent); // [0.5, 1)
  // magnitude = 1.m * 2^(exponent - 1), exponent - 1 >= -14.
  int biased = exponent - 1 + 15;
  uint16_t mantissa = uint16_t(std::ldexp(fraction * 2 - 1, 10));
  return sign | uint16_t(biased << 10) | mantissa;
}

uint16_t decode(const Fp8Type &fmt, uint8_t code) {
  double value = fmt.value(code & 0x7F);
  return toHalfBits(code & 0x80 ? -value : value);
}

} // namespace

/// cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, high, low: `high`'s code in the
/// upper byte of d, `low`'s in the lower.
KVEMU_EXPORT uint32_t __kvemu_cvt_f32x2_to_f8x2(int32_t format, float high,
                                                float low) {
  const Fp8Type &fmt = typeOf(format);
  return uint32_t(encode(fmt, high)) << 8 | encode(fmt, low);
}

/// cvt.rn.f16x2.{e4m3x2,e5m2x2} d, codes: the f16 of the lower byte in the
/// lower half of d.
KVEMU_EXPORT uint32_t __kvemu_cvt_f8x2_to_f16x2(int32_t format,
                                                uint32_t codes) {
  const Fp8Type &fmt = typeOf(format);
  return uint32_t(decode(fmt, uint8_t(codes >> 8))) << 16 |
         decode(fmt, uint8_t(codes));
}
