//===- kvcache-reduce.cpp - MLIR test-case reducer with kvcache --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// mlir-reduce knowing every dialect and pass kvcache-opt knows: shrinks an
// input while an interestingness script (exit 1: still interesting) keeps
// accepting it, e.g. to cut a crash report down to a few ops.
//
//   kvcache-reduce crash.mlir -reduction-tree='traversal-mode=0 test=check.sh'
//
//===----------------------------------------------------------------------===//

#include "KVCache/Tools/ToolRegistration.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Tools/mlir-reduce/MlirReduceMain.h"

int main(int argc, char **argv) {
  mlir::kvcache::registerToolPasses();
  mlir::DialectRegistry registry;
  mlir::kvcache::registerToolDialects(registry);
  mlir::MLIRContext context(registry);
  return mlir::failed(mlir::mlirReduceMain(argc, argv, context));
}
