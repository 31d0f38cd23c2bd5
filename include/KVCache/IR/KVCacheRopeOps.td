//===- KVCacheRopeOps.td - kvcache rotary embedding --------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache.rope_ragged, the kernel op of rotary embedding: a step's queries
// and the keys it stored (the rope(...) clauses of store_ragged and of the
// attention ops are in KVCacheKernelOps.td). Included by KVCacheOps.td after
// KVCacheKernelOps.td, whose operand constraints it uses.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHEROPEOPS_TD
#define KVCACHE_IR_KVCACHEROPEOPS_TD

def KVCache_RopeRaggedOp
    : KVCache_Op<"rope_ragged", [KVCache_KernelOpInterface,
                                 KVCache_ArgumentChecks,
                                 KVCache_DestinationStyle,
                                 KVCache_CacheWriter,
                                 AttrSizedResultSegments]> {
  let summary = "Rotary position embedding of a step's queries and of the "
                "keys it stored";
  let description = [{
    MAX's `fused_qk_rope_ragged`. Row `r` of sequence `b` (`row_offsets` as
    in `store_ragged`) has the storage position
    `s = cache_length(b) + r - row_offsets[b]` and the rotary position
    `p = positions[r]` with the optional `positions(%positions)`
    (`memref<T x i32>`: speculative trees, packed sequences), else `s`.
    Row `p` of `cos_sin` (`[max_positions, rotary_dims]` f32, computed by
    the caller: any frequency scaling) holds `rotary_dims / 2` pairs
    `(cos t_i, sin t_i)`. Only the last `R = rotary_dims` elements of each
    head rotate (offset `o = head_size - R`; for an `mla = true` cache, the
    last R of the latent row, e.g. 64 of 576). Pair `i` is the elements
    `(o + 2i, o + 2i + 1)` with `style = "interleaved"` (Meta's Llama,
    GPT-J) and `(o + i, o + i + R/2)` with `style = "half"` (NeoX, Hugging
    Face's `rotate_half`):
    `(x, y) -> (x cos t_i - y sin t_i, x sin t_i + y cos t_i)` in f32,
    rounded once to the element type.

    In the tensor form `q`, `row_offsets`, `cos_sin`, `q_out` (the init)
    and `positions` are tensors and the op returns the new `q_out`. On a
    collection built from memrefs the keys are rotated in place, through
    the cache handle; when `key_cache` is a layer cache of a collection
    built from tensors (docs/Contract.md section 3.5), the op also returns
    the updated collection, every layer (`-> type, collection type`), as
    `store_ragged` does: later ops use it, not the collection it wrote.

    The op writes every head of `q`'s rows, rotated, to `q_out` (which may
    be `q`: in place) and rotates in place the rows of `key_cache` at the
    positions `s` (store the step's keys with a plain `store_ragged` first:
    keys stored with its `rope(...)` clause would rotate twice); every
    other element is unchanged. On a cache with `scales = tensor` the keys
    are dequantized, rotated and quantized again with the layer's scale; a
    cache with `token_head` or `block<G>` scales is an error (re-encoding
    would change the scale, and so the codes, of the elements that do not
    rotate).

    ```mlir
    kvcache.rope_ragged %q, %k, %row_offsets, %cos_sin, %q {rotary_dims = 128 : i64, style = "interleaved"}
        : memref<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x128xf32>, memref<?x32x128xbf16>
    kvcache.rope_ragged %q, %k, %row_offsets, %cos_sin, %q_out positions(%positions) {rotary_dims = 32 : i64, style = "half"}
        : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?xi32>
    %rotated = kvcache.rope_ragged %tq, %k, %offsets, %table, %init {rotary_dims = 128 : i64, style = "half"}
        : tensor<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?xi32>, tensor<?x128xf32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>
    %q2, %c2 = kvcache.rope_ragged %tq, %tk, %offsets, %table, %init {rotary_dims = 128 : i64, style = "half"}
        : tensor<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?xi32>, tensor<?x128xf32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>, !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
  let arguments = (ins
    Arg<KVCache_TokenRows, "queries", [MemRead]>:$q,
    Arg<KVCache_AnyLayerCache, "key cache, rotated in place",
        [MemRead, MemWrite]>:$key_cache,
    Arg<KVCache_RaggedOffsets, "row offsets", [MemRead]>:$row_offsets,
    Arg<KVCache_CosSin, "cos/sin table", [MemRead]>:$cos_sin,
    Arg<KVCache_TokenRows, "rotated queries", [MemWrite]>:$q_out,
    Arg<Optional<KVCache_Positions>, "rotary position of each row",
        [MemRead]>:$positions,
    ConfinedAttr<I64Attr, [IntPositive]>:$rotary_dims,
    KVCache_RopeStyleAttr:$style);
  let assemblyFormat = [{
    $q `,` $key_cache `,` $row_offsets `,` $cos_sin `,` $q_out
    (`positions` `(` $positions^ `)`)? attr-dict `:` type($q) `,`
    qualified(type($key_cache)) `,` type($row_offsets) `,` type($cos_sin)
    `,` type($q_out) (`,` type($positions)^)?
    (`->` type($rotated)^ (`,` qualified(type($updated))^)?)?
  }];
  // The new `q_out` of the tensor form, then the updated collection when
  // the keys are of a collection built from tensors.
  let results = !con((outs Optional<AnyRankedTensor>:$rotated),
                     KVCache_UpdatedCollection);
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getQOutMutable();
    }

    /// Whether pair i is (o + i, o + i + R/2) (`half`), not
    /// (o + 2i, o + 2i + 1) (`interleaved`).
    bool isHalfStyle() { return getStyle() == "half"; }
  }];
  let hasVerifier = 1;
}

#endif // KVCACHE_IR_KVCACHEROPEOPS_TD
