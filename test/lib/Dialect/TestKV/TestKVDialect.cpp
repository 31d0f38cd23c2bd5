//===- TestKVDialect.cpp - test_kv dialect ----------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "TestKVDialect.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::test_kv;

#include "TestKVOpsDialect.cpp.inc"

void TestKVDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "TestKVOps.cpp.inc"
      >();
  registerTypes();
}

void mlir::test_kv::registerTestKVDialect(DialectRegistry &registry) {
  registry.insert<TestKVDialect>();
}
