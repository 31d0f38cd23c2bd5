//===- Fp8ToInteger.h - fp8 conversions as integer arithmetic ---*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The lowering of the target-neutral fp8 conversions (Quantization.h) that
// every target can run: integer arithmetic on the codes' and the f32s'
// bits, plus the f16 <-> f32 conversions every target has (x86 F16C, PTX
// cvt). The CPU pipeline runs it (kvcache-fp8-to-integer), the GPU
// pipelines for chips without fp8 instructions and for host code
// (kvcache-fp8-to-nvvm). The CPU kernels also call the codecs directly where
// they are tuned beyond what one conversion op says (packFp8CodeWords,
// decodeStorageToF32Unscaled).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_FP8TOINTEGER_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_FP8TOINTEGER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kvcache {

/// fp8 `codes` (a scalar or vector of f8E4M3FN or f8E5M2) as f32 values,
/// exactly, through f16 in 16-bit integer lanes: E5M2 is an f16's high
/// byte; E4M3FN shifted into an f16 is its value / 2^8, times 2^8 after the
/// extension to f32. NaN codes give NaN, E5M2 infinities +-inf.
Value decodeFp8ToF32WithIntegers(OpBuilder &builder, Location loc,
                                 Value codes);

/// decodeStorageToF32 (Quantization.h) with the integer fp8 decoding and
/// without its last, exact multiply: the values divided by `factor`, which
/// is set to 2^8 for f8E4M3FN codes and 1 for the other storage types. For
/// a caller that multiplies the values by a scale anyway: it multiplies by
/// scale * factor instead, one multiply per 16 values fewer.
Value decodeStorageToF32Unscaled(OpBuilder &builder, Location loc,
                                 Value codes, float &factor);
/// The `factor` decodeStorageToF32Unscaled sets for codes of `storage`.
float getUnscaledDecodeFactor(Type storage);

/// encodeF32ToStorage (Quantization.h) of fp8 `storage` in integer
/// arithmetic, with the same semantics: the codes of `values` (f32).
Value encodeF32ToFp8WithIntegers(OpBuilder &builder, Location loc,
                                 Value values, Type storage);

/// The fp8 codes of encodeF32ToFp8WithIntegers before their truncation:
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

/// Patterns lowering the target-neutral fp8 conversions to integer
/// arithmetic: `arith.extf` of f8E4M3FN or f8E5M2 codes to f32, or to f16
/// (when every user extends further to f32, each user becomes one f32
/// decoding), and the saturating truncation of truncateToFp8Saturated
/// (Quantization.h; its clamp is part of the encoding). Other fp8
/// conversions (a bare arith.truncf, which does not saturate, or other
/// result types) are left alone.
void populateFp8ToIntegerPatterns(RewritePatternSet &patterns,
                                  PatternBenefit benefit = 1);

/// Applies fp8 conversion `patterns` to `root` greedily, without folding or
/// moving constants (the code around the conversions stays as it was),
/// erasing what is left dead (the clamps of encodings, trivially dead ops).
LogicalResult applyFp8ConversionPatterns(Operation *root,
                                         RewritePatternSet &&patterns);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_FP8TOINTEGER_H
