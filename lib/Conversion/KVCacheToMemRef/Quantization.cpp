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
//===----------------------------------------------------------------------===//

#include "Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

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

Value mlir::kvcache::decodeStorageToF32(OpBuilder &b, Location loc,
                                        Value codes) {
  Type storage = getElementTypeOrSelf(codes.getType());
  ShapedArith a{b, loc, codes.getType()};
  Type f32 = a.like(b.getF32Type());
  if (storage.isSignlessInteger(8))
    return arith::SIToFPOp::create(b, loc, f32, codes);
  bool e4m3 = isa<Float8E4M3FNType>(storage);
  assert((e4m3 || isa<Float8E5M2Type>(storage)) && "not a storage type");
  int64_t shift = e4m3 ? 20 : 21;
  float rescale = e4m3 ? 0x1p120f : 0x1p112f;
  Type i8 = a.like(b.getI8Type()), i32 = a.like(b.getI32Type());
  Value byte = arith::BitcastOp::create(b, loc, i8, codes);
  Value word = arith::ExtUIOp::create(b, loc, i32, byte);
  Value magnitude = arith::AndIOp::create(b, loc, word, a.constantInt(0x7F, 32));
  Value bits = arith::ShLIOp::create(b, loc, magnitude, a.constantInt(shift, 32));
  Value scaled = arith::MulFOp::create(
      b, loc, arith::BitcastOp::create(b, loc, f32, bits),
      a.constantF32(rescale));
  Value valueBits = arith::BitcastOp::create(b, loc, i32, scaled);
  // E4M3FN: only magnitude 0x7F is NaN. E5M2: magnitudes >= 0x7C are
  // infinities (mantissa 0) and NaNs: the f32 all-ones exponent with the
  // code's mantissa.
  Value special, specialBits;
  if (e4m3) {
    special = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                    magnitude, a.constantInt(0x7F, 32));
    specialBits = a.constantInt(0x7FC00000, 32);
  } else {
    special = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge,
                                    magnitude, a.constantInt(0x7C, 32));
    Value mantissa = arith::ShLIOp::create(
        b, loc, arith::AndIOp::create(b, loc, word, a.constantInt(3, 32)),
        a.constantInt(21, 32));
    specialBits = arith::OrIOp::create(b, loc, mantissa,
                                       a.constantInt(0x7F800000, 32));
  }
  valueBits = arith::SelectOp::create(b, loc, special, specialBits, valueBits);
  Value sign = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, word, a.constantInt(0x80, 32)),
      a.constantInt(24, 32));
  return arith::BitcastOp::create(
      b, loc, f32, arith::OrIOp::create(b, loc, valueBits, sign));
}
