//===- CollectionValues.h - collections built from tensors ------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Private to kvcache-bufferize: the checks that a program whose collections
// are built from tensors (docs/Contract.md section 3.5) bufferizes without
// copying a cache.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_TRANSFORMS_COLLECTIONVALUES_H
#define KVCACHE_LIB_TRANSFORMS_COLLECTIONVALUES_H

#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace bufferization {
class OneShotAnalysisState;
} // namespace bufferization

namespace kvcache {

/// Checks that every collection built from tensors is used linearly: only by
/// kvcache ops of its block (and regions in it), written (or given back by
/// `collection_tensors`) by one op, and not used after that op; and that
/// every op returning an updated collection writes one built from tensors
/// in its function. Emits an error that says why otherwise.
LogicalResult verifyCollectionValues(ModuleOp module);

/// Checks, after One-Shot Analysis, that bufferizing `module` copies no
/// cache: the `blocks` and `scales` of every collection built from tensors,
/// and the tensors a call passes to a function that builds a collection
/// from them, bufferize in place. Emits an error that says why a copy would
/// be needed otherwise.
LogicalResult verifyCachesInPlace(ModuleOp module,
                                  bufferization::OneShotAnalysisState &state);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_LIB_TRANSFORMS_COLLECTIONVALUES_H
