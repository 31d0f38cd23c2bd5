//===- KVCacheTransferOps.td - kvcache page transfer ops ---*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
// Pages moved between processes (disaggregated prefill and decode), lowered
// by convert-kvcache-to-memref to the `mpi` dialect. Included by
// KVCacheOps.td after KVCacheKernelOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHETRANSFEROPS_TD
#define KVCACHE_IR_KVCACHETRANSFEROPS_TD

//===----------------------------------------------------------------------===//
// Page transfer between processes
//===----------------------------------------------------------------------===//

// A 1-D memref of i32 in the default memory space: sequences or page ids.
def KVCache_TransferIds
    : ConfinedType<MemRefRankOf<[I32], [1]>, [KVCache_InDefaultMemorySpacePred],
                   "1-D memref of i32 in the default memory space",
                   "::mlir::MemRefType">;

def KVCache_SendPagesOp : KVCache_Op<"send_pages"> {
  let summary = "Sends the pages of chosen sequences to another process";
  let description = [{
    Sends, over MPI's world communicator, the pages that hold sequence
    `b`'s `cache_length(b)` tokens (`ceil(cache_length(b) / page_size)`
    pages, through the lookup table) for each `b` of `sequences` in order,
    each page whole: every layer, K and V, with its scales for the per-page
    scale kinds (`token_head`, `block<G>`; a `tensor` scale is the
    caller's to keep equal). `rank` receives them with
    `kvcache.recv_pages` on a collection of the same type; the sender
    writes nothing of its own cache. Lowered to the `mpi` dialect: a
    handshake, then one non-blocking message per run of pages consecutive
    on both sides of at least `transfer-direct-bytes`, all in flight at
    once, and the shorter runs packed into staging messages
    (docs/Contract.md section 3.6).

    ```mlir
    kvcache.send_pages %c, %sequences, %rank : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>
    ```
  }];
  // The collection's write effect stands for the message: the op has no
  // result and must neither be erased nor moved across other transfers.
  let arguments = (ins
    Arg<KVCache_PagedCollectionType, "pages sent", [MemRead, MemWrite]>:$collection,
    Arg<KVCache_TransferIds, "sequences sent", [MemRead]>:$sequences,
    I32:$rank);
  let assemblyFormat = [{
    $collection `,` $sequences `,` $rank attr-dict `:`
    qualified(type($collection)) `,` type($sequences)
  }];
}

def KVCache_RecvPagesOp : KVCache_Op<"recv_pages"> {
  let summary = "Receives pages from another process into chosen page ids";
  let description = [{
    Receives the pages `kvcache.send_pages` on rank `rank` sends, the
    `i`-th into physical page `dst_pages[i]` (every layer, K and V, and the
    per-page scales). The caller then points its own `lookup_table` at them
    and sets its `cache_lengths`: the op writes pages only (the metadata is
    read-only while a collection is live). `dst_pages` must hold as many
    ids as the sender sends pages, each below `num_pages` and none twice:
    with `checked=true` a violation is reported before any page is
    written; without, a count that differs from the sender's writes
    nothing (docs/Contract.md section 3.6).

    ```mlir
    kvcache.recv_pages %c, %dst_pages, %rank : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>
    ```
  }];
  let arguments = (ins
    Arg<KVCache_PagedCollectionType, "pages received", [MemRead, MemWrite]>:$collection,
    Arg<KVCache_TransferIds, "destination page ids", [MemRead]>:$dst_pages,
    I32:$rank);
  let assemblyFormat = [{
    $collection `,` $dst_pages `,` $rank attr-dict `:`
    qualified(type($collection)) `,` type($dst_pages)
  }];
}

#endif // KVCACHE_IR_KVCACHETRANSFEROPS_TD
