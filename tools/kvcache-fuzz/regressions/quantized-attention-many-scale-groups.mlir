// Attention over a quantized head of 65536 elements in scale groups of 2: the CPU lowering unrolled 32768 dequantizing loads per key and timed the fuzzer out; it now reports the head as an error.
!q = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 65536, page_size = 16, scales = block<2>>
func.func @quantized_attention_narrow_groups(%q: memref<?x8x65536xf16>, %k: !q, %v: !q, %offsets: memref<?xi32>, %out: memref<?x8x65536xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x65536xf16>, !q, !q, memref<?xi32>, memref<?x8x65536xf16>
  return
}
