//===- Pipelines.h - kvcache pass pipelines ---------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_PIPELINES_PIPELINES_H
#define KVCACHE_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;

namespace kvcache {

/// Options of the `kvcache-to-cpu` pipeline.
struct KVCacheToCPUOptions : public PassPipelineOptions<KVCacheToCPUOptions> {
  PassOptions::Option<bool> checked{
      *this, "checked",
      llvm::cl::desc("Check every cache access at run time"),
      llvm::cl::init(false)};
};

/// Everything down to the LLVM dialect, runnable by `mlir-runner`:
/// kvcache-expand-accesses, cse, loop-invariant-code-motion,
/// convert-kvcache-to-memref, then the upstream conversions to LLVM.
void buildKVCacheToCPUPipeline(OpPassManager &pm,
                               const KVCacheToCPUOptions &options);

/// The access-op part shared by every pipeline: expand accesses, share
/// lookups (cse, loop-invariant code motion), lower to memref.
void buildKVCacheAccessLoweringPipeline(OpPassManager &pm, bool checked);

/// Registers `kvcache-to-cpu` with the pass-pipeline registry.
void registerKVCachePipelines();

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_PIPELINES_PIPELINES_H
