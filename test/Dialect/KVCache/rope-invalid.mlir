// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// The verifier rules of rope_ragged (docs/Contract.md 4.7).

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @odd_rotary_dims(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x63xf32>) {
  // expected-error @below {{'kvcache.rope_ragged' op expects 'rotary_dims' to be even and at most head_size = 128 (the last elements of each head rotate, in pairs), got 63}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 63 : i64, style = "half"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x63xf32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rotary_dims_past_head(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x256xf32>) {
  // expected-error @below {{expects 'rotary_dims' to be even and at most head_size = 128}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 256 : i64, style = "half"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x256xf32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rotary_dims_zero(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x0xf32>) {
  // expected-error @below {{attribute 'rotary_dims' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 0 : i64, style = "half"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x0xf32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @bad_style(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  // expected-error @below {{attribute 'style' failed to satisfy constraint: string attribute "interleaved" or "half"}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "neox"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @table_width(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x128xf32>) {
  // expected-error @below {{expects 'cos_sin' to be [max_positions, rotary_dims = 64] (a static dim 1), got 'memref<?x128xf32>'}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x128xf32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @table_f16(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf16>) {
  // expected-error @below {{operand #3 must be 2-D memref of f32 [max_positions, rotary_dims] in the default memory space}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x64xf16>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @q_out_type(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>, %out: memref<4x32x128xf16>) {
  // expected-error @below {{expects 'q' and 'q_out' to have one type, got 'memref<?x32x128xf16>' and 'memref<4x32x128xf16>'}}
  kvcache.rope_ragged %q, %k, %o, %cs, %out {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<4x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @q_element_type(%q: memref<?x32x128xbf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  // expected-error @below {{expects 'q' to have the cache element type 'f16', got 'memref<?x32x128xbf16>'}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xbf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x32x128xbf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @q_head_size(%q: memref<?x32x64xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  // expected-error @below {{expects 'q' dim 2 (head_size) to be 128 as the cache type says, got 64}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x64xf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x32x64xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @q_heads(%q: memref<?x12x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  // expected-error @below {{expects 'q' dim 1 (q_heads) to be a static multiple of num_heads = 8, got 'memref<?x12x128xf16>'}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x12x128xf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x12x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @positions_type(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>, %p: memref<?xi64>) {
  // expected-error @below {{operand #5 must be 1-D memref of i32 [tokens] in the default memory space}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q positions(%p) {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x32x128xf16>, memref<?xi64>
  return
}

// -----

!c = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
func.func @token_head_scales(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  // expected-error @below {{cannot rotate keys in place on a cache with per-token or per-block scales ('!kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>'): re-encoding would change the scale, and so the codes, of the elements that do not rotate; rotate the keys before they are stored (kvcache.store_ragged's clause rope(%cos_sin) {rotary_dims, style})}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<64>>
func.func @block_scales(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  // expected-error @below {{cannot rotate keys in place on a cache with per-token or per-block scales}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16>
func.func @raw_storage(%q: memref<?x32x128xf8E4M3FN>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  // expected-error @below {{needs values, not raw stored codes: the 'f8E4M3FN' cache has no 'scales'; give its type 'scales = tensor'}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xf8E4M3FN>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x32x128xf8E4M3FN>
  return
}

// -----

!c = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>
func.func @scaled_q_codes(%q: memref<?x32x128xf8E4M3FN>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  // expected-error @below {{expects 'q' of f32, f16 or bf16 over a quantized cache, got 'memref<?x32x128xf8E4M3FN>'}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xf8E4M3FN>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x32x128xf8E4M3FN>
  return
}
