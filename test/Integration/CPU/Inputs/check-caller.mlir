// The function of docs/KernelABI.md ("Checking the arguments first"), for
// argument-checks-c-caller.test: its check routine and its C interface.
func.func @store(%c: !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>, %layer: index,
                 %new: memref<?x1x4xf32>, %row_offsets: memref<?xi32>) attributes {llvm.emit_c_interface} {
  %k = kvcache.get_key_cache %c[%layer] : !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>
  kvcache.store_ragged %k, %new, %row_offsets
      : !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>, memref<?x1x4xf32>, memref<?xi32>
  return
}
