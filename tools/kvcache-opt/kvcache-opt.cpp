//===- kvcache-opt.cpp - kvcache optimizer driver ---------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// mlir-opt with the kvcache dialect and passes: every upstream dialect,
// extension and pass, and the LLVM IR translations that GPU serialization
// needs.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Tools/ToolRegistration.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::kvcache::registerToolPasses();
  mlir::DialectRegistry registry;
  mlir::kvcache::registerToolDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "kvcache-mlir optimizer driver\n", registry));
}
