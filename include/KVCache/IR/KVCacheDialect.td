//===- KVCacheDialect.td - kvcache dialect definition ------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHEDIALECT_TD
#define KVCACHE_IR_KVCACHEDIALECT_TD

include "mlir/IR/OpBase.td"

def KVCache_Dialect : Dialect {
  let name = "kvcache";
  let cppNamespace = "::mlir::kvcache";
  let summary = "The paged KV cache of LLM inference";
  let description = [{
    The `kvcache` dialect models the paged key/value cache of LLM inference as
    Modular MAX's `PagedKVCacheCollection` lays it out:

    ```
    blocks        : [num_pages, kv_dim, num_layers, page_size, num_heads, head_size]
    cache_lengths : [batch]              i32: tokens of sequence b already cached
    lookup_table  : [batch, max_pages]   i32: physical page of logical page j
    ```

    Token `t` of sequence `b` in layer `l`, head `h`, element `d` of K
    (`kv = 0`) or V (`kv = 1`) lives at
    `blocks[lookup_table[b, t floordiv page_size], kv, l, t mod page_size, h, d]`.

    Access ops (`load`, `store`, `lookup`, `tile`, ...) address the cache by
    sequence and token; kernel ops (`store_ragged`, `gather_ragged`,
    `copy_pages`, `attention_ragged`) operate on a whole ragged batch.
    `cache_lengths` and `lookup_table` are read-only while a collection value is
    live, so the metadata ops are pure.
  }];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();
  }];
  // Rejects the discardable spellings `kvcache.serves_write` and
  // `kvcache.read_only` of what are now inherent attributes.
  let hasOperationAttrVerify = 1;
  // Canonicalization turns max_* lengths into arith.index_castui.
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

class KVCache_Op<string mnemonic, list<Trait> traits = []>
    : Op<KVCache_Dialect, mnemonic, traits>;

#endif // KVCACHE_IR_KVCACHEDIALECT_TD
