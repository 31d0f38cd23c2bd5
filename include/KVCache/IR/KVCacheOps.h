//===- KVCacheOps.h - kvcache dialect operations ----------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHEOPS_H
#define KVCACHE_IR_KVCACHEOPS_H

#include "KVCache/IR/ArgumentChecks.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/IR/KVCacheTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "KVCache/IR/KVCacheInterfaces.h.inc"

#define GET_OP_CLASSES
#include "KVCache/IR/KVCacheOps.h.inc"

namespace mlir::kvcache {

/// Fails, with an error that names `passName` and says to bufferize first,
/// when a kvcache op under `root` (a kernel op, a collection constructor,
/// `collection_tensors`) is in the tensor form (docs/Contract.md section
/// 3.5): the passes that read the ops' buffers take the memref form.
LogicalResult verifyKernelOpsInMemRefForm(Operation *root, StringRef passName);

/// The collection `cache` belongs to: `cache` itself when it is a
/// collection, else the collection a `get_key_cache` or `get_value_cache`
/// took it from; null when that is not visible.
Value getOwningCollection(Value cache);

/// The constructor of the collection `cache` belongs to, looking through the
/// writes that returned it (CacheWriterOpInterface); null when not visible.
CollectionOpInterface getCollectionConstructor(Value cache);

/// Whether `user` consumes `collection`: writes it (a CacheWriterOpInterface
/// op, through a layer cache or directly) or gives its tensors back
/// (`collection_tensors`).
bool consumesCollection(Operation *user, Value collection);

/// The uses of `collection`: its own, and those of the layer caches its
/// `get_key_cache` and `get_value_cache` take (instead of theirs).
SmallVector<OpOperand *> getCollectionUses(Value collection);

/// Whether an op consumes `collection` (consumesCollection): a constructor
/// built from tensors writes its `blocks` and `scales` only then.
bool isCollectionConsumed(Value collection);

/// Checks a cache-writing op's updated collection: its type, and that the op
/// returns one exactly when the collection is built from tensors (when its
/// constructor is visible).
LogicalResult verifyCacheWriter(CacheWriterOpInterface op);

} // namespace mlir::kvcache

#endif // KVCACHE_IR_KVCACHEOPS_H
