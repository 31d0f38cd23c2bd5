// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// The verifier rules of mla_attention_ragged (docs/Contract.md 4.7), and
// attention_ragged's refusal of an MLA cache.

!c = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16>
func.func @not_mla(%q: memref<?x16x96xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x16x64xf16>) {
  // expected-error @below {{'kvcache.mla_attention_ragged' op expects the K cache of an MLA collection (mla = true), got '!kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16>'; kvcache.attention_ragged attends over K and V caches}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 64 : i64}
      : memref<?x16x96xf16>, !c, memref<?xi32>, memref<?x16x64xf16>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @attention_ragged_on_mla(%q: memref<?x16x96xf16>, %k: !m, %o: memref<?xi32>) {
  // expected-error @below {{'kvcache.attention_ragged' op does not support MLA caches (mla = true): kvcache.mla_attention_ragged attends over them}}
  kvcache.attention_ragged %q, %k, %k, %o, %q {scale = 1.0 : f32}
      : memref<?x16x96xf16>, !m, !m, memref<?xi32>, memref<?x16x96xf16>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @v_too_large(%q: memref<?x16x96xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x128xf16>) {
  // expected-error @below {{expects 'v_head_size' in [1, head_size = 96], got 128}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 128 : i64}
      : memref<?x16x96xf16>, !m, memref<?xi32>, memref<?x16x128xf16>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @v_zero(%q: memref<?x16x96xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x64xf16>) {
  // expected-error @below {{expects 'v_head_size' in [1, head_size = 96], got 0}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 0 : i64}
      : memref<?x16x96xf16>, !m, memref<?xi32>, memref<?x16x64xf16>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @out_not_v(%q: memref<?x16x96xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x96xf16>) {
  // expected-error @below {{expects 'out' to be [tokens, q_heads, v_head_size = 64] of q's element type, like 'memref<?x16x96xf16>' but for its last dim, got 'memref<?x16x96xf16>'}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 64 : i64}
      : memref<?x16x96xf16>, !m, memref<?xi32>, memref<?x16x96xf16>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @out_heads(%q: memref<?x16x96xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x8x64xf16>) {
  // expected-error @below {{expects 'out' to be [tokens, q_heads, v_head_size = 64]}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 64 : i64}
      : memref<?x16x96xf16>, !m, memref<?xi32>, memref<?x8x64xf16>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @out_element_type(%q: memref<?x16x96xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x64xf32>) {
  // expected-error @below {{of q's element type}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 64 : i64}
      : memref<?x16x96xf16>, !m, memref<?xi32>, memref<?x16x64xf32>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @q_head_size(%q: memref<?x16x64xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x64xf16>) {
  // expected-error @below {{head_size}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 64 : i64}
      : memref<?x16x64xf16>, !m, memref<?xi32>, memref<?x16x64xf16>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @clauses(%q: memref<?x16x96xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x64xf16>) {
  // expected-error @below {{takes 'window' or 'chunk', not both}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 64 : i64, window = 4 : i64, chunk = 8 : i64}
      : memref<?x16x96xf16>, !m, memref<?xi32>, memref<?x16x64xf16>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @sinks(%q: memref<?x16x96xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x64xf16>, %s: memref<8xf32>) {
  // expected-error @below {{expects 'sinks' to hold one f32 per query head, memref<16xf32>, got 'memref<8xf32>'}}
  kvcache.mla_attention_ragged %q, %k, %o, %out sinks(%s) {scale = 1.0 : f32, v_head_size = 64 : i64}
      : memref<?x16x96xf16>, !m, memref<?xi32>, memref<?x16x64xf16>, memref<8xf32>
  return
}

// -----

!m = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @mixed_forms(%q: tensor<?x16x96xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x64xf16>) {
  // expected-error @below {{expects its data operands in one form, all memrefs or all tensors}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 64 : i64}
      : tensor<?x16x96xf16>, !m, memref<?xi32>, memref<?x16x64xf16>
  return
}

// -----

!m = !kvcache.paged_cache<f8E4M3FN, num_heads = 1, head_size = 96, page_size = 16, mla = true>
func.func @raw_codes(%q: memref<?x16x96xf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x64xf16>) {
  // expected-error @below {{needs values, not raw stored codes}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, v_head_size = 64 : i64}
      : memref<?x16x96xf16>, !m, memref<?xi32>, memref<?x16x64xf16>
  return
}
