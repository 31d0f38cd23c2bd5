// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// The verifier rules of the kernel ops' tensor forms (docs/Contract.md
// section 3.5): one form per op, the inits' new values as results, and the
// same shape checks as the memref form.

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @mixed_forms(%k: !k, %rows: tensor<?x8x128xf16>, %o: memref<?xi32>) {
  // expected-error @below {{'kvcache.store_ragged' op expects its data operands in one form, all memrefs or all tensors, got 'tensor<?x8x128xf16>' and 'memref<?xi32>'}}
  kvcache.store_ragged %k, %rows, %o : !k, tensor<?x8x128xf16>, memref<?xi32>
  return
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @mixed_forms_attention(%q: tensor<?x32x128xf16>, %k: !k, %o: tensor<?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{expects its data operands in one form, all memrefs or all tensors, got 'tensor<?x32x128xf16>' and 'memref<?x32x128xf16>'}}
  kvcache.attention_ragged %q, %k, %k, %o, %out {scale = 1.0 : f32}
      : tensor<?x32x128xf16>, !k, !k, tensor<?xi32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @pairs_shape(%c: !c, %pairs: tensor<?x3xi32>) {
  // expected-error @below {{operand #1 must be 2-D memref of i32 [num_pairs, 2] of (src, dst) page pairs in the default memory space, or a tensor of that shape, but got 'tensor<?x3xi32>'}}
  kvcache.copy_pages %c, %pairs : !c, tensor<?x3xi32>
  return
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @missing_result(%k: !k, %out: tensor<?x8x128xf16>, %o: tensor<?xi32>) {
  // expected-error @below {{expected the number of tensor results (0) to be equal to the number of output tensors (1)}}
  kvcache.gather_ragged %k, %out, %o : !k, tensor<?x8x128xf16>, tensor<?xi32>
  return
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @missing_lse_result(%q: tensor<?x32x128xf16>, %k: !k, %o: tensor<?xi32>, %lse: tensor<?x32xf32>) {
  // expected-error @below {{expected the number of tensor results (1) to be equal to the number of output tensors (2)}}
  %r = kvcache.attention_ragged %q, %k, %k, %o, %q lse(%lse) {scale = 1.0 : f32}
      : tensor<?x32x128xf16>, !k, !k, tensor<?xi32>, tensor<?x32x128xf16>, tensor<?x32xf32> -> tensor<?x32x128xf16>
  return
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @wrong_result_type(%k: !k, %out: tensor<?x8x128xf16>, %o: tensor<?xi32>) {
  // expected-error @below {{expected type of operand #1 ('tensor<?x8x128xf16>') to match type of corresponding result ('tensor<4x8x128xf16>')}}
  %r = kvcache.gather_ragged %k, %out, %o : !k, tensor<?x8x128xf16>, tensor<?xi32> -> tensor<4x8x128xf16>
  return
}

// -----

func.func @memref_form_result(%a: memref<?x32x128xf16>, %la: memref<?x32xf32>) {
  // expected-error @below {{has results only in the tensor form (the memref form writes its operands in place), got 1}}
  %r = kvcache.merge_states %a, %la, %a, %la, %a
      : memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16>, memref<?x32xf32>, memref<?x32x128xf16> -> tensor<?x32x128xf16>
  return
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rows_shape(%k: !k, %out: tensor<?x4x128xf16>, %o: tensor<?xi32>) {
  // expected-error @below {{expects 'out' dim 1 (num_heads) to be 8 as the cache type says, got 4}}
  %r = kvcache.gather_ragged %k, %out, %o : !k, tensor<?x4x128xf16>, tensor<?xi32> -> tensor<?x4x128xf16>
  return
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rows_element_type(%k: !k, %rows: tensor<?x8x128xf32>, %o: tensor<?xi32>) {
  // expected-error @below {{expects 'values' to have the cache element type 'f16', got 'tensor<?x8x128xf32>'}}
  kvcache.store_ragged %k, %rows, %o : !k, tensor<?x8x128xf32>, tensor<?xi32>
  return
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @sinks_shape(%q: tensor<?x32x128xf16>, %k: !k, %o: tensor<?xi32>, %s: tensor<8xf32>) {
  // expected-error @below {{expects 'sinks' to hold one f32 per query head, tensor<32xf32>, got 'tensor<8xf32>'}}
  %r = kvcache.attention_ragged %q, %k, %k, %o, %q sinks(%s) {scale = 1.0 : f32}
      : tensor<?x32x128xf16>, !k, !k, tensor<?xi32>, tensor<?x32x128xf16>, tensor<8xf32> -> tensor<?x32x128xf16>
  return
}

// -----

func.func @lse_shape(%a: tensor<?x32x128xf16>, %la: tensor<?x32xf32>, %lb: tensor<?x16xf32>) {
  // expected-error @below {{expects 'lse_b' to be [tokens, q_heads] = [?, 32] like the rows' first dims, got 'tensor<?x16xf32>'}}
  %r = kvcache.merge_states %a, %la, %a, %lb, %a
      : tensor<?x32x128xf16>, tensor<?x32xf32>, tensor<?x32x128xf16>, tensor<?x16xf32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>
  return
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @workspace_tensor(%q: tensor<?x32x128xf16>, %k: !k, %o: tensor<?xi32>, %ws: tensor<?xf32>) {
  // expected-error @below {{operand #5 must be 1-D memref of f32 in the default memory space, but got 'tensor<?xf32>'}}
  %r = kvcache.attention_ragged %q, %k, %k, %o, %q, %ws {scale = 1.0 : f32}
      : tensor<?x32x128xf16>, !k, !k, tensor<?xi32>, tensor<?x32x128xf16>, tensor<?xf32> -> tensor<?x32x128xf16>
  return
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @mixed_forms_rope(%q: tensor<?x32x128xf16>, %k: !k, %o: tensor<?xi32>, %cs: memref<?x128xf32>) -> tensor<?x32x128xf16> {
  // expected-error @below {{'kvcache.rope_ragged' op expects its data operands in one form, all memrefs or all tensors, got 'tensor<?x32x128xf16>' and 'memref<?x128xf32>'}}
  %r = kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 128 : i64, style = "half"}
      : tensor<?x32x128xf16>, !k, tensor<?xi32>, memref<?x128xf32>, tensor<?x32x128xf16> -> tensor<?x32x128xf16>
  return %r : tensor<?x32x128xf16>
}

// -----

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rope_without_result(%q: tensor<?x32x128xf16>, %k: !k, %o: tensor<?xi32>, %cs: tensor<?x128xf32>) {
  // expected-error @below {{expected the number of tensor results (0) to be equal to the number of output tensors (1)}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 128 : i64, style = "half"}
      : tensor<?x32x128xf16>, !k, tensor<?xi32>, tensor<?x128xf32>, tensor<?x32x128xf16>
  return
}
