//===- InitAll.h - register the kvcache dialect and passes ------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// For compilers that embed kvcache-mlir, one call before the context is
// made:
//
//   mlir::DialectRegistry registry;
//   mlir::kvcache::registerAllDialectsAndPasses(registry);
//   mlir::MLIRContext context(registry);
//
// after which kvcache IR parses and `kvcache-to-cpu`, `kvcache-to-ptx` and
// `kvcache-to-emulated-gpu` run, built with the C++ API or from a textual
// pipeline. A host that registers all of upstream MLIR itself (mlir-opt and
// its plugins) needs only registerAllDialects and registerAllPasses.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_INITALL_H
#define KVCACHE_INITALL_H

#include "KVCache/Conversion/Passes.h"
#include "KVCache/IR/BufferizableOpInterfaceImpl.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/IR/ShardingInterfaceImpl.h"
#include "KVCache/Pipelines/Pipelines.h"
#include "KVCache/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::kvcache {

/// Adds the kvcache dialect to `registry`, with the BufferizableOpInterface
/// models of its kernel ops (one-shot-bufferize of their tensor forms) and
/// the ShardingInterface models of the tensor forms (head sharding through
/// the shard dialect's passes), and nothing of upstream MLIR.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<KVCacheDialect>();
  registerBufferizableOpInterfaceExternalModels(registry);
  registerShardingInterfaceExternalModels(registry);
}

/// Registers every kvcache pass and the `kvcache-to-cpu`, `kvcache-to-ptx`
/// and `kvcache-to-emulated-gpu` pipelines with the global pass registry (so
/// textual pipelines and `-pass-pipeline` find them). Safe to call more than
/// once.
inline void registerAllPasses() {
  static bool once = [] {
    registerKVCacheConversionPasses();
    registerKVCacheTransformsPasses();
    registerKVCachePipelines();
    return true;
  }();
  (void)once;
}

/// Adds to `registry` what the three pipelines need of the context besides
/// the kvcache dialect, and no more of upstream MLIR:
///  - the dialects their inputs may hold and that they lower: affine, arith,
///    bufferization, cf, dlti, func, gpu, linalg, llvm, math, memref, mpi,
///    nvgpu, nvvm, omp, scf, tensor, ub and vector (mpi and dlti: the page
///    transfers' messages, kvcache-mpi-to-llvm);
///  - the BufferizableOpInterface models of arith, func, linalg, scf and
///    tensor, with which `kvcache-bufferize` bufferizes a tensor-level input;
///  - the ConvertToLLVMPatternInterface of arith, cf, func, gpu, math,
///    memref, nvvm, omp, ub and vector: `convert-gpu-to-nvvm` and
///    `gpu-to-llvm` lower through the interfaces of the loaded dialects (a
///    dialect without it is left unconverted, e.g. the `cf.br` of a kernel:
///    "type mismatch for bb argument");
///  - the NVVM target attribute's `gpu::TargetAttrInterface`, which
///    `gpu-module-to-binary` serializes kernels with, and the LLVM IR
///    translations it uses (builtin, gpu, llvm, nvvm), with omp's, which
///    `kvcache-to-cpu{parallel=true}` code needs to become LLVM IR (e.g. in
///    MLIR's ExecutionEngine), and the GPU offloading translation of
///    `gpu.binary`.
/// `kvcache-to-ptx` and `kvcache-to-emulated-gpu` check that these are
/// there before they run (pass `kvcache-check-registrations`).
void registerPipelineDependencies(DialectRegistry &registry);

/// Memory effects of the blocking mpi ops (send, recv, allreduce, init,
/// finalize, barrier, retval_check, error_class), which MLIR 22 does not
/// declare, so that upstream's ownership-based deallocation accepts them;
/// isend and irecv keep none (their buffers are in use until mpi.wait).
/// Part of registerPipelineDependencies.
void registerMPIMemoryEffects(DialectRegistry &registry);

/// The one call for embedders: registerAllDialects and
/// registerPipelineDependencies on `registry`, and registerAllPasses.
void registerAllDialectsAndPasses(DialectRegistry &registry);

} // namespace mlir::kvcache

#endif // KVCACHE_INITALL_H
