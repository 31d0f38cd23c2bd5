// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// The verifier rules of store_ragged's rope clause (docs/Contract.md 4.7).

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @odd_rotary_dims(%k: !c, %new: memref<?x8x128xf16>, %o: memref<?xi32>, %cs: memref<?x63xf32>) {
  // expected-error @below {{'kvcache.store_ragged' op expects 'rotary_dims' to be even and at most head_size = 128 (the last elements of each head rotate, in pairs), got 63}}
  kvcache.store_ragged %k, %new, %o rope(%cs) {rotary_dims = 63 : i64, style = "half"}
      : !c, memref<?x8x128xf16>, memref<?xi32>, memref<?x63xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @table_width(%k: !c, %new: memref<?x8x128xf16>, %o: memref<?xi32>, %cs: memref<?x128xf32>) {
  // expected-error @below {{expects 'cos_sin' to be [max_positions, rotary_dims = 64] (a static dim 1), got 'memref<?x128xf32>'}}
  kvcache.store_ragged %k, %new, %o rope(%cs) {rotary_dims = 64 : i64, style = "half"}
      : !c, memref<?x8x128xf16>, memref<?xi32>, memref<?x128xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @no_attributes(%k: !c, %new: memref<?x8x128xf16>, %o: memref<?xi32>, %cs: memref<?x128xf32>) {
  // expected-error @below {{expects the attributes 'rotary_dims' and 'style' with its rope(...) clause}}
  kvcache.store_ragged %k, %new, %o rope(%cs) {rotary_dims = 128 : i64}
      : !c, memref<?x8x128xf16>, memref<?xi32>, memref<?x128xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @attributes_without_clause(%k: !c, %new: memref<?x8x128xf16>, %o: memref<?xi32>) {
  // expected-error @below {{has 'positions', 'rotary_dims' or 'style' without the rope(%cos_sin) clause they belong to}}
  kvcache.store_ragged %k, %new, %o {rotary_dims = 128 : i64, style = "half"}
      : !c, memref<?x8x128xf16>, memref<?xi32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @bad_style(%k: !c, %new: memref<?x8x128xf16>, %o: memref<?xi32>, %cs: memref<?x128xf32>) {
  // expected-error @below {{attribute 'style' failed to satisfy constraint}}
  kvcache.store_ragged %k, %new, %o rope(%cs) {rotary_dims = 128 : i64, style = "neox"}
      : !c, memref<?x8x128xf16>, memref<?xi32>, memref<?x128xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
func.func @codes(%k: !c, %new: memref<?x8x128xf8E4M3FN>, %o: memref<?xi32>, %cs: memref<?x128xf32>) {
  // expected-error @below {{rotates f32, f16 or bf16 rows (rope clause), not stored 'f8E4M3FN' codes}}
  kvcache.store_ragged %k, %new, %o rope(%cs) {rotary_dims = 128 : i64, style = "half"}
      : !c, memref<?x8x128xf8E4M3FN>, memref<?xi32>, memref<?x128xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @mixed_forms(%k: !c, %new: memref<?x8x128xf16>, %o: memref<?xi32>, %cs: tensor<?x128xf32>) {
  // expected-error @below {{expects its data operands in one form, all memrefs or all tensors}}
  kvcache.store_ragged %k, %new, %o rope(%cs) {rotary_dims = 128 : i64, style = "half"}
      : !c, memref<?x8x128xf16>, memref<?xi32>, tensor<?x128xf32>
  return
}
