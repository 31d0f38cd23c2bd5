//===- Quantization.h - codes of quantized caches to values -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_QUANTIZATION_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_QUANTIZATION_H

#include "mlir/IR/Builders.h"

namespace mlir::kvcache {

/// `codes` (a scalar or vector of f8E4M3FN, f8E5M2 or i8) as f32 values of
/// the same shape, exactly: integer bit manipulation and one f32 multiply
/// for the fp8 types (MLIR 22 has no CPU lowering of their `arith.extf`),
/// `arith.sitofp` for i8. NaN codes give NaN (E5M2 infinities +-inf).
Value decodeStorageToF32(OpBuilder &builder, Location loc, Value codes);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_QUANTIZATION_H
