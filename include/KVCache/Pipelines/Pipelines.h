//===- Pipelines.h - kvcache pass pipelines ---------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_PIPELINES_PIPELINES_H
#define KVCACHE_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class ModuleOp;
class OpPassManager;

namespace kvcache {

/// Options of the `kvcache-to-cpu` pipeline.
struct KVCacheToCPUOptions : public PassPipelineOptions<KVCacheToCPUOptions> {
  PassOptions::Option<bool> bufferize{
      *this, "bufferize",
      llvm::cl::desc("Bufferize a tensor-level input first "
                     "(kvcache-bufferize: one-shot-bufferize, results that "
                     "return an argument dropped); an input without tensors "
                     "is left as it is"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> dealloc{
      *this, "dealloc",
      llvm::cl::desc("With bufferize=true: free the buffers bufferization "
                     "creates, in the functions that free no memory "
                     "themselves (kvcache-bufferize's dealloc option)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> checked{
      *this, "checked",
      llvm::cl::desc("Check every cache access at run time"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Run the kernel ops' outer loops on every core through "
                     "MLIR's OpenMP lowering (the program then needs the LLVM "
                     "OpenMP runtime, libomp.so)"),
      llvm::cl::init(false)};
  PassOptions::Option<unsigned> threads{
      *this, "threads",
      llvm::cl::desc("With parallel=true: the number of threads of each "
                     "parallel loop (0: the OpenMP runtime's default, every "
                     "core or OMP_NUM_THREADS)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> transferDirectBytes{
      *this, "transfer-direct-bytes",
      llvm::cl::desc("send_pages/recv_pages: runs of pages of at least this "
                     "many bytes are messages of their own, shorter ones "
                     "are packed (convert-kvcache-to-memref's option)"),
      llvm::cl::init(128 << 10)};
  PassOptions::Option<int64_t> transferStagingBytes{
      *this, "transfer-staging-bytes",
      llvm::cl::desc("send_pages/recv_pages: the packed runs' messages hold "
                     "at most this many bytes (convert-kvcache-to-memref's "
                     "option)"),
      llvm::cl::init(16 << 20)};
  PassOptions::Option<std::string> cpuFeatures{
      *this, "cpu-features",
      llvm::cl::desc("Features of the CPU the code will run on: 'host' or "
                     "LLVM feature names with + or - (e.g. +avx512bf16); "
                     "convert-kvcache-to-scf's option"),
      llvm::cl::init("")};
};

/// Parses an LLVM optimization level: 0, 1, 2 or 3 (anything else is an
/// option error, before the pipeline runs).
struct OptLevelParser : public llvm::cl::parser<unsigned> {
  using llvm::cl::parser<unsigned>::parser;
  bool parse(llvm::cl::Option &option, StringRef argName, StringRef arg,
             unsigned &value) {
    if (llvm::cl::parser<unsigned>::parse(option, argName, arg, value))
      return true;
    if (value > 3)
      return option.error("must be 0, 1, 2 or 3, not " + arg);
    return false;
  }
};

/// The LLVM OpenMP runtime that code lowered with
/// `kvcache-to-cpu{parallel=true}` calls (`__kmpc_*`): libomp.so of the LLVM
/// kvcache-mlir was built with.
StringRef getOpenMPRuntimePath();

/// For a host about to run `module` (LLVM dialect) in-process, e.g. with
/// MLIR's ExecutionEngine once it has loaded its shared libraries: fails
/// with an error that names the library to add (getOpenMPRuntimePath) when
/// the module has omp ops, which call the OpenMP runtime, and nothing
/// loaded in the process defines it. The JIT itself would only say "Symbols
/// not found: [ __kmpc_fork_call, ... ]", or fail to materialize the
/// module's functions without naming them.
LogicalResult verifyOpenMPRuntimeLoaded(ModuleOp module);

/// Options of the `kvcache-to-ptx` pipeline.
struct KVCacheToPTXOptions : public PassPipelineOptions<KVCacheToPTXOptions> {
  PassOptions::Option<bool> bufferize{
      *this, "bufferize",
      llvm::cl::desc("Bufferize a tensor-level input first "
                     "(kvcache-bufferize: one-shot-bufferize, results that "
                     "return an argument dropped); an input without tensors "
                     "is left as it is"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> dealloc{
      *this, "dealloc",
      llvm::cl::desc("With bufferize=true: free the buffers bufferization "
                     "creates, in the functions that free no memory "
                     "themselves (kvcache-bufferize's dealloc option)"),
      llvm::cl::init(true)};
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("NVIDIA GPU architecture (sm_XX)"),
      llvm::cl::init("sm_90")};
  PassOptions::Option<unsigned, OptLevelParser> optLevel{
      *this, "opt-level", llvm::cl::desc("LLVM optimization level (0-3)"),
      llvm::cl::init(3)};
  PassOptions::Option<bool> checked{
      *this, "checked",
      llvm::cl::desc("Check every cache access at run time"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> linalgToGPU{
      *this, "linalg-to-gpu",
      llvm::cl::desc("Run the input's linalg ops (and scf.parallel loops) as "
                     "GPU kernels: parallel loops tiled 16 x 16, tiles on "
                     "blocks, elements on threads; the buffers "
                     "bufferization creates are gpu.alloc"),
      llvm::cl::init(false)};
};

/// The PTX ISA feature for `chip`: `+ptx80` up to sm_90a (`+ptx81` for
/// sm_89, whose fp8 conversions LLVM 22 selects from PTX ISA 8.1 on), and
/// for newer chips the oldest ISA LLVM 22 accepts for them (8.6 to 9.0).
std::string getPTXFeaturesForChip(StringRef chip);

/// Kernels in `gpu.module`s (and, later, kernel ops) down to one `gpu.binary`
/// holding PTX; host code with `gpu.launch_func` down to the LLVM dialect.
void buildKVCacheToPTXPipeline(OpPassManager &pm,
                               const KVCacheToPTXOptions &options);

/// The steps `kvcache-to-ptx` and `kvcache-to-emulated-gpu` share: kernel
/// ops to kernels, outlining, the access-op lowering and the device code
/// down to the NVVM/LLVM dialects, for `options.chip`. Host code is left
/// as it is.
void buildKVCacheToNVVMPipeline(OpPassManager &pm,
                                const KVCacheToPTXOptions &options);

/// `kvcache-to-emulated-gpu`: the shared steps, the host code to the LLVM
/// dialect, then `kvcache-emulate-nvvm`: the kernels run on the CPU through
/// the GPU emulator runtime (same options as `kvcache-to-ptx`).
void buildKVCacheToEmulatedGPUPipeline(OpPassManager &pm,
                                       const KVCacheToPTXOptions &options);

/// Everything down to the LLVM dialect, runnable by `mlir-runner`:
/// convert-kvcache-to-scf, the access-op lowering (fp8 conversions in
/// integer arithmetic), then the upstream conversions to LLVM.
void buildKVCacheToCPUPipeline(OpPassManager &pm,
                               const KVCacheToCPUOptions &options);

/// Options of the access-op lowering pipeline.
struct KVCacheAccessLoweringOptions {
  /// Check every access at run time (convert-kvcache-to-memref{checked}).
  bool checked = false;
  /// The chip GPU code is built for: the fp8 conversions are lowered by
  /// `kvcache-fp8-to-nvvm{chip}` (NVVM's instructions in GPU code from
  /// sm_89). Empty: code for the CPU only, `kvcache-fp8-to-integer`.
  std::string gpuChip;
  /// convert-kvcache-to-memref{transfer-direct-bytes}.
  int64_t transferDirectBytes = 128 << 10;
  /// convert-kvcache-to-memref{transfer-staging-bytes}.
  int64_t transferStagingBytes = 16 << 20;
};

/// The access-op part shared by every pipeline: expand accesses, share
/// lookups (cse, loop-invariant code motion), lower to memref, lower the
/// fp8 conversions the kvcache lowerings leave target-neutral (for
/// `options.gpuChip`, or integer arithmetic), canonicalize and cse.
void buildKVCacheAccessLoweringPipeline(
    OpPassManager &pm, const KVCacheAccessLoweringOptions &options);

/// Deprecated: the overload above. `nvvmFp8Conversions` selects NVVM's fp8
/// conversion instructions in GPU code as a chip that has them (sm_89)
/// does; false lowers every fp8 conversion to integer arithmetic.
void buildKVCacheAccessLoweringPipeline(OpPassManager &pm, bool checked,
                                        bool nvvmFp8Conversions = false);

/// Registers `kvcache-to-cpu`, `kvcache-to-ptx` and `kvcache-to-emulated-gpu`
/// with the pass-pipeline
/// registry.
void registerKVCachePipelines();

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_PIPELINES_PIPELINES_H
