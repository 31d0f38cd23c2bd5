//===- KVCacheTypes.td - kvcache dialect types -------------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHETYPES_TD
#define KVCACHE_IR_KVCACHETYPES_TD

include "KVCache/IR/KVCacheDialect.td"
include "KVCache/IR/KVCacheInterfaces.td"
include "mlir/IR/AttrTypeBase.td"

/// A boolean type parameter spelled `true`/`false`, default `false`.
class KVCache_BoolParameter<string desc>
    : DefaultValuedParameter<"bool", "false", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<bool> {
    if (::mlir::succeeded($_parser.parseOptionalKeyword("true")))
      return true;
    if (::mlir::succeeded($_parser.parseOptionalKeyword("false")))
      return false;
    return $_parser.emitError($_parser.getCurrentLocation(),
                              "expected 'true' or 'false'");
  }() }];
  let printer = [{ $_printer << ($_self ? "true" : "false") }];
}

/// The `scales` parameter: `tensor`, `token_head` or `block<G>`; absent
/// (not printed) for float and raw storage caches.
def KVCache_ScalesParameter
    : DefaultValuedParameter<"::mlir::kvcache::KVScales",
                             "::mlir::kvcache::KVScales()",
                             "scales of a quantized cache"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::mlir::kvcache::KVScales> {
    if (::mlir::succeeded($_parser.parseOptionalKeyword("tensor")))
      return ::mlir::kvcache::KVScales::tensor();
    if (::mlir::succeeded($_parser.parseOptionalKeyword("token_head")))
      return ::mlir::kvcache::KVScales::tokenHead();
    if (::mlir::succeeded($_parser.parseOptionalKeyword("block"))) {
      int64_t group = 0;
      if ($_parser.parseLess() || $_parser.parseInteger(group) ||
          $_parser.parseGreater())
        return ::mlir::failure();
      return ::mlir::kvcache::KVScales::block(group);
    }
    return $_parser.emitError($_parser.getCurrentLocation(),
                              "expected 'tensor', 'token_head' or 'block<G>'");
  }() }];
  let printer = [{ $_printer.getStream() << $_self }];
}

/// The paged types carry the same parameters, printed in this order.
class KVCache_PagedType<string name, string typeMnemonic, Trait kind>
    : TypeDef<KVCache_Dialect, name, [kind]> {
  let mnemonic = typeMnemonic;
  let parameters = (ins
    "::mlir::Type":$element_type,
    "int64_t":$num_heads,
    "int64_t":$head_size,
    "int64_t":$page_size,
    KVCache_BoolParameter<"K-only (MLA) cache: kv_dim is 1">:$mla,
    DefaultValuedParameter<"int64_t", "0",
      "1: every write is checked at run time">:$assert_write_mode,
    KVCache_ScalesParameter:$scales
  );
  let assemblyFormat = [{
    `<` $element_type `,`
        struct($num_heads, $head_size, $page_size, $mla, $assert_write_mode,
               $scales)
    `>`
  }];
  let genVerifyDecl = 1;
}

/// The continuous-batching types: no page size (one block of a run-time
/// number of token slots per sequence).
class KVCache_ContinuousType<string name, string typeMnemonic, Trait kind>
    : TypeDef<KVCache_Dialect, name, [kind]> {
  let mnemonic = typeMnemonic;
  let parameters = (ins
    "::mlir::Type":$element_type,
    "int64_t":$num_heads,
    "int64_t":$head_size,
    KVCache_BoolParameter<"K-only (MLA) cache: kv_dim is 1">:$mla,
    DefaultValuedParameter<"int64_t", "0",
      "1: every write is checked at run time">:$assert_write_mode,
    KVCache_ScalesParameter:$scales
  );
  let assemblyFormat = [{
    `<` $element_type `,`
        struct($num_heads, $head_size, $mla, $assert_write_mode, $scales)
    `>`
  }];
  let genVerifyDecl = 1;
}

/// The interface methods every kind implements in C++ (KVCacheTypes.cpp,
/// KVCacheTypeLowering.cpp); `extra` adds the kind's own.
class KVCache_KindMethods<string extra> {
  string decls = [{
    /// Size of the K/V dimension of `blocks`: 1 for MLA caches, else 2.
    int64_t getKVDim() const { return getMla() ? 1 : 2; }
    /// Elements of one token row of one layer: num_heads * head_size.
    int64_t getRowElements() const { return getNumHeads() * getHeadSize(); }
    ::llvm::StringRef getKindName() const;
    void getLoweredTypes(::llvm::SmallVectorImpl<::mlir::Type> &types) const;
    ::llvm::SmallVector<::llvm::StringRef> getLoweredNames() const;
    ::mlir::Value buildCacheLength(::mlir::OpBuilder &builder,
                                   ::mlir::Location loc,
                                   ::mlir::ValueRange lowered,
                                   ::mlir::Value batch,
                                   KVRuntimeChecks *checks) const;
    ::mlir::Value buildMaxSeqLength(::mlir::OpBuilder &builder,
                                    ::mlir::Location loc,
                                    ::mlir::ValueRange lowered) const;
    ::mlir::Value buildMaxCacheLength(::mlir::OpBuilder &builder,
                                      ::mlir::Location loc,
                                      ::mlir::ValueRange lowered) const;
    ::mlir::Value buildNumPages(::mlir::OpBuilder &builder,
                                ::mlir::Location loc,
                                ::mlir::ValueRange lowered) const;
  }] # extra;
}

