//===- KVCacheKernelOps.td - kvcache kernel operations -----*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
// Whole-batch operations, destination-passing on memrefs or (the tensor
// form, docs/Contract.md section 3.5) destination-style on tensors, lowered
// from the memref form to loops for the CPU (convert-kvcache-to-scf) or GPU
// kernels (convert-kvcache-to-gpu). Included by KVCacheOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHEKERNELOPS_TD
#define KVCACHE_IR_KVCACHEKERNELOPS_TD

//===----------------------------------------------------------------------===//
// Kernel ops
//===----------------------------------------------------------------------===//

// Every kernel op checks its operands against each other at run time
// (kvcache-generate-argument-checks; KVCacheArgumentChecks.cpp).
defvar KVCache_ArgumentChecks =
    DeclareOpInterfaceMethods<KVCache_ArgumentChecksOpInterface>;

// Every memref a kernel op takes is in the default memory space.
def KVCache_InDefaultMemorySpacePred
    : CPred<"!::llvm::cast<::mlir::MemRefType>($_self).getMemorySpace()">;

// A memref operand of a kernel op: `base` in the default memory space.
class KVCache_KernelMemRef<Type base, list<Pred> predicates, string summary>
    : ConfinedType<base, !listconcat(predicates,
                                     [KVCache_InDefaultMemorySpacePred]),
                   summary # " in the default memory space",
                   "::mlir::MemRefType">;

// A data operand of a kernel op: a memref in the default memory space, or
// (the tensor form, docs/Contract.md section 3.5) a ranked tensor of the
// same rank and element types. The verifiers check that an op uses one form
// for all its data operands.
class KVCache_KernelData<list<Type> elementTypes, int rank,
                         list<Pred> predicates, string summary>
    : AnyTypeOf<[KVCache_KernelMemRef<MemRefRankOf<elementTypes, [rank]>,
                                      predicates, summary>,
                 ConfinedType<TensorRankOf<elementTypes, [rank]>, predicates>],
                summary # " in the default memory space, or a tensor of "
                          "that shape",
                "::mlir::ShapedType">;

// Token rows; the op verifiers check the element type and the static dims
// against the cache.
def KVCache_TokenRows
    : KVCache_KernelData<[AnyType], 3, [],
                         "3-D memref [tokens, heads, head_size]">;

// Ragged offsets: sequence b owns rows [offsets[b], offsets[b+1]).
def KVCache_RaggedOffsets
    : KVCache_KernelData<[I32], 1, [], "1-D memref of i32 [batch + 1]">;

def KVCache_PagePairs
    : KVCache_KernelData<
          [I32], 2,
          [CPred<"::llvm::cast<::mlir::ShapedType>($_self).getDimSize(1) "
                 "== 2">],
          "2-D memref of i32 [num_pairs, 2] of (src, dst) page pairs">;

// Scratch space, not data: a memref in both forms.
def KVCache_WorkspaceMemRef
    : KVCache_KernelMemRef<MemRefRankOf<[F32], [1]>, [], "1-D memref of f32">;

// One f32 per query head (sinks, ALiBi slopes); the verifier checks the
// static size.
def KVCache_PerHead
    : KVCache_KernelData<[F32], 1, [], "1-D memref of f32 [q_heads]">;

// A log-sum-exp per row and query head, row-major.
def KVCache_Lse
    : KVCache_KernelData<[F32], 2, [], "2-D memref of f32 [tokens, q_heads]">;

// The new values of the inits of a kernel op in tensor form (`out`, then
// `lse`), none in the memref form.
defvar KVCache_KernelResults = (outs Variadic<AnyRankedTensor>:$results);

// The ops that write data are destination-style: `out` (then `lse`) are
// their inits.
defvar KVCache_DestinationStyle =
    DestinationStyleOpInterface;

// The ops that write the cache return the updated collection when it is
// built from tensors (docs/Contract.md section 3.5).
defvar KVCache_CacheWriter =
    DeclareOpInterfaceMethods<KVCache_CacheWriterOpInterface,
                              ["getWrittenCache"]>;
