//===- kvcache-opt.cpp - kvcache optimizer driver ---------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// mlir-opt with the kvcache dialect and passes: every upstream dialect,
// extension and pass, and the LLVM IR translations that GPU serialization
// needs. Test builds (KVCACHE_INCLUDE_TESTS) add the test dialects of
// test/lib.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Tools/ToolRegistration.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#ifdef KVCACHE_INCLUDE_TESTS
namespace mlir::test_kv {
void registerTestKVDialect(DialectRegistry &registry);
} // namespace mlir::test_kv
#endif

int main(int argc, char **argv) {
  mlir::kvcache::registerToolPasses();
  mlir::DialectRegistry registry;
  mlir::kvcache::registerToolDialects(registry);
#ifdef KVCACHE_INCLUDE_TESTS
  mlir::test_kv::registerTestKVDialect(registry);
#endif
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "kvcache-mlir optimizer driver\n", registry));
}
