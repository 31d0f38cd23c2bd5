//===- TestKVOps.td - test_kv operations -------------------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef TESTKV_TESTKVOPS_TD
#define TESTKV_TESTKVOPS_TD

include "TestKVTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// A page-table memref: 1-D i32, identity layout, default memory space (the
/// kernel ABI passes it as `memref<?xi32>`).
def TestKV_IndexVector : Type<And<[
    MemRefRankOf<[I32], [1]>.predicate,
    CPred<"::llvm::cast<::mlir::MemRefType>($_self).getLayout().isIdentity()">,
    CPred<"!::llvm::cast<::mlir::MemRefType>($_self).getMemorySpace()">]>,
  "1-D memref of i32 with the identity layout in the default memory space",
  "::mlir::MemRefType">;

def TestKV_CSRCollectionOp : TestKV_Op<"csr_collection",
    [Pure, DeclareOpInterfaceMethods<KVCache_CollectionOpInterface,
                                     ["getStaticNumLayers"]>]> {
  let summary = "Builds a CSR-paged KV cache collection from its lowered values";
  let description = [{
    Bundles the six lowered values of a `!test_kv.csr_collection`: `blocks`
    (`[num_pages, kv_dim, num_layers, page_size, num_heads, head_size]`, dims
    1, 3, 4, 5 static and equal to the type's, inner three dims contiguous),
    `kv_indptr` (batch + 1 entries), `kv_indices`, `cache_lengths` and the
    i32 scalars `max_seq_length` and `max_cache_length`.

    ```mlir
    %c = test_kv.csr_collection %blocks, %kv_indptr, %kv_indices, %cache_lengths, %max_seq_length, %max_cache_length
           : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<?xi32>
           -> !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
    ```
  }];
  let arguments = (ins
    MemRefRankOf<[AnyType], [6]>:$blocks,
    TestKV_IndexVector:$kv_indptr,
    TestKV_IndexVector:$kv_indices,
    TestKV_IndexVector:$cache_lengths,
    I32:$max_seq_length,
    I32:$max_cache_length
  );
  let results = (outs TestKV_CSRCollectionType:$result);
  let assemblyFormat = [{
    $blocks `,` $kv_indptr `,` $kv_indices `,` $cache_lengths `,`
    $max_seq_length `,` $max_cache_length attr-dict `:` type($blocks) `,`
    type($kv_indptr) `,` type($kv_indices) `,` type($cache_lengths) `->`
    qualified(type($result))
  }];
  let hasVerifier = 1;
}

#endif // TESTKV_TESTKVOPS_TD
