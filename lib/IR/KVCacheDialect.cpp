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

namespace {
/// A former discardable attribute and the inherent attribute that replaced
/// it.
struct ReplacedAttribute {
  StringLiteral discardable;
  StringLiteral inherent;
  StringLiteral ops;
};
} // namespace

constexpr ReplacedAttribute kReplacedAttributes[] = {
    {"kvcache.serves_write", "serves_write",
     "kvcache.cache_length and kvcache.page_load"},
    {"kvcache.read_only", "read_only", "kvcache.lookup"},
};

LogicalResult KVCacheDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  // Passes used to communicate through these: an old spelling silently
  // ignored would change which accesses an `assert_write_mode = 1` cache
  // checks at run time.
  for (const ReplacedAttribute &replaced : kReplacedAttributes)
    if (attr.getName() == replaced.discardable)
      return op->emitError("'")
             << replaced.discardable
             << "' is no longer a discardable attribute: use the inherent "
                "attribute `"
             << replaced.inherent << "` of " << replaced.ops;
  return success();
}
