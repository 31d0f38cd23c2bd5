//===- kvcache-opt.cpp - kvcache optimizer driver ---------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// mlir-opt with the kvcache dialect and passes: every upstream dialect,
// extension and pass, and the LLVM IR translations that GPU serialization
// needs.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/Passes.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/Pipelines/Pipelines.h"
#include "KVCache/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::registerKVCacheConversionPasses();
  mlir::kvcache::registerKVCacheTransformsPasses();
  mlir::kvcache::registerKVCachePipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  registry.insert<mlir::kvcache::KVCacheDialect>();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "kvcache-mlir optimizer driver\n", registry));
}
