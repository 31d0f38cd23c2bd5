// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// The verifier rules of the attention ops' rope clause on q
// (docs/Contract.md 4.7): store_ragged's, against q's head_size.

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @odd_rotary_dims(%q: memref<?x8x128xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x128xf16>, %cs: memref<?x63xf32>) {
  // expected-error @below {{'kvcache.attention_ragged' op expects 'rotary_dims' to be even and at most head_size = 128 (the last elements of each head rotate, in pairs), got 63}}
  kvcache.attention_ragged %q, %k, %k, %o, %out rope(%cs) {rotary_dims = 63 : i64, scale = 1.0 : f32, style = "half"}
      : memref<?x8x128xf16>, !c, !c, memref<?xi32>, memref<?x8x128xf16>, memref<?x63xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rotary_dims_past_head(%q: memref<?x8x128xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x128xf16>, %cs: memref<?x130xf32>) {
  // expected-error @below {{expects 'rotary_dims' to be even and at most head_size = 128 (the last elements of each head rotate, in pairs), got 130}}
  kvcache.attention_ragged %q, %k, %k, %o, %out rope(%cs) {rotary_dims = 130 : i64, scale = 1.0 : f32, style = "half"}
      : memref<?x8x128xf16>, !c, !c, memref<?xi32>, memref<?x8x128xf16>, memref<?x130xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @table_width(%q: memref<?x8x128xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x128xf16>, %cs: memref<?x128xf32>) {
  // expected-error @below {{expects 'cos_sin' to be [max_positions, rotary_dims = 64] (a static dim 1), got 'memref<?x128xf32>'}}
  kvcache.attention_ragged %q, %k, %k, %o, %out rope(%cs) {rotary_dims = 64 : i64, scale = 1.0 : f32, style = "half"}
      : memref<?x8x128xf16>, !c, !c, memref<?xi32>, memref<?x8x128xf16>, memref<?x128xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @no_attributes(%q: memref<?x8x128xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x128xf16>, %cs: memref<?x128xf32>) {
  // expected-error @below {{'kvcache.attention_ragged' op expects the attributes 'rotary_dims' and 'style' with its rope(...) clause}}
  kvcache.attention_ragged %q, %k, %k, %o, %out rope(%cs) {scale = 1.0 : f32, style = "half"}
      : memref<?x8x128xf16>, !c, !c, memref<?xi32>, memref<?x8x128xf16>, memref<?x128xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @attributes_without_clause(%q: memref<?x8x128xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x128xf16>) {
  // expected-error @below {{'kvcache.attention_ragged' op has 'positions', 'rotary_dims' or 'style' without the rope(%cos_sin) clause they belong to}}
  kvcache.attention_ragged %q, %k, %k, %o, %out {rotary_dims = 128 : i64, scale = 1.0 : f32}
      : memref<?x8x128xf16>, !c, !c, memref<?xi32>, memref<?x8x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @bad_style(%q: memref<?x8x128xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x128xf16>, %cs: memref<?x128xf32>) {
  // expected-error @below {{attribute 'style' failed to satisfy constraint}}
  kvcache.attention_ragged %q, %k, %k, %o, %out rope(%cs) {rotary_dims = 128 : i64, scale = 1.0 : f32, style = "neox"}
      : memref<?x8x128xf16>, !c, !c, memref<?xi32>, memref<?x8x128xf16>, memref<?x128xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @positions_of_i64(%q: memref<?x8x128xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x128xf16>, %cs: memref<?x128xf32>, %p: memref<?xi64>) {
  // expected-error @below {{operand #6 must be 1-D memref of i32 [tokens] in the default memory space, or a tensor of that shape}}
  kvcache.attention_ragged %q, %k, %k, %o, %out rope(%cs) positions(%p) {rotary_dims = 128 : i64, scale = 1.0 : f32, style = "half"}
      : memref<?x8x128xf16>, !c, !c, memref<?xi32>, memref<?x8x128xf16>, memref<?x128xf32>, memref<?xi64>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @mixed_forms(%q: memref<?x8x128xf16>, %k: !c, %o: memref<?xi32>, %out: memref<?x8x128xf16>, %cs: tensor<?x128xf32>) {
  // expected-error @below {{expects its data operands in one form, all memrefs or all tensors}}
  kvcache.attention_ragged %q, %k, %k, %o, %out rope(%cs) {rotary_dims = 128 : i64, scale = 1.0 : f32, style = "half"}
      : memref<?x8x128xf16>, !c, !c, memref<?xi32>, memref<?x8x128xf16>, tensor<?x128xf32>
  return
}

// -----

!m = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
func.func @mla_table_width(%q: memref<?x16x576xbf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x512xbf16>, %cs: memref<?x576xf32>) {
  // expected-error @below {{'kvcache.mla_attention_ragged' op expects 'cos_sin' to be [max_positions, rotary_dims = 64] (a static dim 1), got 'memref<?x576xf32>'}}
  kvcache.mla_attention_ragged %q, %k, %o, %out rope(%cs) {rotary_dims = 64 : i64, scale = 1.0 : f32, style = "half", v_head_size = 512 : i64}
      : memref<?x16x576xbf16>, !m, memref<?xi32>, memref<?x16x512xbf16>, memref<?x576xf32>
  return
}

// -----

!m = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
func.func @mla_style_without_rope(%q: memref<?x16x576xbf16>, %k: !m, %o: memref<?xi32>, %out: memref<?x16x512xbf16>) {
  // expected-error @below {{'kvcache.mla_attention_ragged' op has 'positions', 'rotary_dims' or 'style' without the rope(%cos_sin) clause they belong to}}
  kvcache.mla_attention_ragged %q, %k, %o, %out {scale = 1.0 : f32, style = "half", v_head_size = 512 : i64}
      : memref<?x16x576xbf16>, !m, memref<?xi32>, memref<?x16x512xbf16>
  return
}
