//===- ToolRegistration.cpp - what every kvcache tool registers ----------===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Tools/ToolRegistration.h"
#include "KVCache/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void mlir::kvcache::registerToolDialects(DialectRegistry &registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // The GPU ones (gpu-module-to-binary's) included.
  mlir::registerAllToLLVMIRTranslations(registry);
  // What an embedder registers: a subset of the above, and ours.
  kvcache::registerAllDialectsAndPasses(registry);
}

void mlir::kvcache::registerToolPasses() {
  static bool once = [] {
    mlir::registerAllPasses();
    kvcache::registerAllPasses();
    return true;
  }();
  (void)once;
}
