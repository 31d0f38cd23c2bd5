//===- Pipelines.cpp - kvcache pass pipelines -------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Pipelines/Pipelines.h"
#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"
#include "KVCache/Conversion/Passes.h"
#include "KVCache/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Conversion/SCFToOpenMP/SCFToOpenMP.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/DynamicLibrary.h"

using namespace mlir;
using namespace mlir::kvcache;

void mlir::kvcache::buildKVCacheAccessLoweringPipeline(
    OpPassManager &pm, const KVCacheAccessLoweringOptions &options) {
  pm.addPass(createKVCacheExpandAccesses());
  pm.addPass(createCSEPass());
  // Hoisting a checked lookup out of a loop that does not run would report
  // an access that never happens: checked code keeps lookups in place.
  if (!options.checked)
    pm.addPass(createLoopInvariantCodeMotionPass());
  ConvertKVCacheToMemRefOptions memref;
  memref.checked = options.checked;
  memref.transferDirectBytes = options.transferDirectBytes;
  memref.transferStagingBytes = options.transferStagingBytes;
  pm.addPass(createConvertKVCacheToMemRef(memref));
  // Every fp8 conversion is target-neutral up to here (the kernel ops'
  // lowerings and the dequantizing reads); the target's lowering runs
  // before the canonicalizer sees it.
  if (options.gpuChip.empty()) {
    pm.addPass(createKVCacheFp8ToInteger());
  } else {
    KVCacheFp8ToNVVMOptions fp8;
    fp8.chip = options.gpuChip;
    pm.addPass(createKVCacheFp8ToNVVM(fp8));
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::kvcache::buildKVCacheAccessLoweringPipeline(
    OpPassManager &pm, bool checked, bool nvvmFp8Conversions) {
  KVCacheAccessLoweringOptions options;
  options.checked = checked;
  // sm_89: the oldest chip whose GPU code converts with the instructions.
  if (nvvmFp8Conversions)
    options.gpuChip = "sm_89";
  buildKVCacheAccessLoweringPipeline(pm, options);
}

/// Host code (memref, linalg on memrefs, affine, vector, arith, math, scf, cf,
/// func and, with `withGPU`, gpu.launch_func; with `withOpenMP`, omp) down
/// to the LLVM dialect.
static void addHostToLLVMPasses(OpPassManager &pm, bool withGPU,
                                bool withOpenMP = false) {
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // kvcache.send_pages and recv_pages' messages: calls of the MPI library.
  pm.addPass(createKVCacheMPIToLLVM());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  // The poison results of a checked function's early return.
  pm.addPass(createUBToLLVMConversionPass());
  if (withOpenMP)
    pm.addPass(createConvertOpenMPToLLVMPass());
  if (withGPU)
    pm.addPass(createGpuToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// The first step of the GPU pipelines: fail, naming what is missing, when
/// the context lacks an extension or translation their passes need.
static void addRegistrationCheck(OpPassManager &pm, StringRef pipeline) {
  KVCacheCheckRegistrationsOptions check;
  check.pipeline = pipeline.str();
  pm.addPass(createKVCacheCheckRegistrations(check));
}

/// The first step of every pipeline after that check: a tensor-level input
/// bufferized (with `bufferize`; its buffers gpu.alloc with `gpuAlloc`,
/// freed with `dealloc`), then the check routines, and checked mode.
static void addArgumentChecks(OpPassManager &pm, bool bufferize, bool dealloc,
                              bool checked, bool gpuAlloc = false) {
  if (bufferize) {
    KVCacheBufferizeOptions bufferization;
    bufferization.gpuAlloc = gpuAlloc;
    bufferization.dealloc = dealloc;
    pm.addPass(createKVCacheBufferize(bufferization));
  }
  KVCacheGenerateArgumentChecksOptions checks;
  checks.checked = checked;
  pm.addPass(createKVCacheGenerateArgumentChecks(checks));
}

void mlir::kvcache::buildKVCacheToCPUPipeline(
    OpPassManager &pm, const KVCacheToCPUOptions &options) {
  addArgumentChecks(pm, options.bufferize, options.dealloc, options.checked);
  ConvertKVCacheToSCFOptions kernels;
  kernels.checked = options.checked;
  kernels.threads = options.parallel ? int64_t(options.threads) : 1;
  kernels.cpuFeatures = options.cpuFeatures;
  pm.addPass(createConvertKVCacheToSCF(kernels));
  KVCacheAccessLoweringOptions accesses;
  accesses.checked = options.checked;
  accesses.transferDirectBytes = options.transferDirectBytes;
  accesses.transferStagingBytes = options.transferStagingBytes;
  buildKVCacheAccessLoweringPipeline(pm, accesses);
  // Every scf.parallel (the kernel ops' outer loops, and any of the input)
  // becomes an OpenMP worksharing loop; without `parallel` they run in
  // order (scf-to-cf).
  if (options.parallel) {
    ConvertSCFToOpenMPPassOptions openmp;
    openmp.numThreads = options.threads;
    pm.addPass(createConvertSCFToOpenMPPass(openmp));
    // Each parallel iteration is wrapped in a memref.alloca_scope, which
    // must stay one block: scf-to-cf cannot lower the loops inside it.
    // The kernels allocate nothing on the stack: the scopes go.
    pm.addPass(createKVCacheInlineAllocaScopes());
  }
  addHostToLLVMPasses(pm, /*withGPU=*/false, options.parallel);
}

StringRef mlir::kvcache::getOpenMPRuntimePath() {
  return KVCACHE_OPENMP_RUNTIME;
}

LogicalResult mlir::kvcache::verifyOpenMPRuntimeLoaded(ModuleOp module) {
  // The omp ops stay until the translation to LLVM IR, which makes them
  // calls of the runtime: each parallel region is a __kmpc_fork_call.
  Operation *found = nullptr;
  module->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op->getName().getDialectNamespace() != "omp")
      return WalkResult::advance();
    found = op;
    return WalkResult::interrupt();
  });
  if (!found ||
      llvm::sys::DynamicLibrary::SearchForAddressOfSymbol("__kmpc_fork_call"))
    return success();
  // At the op's location, without the op (a whole parallel region).
  return emitError(found->getLoc())
         << "the module calls the LLVM OpenMP runtime (__kmpc_fork_call, "
            "...: '"
         << found->getName()
         << "' of kvcache-to-cpu{parallel=true} code) and no library loaded "
            "defines it: add "
         << getOpenMPRuntimePath()
         << " to the shared libraries (mlir-runner -shared-libs, "
            "ExecutionEngineOptions::sharedLibPaths), or lower with "
            "parallel=false";
}

std::string mlir::kvcache::getPTXFeaturesForChip(StringRef chip) {
  int64_t version = getChipVersion(chip);
  bool familySpecific = chip.ends_with("f");
  // The oldest PTX ISA LLVM 22 accepts for each chip (it aborts below it),
  // never older than 8.0. sm_89 takes 8.1: LLVM selects its fp8 conversions
  // (cvt.rn.satfinite.e4m3x2.f32, ...) only from there, as the PTX ISA
  // added them for sm_89 in 8.1 (for sm_90 in 7.8).
  if (version == 88 || (version >= 110 && version < 120))
    return "+ptx90";
  if (familySpecific || version == 103 || version == 121)
    return "+ptx88";
  if (version >= 120)
    return "+ptx87";
  if (version >= 100)
    return "+ptx86";
  if (version == 89)
    return "+ptx81";
  return "+ptx80";
}

/// `linalg-to-gpu`: the linalg ops on buffers as parallel loops (their
/// reductions sequential inside), each tiled 16 x 16 on its two outer loops
/// (inbound checks instead of partial tiles), then tiles mapped to blocks
/// and a tile's elements to threads: gpu.launch ops, which the GPU
/// pipelines outline with the others. Plain, not fast: one thread per
/// output element.
static void addLinalgToGPUPasses(OpPassManager &pm) {
  OpPassManager &function = pm.nest<func::FuncOp>();
  function.addPass(createConvertLinalgToParallelLoopsPass());
  function.addPass(createParallelLoopTilingPass({16, 16},
                                                /*noMinMaxBounds=*/true));
  function.addPass(createGpuMapParallelLoopsPass());
  function.addPass(createConvertParallelLoopToGpuPass());
}

void mlir::kvcache::buildKVCacheToNVVMPipeline(
    OpPassManager &pm, const KVCacheToPTXOptions &options) {
  if (options.linalgToGPU)
    addLinalgToGPUPasses(pm);
  ConvertKVCacheToGPUOptions kernels;
  kernels.chip = options.chip;
  kernels.checked = options.checked;
  pm.addPass(createConvertKVCacheToGPU(kernels));
  // The kernels of kernel ops are gpu.funcs with explicit parameters
  // already; gpu.launch ops of the input are outlined here, before the 1:N
  // decomposition: outlining afterwards would pass only the pieces a kernel
  // uses, in order of use.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createKVCacheMergeGPUModules());
  KVCacheAccessLoweringOptions accesses;
  accesses.checked = options.checked;
  accesses.gpuChip = options.chip;
  buildKVCacheAccessLoweringPipeline(pm, accesses);

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = getPTXFeaturesForChip(options.chip);
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createKVCacheLowerGPUMath());
  device.addPass(createSCFToControlFlowPass());
  device.addPass(memref::createExpandStridedMetadataPass());
  device.addPass(createLowerAffinePass());
  device.addPass(createConvertNVGPUToNVVMPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::kvcache::buildKVCacheToPTXPipeline(
    OpPassManager &pm, const KVCacheToPTXOptions &options) {
  addRegistrationCheck(pm, "kvcache-to-ptx");
  // The check routines only: checked mode's entry call would read the
  // offsets and the metadata on the host, which are device memory on a GPU
  // (a host calls the routine on its host copies; docs/KernelABI.md).
  addArgumentChecks(pm, options.bufferize, options.dealloc, /*checked=*/false,
                    options.linalgToGPU);
  buildKVCacheToNVVMPipeline(pm, options);
  pm.addNestedPass<gpu::GPUModuleOp>(createKVCacheCheckLibdevice());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  addHostToLLVMPasses(pm, /*withGPU=*/true);
}

void mlir::kvcache::buildKVCacheToEmulatedGPUPipeline(
    OpPassManager &pm, const KVCacheToPTXOptions &options) {
  addRegistrationCheck(pm, "kvcache-to-emulated-gpu");
  // Device memory is host memory on the emulator: checked mode's host
  // checks run before the first launch.
  addArgumentChecks(pm, options.bufferize, options.dealloc, options.checked,
                    options.linalgToGPU);
  buildKVCacheToNVVMPipeline(pm, options);
  pm.addPass(createKVCacheGPUMemoryToHost());
  addHostToLLVMPasses(pm, /*withGPU=*/true);
  pm.addPass(createKVCacheEmulateNVVM());
}

void mlir::kvcache::registerKVCachePipelines() {
  PassPipelineRegistration<KVCacheToCPUOptions>(
      "kvcache-to-cpu",
      "Lower kvcache IR to the LLVM dialect for CPU execution (mlir-runner)",
      buildKVCacheToCPUPipeline);
  PassPipelineRegistration<KVCacheToPTXOptions>(
      "kvcache-to-ptx",
      "Lower kvcache IR with GPU kernels to a gpu.binary holding PTX and host "
      "code to the LLVM dialect",
      buildKVCacheToPTXPipeline);
  PassPipelineRegistration<KVCacheToPTXOptions>(
      "kvcache-to-emulated-gpu",
      "Lower kvcache IR with GPU kernels to LLVM dialect for the CPU, the "
      "kernels running on the GPU emulator (libKVCacheGPUEmulator.so)",
      buildKVCacheToEmulatedGPUPipeline);
}