defvar KVCache_CollectionMethods = KVCache_KindMethods<[{
    /// The layer cache type with every parameter of this collection.
    ::mlir::Type getLayerCacheType() const;
    ::llvm::SmallVector<::mlir::Value>
    buildLayerCache(::mlir::OpBuilder &builder, ::mlir::Location loc,
                    ::mlir::ValueRange lowered, ::mlir::Value layer,
                    int64_t kv, KVRuntimeChecks *checks) const;
    ::mlir::Value buildNumLayers(::mlir::OpBuilder &builder,
                                 ::mlir::Location loc,
                                 ::mlir::ValueRange lowered) const;
  }]>;

defvar KVCache_LayerCacheMethods = KVCache_KindMethods<[{
    ::mlir::Value getBlocks(::mlir::ValueRange lowered) const;
    ::std::pair<::mlir::Value, ::mlir::Value>
    buildLookup(::mlir::OpBuilder &builder, ::mlir::Location loc,
                ::mlir::ValueRange lowered, ::mlir::Value batch,
                ::mlir::Value token, KVRuntimeChecks *checks) const;
  }]>;

/// The hooks of the argument checks (`describesSequences`,
/// `buildNumSequences`, `buildCapacity`), which a kind that implements them
/// adds to its `extraClassDeclaration` (KVCacheTypeLowering.cpp for the
/// paged and continuous kinds). A kind without them keeps the interface's
/// defaults: its sequences are not checked.
defvar KVCache_SequenceMethods = [{
    bool describesSequences() const { return true; }
    ::mlir::Value buildNumSequences(::mlir::OpBuilder &builder,
                                    ::mlir::Location loc,
                                    ::mlir::ValueRange lowered) const;
    ::mlir::Value buildCapacity(::mlir::OpBuilder &builder,
                                ::mlir::Location loc,
                                ::mlir::ValueRange lowered,
                                ::mlir::Value batch) const;
  }];

