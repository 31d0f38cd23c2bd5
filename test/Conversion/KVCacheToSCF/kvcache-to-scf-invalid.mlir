// RUN: kvcache-opt %s -split-input-file -verify-diagnostics -convert-kvcache-to-scf

// The CPU attention loads q and out rows as vectors: they need a unit
// innermost stride.
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 2>
func.func @attention_strided_q(%q: memref<?x1x4xf32, strided<[8, 8, 2]>>, %k: !cache, %v: !cache, %rows: memref<?xi32>, %out: memref<?x1x4xf32, strided<[8, 8, 2]>>) {
  // expected-error @below {{cannot be lowered: q and out need a unit innermost stride (copy them into contiguous buffers)}}
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.5 : f32}
      : memref<?x1x4xf32, strided<[8, 8, 2]>>, !cache, !cache, memref<?xi32>, memref<?x1x4xf32, strided<[8, 8, 2]>>
  return
}
