//===- Quantization.h - codes of quantized caches to values -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_QUANTIZATION_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_QUANTIZATION_H

#include "mlir/IR/Builders.h"

namespace mlir::kvcache {

/// How fp8 codes are converted to and from f32.
enum class Fp8Conversion {
  /// Integer bit manipulation: any target, the CPU included.
  Software,
  /// The conversion instructions of sm_89 and newer GPUs
  /// (`nvvm.convert.f32x2.to.f8x2`: cvt.rn.satfinite.e4m3x2.f32, and
  /// `nvvm.convert.f8x2.to.f16x2`), two codes at a time; for code inside GPU
  /// kernels only. The results are the same as Software's: NaNs are given
  /// the contract's codes whatever the hardware writes for them.
  NVVM,
};

/// `codes` (a scalar or vector of f8E4M3FN, f8E5M2 or i8) as f32 values of
/// the same shape, exactly: for the fp8 types (MLIR 22 has no CPU lowering
/// of their `arith.extf`) the code's bits placed in an f16 (16-bit integer
/// lanes), extended to f32, times 2^8 for E4M3FN,
/// `arith.sitofp` for i8. NaN codes give NaN (E5M2 infinities +-inf).
/// With Fp8Conversion::NVVM, fp8 codes (a scalar or a vector of even length)
/// are converted by the GPU to f16, which holds every fp8 value exactly,
/// then extended to f32.
Value decodeStorageToF32(OpBuilder &builder, Location loc, Value codes,
                         Fp8Conversion conversion = Fp8Conversion::Software);

/// decodeStorageToF32 (software conversion) without its last, exact
/// multiply: the values divided by `factor`, which is set to 2^8 for
/// f8E4M3FN codes and 1 for the other storage types. For a caller that
/// multiplies the values by a scale anyway: it multiplies by scale *
/// factor instead, one multiply per 16 values fewer.
Value decodeStorageToF32Unscaled(OpBuilder &builder, Location loc,
                                 Value codes, float &factor);

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

/// The largest finite magnitude of a storage type, the saturation bound of
/// encodeF32ToStorage: f8E4M3FN 448, f8E5M2 57344, i8 127.
float getMaxFinite(Type storage);

/// `values` (a scalar or vector of f32) as codes of `storage` (f8E4M3FN,
/// f8E5M2 or i8) of the same shape, with no fp8 arithmetic: rounded to the
/// nearest code, ties to the even one, then saturated to +-max_finite
/// (+-inf included). fp8 keeps the sign of zero and turns NaN into the
/// type's NaN code with its sign (E4M3FN 0x7F, E5M2 0x7E); i8 stores 0 for
/// NaN. With Fp8Conversion::NVVM, fp8 codes of a scalar or a vector of even
/// length come from the GPU's cvt.rn.satfinite instruction (the same
/// rounding and saturation), their NaN codes set as above.
Value encodeF32ToStorage(OpBuilder &builder, Location loc, Value values,
                         Type storage,
                         Fp8Conversion conversion = Fp8Conversion::Software);

/// The software fp8 codes of encodeF32ToStorage before their truncation:
/// i32 of the shape of `values`, each code in the low 8 bits (the bits
/// above it are not zero). packFp8CodeWords stores several vectors of them
/// as one vector of codes.
Value encodeF32ToFp8Words(OpBuilder &builder, Location loc, Value values,
                          Type storage);

/// The low bytes of the i32 vectors `words` (of one length), one after the
/// other, as one vector of `storage` codes: byte shuffles of pairs of
/// vectors (x86 AVX-512 VBMI vpermt2b: one instruction for 32 codes, where
/// a truncation takes two for 16).
Value packFp8CodeWords(OpBuilder &builder, Location loc,
                       ArrayRef<Value> words, Type storage);

/// Whether `conversion` applies to `values` of `storage`: NVVM, an fp8
/// storage type, and a scalar or a vector of even length.
bool usesNVVMFp8Conversion(Fp8Conversion conversion, Type storage,
                           Type values);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_QUANTIZATION_H
