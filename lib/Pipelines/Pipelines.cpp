//===- Pipelines.cpp - kvcache pass pipelines -------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Pipelines/Pipelines.h"
#include "KVCache/Conversion/Passes.h"
#include "KVCache/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::kvcache;

void mlir::kvcache::buildKVCacheAccessLoweringPipeline(OpPassManager &pm,
                                                      bool checked) {
  pm.addPass(createKVCacheExpandAccesses());
  pm.addPass(createCSEPass());
  pm.addPass(createLoopInvariantCodeMotionPass());
  ConvertKVCacheToMemRefOptions options;
  options.checked = checked;
  pm.addPass(createConvertKVCacheToMemRef(options));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::kvcache::buildKVCacheToCPUPipeline(
    OpPassManager &pm, const KVCacheToCPUOptions &options) {
  buildKVCacheAccessLoweringPipeline(pm, options.checked);
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::kvcache::registerKVCachePipelines() {
  PassPipelineRegistration<KVCacheToCPUOptions>(
      "kvcache-to-cpu",
      "Lower kvcache IR to the LLVM dialect for CPU execution (mlir-runner)",
      buildKVCacheToCPUPipeline);
}
