//===- Dialects.cpp - kvcache C API -----------------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache-c/Dialects.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/InitAll.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(KVCache, kvcache,
                                      mlir::kvcache::KVCacheDialect)

void kvcacheRegisterAllPasses(void) { mlir::kvcache::registerAllPasses(); }

void kvcacheRegisterAllDialectsAndPasses(MlirDialectRegistry registry) {
  mlir::kvcache::registerAllDialectsAndPasses(*unwrap(registry));
}
