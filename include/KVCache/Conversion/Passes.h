//===- Passes.h - kvcache conversion passes ---------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_PASSES_H
#define KVCACHE_CONVERSION_PASSES_H

#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"
#include "KVCache/Conversion/KVCacheToMemRef/KVCacheToMemRef.h"
#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/Conversion/NVVMToEmulator/NVVMToEmulator.h"
#include "mlir/Pass/Pass.h"

namespace mlir {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "KVCache/Conversion/Passes.h.inc"

} // namespace mlir

#endif // KVCACHE_CONVERSION_PASSES_H
