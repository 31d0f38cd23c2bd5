// RUN: kvcache-opt %s -split-input-file -verify-diagnostics -convert-kvcache-to-gpu

// A GQA group whose partial states do not fit in shared memory.
!big = !kvcache.paged_cache<f32, num_heads = 1, head_size = 256, page_size = 16>
func.func @attention_group_too_large(%q: memref<?x64x256xf32>, %k: !big, %v: !big, %rows: memref<?xi32>, %out: memref<?x64x256xf32>) {
  // expected-error @below {{needs more than 48 KiB of shared memory for a GQA group of 64 heads of 256 elements; use fewer query heads per KV head}}
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0625 : f32}
      : memref<?x64x256xf32>, !big, !big, memref<?xi32>, memref<?x64x256xf32>
  return
}
