//===- TestKVTypes.td - test_kv collection and cache types -*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef TESTKV_TESTKVTYPES_TD
#define TESTKV_TESTKVTYPES_TD

include "TestKVDialect.td"
include "KVCache/IR/KVCacheTypes.td"

/// Both CSR types carry the parameters of the paged kind, in its order. The
/// interface hooks are declared by the kvcache method lists and defined in
/// TestKVTypes.cpp and TestKVTypeLowering.cpp.
class TestKV_CSRType<string name, string typeMnemonic, Trait kind>
    : TypeDef<TestKV_Dialect, name, [kind]> {
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
}

def TestKV_CSRCollectionType
    : TestKV_CSRType<"CSRCollection", "csr_collection",
                     KVCache_KVCollectionTypeInterface> {
  let summary = "A KV cache collection with a CSR page table";
  let description = [{
    Every layer, K and V, of a cache whose page table is FlashInfer's CSR
    layout. Kind name "csr". Lowers to six values: `blocks`
    (`memref<? x kv_dim x ? x page_size x num_heads x head_size x elt,
    strided<[?, ?, ?, H*D, D, 1], offset: ?>>`), `kv_indptr`
    (`memref<?xi32>`, batch + 1 entries), `kv_indices` (`memref<?xi32>`),
    `cache_lengths` (`memref<?xi32>`), `max_seq_length` and
    `max_cache_length` (`i32`).

    ```mlir
    !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
    ```
  }];
  let extraClassDeclaration =
      !strconcat(KVCache_CollectionMethods.decls,
                 KVCache_SequenceMethods);
}

def TestKV_CSRCacheType
    : TestKV_CSRType<"CSRCache", "csr_cache", KVCache_KVCacheTypeInterface> {
  let summary = "One layer's K or V of a CSR-paged KV cache";
  let description = [{
    The K or the V of one layer of a `!test_kv.csr_collection`. Lowers to
    the collection's six values with `blocks` replaced by the layer's view
    `[num_pages, page_size, num_heads, head_size]`.

    ```mlir
    !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>
    ```
  }];
  let extraClassDeclaration =
      !strconcat(KVCache_LayerCacheMethods.decls,
                 KVCache_SequenceMethods);
}

#endif // TESTKV_TESTKVTYPES_TD
