//===- TestKVDialect.h - test_kv dialect, types and ops ---------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// A test-only collection kind with a CSR page table: its dialect, its two
// types (implementing the kvcache collection and cache type interfaces) and
// its constructor op (implementing CollectionOpInterface).
//
//===----------------------------------------------------------------------===//

#ifndef TESTKV_TESTKVDIALECT_H
#define TESTKV_TESTKVDIALECT_H

#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/IR/KVCacheOps.h"
#include "KVCache/IR/KVCacheTypes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Dialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::test_kv {
/// The kvcache method lists (KVCache_CollectionMethods) name it unqualified.
using kvcache::KVRuntimeChecks;
} // namespace mlir::test_kv

#include "TestKVOpsDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "TestKVOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "TestKVOps.h.inc"

namespace mlir {
class DialectRegistry;

namespace test_kv {

/// Adds the test_kv dialect to `registry` (test builds of kvcache-opt).
void registerTestKVDialect(DialectRegistry &registry);

} // namespace test_kv
} // namespace mlir

#endif // TESTKV_TESTKVDIALECT_H
