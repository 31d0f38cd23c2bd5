/*===- Dialects.h - kvcache C API ---------------------------------*- C -*-===*\
|*                                                                            *|
|* Part of the kvcache-mlir project.                                          *|
|*                                                                            *|
|* The kvcache dialect for MLIR's C API:                                      *|
|*                                                                            *|
|*   MlirDialectHandle h = mlirGetDialectHandle__kvcache__();                 *|
|*   mlirDialectHandleRegisterDialect(h, context);                            *|
|*   mlirDialectHandleLoadDialect(h, context);                                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef KVCACHE_C_DIALECTS_H
#define KVCACHE_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(KVCache, kvcache);

/// Registers every kvcache pass and pipeline with the global registry, so
/// mlirParsePassPipeline finds them (e.g. "builtin.module(kvcache-to-cpu)").
MLIR_CAPI_EXPORTED void kvcacheRegisterAllPasses(void);

/// mlir::kvcache::registerAllDialectsAndPasses (KVCache/InitAll.h): adds to
/// `registry` the kvcache dialect and what the kvcache-to-cpu,
/// kvcache-to-ptx and kvcache-to-emulated-gpu pipelines need of a context,
/// and registers the kvcache passes and pipelines.
MLIR_CAPI_EXPORTED void
kvcacheRegisterAllDialectsAndPasses(MlirDialectRegistry registry);

#ifdef __cplusplus
}
#endif

#endif /* KVCACHE_C_DIALECTS_H */
