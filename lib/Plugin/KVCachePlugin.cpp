//===- KVCachePlugin.cpp - kvcache as an mlir-opt plugin --------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// A dialect and pass plugin for MLIR's own tools, e.g. Debian's mlir-opt:
//
//   mlir-opt --load-dialect-plugin=KVCachePlugin.so \
//            --load-pass-plugin=KVCachePlugin.so \
//            --pass-pipeline='builtin.module(kvcache-to-cpu)' model.mlir
//
// The dialect plugin adds the kvcache dialect to the tool's registry, the
// pass plugin registers our passes and the kvcache-to-cpu and kvcache-to-ptx
// pipelines (KVCache/InitAll.h). The plugin links libMLIR.so, as the tool
// does, so MLIR's command-line options exist once.
//
//===----------------------------------------------------------------------===//

#include "KVCache/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "KVCache", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::kvcache::registerAllDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "KVCachePasses", LLVM_VERSION_STRING,
          [] { mlir::kvcache::registerAllPasses(); }};
}
