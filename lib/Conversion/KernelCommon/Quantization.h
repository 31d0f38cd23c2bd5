//===- Quantization.h - codes of quantized caches to values -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The codecs of quantized caches as target-neutral IR: i8 codes as integer
// arithmetic, fp8 codes as arith.extf (decoding) and a saturating clamp
// followed by arith.truncf (encoding). Each target lowers the fp8 forms
// afterwards (Fp8ToInteger.h: integer arithmetic, any target;
// kvcache-fp8-to-nvvm: the conversion instructions of sm_89 and newer).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_QUANTIZATION_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_QUANTIZATION_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::kvcache {

/// Builds arithmetic on scalars or vectors of one shape.
struct ShapedArith {
  OpBuilder &b;
  Location loc;
  Type shape; // a scalar or vector type whose shape constants take

  /// `element` in the shape.
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

/// Whether `type` is an fp8 storage type (f8E4M3FN or f8E5M2).
bool isFp8StorageType(Type type);

/// `codes` (a scalar or vector of f8E4M3FN, f8E5M2 or i8) as f32 values of
/// the same shape, exactly: `arith.sitofp` for i8; for fp8 `arith.extf` to
/// f16, which holds every fp8 value, then to f32 (the form both fp8
/// lowerings decode in 16-bit lanes). NaN codes give NaN (E5M2 infinities
/// +-inf).
Value decodeStorageToF32(OpBuilder &builder, Location loc, Value codes);

/// The largest finite magnitude of a storage type, the saturation bound of
/// encodeF32ToStorage: f8E4M3FN 448, f8E5M2 57344, i8 127.
float getMaxFinite(Type storage);

/// `values` (a scalar or vector of f32) as codes of `storage` (f8E4M3FN,
/// f8E5M2 or i8) of the same shape: rounded to the nearest code, ties to the
/// even one, then saturated to +-max_finite (+-inf included). fp8 keeps the
/// sign of zero and turns NaN into the type's NaN code with its sign
/// (E4M3FN S.1111.111, E5M2 S.11111.10); i8 stores 0 for NaN. i8 is integer
/// arithmetic; fp8 is truncateToFp8Saturated.
Value encodeF32ToStorage(OpBuilder &builder, Location loc, Value values,
                         Type storage);

/// The target-neutral fp8 encoding of encodeF32ToStorage: `values` (f32)
/// clamped to +-max_finite of `storage` by arith.minimumf and
/// arith.maximumf (they propagate NaN; arith.truncf does not saturate), then
/// `arith.truncf` to `storage` (to nearest even). matchFp8Saturation
/// recognises it.
Value truncateToFp8Saturated(OpBuilder &builder, Location loc, Value values,
                             Type storage);

/// The f32 values that `truncf` encodes when it is the truncation of
/// truncateToFp8Saturated (to an fp8 storage type, rounding to nearest
/// even, of f32 values clamped to exactly that type's +-max_finite by
/// minimumf and maximumf in either order): the clamp's input. Null
/// otherwise. Its lowerings encode those values with the contract's
/// semantics (encodeF32ToStorage), the clamp included.
Value matchFp8Saturation(arith::TruncFOp truncf);

/// The f32 bits of |values| with NaNs as 0 (i32, same shape): non-negative
/// floats order like these unsigned integers, so their maximum is the
/// largest non-NaN magnitude.
Value getNonNaNMagnitudeBits(OpBuilder &builder, Location loc, Value values);

/// `values` combined pairwise as a tree (depth log2 n, not a chain of n
/// dependent operations): `combine(values[i], values[n - 1 - i])` level by
/// level. `values` is overwritten; returns the root.
Value combineAsTree(MutableArrayRef<Value> values,
                    function_ref<Value(Value, Value)> combine);

/// The largest non-NaN magnitude of `chunks`, vectors of one 16-bit float
/// type (f16 or bf16), as f32 (0 when every element is NaN): computed on
/// their bits in 16-bit integer lanes, two chunks to a vector, with no
/// conversion to f32 (a third of the vector operations of maxnumf on f32).
Value getHalfChunksAmax(OpBuilder &builder, Location loc,
                        ArrayRef<Value> chunks);

/// Whether any element of `values` (a scalar or vector of f32) is NaN (i1).
Value anyNaN(OpBuilder &builder, Location loc, Value values);

/// The scale store_ragged gives a group of values whose largest non-NaN
/// magnitude is `amax` (f32): amax / max_finite of `storage`, the correctly
/// rounded division, or 1 when amax is 0.
Value getScaleFromAmax(OpBuilder &builder, Location loc, Value amax,
                       Type storage);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_QUANTIZATION_H
