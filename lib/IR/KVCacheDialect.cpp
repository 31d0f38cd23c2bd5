//===- KVCacheDialect.cpp - kvcache dialect ---------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/IR/KVCacheOps.h"
#include "KVCache/IR/KVCacheTypes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::kvcache;

#include "KVCache/IR/KVCacheOpsDialect.cpp.inc"

void KVCacheDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "KVCache/IR/KVCacheOps.cpp.inc"
      >();
  registerTypes();
}
