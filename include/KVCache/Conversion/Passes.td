//===- Passes.td - kvcache conversion passes ---------------*- tablegen -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_PASSES_TD
#define KVCACHE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertKVCacheToMemRef : Pass<"convert-kvcache-to-memref", "ModuleOp"> {
  let summary = "Lower kvcache access ops to memref, vector, arith and scf";
  let description = [{
    Lowers every access op (`paged_collection`, `get_key_cache`,
    `get_value_cache`, `cache_length`, `max_seq_length`, `max_cache_length`,
    `lookup`, `load`, `store`, `page_load`, `page_store`, `tile`) in host
    functions and in `gpu.func` kernels alike, and decomposes values of the two
    cache types 1:N (the kernel ABI):

    - `!kvcache.paged_collection` becomes its five constructor operands, with
      `blocks` cast to `memref<? x kv_dim x ? x P x H x D x elt,
      strided<[?, ?, ?, H*D, D, 1], offset: ?>>` and the metadata to
      `memref<?xi32>`, `memref<?x?xi32>`, `i32`, `i32`;
    - `!kvcache.paged_cache` becomes the layer's view
      `memref<? x P x H x D x elt, strided<[?, H*D, D, 1], offset: ?>>` (a
      `memref.subview` of `blocks` at `[*, kv, layer, *, *, *]`), followed by
      the same four metadata values.

    Function signatures, calls and returns (`func`, `gpu.func`,
    `gpu.launch_func`, `gpu.return`) and `scf`/`cf` region boundaries are
    rewritten accordingly. A lookup is `lookup_table[b, t / P]` (unsigned i32)
    and `t mod P`, computed in i32 (shifts and masks for a power-of-two page
    size); element addresses are computed in `index`. Vector accesses are
    emitted with the alignment of their whole width.

    Before:
    ```mlir
    %x = kvcache.load %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
    ```
    After (schematically):
    ```mlir
    %t32 = arith.index_castui %t : index to i32
    %col32 = arith.shrui %t32, %c4 : i32
    %slot32 = arith.andi %t32, %c15 : i32
    %page32 = memref.load %lookup_table[%b, %col] : memref<?x?xi32>
    %page = arith.index_castui %page32 : i32 to index
    %x = vector.load %view[%page, %slot, %h, %d] {alignment = 16 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<8xf16>
    ```

    With `checked=true` every access is checked at run time (batch index,
    logical page against the lookup-table columns, physical page against
    `num_pages`, layer, head, slot, element range and vector alignment, tile
    alignment); caches with `assert_write_mode = 1` get the same checks on
    every write. A failed check prints a message naming the op, the bound and
    the source location to stderr and aborts (host code), or fails a device
    assertion (`cf.assert`, inside GPU code).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"checked", "checked", "bool", /*default=*/"false",
           "Check every access (reads too) at run time">,
  ];
}

#endif // KVCACHE_CONVERSION_PASSES_TD
