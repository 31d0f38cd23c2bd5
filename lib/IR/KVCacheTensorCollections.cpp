//===- KVCacheTensorCollections.cpp - collections as values -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// A collection built from tensors (docs/Contract.md section 3.5) is a value:
// the ops that write it (CacheWriterOpInterface) return the updated one and
// `kvcache.collection_tensors` gives its tensors back. The verifiers here
// check what is visible locally; kvcache-bufferize checks the rest.
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheOps.h"

using namespace mlir;
using namespace mlir::kvcache;

Value mlir::kvcache::getOwningCollection(Value cache) {
  if (isa<KVCollectionTypeInterface>(cache.getType()))
    return cache;
  Operation *def = cache.getDefiningOp();
  if (auto key = dyn_cast_or_null<GetKeyCacheOp>(def))
    return key.getCollection();
  if (auto value = dyn_cast_or_null<GetValueCacheOp>(def))
    return value.getCollection();
  return {};
}

CollectionOpInterface mlir::kvcache::getCollectionConstructor(Value cache) {
  Value collection = getOwningCollection(cache);
  while (collection) {
    Operation *def = collection.getDefiningOp();
    if (auto constructor = dyn_cast_or_null<CollectionOpInterface>(def))
      return constructor;
    auto writer = dyn_cast_or_null<CacheWriterOpInterface>(def);
    if (!writer)
      return {};
    collection = getOwningCollection(writer.getWrittenCache());
  }
  return {};
}

bool mlir::kvcache::consumesCollection(Operation *user, Value collection) {
  if (isa<CollectionTensorsOp>(user))
    return true;
  auto writer = dyn_cast<CacheWriterOpInterface>(user);
  return writer && getOwningCollection(writer.getWrittenCache()) == collection;
}

SmallVector<OpOperand *> mlir::kvcache::getCollectionUses(Value collection) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : collection.getUses()) {
    if (!isa<GetKeyCacheOp, GetValueCacheOp>(use.getOwner())) {
      uses.push_back(&use);
      continue;
    }
    for (OpOperand &cacheUse : use.getOwner()->getResult(0).getUses())
      uses.push_back(&cacheUse);
  }
  return uses;
}

bool mlir::kvcache::isCollectionConsumed(Value collection) {
  return llvm::any_of(getCollectionUses(collection), [&](OpOperand *use) {
    return consumesCollection(use->getOwner(), collection);
  });
}

LogicalResult mlir::kvcache::verifyCacheWriter(CacheWriterOpInterface op) {
  Value written = op.getWrittenCache();
  Value updated = op.getUpdatedCollection();
  if (updated) {
    auto type = cast<KVCollectionTypeInterface>(updated.getType());
    Type expected = isa<KVCollectionTypeInterface>(written.getType())
                        ? Type(type)
                        : type.getLayerCacheType();
    if (written.getType() != expected)
      return op->emitOpError("returns the updated collection, whose ")
             << (expected == type ? "type" : "layer caches")
             << " must be the written cache's type " << written.getType()
             << ", got " << type;
  }
  CollectionOpInterface constructor = getCollectionConstructor(written);
  if (!constructor)
    return success();
  if (constructor.isTensorForm() && !updated)
    return op->emitOpError("writes a collection built from tensors: it must "
                           "be in the tensor form and return the updated "
                           "collection (`-> ")
           << constructor->getResult(0).getType() << "`), which later ops use";
  if (!constructor.isTensorForm() && updated)
    return op->emitOpError("returns an updated collection only when the "
                           "collection is built from tensors; this one is "
                           "built from memrefs and written in place");
  return success();
}

LogicalResult CollectionTensorsOp::verify() {
  auto type = cast<KVCollectionTypeInterface>(getCollection().getType());
  size_t expected = static_cast<bool>(type.getScales()) ? 2 : 1;
  if (getTensors().size() != expected)
    return emitOpError("returns 'blocks'")
           << (expected == 2 ? " and 'scales'" : "") << " of " << type << ", "
           << expected << " tensors, got " << getTensors().size();
  CollectionOpInterface constructor = getCollectionConstructor(getCollection());
  if (!constructor)
    return success();
  if (!constructor.isTensorForm())
    return emitOpError("needs a collection built from tensors; this one is "
                       "built from memrefs, which are its buffers");
  for (auto [operand, result] :
       llvm::zip_equal(constructor.getCacheDataOperands(), getTensors()))
    if (operand->get().getType() != result.getType())
      return emitOpError("result ")
             << result.getResultNumber() << " must have the type of the '"
             << (operand->getOperandNumber() == 0 ? "blocks" : "scales")
             << "' the collection is built from, " << operand->get().getType()
             << ", got " << result.getType();
  return success();
}

Value StoreRaggedOp::getWrittenCache() { return getCache(); }

Value CopyPagesOp::getWrittenCache() { return getCollection(); }

Value RopeRaggedOp::getWrittenCache() { return getKeyCache(); }
