!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @read(%cache: !cache, %batch: index, %token: index, %head: index, %element: index) -> vector<8xf16> {
  %x = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
  return %x : vector<8xf16>
}
