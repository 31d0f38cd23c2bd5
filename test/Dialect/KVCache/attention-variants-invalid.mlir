// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// The verifier rules of attention_ragged's clauses and of merge_states
// (docs/Contract.md 4.7).

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @softcap_zero(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>) {
  // expected-error @below {{'kvcache.attention_ragged' op expects 'softcap' to be a finite f32 > 0, got 0}}
  kvcache.attention_ragged %q, %k, %k, %o, %q {scale = 1.0 : f32, softcap = 0.0 : f32}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @softcap_negative(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>) {
  // expected-error @below {{expects 'softcap' to be a finite f32 > 0, got -2}}
  kvcache.attention_ragged %q, %k, %k, %o, %q {scale = 1.0 : f32, softcap = -2.0 : f32}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @window_zero(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>) {
  // expected-error @below {{expects 'window' to be at least 1 (keys a row sees), got 0}}
  kvcache.attention_ragged %q, %k, %k, %o, %q {scale = 1.0 : f32, window = 0 : i64}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @chunk_negative(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>) {
  // expected-error @below {{expects 'chunk' to be at least 1 (keys a row sees), got -4}}
  kvcache.attention_ragged %q, %k, %k, %o, %q {scale = 1.0 : f32, chunk = -4 : i64}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @window_and_chunk(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>) {
  // expected-error @below {{takes 'window' or 'chunk', not both}}
  kvcache.attention_ragged %q, %k, %k, %o, %q {scale = 1.0 : f32, window = 8 : i64, chunk = 8 : i64}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @noncausal_window(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>) {
  // expected-error @below {{takes 'noncausal' without 'window' and 'chunk': a noncausal row sees every cached token}}
  kvcache.attention_ragged %q, %k, %k, %o, %q {scale = 1.0 : f32, window = 8 : i64, noncausal}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @noncausal_chunk(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>) {
  // expected-error @below {{takes 'noncausal' without 'window' and 'chunk'}}
  kvcache.attention_ragged %q, %k, %k, %o, %q {scale = 1.0 : f32, chunk = 8 : i64, noncausal}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @sinks_size(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %s: memref<8xf32>) {
  // expected-error @below {{expects 'sinks' to hold one f32 per query head, memref<32xf32>, got 'memref<8xf32>'}}
  kvcache.attention_ragged %q, %k, %k, %o, %q sinks(%s) {scale = 1.0 : f32}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>, memref<8xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @alibi_dynamic(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %s: memref<?xf32>) {
  // expected-error @below {{expects 'alibi' to hold one f32 per query head, memref<32xf32>, got 'memref<?xf32>'}}
  kvcache.attention_ragged %q, %k, %k, %o, %q alibi(%s) {scale = 1.0 : f32}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @alibi_f16(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %s: memref<32xf16>) {
  // expected-error @below {{operand #5 must be 1-D memref of f32 [q_heads] in the default memory space, or a tensor of that shape, but got 'memref<32xf16>'}}
  kvcache.attention_ragged %q, %k, %k, %o, %q alibi(%s) {scale = 1.0 : f32}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>, memref<32xf16>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @lse_heads(%q: memref<4x32x128xf16>, %k: !c, %o: memref<?xi32>, %l: memref<4x16xf32>) {
  // expected-error @below {{expects 'lse' to be [tokens, q_heads] = [4, 32] like the rows' first dims, got 'memref<4x16xf32>'}}
  kvcache.attention_ragged %q, %k, %k, %o, %q lse(%l) {scale = 1.0 : f32}
      : memref<4x32x128xf16>, !c, !c, memref<?xi32>, memref<4x32x128xf16>, memref<4x16xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @lse_rows(%q: memref<4x32x128xf16>, %k: !c, %o: memref<?xi32>, %l: memref<5x32xf32>) {
  // expected-error @below {{expects 'lse' to be [tokens, q_heads] = [4, 32]}}
  kvcache.attention_ragged %q, %k, %k, %o, %q lse(%l) {scale = 1.0 : f32}
      : memref<4x32x128xf16>, !c, !c, memref<?xi32>, memref<4x32x128xf16>, memref<5x32xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @lse_strided(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %l: memref<?x32xf32, strided<[64, 1]>>) {
  // expected-error @below {{expects 'lse' to be row-major (the identity layout)}}
  kvcache.attention_ragged %q, %k, %k, %o, %q lse(%l) {scale = 1.0 : f32}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>, memref<?x32xf32, strided<[64, 1]>>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @missing_type(%q: memref<?x32x128xf16>, %k: !c, %o: memref<?xi32>, %s: memref<32xf32>) {
  // expected-error @+2 {{expected ','}}
  kvcache.attention_ragged %q, %k, %k, %o, %q sinks(%s) {scale = 1.0 : f32}
      : memref<?x32x128xf16>, !c, !c, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

func.func @merge_types(%a: memref<?x8x64xf16>, %la: memref<?x8xf32>, %b: memref<?x8x64xf32>) {
  // expected-error @below {{'kvcache.merge_states' op expects 'out_b' to have the type of 'out', 'memref<?x8x64xf16>', got 'memref<?x8x64xf32>'}}
  kvcache.merge_states %a, %la, %b, %la, %a : memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf32>, memref<?x8xf32>, memref<?x8x64xf16>
  return
}

// -----

func.func @merge_element(%a: memref<?x8x64xi8>, %la: memref<?x8xf32>) {
  // expected-error @below {{merges f32, f16 or bf16 results, got 'memref<?x8x64xi8>'}}
  kvcache.merge_states %a, %la, %a, %la, %a : memref<?x8x64xi8>, memref<?x8xf32>, memref<?x8x64xi8>, memref<?x8xf32>, memref<?x8x64xi8>
  return
}

// -----

func.func @merge_dynamic_heads(%a: memref<?x?x64xf16>, %la: memref<?x8xf32>) {
  // expected-error @below {{expects the results' dim 1 (q_heads) to be static}}
  kvcache.merge_states %a, %la, %a, %la, %a : memref<?x?x64xf16>, memref<?x8xf32>, memref<?x?x64xf16>, memref<?x8xf32>, memref<?x?x64xf16>
  return
}

// -----

func.func @merge_lse(%a: memref<?x8x64xf16>, %la: memref<?x8xf32>, %lb: memref<?x4xf32>) {
  // expected-error @below {{expects 'lse_b' to be [tokens, q_heads] = [?, 8] like the rows' first dims, got 'memref<?x4xf32>'}}
  kvcache.merge_states %a, %la, %a, %lb, %a : memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf16>, memref<?x4xf32>, memref<?x8x64xf16>
  return
}