defvar KVCache_UpdatedCollection =
    (outs Optional<KVCache_AnyCollection>:$updated);

// A table of rotary cos/sin pairs `[max_positions, rotary_dims]`; the
// verifiers check dim 1 against `rotary_dims`.
def KVCache_CosSin
    : KVCache_KernelData<[F32], 2, [],
                         "2-D memref of f32 [max_positions, rotary_dims]">;

// One i32 per ragged row.
def KVCache_Positions
    : KVCache_KernelData<[I32], 1, [], "1-D memref of i32 [tokens]">;

// The pairing of rotary_dims' elements.
def KVCache_RopeStyleAttr
    : ConfinedAttr<StrAttr, [AttrConstraint<
          CPred<"::llvm::is_contained({\"interleaved\", \"half\"}, "
                "::llvm::cast<::mlir::StringAttr>($_self).getValue())">,
          "\"interleaved\" or \"half\"">]>;

def KVCache_StoreRaggedOp
    : KVCache_Op<"store_ragged", [KVCache_KernelOpInterface,
                                  KVCache_ArgumentChecks,
                                  KVCache_CacheWriter,
                                  AttrSizedOperandSegments]> {
  let summary = "Appends a ragged batch of new tokens to the cache, "
                "optionally rotated";
  let description = [{
    MAX's `kv_cache.store.paged.ragged`. `values` is `[T, num_heads,
    head_size]`, `row_offsets` `[batch + 1]`: row `r` in
    `[row_offsets[b], row_offsets[b+1])` is written at token position
    `cache_length(b) + r - row_offsets[b]` of sequence `b`. `cache_lengths`
    is not changed.

    On a quantized cache (with `scales`), rows of the storage type are
    copied as codes (scales untouched) and f32, f16 or bf16 rows are
    quantized, `saturate(rne(value / scale))`: with the layer's scale for
    `scales = tensor`, and for `token_head` and `block<G>` with each
    group's scale `amax / max_finite` (1 when amax is 0), which the op
    writes too (docs/Contract.md section 2.2).

    The optional clause `rope(%cos_sin)`, with the attributes
    `rotary_dims` and `style` and the optional `positions(%positions)`,
    rotates the float rows first, as `rope_ragged` rotates its queries (the
    same table, pairs and arithmetic, at the rotary position
    `positions[r]`, else the storage position), each rotated element
    rounded once to the rows' element type, and stores the rotated rows as
    above (quantized ones: their scales and codes from the rotated values).
    It is how keys reach a cache with `token_head` or `block<G>` scales
    rotated; `values` is not changed.

    In the tensor form `values`, `row_offsets`, `cos_sin` and `positions`
    are tensors (only read). On a collection built from memrefs the cache is
    written through its handle; when `cache` is a layer cache of a
    collection built from tensors (docs/Contract.md section 3.5), the op
    returns the updated collection, every layer (`-> type`): later ops use
    it, not the collection it wrote.

    ```mlir
    kvcache.store_ragged %k, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
    kvcache.store_ragged %k, %new, %row_offsets rope(%cos_sin) positions(%positions) {rotary_dims = 64 : i64, style = "half"}
        : !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>, memref<?x8x128xbf16>, memref<?xi32>, memref<?x64xf32>, memref<?xi32>
    %c2 = kvcache.store_ragged %k, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?x8x128xf16>, tensor<?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
  let arguments = (ins
    Arg<KVCache_AnyLayerCache, "cache written", [MemRead, MemWrite]>:$cache,
    Arg<KVCache_TokenRows, "new rows", [MemRead]>:$values,
    Arg<KVCache_RaggedOffsets, "row offsets", [MemRead]>:$row_offsets,
    Arg<Optional<KVCache_CosSin>, "cos/sin table of the rope clause",
        [MemRead]>:$cos_sin,
    Arg<Optional<KVCache_Positions>, "rotary position of each row",
        [MemRead]>:$positions,
    OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$rotary_dims,
    OptionalAttr<KVCache_RopeStyleAttr>:$style);
  let results = KVCache_UpdatedCollection;
  let assemblyFormat = [{
    $cache `,` $values `,` $row_offsets (`rope` `(` $cos_sin^ `)`)?
    (`positions` `(` $positions^ `)`)? attr-dict `:` qualified(type($cache))
    `,` type($values) `,` type($row_offsets) (`,` type($cos_sin)^)?
    (`,` type($positions)^)? (`->` qualified(type($updated))^)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$cache, "::mlir::Value":$values,
                   "::mlir::Value":$row_offsets), [{
      build($_builder, $_state, /*updated=*/::mlir::Type(), cache, values,
            row_offsets,
            /*cos_sin=*/nullptr, /*positions=*/nullptr,
            /*rotary_dims=*/nullptr, /*style=*/nullptr);
    }]>
  ];
  let extraClassDeclaration = [{
    /// Whether the rows rotate before they are stored (the rope clause).
    bool hasRope() { return static_cast<bool>(getCosSin()); }
    /// Whether the rope clause's pair i is (o + i, o + i + R/2).
    bool isHalfStyle() { return getStyle() == "half"; }
  }];
  let hasVerifier = 1;
}

def KVCache_GatherRaggedOp
    : KVCache_Op<"gather_ragged", [KVCache_KernelOpInterface,
                                   KVCache_ArgumentChecks,
                                   KVCache_DestinationStyle]> {
  let summary = "Reads the contexts of a ragged batch out of the cache";
  let description = [{
    The inverse of `store_ragged` for reading a context (in the tensor form
    it returns the new `out`): `out` row `r` in
    `[ctx_offsets[b], ctx_offsets[b+1])` receives token position
    `r - ctx_offsets[b]` of sequence `b`. On a quantized cache, `out` of
    the storage type receives the codes and f32, f16 or bf16 `out` the
    dequantized values.

    ```mlir
    kvcache.gather_ragged %k, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
    %rows = kvcache.gather_ragged %k, %init, %ctx : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?x8x128xf16>, tensor<?xi32> -> tensor<?x8x128xf16>
    ```
  }];
  let arguments = (ins
    Arg<KVCache_AnyLayerCache, "cache read", [MemRead]>:$cache,
    Arg<KVCache_TokenRows, "gathered rows", [MemWrite]>:$out,
    Arg<KVCache_RaggedOffsets, "context offsets", [MemRead]>:$ctx_offsets);
  let results = KVCache_KernelResults;
  let assemblyFormat = [{
    $cache `,` $out `,` $ctx_offsets attr-dict `:` qualified(type($cache))
    `,` type($out) `,` type($ctx_offsets) (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getOutMutable();
    }
  }];
  let hasVerifier = 1;
}

def KVCache_CopyPagesOp
    : KVCache_Op<"copy_pages", [KVCache_KernelOpInterface,
                                KVCache_ArgumentChecks,
                                KVCache_CacheWriter]> {
  let summary = "Copies whole pages, every layer, K and V";
  let description = [{
    For each row `(src, dst)` of `pairs` (`memref<?x2xi32>`), copies physical
    page `src` to page `dst` in every layer, for K and V (prefix-cache
    copy-on-write). Pairs must not overlap (the dst of one is never the src
    of another). The collection must have pages of a static size (a
    `!kvcache.continuous_collection` has none: it is an error). On a
    collection built from tensors (docs/Contract.md section 3.5) the op is
    in the tensor form and returns the updated collection.

    ```mlir
    kvcache.copy_pages %c, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32>
    %c2 = kvcache.copy_pages %c, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?x2xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    ```
  }];
  let arguments = (ins
    Arg<KVCache_AnyCollection, "cache copied", [MemRead, MemWrite]>:$collection,
    Arg<KVCache_PagePairs, "page pairs", [MemRead]>:$pairs);
  let results = KVCache_UpdatedCollection;
  let assemblyFormat = [{
    $collection `,` $pairs attr-dict `:` qualified(type($collection)) `,`
    type($pairs) (`->` qualified(type($updated))^)?
  }];
  let hasVerifier = 1;
}

def KVCache_AttentionRaggedOp
    : KVCache_Op<"attention_ragged",
                 [DeclareOpInterfaceMethods<KVCache_KernelOpInterface,
                                            ["getKernelOperands"]>,
                  KVCache_ArgumentChecks, KVCache_DestinationStyle,
                  KVCache_AttentionOpInterface, AttrSizedOperandSegments]> {
  let summary = "Paged attention over a ragged batch, with optional masks, "
                "score transforms, sinks and log-sum-exp";
  let description = [{
    MAX's `mha.ragged.paged`. Query row `r` of sequence `b` sits at absolute
    position `p = cache_length(b) + r - row_offsets[b]`; by default it
    attends causally to key positions `[0, p]`:
    `out[r, h] = softmax_j(s_j) @ V[b, j, h / G]` with
    `s_j = scale * q[r, h] . K[b, j, h / G]` and `G = q_heads / kv_heads`
    (grouped-query attention); softmax and accumulation in f32. The step's
    new K/V must already be stored. `q` and `out` are
    `[T, q_heads, head_size]` of the cache's element type (any of f32, f16,
    bf16 over a quantized cache), with `q_heads` a static multiple of
    `num_heads`. The optional f32 `workspace` lets the GPU lowering split
    long contexts across thread blocks.

    Optional clauses (docs/Contract.md section 3.3), in any combination
    except the exclusions below:

    - `window = W` (i64 >= 1): keys `[max(0, p - W + 1), p]` (sliding
      window); `chunk = C` (i64 >= 1): keys `[floor(p / C) * C, p]`
      (chunked attention); they exclude each other;
    - `noncausal`: keys `[0, cache_length(b))`, every cached token of the
      sequence and none of the step's own rows (cascade inference: a shared
      prefix stored once); excludes `window` and `chunk`;
    - `softcap = c` (f32 > 0): `s = c * tanh(s / c)` after the scale;
    - `alibi(%slopes)` (`memref<q_heads x f32>`): `s += slopes[h] * (j - p)`
      after the soft cap;
    - `sinks(%sinks)` (`memref<q_heads x f32>`): one extra logit per query
      head in the softmax's denominator (not scaled, capped or biased, with
      no value);
    - `lse(%lse)` (`memref<T x q_heads x f32>`, row-major): receives
      `m + log(denominator)` per row and head (natural log, the sink
      included; `-inf` for a row with no keys and no sink, whose `out` is
      0), for `kvcache.merge_states`;
    - `rope(%cos_sin)` with the attributes `rotary_dims` and `style`, and
      the optional `positions(%positions)` after it (`memref<T x i32>`):
      each query row rotated where the kernels load it, exactly as
      `rope_ragged` rotates it into `q_out` (the same table, pairs and f32
      arithmetic, rounded once to q's element type) at the rotary position
      `positions[r]`, else `p` (the storage position of the row's key, as
      `store_ragged`'s clause rotates it): the queries for keys stored
      rotated by `store_ragged`'s `rope(...)`. `q` is not changed.

    In the tensor form `q`, `row_offsets`, `out`, `sinks`, `alibi`, `lse`,
    `cos_sin` and `positions` are ranked tensors (the workspace stays a
    memref) and the op returns the new `out`, then the new `lse`.

    ```mlir
    kvcache.attention_ragged %q, %k, %v, %row_offsets, %out {scale = 0.0883883 : f32}
        : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>
    kvcache.attention_ragged %q, %k, %v, %row_offsets, %out sinks(%sinks) lse(%lse)
        {scale = 0.0883883 : f32, softcap = 30.0 : f32, window = 4096 : i64}
        : memref<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xbf16>, memref<32xf32>, memref<?x32xf32>
    kvcache.attention_ragged %q, %k, %v, %row_offsets, %out rope(%cos_sin) positions(%positions)
        {rotary_dims = 64 : i64, scale = 0.0883883 : f32, style = "half"}
        : memref<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xbf16>, memref<?x64xf32>, memref<?xi32>
    %o, %l = kvcache.attention_ragged %tq, %k, %v, %offsets, %init lse(%lse_init) {scale = 0.0883883 : f32}
        : tensor<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?xi32>, tensor<?x32x128xf16>, tensor<?x32xf32> -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```
  }];
  let arguments = (ins
    Arg<KVCache_TokenRows, "queries", [MemRead]>:$q,
    Arg<KVCache_AnyLayerCache, "key cache", [MemRead]>:$key_cache,
    Arg<KVCache_AnyLayerCache, "value cache", [MemRead]>:$value_cache,
    Arg<KVCache_RaggedOffsets, "row offsets", [MemRead]>:$row_offsets,
    Arg<KVCache_TokenRows, "attention output", [MemWrite]>:$out,
    // `lse` follows `out`: the inits are one range of operands.
    Arg<Optional<KVCache_Lse>, "log-sum-exp of each row and head",
        [MemWrite]>:$lse,
    Arg<Optional<KVCache_WorkspaceMemRef>, "scratch space",
        [MemRead, MemWrite]>:$workspace,
    Arg<Optional<KVCache_PerHead>, "sink logits", [MemRead]>:$sinks,
    Arg<Optional<KVCache_PerHead>, "ALiBi slopes", [MemRead]>:$alibi,
    Arg<Optional<KVCache_CosSin>, "cos/sin table of the rope clause",
        [MemRead]>:$cos_sin,
    Arg<Optional<KVCache_Positions>, "rotary position of each query row",
        [MemRead]>:$positions,
    F32Attr:$scale,
    OptionalAttr<F32Attr>:$softcap,
    OptionalAttr<I64Attr>:$window,
    OptionalAttr<I64Attr>:$chunk,
    UnitAttr:$noncausal,
    OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$rotary_dims,
    OptionalAttr<KVCache_RopeStyleAttr>:$style);
  let assemblyFormat = [{
    $q `,` $key_cache `,` $value_cache `,` $row_offsets `,` $out
    (`,` $workspace^)? (`sinks` `(` $sinks^ `)`)? (`alibi` `(` $alibi^ `)`)?
    (`lse` `(` $lse^ `)`)? (`rope` `(` $cos_sin^ `)`)?
    (`positions` `(` $positions^ `)`)? attr-dict `:` type($q) `,`
    qualified(type($key_cache)) `,` qualified(type($value_cache)) `,`
    type($row_offsets) `,`
    custom<OptionalOperandTypes>(type($out), ref($workspace), type($workspace),
                                 ref($sinks), type($sinks), ref($alibi),
                                 type($alibi), ref($lse), type($lse))
    (`,` type($cos_sin)^)? (`,` type($positions)^)? (`->` type($results)^)?
  }];
  let results = KVCache_KernelResults;
  let extraClassDeclaration = [{
    /// `out`, then `lse` if present.
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(),
                                         getOutMutable().getOperandNumber(),
                                         getLse() ? 2 : 1);
    }

    /// Whether any optional clause (window, chunk, noncausal, softcap,
    /// alibi, sinks, lse) is present: plain causal attention otherwise.
    bool hasClauses() {
      return getWindow() || getChunk() || getNoncausal() || getSoftcap() ||
             getAlibi() || getSinks() || getLse();
    }

    /// The whole V row: head_size.
    int64_t getValueHeadSize() {
      return getValueCache().getType().getHeadSize();
    }
  }];
  let hasVerifier = 1;
}

