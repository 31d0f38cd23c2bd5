//===- kvcache-lsp-server.cpp - MLIR language server with kvcache -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// MLIR's language server (diagnostics, hover, go-to-definition, completion
// in editors) knowing every dialect kvcache-opt knows, kvcache included.
// Point an editor's MLIR extension at this binary instead of mlir-lsp-server.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Tools/ToolRegistration.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-lsp-server/MlirLspServerMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::kvcache::registerToolDialects(registry);
  return mlir::failed(mlir::MlirLspServerMain(argc, argv, registry));
}
