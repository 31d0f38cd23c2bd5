//===- EmulateConversions.h - NVVM conversions to runtime calls -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_NVVMTOEMULATOR_EMULATECONVERSIONS_H
#define KVCACHE_LIB_CONVERSION_NVVMTOEMULATOR_EMULATECONVERSIONS_H

#include "mlir/IR/Builders.h"

namespace mlir::kvcache {

/// Emits a call of runtime function `name` (declared on first use) with
/// `args`, returning its result of type `result` (none when null).
using RuntimeCallBuilder =
    function_ref<Value(Location loc, StringRef name, Type result,
                       ValueRange args)>;

/// Replaces `nvvm.convert.f32x2.to.f8x2` (rn, satfinite, to f8E4M3FN or
/// f8E5M2) and `nvvm.convert.f8x2.to.f16x2` (from those types) by calls of
/// the emulator runtime's `__kvemu_cvt_f32x2_to_f8x2` and
/// `__kvemu_cvt_f8x2_to_f16x2`, with `builder` at the op. Returns failure()
/// with an error for the variants the runtime does not model, success() with
/// `handled` false for any other op.
LogicalResult rewriteFp8Conversion(Operation *op, OpBuilder &builder,
                                   RuntimeCallBuilder callRuntime,
                                   bool &handled);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_NVVMTOEMULATOR_EMULATECONVERSIONS_H