def KVCache_MlaAttentionRaggedOp
    : KVCache_Op<"mla_attention_ragged",
                 [DeclareOpInterfaceMethods<KVCache_KernelOpInterface,
                                            ["getKernelOperands"]>,
                  KVCache_ArgumentChecks, KVCache_DestinationStyle,
                  KVCache_AttentionOpInterface, AttrSizedOperandSegments]> {
  let summary = "Multi-head latent attention (absorbed decode) over the "
                "latent cache of an MLA collection";
  let description = [{
    DeepSeek's MLA in its absorbed form (FlashMLA): the K cache of an
    `mla = true` collection holds one latent row per token (typically one
    head of 576 = 512 + 64 elements), the keys of every query head, and its
    first `v_head_size = V` elements are the values:
    `out[r, h] = softmax_j(s_j) @ K[b, j, h / G, 0:V]` with
    `s_j = scale * q[r, h] . K[b, j, h / G]` over all head_size elements
    and `G = q_heads / num_heads`; otherwise exactly `attention_ragged`
    (positions, causality over several query rows per sequence, the
    clauses `window`, `chunk`, `noncausal`, `softcap`, `alibi`, `sinks`,
    `lse`, `rope` (the last `rotary_dims` of the latent row rotate, e.g. 64
    of 576), the element types, quantized caches, the tensor form). `q` is
    `[T, q_heads, head_size]`, `out` `[T, q_heads, V]` of q's element type,
    `0 < V <= head_size`. The optional f32 `workspace` lets the GPU
    lowering split long contexts; its size counts V in place of head_size
    (docs/KernelABI.md). It is the only attention over an MLA collection's
    cache.

    ```mlir
    kvcache.mla_attention_ragged %q, %k, %row_offsets, %out {scale = 0.0721688 : f32, v_head_size = 512 : i64}
        : memref<?x128x576xbf16>, !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?xi32>, memref<?x128x512xbf16>
    kvcache.mla_attention_ragged %q, %k, %row_offsets, %out rope(%cos_sin) {rotary_dims = 64 : i64, scale = 0.0721688 : f32, style = "interleaved", v_head_size = 512 : i64}
        : memref<?x128x576xbf16>, !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?xi32>, memref<?x128x512xbf16>, memref<?x64xf32>
    %o, %l = kvcache.mla_attention_ragged %tq, %k, %offsets, %init lse(%lse_init) {scale = 0.0721688 : f32, v_head_size = 512 : i64}
        : tensor<?x16x576xbf16>, !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, tensor<?xi32>, tensor<?x16x512xbf16>, tensor<?x16xf32> -> tensor<?x16x512xbf16>, tensor<?x16xf32>
    ```
  }];
  let arguments = (ins
    Arg<KVCache_TokenRows, "queries", [MemRead]>:$q,
    Arg<KVCache_AnyLayerCache, "latent cache (keys; values in its first "
        "v_head_size elements)", [MemRead]>:$key_cache,
    Arg<KVCache_RaggedOffsets, "row offsets", [MemRead]>:$row_offsets,
    Arg<KVCache_TokenRows, "attention output", [MemWrite]>:$out,
    Arg<Optional<KVCache_Lse>, "log-sum-exp of each row and head",
        [MemWrite]>:$lse,
    Arg<Optional<KVCache_WorkspaceMemRef>, "scratch space",
        [MemRead, MemWrite]>:$workspace,
    Arg<Optional<KVCache_PerHead>, "sink logits", [MemRead]>:$sinks,
    Arg<Optional<KVCache_PerHead>, "ALiBi slopes", [MemRead]>:$alibi,
    Arg<Optional<KVCache_CosSin>, "cos/sin table of the rope clause",
        [MemRead]>:$cos_sin,
    Arg<Optional<KVCache_Positions>, "rotary position of each query row",
        [MemRead]>:$positions,
    F32Attr:$scale,
    I64Attr:$v_head_size,
    OptionalAttr<F32Attr>:$softcap,
    OptionalAttr<I64Attr>:$window,
    OptionalAttr<I64Attr>:$chunk,
    UnitAttr:$noncausal,
    OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$rotary_dims,
    OptionalAttr<KVCache_RopeStyleAttr>:$style);
  let assemblyFormat = [{
    $q `,` $key_cache `,` $row_offsets `,` $out
    (`,` $workspace^)? (`sinks` `(` $sinks^ `)`)? (`alibi` `(` $alibi^ `)`)?
    (`lse` `(` $lse^ `)`)? (`rope` `(` $cos_sin^ `)`)?
    (`positions` `(` $positions^ `)`)? attr-dict `:` type($q) `,`
    qualified(type($key_cache)) `,` type($row_offsets) `,`
    custom<OptionalOperandTypes>(type($out), ref($workspace), type($workspace),
                                 ref($sinks), type($sinks), ref($alibi),
                                 type($alibi), ref($lse), type($lse))
    (`,` type($cos_sin)^)? (`,` type($positions)^)? (`->` type($results)^)?
  }];
  let results = KVCache_KernelResults;
  let extraClassDeclaration = [{
    /// `out`, then `lse` if present.
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(),
                                         getOutMutable().getOperandNumber(),
                                         getLse() ? 2 : 1);
    }

    /// The values are the first v_head_size elements of the key rows.
    ::mlir::TypedValue<::mlir::kvcache::KVCacheTypeInterface>
    getValueCache() {
      return getKeyCache();
    }

    /// v_head_size.
    int64_t getValueHeadSize() { return getVHeadSize(); }
  }];
  let hasVerifier = 1;
}

