//===- InitAll.h - register the kvcache dialect and passes ------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// For compilers that embed kvcache-mlir:
//
//   mlir::DialectRegistry registry;
//   mlir::kvcache::registerAllDialects(registry);
//   mlir::kvcache::registerAllPasses();   // passes and the three pipelines
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_INITALL_H
#define KVCACHE_INITALL_H

#include "KVCache/Conversion/Passes.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/Pipelines/Pipelines.h"
#include "KVCache/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::kvcache {

/// Adds the kvcache dialect to `registry`. The lowerings load what they
/// produce (memref, vector, arith, scf, gpu, nvgpu, llvm) themselves.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<KVCacheDialect>();
}

/// Registers every kvcache pass and the `kvcache-to-cpu`, `kvcache-to-ptx`
/// and `kvcache-to-emulated-gpu` pipelines with the global pass registry (so textual
/// pipelines and `-pass-pipeline` find them). Safe to call more than once.
inline void registerAllPasses() {
  static bool once = [] {
    registerKVCacheConversionPasses();
    registerKVCacheTransformsPasses();
    registerKVCachePipelines();
    return true;
  }();
  (void)once;
}

} // namespace mlir::kvcache

#endif // KVCACHE_INITALL_H
