//===- LoweredCache.h - the values a cache value lowers to ------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// convert-kvcache-to-memref replaces every `!kvcache.paged_collection` and
// `!kvcache.paged_cache` value by five values (docs/Contract.md, section 7:
// kernel ABI). Their order and types are stated here and nowhere else.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_KVCACHETOMEMREF_LOWEREDCACHE_H
#define KVCACHE_CONVERSION_KVCACHETOMEMREF_LOWEREDCACHE_H

#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"
#include "mlir/IR/ValueRange.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::kvcache {

/// The lowered values of one cache value, by name.
struct LoweredCache {
  /// The position of each value among the lowered values.
  enum Field : unsigned {
    /// `blocks`: `memref<? x kv x ? x P x H x D x elt, strided<[?, ?, ?, H*D,
    /// D, 1], offset: ?>>` for a collection, the layer's
    /// `memref<? x P x H x D x elt, strided<[?, H*D, D, 1], offset: ?>>` for
    /// a layer cache.
    Blocks,
    /// `cache_lengths`: `memref<?xi32>`.
    CacheLengths,
    /// `lookup_table`: `memref<?x?xi32>`.
    LookupTable,
    /// `max_seq_length`: `i32`.
    MaxSeqLength,
    /// `max_cache_length`: `i32`.
    MaxCacheLength,
  };
  /// The number of lowered values of a cache value.
  static constexpr unsigned kNumValues = MaxCacheLength + 1;

  /// Names the `kNumValues` values `values`, in field order.
  explicit LoweredCache(ValueRange values);

  /// The lowered types of the cache type `cacheType`, in field order.
  static SmallVector<Type, kNumValues> getTypes(Type cacheType);

  /// The values, in field order.
  SmallVector<Value, kNumValues> getValues() const;

  Value blocks, cacheLengths, lookupTable, maxSeqLength, maxCacheLength;
};

} // namespace mlir::kvcache

#endif // KVCACHE_CONVERSION_KVCACHETOMEMREF_LOWEREDCACHE_H
