//===- KVCacheTypes.td - kvcache dialect types -------------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHETYPES_TD
#define KVCACHE_IR_KVCACHETYPES_TD

include "KVCache/IR/KVCacheDialect.td"
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

/// Both cache types carry the same parameters, printed in this order.
class KVCache_PagedType<string name, string typeMnemonic>
    : TypeDef<KVCache_Dialect, name> {
  let mnemonic = typeMnemonic;
  let parameters = (ins
    "::mlir::Type":$element_type,
    "int64_t":$num_heads,
    "int64_t":$head_size,
    "int64_t":$page_size,
    KVCache_BoolParameter<"K-only (MLA) cache: kv_dim is 1">:$mla,
    DefaultValuedParameter<"int64_t", "0",
      "1: every write is checked at run time">:$assert_write_mode
  );
  let assemblyFormat = [{
    `<` $element_type `,`
        struct($num_heads, $head_size, $page_size, $mla, $assert_write_mode)
    `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Size of the K/V dimension of `blocks`: 1 for MLA caches, else 2.
    int64_t getKVDim() const { return getMla() ? 1 : 2; }
    /// Elements of one token row of one layer: num_heads * head_size.
    int64_t getRowElements() const { return getNumHeads() * getHeadSize(); }
  }];
}

def KVCache_PagedCollectionType
    : KVCache_PagedType<"PagedCollection", "paged_collection"> {
  let summary = "A paged KV cache: every layer, K and V";
  let description = [{
    The whole paged cache of a model (MAX's `PagedKVCacheCollection`): the
    `blocks` memref `[num_pages, kv_dim, num_layers, page_size, num_heads,
    head_size]`, `cache_lengths`, `lookup_table`, `max_seq_length` and
    `max_cache_length`.

    Parameters: the element type (`f32`, `f16`, `bf16`, `f8E4M3FN`),
    `num_heads` (KV heads), `head_size`, `page_size` (all > 0), `mla`
    (default `false`; `true` means kv_dim 1, K only) and `assert_write_mode`
    (0 or 1, default 0: with 1 every write through the cache is checked at run
    time). Defaults are not printed; the keys may come in any order.

    ```mlir
    !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
    ```

    Lowered (see `convert-kvcache-to-memref`), a value of this type becomes its
    five constructor operands.
  }];
}

def KVCache_PagedCacheType
    : KVCache_PagedType<"PagedCache", "paged_cache"> {
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
}

def KVCache_AnyPagedType
    : AnyTypeOf<[KVCache_PagedCollectionType, KVCache_PagedCacheType],
                "paged KV cache collection or layer cache">;

#endif // KVCACHE_IR_KVCACHETYPES_TD