def KVCache_PagedCollectionType
    : KVCache_PagedType<"PagedCollection", "paged_collection",
                        KVCache_KVCollectionTypeInterface> {
  let summary = "A paged KV cache: every layer, K and V";
  let description = [{
    The whole paged cache of a model (MAX's `PagedKVCacheCollection`): the
    `blocks` memref `[num_pages, kv_dim, num_layers, page_size, num_heads,
    head_size]`, `cache_lengths`, `lookup_table`, `max_seq_length` and
    `max_cache_length`. Kind name "paged".

    Parameters: the element type (`f32`, `f16`, `bf16`, or a storage type
    of a quantized cache: `f8E4M3FN`, `f8E5M2`, `i8`), `num_heads` (KV
    heads), `head_size`, `page_size` (all > 0), `mla` (default `false`;
    `true` means kv_dim 1, K only), `assert_write_mode` (0 or 1, default 0:
    with 1 every write through the cache is checked at run time) and
    `scales` (storage types only: `tensor`, one scale per layer and K/V;
    `token_head`, one per token and head; `block<G>`, one per G consecutive
    elements of a head, G dividing head_size; absent: a raw cache whose
    stored values are moved unchanged). Defaults are not printed; the keys
    may come in any order.

    ```mlir
    !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
    !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
    !kvcache.paged_collection<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<64>>
    ```

    Lowered (see `convert-kvcache-to-memref`), a value of this type becomes its
    constructor operands: five, and the scales memref as a sixth with
    `scales`.
  }];
  let extraClassDeclaration =
      !strconcat(KVCache_CollectionMethods.decls,
                 KVCache_SequenceMethods);
}

def KVCache_PagedCacheType
    : KVCache_PagedType<"PagedCache", "paged_cache",
                        KVCache_KVCacheTypeInterface> {
  let summary = "One layer's K or V of a paged KV cache";
  let description = [{
    The K or the V of one layer of a `!kvcache.paged_collection` (MAX's
    `PagedKVCache`), with all of the collection's parameters.

    ```mlir
    !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```

    Lowered, a value of this type becomes five values: the layer's 4-D view of
    `blocks` `[num_pages, page_size, num_heads, head_size]`, `cache_lengths`,
    `lookup_table`, `max_seq_length` and `max_cache_length`.
  }];
  let extraClassDeclaration =
      !strconcat(KVCache_LayerCacheMethods.decls,
                 KVCache_SequenceMethods);
}

def KVCache_ContinuousCollectionType
    : KVCache_ContinuousType<"ContinuousCollection", "continuous_collection",
                             KVCache_KVCollectionTypeInterface> {
  let summary = "A continuous-batching KV cache: every layer, K and V";
  let description = [{
    The whole cache of a model in which every sequence owns one contiguous
    block of `block_tokens` token slots (MAX's
    `ContinuousBatchingKVCacheCollection`): the `blocks` memref
    `[num_blocks, kv_dim, num_layers, block_tokens, num_heads, head_size]`
    (`block_tokens`, like `num_blocks` and `num_layers`, may be dynamic),
    `cache_lengths` (`memref<?xi32>`), a 1-D `lookup_table`
    (`memref<?xi32>`: the block of sequence `b`), `max_seq_length` and
    `max_cache_length`. Token `t` of sequence `b` lives at
    `blocks[lookup_table[b], kv, l, t, h, d]`. Kind name "continuous".

    Parameters, printed in this order: the element type, `num_heads`,
    `head_size`, `mla` (default `false`) and `assert_write_mode` (default 0),
    with the meaning they have on `!kvcache.paged_collection`. There is no
    page size: `copy_pages` does not take this type.

    ```mlir
    !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
    !kvcache.continuous_collection<bf16, num_heads = 1, head_size = 576, mla = true>
    ```

    Lowered, a value of this type becomes its five constructor operands:
    `blocks` as `memref<? x kv_dim x ? x ? x num_heads x head_size x elt,
    strided<[?, ?, ?, H*D, D, 1], offset: ?>>`, `memref<?xi32>`,
    `memref<?xi32>`, `i32`, `i32`.
  }];
  let extraClassDeclaration =
      !strconcat(KVCache_CollectionMethods.decls,
                 KVCache_SequenceMethods) # [{
    /// A continuous collection has no static page size.
    int64_t getPageSize() const { return ::mlir::ShapedType::kDynamic; }
  }];
}

def KVCache_ContinuousCacheType
    : KVCache_ContinuousType<"ContinuousCache", "continuous_cache",
                             KVCache_KVCacheTypeInterface> {
  let summary = "One layer's K or V of a continuous-batching KV cache";
  let description = [{
    The K or the V of one layer of a `!kvcache.continuous_collection` (MAX's
    `ContinuousBatchingKVCache`), with all of the collection's parameters.
    `kvcache.lookup` on it returns (`lookup_table[b]`, `t`); `kvcache.tile`
    takes any tile height `T` (the caller keeps `t` a multiple of `T` and
    `t + T <= block_tokens`).

    ```mlir
    !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>
    ```

    Lowered, a value of this type becomes five values: the layer's 4-D view of
    `blocks` `[num_blocks, block_tokens, num_heads, head_size]`
    (`memref<? x ? x H x D x elt, strided<[?, H*D, D, 1], offset: ?>>`),
    `cache_lengths`, `lookup_table` (`memref<?xi32>`), `max_seq_length` and
    `max_cache_length`.
  }];
  let extraClassDeclaration =
      !strconcat(KVCache_LayerCacheMethods.decls,
                 KVCache_SequenceMethods) # [{
    /// A continuous cache has no static page size.
    int64_t getPageSize() const { return ::mlir::ShapedType::kDynamic; }
  }];
}

/// A collection of any kind: a type implementing KVCollectionTypeInterface.
def KVCache_AnyCollection
    : Type<KVCache_KVCollectionTypeInterface.predicate,
           "KV cache collection (a type implementing "
           "KVCollectionTypeInterface: !kvcache.paged_collection, "
           "!kvcache.continuous_collection, ...)",
           "::mlir::kvcache::KVCollectionTypeInterface">;

/// One layer's K or V of any kind: a type implementing KVCacheTypeInterface.
def KVCache_AnyLayerCache
    : Type<KVCache_KVCacheTypeInterface.predicate,
           "KV cache of one layer (a type implementing KVCacheTypeInterface: "
           "!kvcache.paged_cache, !kvcache.continuous_cache, ...)",
           "::mlir::kvcache::KVCacheTypeInterface">;

/// A collection or a layer cache of any kind.
def KVCache_AnyCollectionOrCache
    : AnyTypeOf<[KVCache_AnyCollection, KVCache_AnyLayerCache],
                "KV cache collection or layer cache">;

#endif // KVCACHE_IR_KVCACHETYPES_TD
