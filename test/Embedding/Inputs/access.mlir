// What an embedder's IR may hold: an access op in a function of its own
// (host code on every pipeline) and a kernel op (a kernel on the GPU ones).
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @read(%cache: !cache, %batch: index, %token: index, %head: index, %element: index) -> vector<8xf16> {
  %x = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
  return %x : vector<8xf16>
}
func.func @store(%cache: !cache, %new_rows: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new_rows, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}