def KVCache_MergeStatesOp
    : KVCache_Op<"merge_states", [KVCache_KernelOpInterface,
                                  KVCache_ArgumentChecks,
                                  KVCache_DestinationStyle]> {
  let summary = "Merges two partial attention results by their log-sum-exp";
  let description = [{
    Two attention results over disjoint key sets, each with the log-sum-exp
    `lse` that `attention_ragged`'s `lse(...)` clause writes, combined into
    the result over their union (cascade inference: a shared prefix and each
    sequence's own tokens attended separately). Per row and head, in f32:
    `lse = max + log(e^(lse_a - max) + e^(lse_b - max))` with
    `max = max(lse_a, lse_b)` and
    `out = e^(lse_a - lse) out_a + e^(lse_b - lse) out_b`, rounded once to
    the element type; when both are `-inf`, `out = 0` and `lse = -inf`. The
    three outs are `[T, q_heads, head_size]` of one type (f32, f16 or
    bf16), the lses `[T, q_heads]` f32; `out` may be `out_a` (in place), and
    the optional `lse` receives the merged log-sum-exp (it may be `lse_a`).
    Equal, within rounding, to attention over the union when at most one
    partial result had sinks (docs/Contract.md section 3.3). In the tensor
    form all six are tensors and the op returns the new `out`, then the new
    `lse`.

    ```mlir
    kvcache.merge_states %out_a, %lse_a, %out_b, %lse_b, %out_a, %lse_a
        : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>
    %o, %l = kvcache.merge_states %ta, %tla, %tb, %tlb, %ta, %tla
        : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x32xf32> -> tensor<?x32x128xf16>, tensor<?x32xf32>
    ```
  }];
  let arguments = (ins
    Arg<KVCache_TokenRows, "first partial output", [MemRead]>:$out_a,
    Arg<KVCache_Lse, "first log-sum-exp", [MemRead]>:$lse_a,
    Arg<KVCache_TokenRows, "second partial output", [MemRead]>:$out_b,
    Arg<KVCache_Lse, "second log-sum-exp", [MemRead]>:$lse_b,
    Arg<KVCache_TokenRows, "merged output", [MemWrite]>:$out,
    Arg<Optional<KVCache_Lse>, "merged log-sum-exp", [MemWrite]>:$lse);
  let results = KVCache_KernelResults;
  let assemblyFormat = [{
    $out_a `,` $lse_a `,` $out_b `,` $lse_b `,` $out (`,` $lse^)? attr-dict
    `:` type($out_a) `,` type($lse_a) `,` type($out_b) `,` type($lse_b) `,`
    type($out) (`,` type($lse)^)? (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    /// `out`, then `lse` if present.
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(),
                                         getOutMutable().getOperandNumber(),
                                         getLse() ? 2 : 1);
    }
  }];
  let hasVerifier = 1;
}

#endif // KVCACHE_IR_KVCACHEKERNELOPS_TD
