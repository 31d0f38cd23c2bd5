//===- CollectionValues.cpp - collections built from tensors ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// A collection built from tensors is a value (docs/Contract.md section 3.5),
// but its writes bufferize in place, onto the buffers of the tensors it is
// built from. That is only right when no one sees the old cache after a
// write: these checks reject, with the reason, every program in which
// bufferization would have to copy a cache (gigabytes) to keep the value
// semantics.
//
//===----------------------------------------------------------------------===//

#include "CollectionValues.h"

#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::kvcache;

/// Checks the uses of one collection value built from tensors (a
/// constructor's result or a write's updated collection).
static LogicalResult verifyLinearUses(Value collection) {
  Block *block = collection.getParentBlock();
  SmallVector<OpOperand *> uses = getCollectionUses(collection);
  SmallVector<Operation *> consumers;
  for (OpOperand *use : uses) {
    Operation *user = use->getOwner();
    if (!isa_and_nonnull<KVCacheDialect>(user->getDialect()))
      return user->emitOpError("uses a collection built from tensors (or a "
                               "layer cache of one), which only kvcache ops "
                               "of its function may use: bufferization "
                               "would not see the writes through it");
    if (!consumesCollection(user, collection))
      continue;
    if (user->getBlock() != block)
      return user->emitOpError("writes a collection built from tensors "
                               "inside a region: write it in the block that "
                               "defines it");
    consumers.push_back(user);
  }
  if (consumers.empty())
    return success();
  llvm::sort(consumers,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  Operation *consumer = consumers.front();
  if (consumers.size() > 1) {
    InFlightDiagnostic diag = consumers[1]->emitOpError(
        "writes a collection value that an earlier op already wrote (or "
        "gave back): bufferizing would copy the cache; use the updated "
        "collection that op returns");
    diag.attachNote(consumer->getLoc()) << "the earlier op";
    return diag;
  }
  for (OpOperand *use : uses) {
    Operation *ancestor = block->findAncestorOpInBlock(*use->getOwner());
    if (ancestor &&
        (ancestor == consumer || ancestor->isBeforeInBlock(consumer)))
      continue;
    InFlightDiagnostic diag = use->getOwner()->emitOpError(
        "uses a collection value after a write superseded it: bufferizing "
        "would copy the cache; use the updated collection the write returns");
    diag.attachNote(consumer->getLoc()) << "the write";
    return diag;
  }
  return success();
}

LogicalResult mlir::kvcache::verifyCollectionValues(ModuleOp module) {
  WalkResult result = module.walk([&](Operation *op) {
    Value collection;
    if (auto constructor = dyn_cast<CollectionOpInterface>(op)) {
      if (constructor.isTensorForm())
        collection = op->getResult(0);
    } else if (auto writer = dyn_cast<CacheWriterOpInterface>(op)) {
      collection = writer.getUpdatedCollection();
      CollectionOpInterface constructor =
          getCollectionConstructor(writer.getWrittenCache());
      if (collection && (!constructor || !constructor.isTensorForm())) {
        op->emitOpError("returns an updated collection, but writes a cache "
                        "that is not of a collection built from tensors in "
                        "its function");
        return WalkResult::interrupt();
      }
    }
    if (collection && failed(verifyLinearUses(collection)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Emits the error for `operand`, a tensor that bufferization would copy:
/// `what` holds the cache (a constructor's `blocks` or `scales`, a call's
/// argument that the callee builds a collection from).
static void emitCopyError(Operation *op, OpOperand &operand, StringRef what,
                          bufferization::OneShotAnalysisState &state) {
  bool writable = llvm::all_of(
      state.findDefinitionsCached(&operand),
      [&](Value definition) { return state.isWritable(definition); });
  InFlightDiagnostic diag = op->emitOpError("would have bufferization copy ")
                            << what << " (a whole cache): ";
  if (writable)
    diag << "the tensor is used after the cache built from it is written; "
            "use the updated collection (or its kvcache.collection_tensors) "
            "instead of the tensor";
  else
    diag << "the tensor is not writable (a constant, or an argument marked "
            "bufferization.writable = false); build the collection from a "
            "writable tensor, such as a function argument";
}

/// The arguments of `func` that it builds a collection from the `blocks` or
/// `scales` of, directly.
static llvm::SmallBitVector getCacheArguments(func::FuncOp func) {
  llvm::SmallBitVector cacheArguments(func.getNumArguments());
  if (func.isExternal())
    return cacheArguments;
  func.walk([&](CollectionOpInterface constructor) {
    for (OpOperand *operand : constructor.getCacheDataOperands())
      if (auto argument = dyn_cast<BlockArgument>(operand->get());
          argument && argument.getOwner() == &func.front())
        cacheArguments.set(argument.getArgNumber());
  });
  return cacheArguments;
}

LogicalResult
mlir::kvcache::verifyCachesInPlace(ModuleOp module,
                                   bufferization::OneShotAnalysisState &state) {
  WalkResult result = module.walk([&](Operation *op) {
    if (auto constructor = dyn_cast<CollectionOpInterface>(op)) {
      if (!constructor.isTensorForm())
        return WalkResult::advance();
      for (OpOperand *operand : constructor.getCacheDataOperands()) {
        if (state.isInPlace(*operand))
          continue;
        emitCopyError(op, *operand,
                      operand->getOperandNumber() == 0 ? "its 'blocks'"
                                                       : "its 'scales'",
                      state);
        return WalkResult::interrupt();
      }
    }
    auto call = dyn_cast<func::CallOp>(op);
    auto callee = call ? SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                             call, call.getCalleeAttr())
                       : func::FuncOp();
    if (!callee)
      return WalkResult::advance();
    llvm::SmallBitVector cacheArguments = getCacheArguments(callee);
    for (OpOperand &operand : call->getOpOperands()) {
      if (!cacheArguments.test(operand.getOperandNumber()) ||
          state.isInPlace(operand))
        continue;
      emitCopyError(op, operand,
                    ("argument #" + Twine(operand.getOperandNumber()) +
                     ", which the callee builds a collection from")
                        .str(),
                    state);
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
