//===- KVCacheOps.td - kvcache dialect operations ----------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHEOPS_TD
#define KVCACHE_IR_KVCACHEOPS_TD

include "KVCache/IR/KVCacheDialect.td"
include "KVCache/IR/KVCacheInterfaces.td"
include "KVCache/IR/KVCacheTypes.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Collection construction and metadata
//===----------------------------------------------------------------------===//

// An operand of a collection constructor that holds data: a memref, or (the
// tensor form, docs/Contract.md section 3.5) a ranked tensor. The verifiers
// check that a constructor uses one form for all of them.
def KVCache_CollectionData
    : AnyTypeOf<[AnyMemRef, AnyRankedTensor], "memref or ranked tensor",
                "::mlir::ShapedType">;

def KVCache_PagedCollectionOp : KVCache_Op<"paged_collection",
    [Pure, DeclareOpInterfaceMethods<KVCache_CollectionOpInterface,
                                     ["getStaticNumLayers",
                                      "getCacheDataOperands"]>,
     DeclareOpInterfaceMethods<KVCache_ArgumentChecksOpInterface>]> {
  let summary = "Builds a paged KV cache collection from its memrefs";
  let description = [{
    Bundles the five pieces of a paged KV cache into one value: `blocks`
    (`[num_pages, kv_dim, num_layers, page_size, num_heads, head_size]`, any
    strided layout whose inner three dims are contiguous), `cache_lengths`
    (`memref<?xi32>`), `lookup_table` (`memref<?x?xi32>`), and the i32 scalars
    `max_seq_length` and `max_cache_length`. Dims 1, 3, 4 and 5 of `blocks`
    must be static and match the result type; `num_pages` and `num_layers`
    may be dynamic. All memrefs are in the default memory space.

    A type with `scales` takes the f32 scales memref as a sixth operand
    (and only then): `[num_layers, kv_dim]` for `tensor`, `[num_pages,
    kv_dim, num_layers, page_size, num_heads]` for `token_head`,
    `[num_pages, kv_dim, num_layers, page_size, num_heads, head_size / G]`
    for `block<G>`, paged like `blocks` by the same lookup. Its dims after
    the layer dim are static (as the type says) and contiguous; the outer
    strides and the offset may be dynamic.

    The tensor form (docs/Contract.md section 3.5) takes `blocks`,
    `cache_lengths`, `lookup_table` and `scales` as ranked tensors of the
    same shapes (one form for all of them): the collection is then a value,
    `store_ragged` and `copy_pages` return the updated one, and
    `kvcache.collection_tensors` gives its `blocks` and `scales` back.
    Bufferization writes the buffers of `blocks` and `scales` in place
    (kvcache-bufferize rejects a program where that would need a copy).

    ```mlir
    %c = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
           : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    %t = kvcache.paged_collection %tblocks, %tlengths, %ttable, %max_seq_length, %max_cache_length
           : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    %q = kvcache.paged_collection %qblocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length, %scales
           : memref<?x2x?x16x8x128xf8E4M3FN>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x16x8xf32> -> !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
    ```
  }];
  let arguments = (ins
    KVCache_CollectionData:$blocks,
    KVCache_CollectionData:$cache_lengths,
    KVCache_CollectionData:$lookup_table,
    I32:$max_seq_length,
    I32:$max_cache_length,
    Optional<KVCache_CollectionData>:$scales
  );
  let results = (outs KVCache_PagedCollectionType:$result);
  let assemblyFormat = [{
    $blocks `,` $cache_lengths `,` $lookup_table `,` $max_seq_length `,`
    $max_cache_length (`,` $scales^)? attr-dict `:` type($blocks) `,`
    type($cache_lengths) `,` type($lookup_table) (`,` type($scales)^)? `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

def KVCache_ContinuousCollectionOp : KVCache_Op<"continuous_collection",
    [Pure, DeclareOpInterfaceMethods<KVCache_CollectionOpInterface,
                                     ["getStaticNumLayers",
                                      "getCacheDataOperands"]>,
     DeclareOpInterfaceMethods<KVCache_ArgumentChecksOpInterface>]> {
  let summary = "Builds a continuous-batching KV cache collection";
  let description = [{
    Bundles the five pieces of a continuous-batching KV cache (MAX's
    `ContinuousBatchingKVCacheCollection`) into one value: `blocks`
    (`[num_blocks, kv_dim, num_layers, block_tokens, num_heads, head_size]`,
    any strided layout whose inner three dims are contiguous), `cache_lengths`
    (`memref<?xi32>`), `lookup_table` (`memref<?xi32>`: the block of
    sequence `b`), and the i32 scalars `max_seq_length` and
    `max_cache_length`. Dims 1, 4 and 5 of `blocks` must be static and match
    the result type; `num_blocks`, `num_layers` and `block_tokens` may be
    dynamic. All memrefs are in the default memory space. A type with
    `scales` takes the f32 scales memref as a sixth operand, shaped as for
    `kvcache.paged_collection` with `block_tokens` (dynamic) for
    `page_size`. Like `kvcache.paged_collection`, it has a tensor form.

    ```mlir
    %c = kvcache.continuous_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
           : memref<?x2x?x?x8x128xf16>, memref<?xi32>, memref<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
    ```
  }];
  let arguments = (ins
    KVCache_CollectionData:$blocks,
    KVCache_CollectionData:$cache_lengths,
    KVCache_CollectionData:$lookup_table,
    I32:$max_seq_length,
    I32:$max_cache_length,
    Optional<KVCache_CollectionData>:$scales
  );
  let results = (outs KVCache_ContinuousCollectionType:$result);
  let assemblyFormat = [{
    $blocks `,` $cache_lengths `,` $lookup_table `,` $max_seq_length `,`
    $max_cache_length (`,` $scales^)? attr-dict `:` type($blocks) `,`
    type($cache_lengths) `,` type($lookup_table) (`,` type($scales)^)? `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

def KVCache_CollectionTensorsOp : KVCache_Op<"collection_tensors", [Pure]> {
  let summary = "The blocks (and scales) of a collection built from tensors";
  let description = [{
    The current `blocks` tensor of a collection built from tensors
    (docs/Contract.md section 3.5), then its `scales` when the type has
    them: the constructor's tensors with every write of the collection
    before this op applied. A function returns them to give the updated
    cache back; kvcache-bufferize drops such results when they are the
    function's own `blocks` and `scales` arguments (a destination-style
    function: the caller's buffers are written in place). The result types
    are those of the constructor's `blocks` and `scales`. The op ends the
    collection value: no op may use it (or a layer cache of it) after this
    one.

    ```mlir
    %blocks2 = kvcache.collection_tensors %c2 : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16> -> tensor<?x2x?x16x8x128xf16>
    ```
  }];
  let arguments = (ins KVCache_AnyCollection:$collection);
  let results = (outs Variadic<AnyRankedTensor>:$tensors);
  let assemblyFormat = [{
    $collection attr-dict `:` qualified(type($collection)) `->`
    type($tensors)
  }];
  let hasVerifier = 1;
}

class KVCache_GetCacheOp<string mnemonic, string which>
    : KVCache_Op<mnemonic,
                 [Pure, InferTypeOpAdaptor,
                  DeclareOpInterfaceMethods<
                      KVCache_ArgumentChecksOpInterface>]> {
  let summary = "The " # which # " cache of one layer of a collection";
  let arguments = (ins KVCache_AnyCollection:$collection,
                       Index:$layer);
  let results = (outs KVCache_AnyLayerCache:$result);
  let assemblyFormat = [{
    $collection `[` $layer `]` attr-dict `:` qualified(type($collection))
  }];
  let hasVerifier = 1;
}

def KVCache_GetKeyCacheOp : KVCache_GetCacheOp<"get_key_cache", "key"> {
  let description = [{
    The K cache of layer `layer` (MAX's `get_key_cache`): a
    `!kvcache.paged_cache` with all of the collection's parameters. A constant
    layer index out of range is an error when the collection comes from a
    `kvcache.paged_collection` whose `num_layers` dim is static.

    ```mlir
    %k = kvcache.get_key_cache %c[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
}

def KVCache_GetValueCacheOp : KVCache_GetCacheOp<"get_value_cache", "value"> {
  let description = [{
    The V cache of layer `layer` (MAX's `get_value_cache`). An MLA collection
    (`mla = true`) has no V cache: using this op on one is an error.

    ```mlir
    %v = kvcache.get_value_cache %c[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
}

def KVCache_CacheLengthOp : KVCache_Op<"cache_length", [Pure]> {
  let summary = "Tokens of a sequence already in the cache";
  let description = [{
    `cache_lengths[batch]` (read as unsigned) as an `index`. Works on a
    collection or on a layer cache; on a layer cache it folds to the
    collection the cache came from.

    The kernel-op lowerings set the unit attribute `serves_write` on a
    `cache_length` that is the base position of a write (a `store_ragged`
    row): an `assert_write_mode = 1` cache checks it like the write.

    ```mlir
    %n = kvcache.cache_length %c[%b] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    %w = kvcache.cache_length %c[%b] {serves_write} : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
  let arguments = (ins KVCache_AnyCollectionOrCache:$cache, Index:$batch,
                       UnitAttr:$serves_write);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    $cache `[` $batch `]` attr-dict `:` qualified(type($cache))
  }];
  let hasFolder = 1;
}

class KVCache_MaxLengthOp<string mnemonic, string what>
    : KVCache_Op<mnemonic, [Pure]> {
  let summary = "The batch's " # what # ", as an index";
  let arguments = (ins KVCache_AnyCollectionOrCache:$cache);
  let results = (outs Index:$result);
  let assemblyFormat = "$cache attr-dict `:` qualified(type($cache))";
  let hasFolder = 1;
  let hasCanonicalizeMethod = 1;
}

def KVCache_MaxSeqLengthOp
    : KVCache_MaxLengthOp<"max_seq_length", "largest number of new tokens"> {
  let description = [{
    The `max_seq_length` operand of the collection (unsigned i32) as an
    `index`: the largest number of new tokens of any sequence this step.
    Canonicalizes to an `arith.index_castui` of that operand when the
    collection's `kvcache.paged_collection` is visible.

    ```mlir
    %s = kvcache.max_seq_length %c : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
}

def KVCache_MaxCacheLengthOp
    : KVCache_MaxLengthOp<"max_cache_length",
                          "largest cache length plus new tokens"> {
  let description = [{
    The `max_cache_length` operand of the collection (unsigned i32) as an
    `index`: the largest `cache_length + new tokens` of any sequence.
    Canonicalizes like `kvcache.max_seq_length`.

    ```mlir
    %m = kvcache.max_cache_length %c : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
}

def KVCache_NumPagesOp : KVCache_Op<"num_pages", [Pure]> {
  let summary = "Number of physical pages of the cache (an extension)";
  let description = [{
    `num_pages`, dim 0 of `blocks`, as an `index`. An extension (see
    docs/Contract.md, section 3.1): the kernel-op lowerings use it to stay
    within the access ops. On a layer cache it folds to the collection the
    cache came from.

    ```mlir
    %n = kvcache.num_pages %c : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
  let arguments = (ins KVCache_AnyCollectionOrCache:$cache);
  let results = (outs Index:$result);
  let assemblyFormat = "$cache attr-dict `:` qualified(type($cache))";
  let hasFolder = 1;
}

def KVCache_NumLayersOp : KVCache_Op<"num_layers", [Pure]> {
  let summary = "Number of layers of a collection (an extension)";
  let description = [{
    `num_layers`, dim 2 of `blocks`, as an `index`. An extension (see
    docs/Contract.md, section 3.1): `copy_pages` lowerings use it to visit
    every layer through the access ops.

    ```mlir
    %l = kvcache.num_layers %c : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
  let arguments = (ins KVCache_AnyCollection:$collection);
  let results = (outs Index:$result);
  let assemblyFormat = "$collection attr-dict `:` qualified(type($collection))";
}

def KVCache_NumSequencesOp : KVCache_Op<"num_sequences", [Pure]> {
  let summary = "Number of sequences the cache's metadata describes (an "
                "extension)";
  let description = [{
    The number of sequences `b` for which the metadata has a cache length
    and a page-table row, as an `index`: for the paged and continuous kinds
    the smaller of the sizes of `cache_lengths` and of `lookup_table` (its
    rows); a kind says its own through `buildNumSequences`. An extension
    (see docs/Contract.md, section 3.1): the argument checks
    (`kvcache-generate-argument-checks`) compare a batch with it. On a layer
    cache it folds to the collection the cache came from. The kind must
    implement the hook (`describesSequences`).

    ```mlir
    %n = kvcache.num_sequences %c : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
  let arguments = (ins KVCache_AnyCollectionOrCache:$cache);
  let results = (outs Index:$result);
  let assemblyFormat = "$cache attr-dict `:` qualified(type($cache))";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def KVCache_CapacityOp : KVCache_Op<"capacity", [Pure]> {
  let summary = "Token positions a sequence can address (an extension)";
  let description = [{
    The number of token positions sequence `batch` can address, as an
    `index`: a lookup of any token below it reads the page table in bounds.
    For the paged kind `lookup_table`'s columns times `page_size`, for the
    continuous kind `block_tokens`; a kind says its own through
    `buildCapacity`. `batch` must be below `kvcache.num_sequences` (not
    checked). An extension (see docs/Contract.md, section 3.1) for the
    argument checks. On a layer cache it folds to the collection the cache
    came from. The kind must implement the hook (`describesSequences`).

    ```mlir
    %t = kvcache.capacity %c[%b] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
  let arguments = (ins KVCache_AnyCollectionOrCache:$cache, Index:$batch);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    $cache `[` $batch `]` attr-dict `:` qualified(type($cache))
  }];
  let hasFolder = 1;
  let hasVerifier = 1;
}

def KVCache_LookupOp : KVCache_Op<"lookup",
    [NoMemoryEffect, ConditionallySpeculatable,
     DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Physical page and slot of a token";
  let description = [{
    `page = lookup_table[batch, token floordiv page_size]` (unsigned) and
    `slot = token mod page_size`: where token `token` of sequence `batch`
    lives. Free of side effects: `cse` and loop-invariant code motion share
    lookups. On an `assert_write_mode = 1` cache a lookup carries the
    run-time checks of the write it serves, so it is not speculated (not
    hoisted out of loops that may not run); lookups that serve only reads
    carry the unit attribute `read_only` (set by `kvcache-expand-accesses`
    and the kernel-op lowerings) and are not checked in that mode.

    A lookup with the unit attribute `unchecked` is never checked at run
    time, not even with `checked=true`: it is a lookup of the argument
    checks (`kvcache-generate-argument-checks`), which compare the page it
    returns with `num_pages` themselves and report a bad one as an argument
    error rather than abort.

    ```mlir
    %page, %slot = kvcache.lookup %k[%b, %t] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
    %rpage, %rslot = kvcache.lookup %k[%b, %t] {read_only} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>
    %cpage, %cslot = kvcache.lookup %k[%b, %t] {unchecked} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
  let arguments = (ins KVCache_AnyLayerCache:$cache, Index:$batch,
                       Index:$token, UnitAttr:$read_only,
                       UnitAttr:$unchecked);
  let results = (outs Index:$page, Index:$slot);
  let assemblyFormat = [{
    $cache `[` $batch `,` $token `]` attr-dict `:` qualified(type($cache))
  }];
  let extraClassDeclaration = [{
    ::mlir::Speculation::Speculatability getSpeculatability();
  }];
}

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

def KVCache_LoadOp : KVCache_Op<"load"> {
  let summary = "Reads elements of one token of one head";
  let description = [{
    Reads element `element` of head `head` of token `token` of sequence
    `batch` (index order as MAX: batch, head, token, element), or, with a
    `vector<W x elt>` result, the `W` consecutive elements starting there. A
    vector access is aligned to its whole width: `element` is a multiple of
    `W`. Equivalent to `kvcache.lookup` followed by `kvcache.page_load`.

    ```mlir
    %x = kvcache.load %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
    ```
  }];
  let arguments = (ins Arg<KVCache_AnyLayerCache, "cache read", [MemRead]>:$cache,
                       Index:$batch, Index:$head, Index:$token, Index:$element);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $cache `[` $batch `,` $head `,` $token `,` $element `]` attr-dict `:`
    qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def KVCache_StoreOp : KVCache_Op<"store"> {
  let summary = "Writes elements of one token of one head";
  let description = [{
    The write counterpart of `kvcache.load`: a scalar of the element type or a
    `vector<W x elt>` stored at `[batch, head, token, element]`. Equivalent to
    `kvcache.lookup` followed by `kvcache.page_store`. Checked at run time
    when the cache has `assert_write_mode = 1`.

    ```mlir
    kvcache.store %x, %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
    ```
  }];
  let arguments = (ins AnyType:$value,
                       Arg<KVCache_AnyLayerCache, "cache written", [MemWrite]>:$cache,
                       Index:$batch, Index:$head, Index:$token, Index:$element);
  let assemblyFormat = [{
    $value `,` $cache `[` $batch `,` $head `,` $token `,` $element `]`
    attr-dict `:` qualified(type($cache)) `,` type($value)
  }];
  let hasVerifier = 1;
}

def KVCache_PageLoadOp : KVCache_Op<"page_load"> {
  let summary = "Reads elements at a resolved page and slot";
  let description = [{
    `kvcache.load` with the page already resolved: `page` and `slot` as
    `kvcache.lookup` returns them.

    The kernel-op lowerings set the unit attribute `serves_write` on a
    `page_load` that is part of a write (the source of a `copy_pages`): an
    `assert_write_mode = 1` cache checks it like the write.

    ```mlir
    %y = kvcache.page_load %k[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
    %z = kvcache.page_load %k[%src, %slot, %h, %d] {serves_write} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
    ```
  }];
  let arguments = (ins Arg<KVCache_AnyLayerCache, "cache read", [MemRead]>:$cache,
                       Index:$page, Index:$slot, Index:$head, Index:$element,
                       UnitAttr:$serves_write);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $cache `[` $page `,` $slot `,` $head `,` $element `]` attr-dict `:`
    qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def KVCache_PageStoreOp : KVCache_Op<"page_store"> {
  let summary = "Writes elements at a resolved page and slot";
  let description = [{
    `kvcache.store` with the page already resolved.

    ```mlir
    kvcache.page_store %y, %k[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
    ```
  }];
  let arguments = (ins AnyType:$value,
                       Arg<KVCache_AnyLayerCache, "cache written", [MemWrite]>:$cache,
                       Index:$page, Index:$slot, Index:$head, Index:$element);
  let assemblyFormat = [{
    $value `,` $cache `[` $page `,` $slot `,` $head `,` $element `]`
    attr-dict `:` qualified(type($cache)) `,` type($value)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Scales of quantized caches
//===----------------------------------------------------------------------===//

def KVCache_LoadScaleOp : KVCache_Op<"load_scale"> {
  let summary = "Reads the scale of an element of a quantized cache";
  let description = [{
    The f32 scale that applies to element `element` of head `head` of token
    `token` of sequence `batch` of a cache with `scales`: the layer's K or V
    scale (`tensor`, whatever the indices), the token's and head's
    (`token_head`), or that of the element's group of G (`block<G>`).
    Equivalent to `kvcache.lookup` followed by `kvcache.page_load_scale`
    (`kvcache-expand-accesses` splits it so).

    ```mlir
    %s = kvcache.load_scale %k[%b, %h, %t, %d] : !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head> -> f32
    ```
  }];
  let arguments = (ins Arg<KVCache_AnyLayerCache, "cache read", [MemRead]>:$cache,
                       Index:$batch, Index:$head, Index:$token, Index:$element);
  let results = (outs F32:$result);
  let assemblyFormat = [{
    $cache `[` $batch `,` $head `,` $token `,` $element `]` attr-dict `:`
    qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def KVCache_StoreScaleOp : KVCache_Op<"store_scale"> {
  let summary = "Writes the scale of an element of a quantized cache";
  let description = [{
    The write counterpart of `kvcache.load_scale`: sets the f32 scale that
    applies to element `[batch, head, token, element]` (for `tensor`, the
    layer's K or V scale). The stored codes are not touched. Checked at run
    time when the cache has `assert_write_mode = 1`.

    ```mlir
    kvcache.store_scale %s, %k[%b, %h, %t, %d] : !kvcache.paged_cache<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<32>>
    ```
  }];
  let arguments = (ins F32:$value,
                       Arg<KVCache_AnyLayerCache, "cache written", [MemWrite]>:$cache,
                       Index:$batch, Index:$head, Index:$token, Index:$element);
  let assemblyFormat = [{
    $value `,` $cache `[` $batch `,` $head `,` $token `,` $element `]`
    attr-dict `:` qualified(type($cache))
  }];
  let hasVerifier = 1;
}

def KVCache_PageLoadScaleOp : KVCache_Op<"page_load_scale"> {
  let summary = "Reads a scale at a resolved page and slot";
  let description = [{
    `kvcache.load_scale` with the page already resolved: `page` and `slot`
    as `kvcache.lookup` returns them.

    ```mlir
    %s = kvcache.page_load_scale %k[%page, %slot, %h, %d] : !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head> -> f32
    ```
  }];
  let arguments = (ins Arg<KVCache_AnyLayerCache, "cache read", [MemRead]>:$cache,
                       Index:$page, Index:$slot, Index:$head, Index:$element);
  let results = (outs F32:$result);
  let assemblyFormat = [{
    $cache `[` $page `,` $slot `,` $head `,` $element `]` attr-dict `:`
    qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def KVCache_PageStoreScaleOp : KVCache_Op<"page_store_scale"> {
  let summary = "Writes a scale at a resolved page and slot";
  let description = [{
    `kvcache.store_scale` with the page already resolved.

    ```mlir
    kvcache.page_store_scale %s, %k[%page, %slot, %h, %d] : !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
    ```
  }];
  let arguments = (ins F32:$value,
                       Arg<KVCache_AnyLayerCache, "cache written", [MemWrite]>:$cache,
                       Index:$page, Index:$slot, Index:$head, Index:$element);
  let assemblyFormat = [{
    $value `,` $cache `[` $page `,` $slot `,` $head `,` $element `]`
    attr-dict `:` qualified(type($cache))
  }];
  let hasVerifier = 1;
}

def KVCache_TileOp : KVCache_Op<"tile", [Pure]> {
  let summary = "A view of consecutive token rows of one head";
  let description = [{
    A `T x head_size` view of rows `token .. token+T-1` of head `head` of
    sequence `batch` (MAX's `block_paged_ptr`). The result type is exactly
    `memref<T x head_size x elt, strided<[num_heads*head_size, 1], offset: ?>>`
    with `page_size % T == 0`; `token` must be a multiple of `T`, so the rows
    never cross a page.

    ```mlir
    %tile = kvcache.tile %k[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16, strided<[1024, 1], offset: ?>>
    ```
  }];
  let arguments = (ins KVCache_AnyLayerCache:$cache, Index:$batch,
                       Index:$token, Index:$head);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = [{
    $cache `[` $batch `,` $token `,` $head `]` attr-dict `:`
    qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

include "KVCache/IR/KVCacheKernelOps.td"
include "KVCache/IR/KVCacheRopeOps.td"

include "KVCache/IR/KVCacheTransferOps.td"

#endif // KVCACHE_IR_KVCACHEOPS_TD
