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

// -----

// A quantized head row is read one scale group at a time, unrolled: at
// most 64 groups (found by the fuzzer: 32768 groups of 2 took minutes).
!q = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 1024, page_size = 16, scales = block<8>>
func.func @many_scale_groups(%q: memref<?x8x1024xf16>, %k: !q, %v: !q, %offsets: memref<?xi32>, %out: memref<?x8x1024xf16>) {
  // expected-error @below {{cannot be lowered to the CPU: a head of 1024 elements holds more than 64 scale groups of 8; use block<G> with G >= head_size / 64}}
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x1024xf16>, !q, !q, memref<?xi32>, memref<?x8x1024xf16>
  return
}

// -----

// The CPU attention holds a head's q row and accumulator as whole vectors:
// heads of at most 4096 elements (a head of 65536, found by the fuzzer,
// took a minute to compile). 4097 and an MLA cache of 8192 get the error;
// test/Fuzz/cpu-attention-head-4096-compile-time.mlir lowers 4096.
!c4097 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 4097, page_size = 2>
func.func @head_4097(%q: memref<?x4x4097xf16>, %k: !c4097, %v: !c4097, %rows: memref<?xi32>, %out: memref<?x4x4097xf16>) {
  // expected-error @below {{cannot be lowered to the CPU: a head of 4097 elements is over 4096, the largest the CPU kernels hold in vectors; use a head size of at most 4096}}
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.5 : f32}
      : memref<?x4x4097xf16>, !c4097, !c4097, memref<?xi32>, memref<?x4x4097xf16>
  return
}

// -----

!m = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 8192, page_size = 4, mla = true>
func.func @mla_head_8192(%q: memref<?x16x8192xbf16>, %k: !m, %rows: memref<?xi32>, %out: memref<?x16x512xbf16>) {
  // expected-error @below {{cannot be lowered to the CPU: a head of 8192 elements is over 4096}}
  kvcache.mla_attention_ragged %q, %k, %rows, %out {scale = 0.125 : f32, v_head_size = 512 : i64}
      : memref<?x16x8192xbf16>, !m, memref<?xi32>, memref<?x16x512xbf16>
  return
}

// -----

// The CPU merge works on vectors of a head: its size must be static (it
// crashed the lowering before).
func.func @merge_dynamic_head_size(%a: memref<?x1x?xf32>, %la: memref<?x1xf32>, %b: memref<?x1x?xf32>, %lb: memref<?x1xf32>, %out: memref<?x1x?xf32>) {
  // expected-error @below {{cannot be lowered for the CPU: the head size (dim 2 of the outs) must be static (cast the outs to a static head size)}}
  kvcache.merge_states %a, %la, %b, %lb, %out : memref<?x1x?xf32>, memref<?x1xf32>, memref<?x1x?xf32>, memref<?x1xf32>, memref<?x1x?xf32>
  return
}

// -----

// The rope clause on q reads its table in vectors too.
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 2>
func.func @attention_strided_rope_table(%q: memref<?x1x4xf32>, %k: !cache, %v: !cache, %rows: memref<?xi32>, %out: memref<?x1x4xf32>, %cs: memref<?x4xf32, strided<[8, 2]>>) {
  // expected-error @below {{cannot be lowered: the rope clause's 'cos_sin' needs a unit innermost stride (copy it into a contiguous buffer)}}
  kvcache.attention_ragged %q, %k, %v, %rows, %out rope(%cs) {rotary_dims = 4 : i64, scale = 0.5 : f32, style = "half"}
      : memref<?x1x4xf32>, !cache, !cache, memref<?xi32>, memref<?x1x4xf32>, memref<?x4xf32, strided<[8, 2]>>
  return
}
