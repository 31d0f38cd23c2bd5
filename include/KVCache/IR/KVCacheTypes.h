//===- KVCacheTypes.h - kvcache dialect types -------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHETYPES_H
#define KVCACHE_IR_KVCACHETYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "KVCache/IR/KVCacheOpsTypes.h.inc"

namespace mlir::kvcache {

/// The layer cache type with every parameter of `collection`.
PagedCacheType getLayerCacheType(PagedCollectionType collection);

/// The parameters shared by both cache types, read from either.
struct PagedCacheParams {
  Type elementType;
  int64_t numHeads;
  int64_t headSize;
  int64_t pageSize;
  bool mla;
  int64_t assertWriteMode;

  /// Returns the parameters of a `paged_collection` or `paged_cache` type.
  static PagedCacheParams get(Type cacheType);
  int64_t kvDim() const { return mla ? 1 : 2; }
  int64_t rowElements() const { return numHeads * headSize; }
};

/// The alignment (bytes) a load or store of `accessBytes` bytes may claim
/// when it sits at a multiple of `accessBytes` within a row that starts at a
/// multiple of `rowBytes` from the start of a 16-byte aligned buffer (the
/// alignment docs/Contract.md, section 1, guarantees for `blocks` and every
/// memref a kernel op takes): the largest power of two dividing both, at
/// most 16. Pass `rowBytes = accessBytes` when the rows are aligned to the
/// access. `accessBytes` must be positive.
uint64_t getAccessAlignment(uint64_t accessBytes, uint64_t rowBytes);

} // namespace mlir::kvcache

#endif // KVCACHE_IR_KVCACHETYPES_H
