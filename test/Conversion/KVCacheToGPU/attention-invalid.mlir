// RUN: kvcache-opt %s -split-input-file -verify-diagnostics -convert-kvcache-to-gpu

// One key's partial state (head_size + 2 floats) of one head does not fit in
// 48 KiB of shared memory.
!huge = !kvcache.paged_cache<f32, num_heads = 1, head_size = 16384, page_size = 16>
func.func @attention_head_too_large(%q: memref<?x1x16384xf32>, %k: !huge, %v: !huge, %rows: memref<?xi32>, %out: memref<?x1x16384xf32>) {
  // expected-error @below {{cannot be lowered to the GPU: one key of 16384 elements needs more than 48 KiB of shared memory; use a smaller head size}}
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0625 : f32}
      : memref<?x1x16384xf32>, !huge, !huge, memref<?xi32>, memref<?x1x16384xf32>
  return
}

// -----

// Head indices on the device stay below 2^31.
!c = !kvcache.paged_cache<f16, num_heads = 1, head_size = 8, page_size = 16>
func.func @attention_too_many_heads(%q: memref<?x2147483648x8xf16>, %k: !c, %v: !c, %rows: memref<?xi32>, %out: memref<?x2147483648x8xf16>) {
  // expected-error @below {{cannot be lowered to the GPU: q has 2147483648 heads, more than 2^31 - 1}}
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0625 : f32}
      : memref<?x2147483648x8xf16>, !c, !c, memref<?xi32>, memref<?x2147483648x8xf16>
  return
}

// -----

// Groups of any size are lowered: the 64 heads of the group that failed
// here before (64 x 256 f32 partial states) take 8 passes of 8 heads.
!big = !kvcache.paged_cache<f32, num_heads = 1, head_size = 256, page_size = 16>
func.func @attention_large_group(%q: memref<?x64x256xf32>, %k: !big, %v: !big, %rows: memref<?xi32>, %out: memref<?x64x256xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0625 : f32}
      : memref<?x64x256xf32>, !big, !big, memref<?xi32>, memref<?x64x256xf32>
  return
}

// -----

// A dequantizing K/V slice lies within one scale group: with at most 32
// lanes per key, a head of 128 has slices of 4 or more elements.
!q = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 128, page_size = 16, scales = block<2>>
func.func @quantized_attention_narrow_groups(%q: memref<?x8x128xf16>, %k: !q, %v: !q, %offsets: memref<?xi32>, %out: memref<?x8x128xf16>) {
  // expected-error @below {{'kvcache.attention_ragged' op cannot be lowered to the GPU: the scale groups of 2 elements are narrower than a lane's slice of 4 (at most 32 lanes per key); use a larger G}}
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x128xf16>, !q, !q, memref<?xi32>, memref<?x8x128xf16>
  return
}

// -----

// A quantizing store computes each scale group's amax over the lanes that
// hold its chunks: at most a warp's 32, a power of two.
!q = !kvcache.paged_cache<f8E5M2, num_heads = 2, head_size = 256, page_size = 16, scales = token_head>
func.func @quantizing_store_long_group(%k: !q, %new: memref<?x2x256xf32>, %offsets: memref<?xi32>) {
  // expected-error @below {{'kvcache.store_ragged' op cannot be lowered to a GPU kernel: a scale group of 64 chunks of 4 elements is not a power of two of at most 32 (one warp computes its amax); use a block<G> scale with a smaller G or quantize on the CPU}}
  kvcache.store_ragged %k, %new, %offsets : !q, memref<?x2x256xf32>, memref<?xi32>
  return
}

// -----

!q = !kvcache.paged_cache<i8, num_heads = 1, head_size = 96, page_size = 16, scales = block<24>>
func.func @quantizing_store_odd_group(%k: !q, %new: memref<?x1x96xf32>, %offsets: memref<?xi32>) {
  // expected-error @below {{a scale group of 6 chunks of 4 elements is not a power of two of at most 32}}
  kvcache.store_ragged %k, %new, %offsets : !q, memref<?x1x96xf32>, memref<?xi32>
  return
}

// -----

func.func @merge_strided(%a: memref<?x8x64xf16, strided<[1024, 128, 2]>>, %la: memref<?x8xf32>) {
  // expected-error @below {{'kvcache.merge_states' op cannot be lowered: the outs need a unit innermost stride (copy them into contiguous buffers)}}
  kvcache.merge_states %a, %la, %a, %la, %a : memref<?x8x64xf16, strided<[1024, 128, 2]>>, memref<?x8xf32>, memref<?x8x64xf16, strided<[1024, 128, 2]>>, memref<?x8xf32>, memref<?x8x64xf16, strided<[1024, 128, 2]>>
  return
}

// -----

// The rope clause on q reads its table in vectors.
!c = !kvcache.paged_cache<f16, num_heads = 1, head_size = 8, page_size = 16>
func.func @attention_strided_rope_table(%q: memref<?x1x8xf16>, %k: !c, %v: !c, %rows: memref<?xi32>, %out: memref<?x1x8xf16>, %cs: memref<?x8xf32, strided<[16, 2]>>) {
  // expected-error @below {{cannot be lowered: the rope clause's 'cos_sin' needs a unit innermost stride (copy it into a contiguous buffer)}}
  kvcache.attention_ragged %q, %k, %v, %rows, %out rope(%cs) {rotary_dims = 8 : i64, scale = 0.5 : f32, style = "interleaved"}
      : memref<?x1x8xf16>, !c, !c, memref<?xi32>, memref<?x1x8xf16>, memref<?x8xf32, strided<[16, 2]>>
  return
}
