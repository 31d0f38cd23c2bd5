//===- MetadataLowering.h - lowering of the metadata queries ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_METADATALOWERING_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_METADATALOWERING_H

#include "KVCache/IR/KVCacheTypes.h"

namespace mlir {
class RewritePatternSet;
class TypeConverter;

namespace kvcache {

/// Calls `hook` with `type` as the interface it implements: the metadata
/// hooks are on both.
template <typename Hook>
Value callMetadataHook(Type type, Hook &&hook) {
  if (auto collection = dyn_cast<KVCollectionTypeInterface>(type))
    return hook(collection);
  return hook(cast<KVCacheTypeInterface>(type));
}

/// Patterns lowering the metadata queries that read no memory beyond their
/// kind's hooks and are never checked: max_seq_length, max_cache_length,
/// num_pages, num_layers, num_sequences, capacity.
void populateMetadataLoweringPatterns(const TypeConverter &typeConverter,
                                      RewritePatternSet &patterns);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOMEMREF_METADATALOWERING_H
