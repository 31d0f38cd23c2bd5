// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// The verifier rules of quantized caches (docs/Contract.md, section 8).

// expected-error @below {{'scales' needs a storage element type (f8E4M3FN, f8E5M2 or i8), got 'f16'; drop 'scales' for a float cache}}
func.func private @scales_on_f16(!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>)

// -----

// expected-error @below {{'scales' needs a storage element type}}
func.func private @scales_on_f32(!kvcache.continuous_collection<f32, num_heads = 8, head_size = 128, scales = token_head>)

// -----

// expected-error @below {{expected the G of 'scales = block<G>' to be > 0 and to divide head_size (128), got 48}}
func.func private @group_not_dividing(!kvcache.paged_collection<i8, num_heads = 8, head_size = 128, page_size = 16, scales = block<48>>)

// -----

// expected-error @below {{expected the G of 'scales = block<G>' to be > 0 and to divide head_size (64), got 0}}
func.func private @group_zero(!kvcache.continuous_cache<f8E5M2, num_heads = 8, head_size = 64, scales = block<0>>)

// -----

// expected-error @below {{expected 'tensor', 'token_head' or 'block<G>'}}
// expected-error @below {{failed to parse KVCache_PagedCacheType parameter 'scales'}}
func.func private @unknown_kind(!kvcache.paged_cache<i8, num_heads = 8, head_size = 128, page_size = 16, scales = channel>)

// -----

!c = !kvcache.paged_collection<f8E4M3FN, num_heads = 2, head_size = 32, page_size = 4, scales = token_head>
func.func @missing_scales(%blocks: memref<?x2x?x4x2x32xf8E4M3FN>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32) {
  // expected-error @below {{expects a scales operand (the sixth) for a type with 'scales = token_head'}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b : memref<?x2x?x4x2x32xf8E4M3FN>, memref<?xi32>, memref<?x?xi32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<f8E4M3FN, num_heads = 2, head_size = 32, page_size = 4>
func.func @unexpected_scales(%blocks: memref<?x2x?x4x2x32xf8E4M3FN>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32, %s: memref<?x2xf32>) {
  // expected-error @below {{has a scales operand but its type has no 'scales'}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x4x2x32xf8E4M3FN>, memref<?xi32>, memref<?x?xi32>, memref<?x2xf32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<i8, num_heads = 2, head_size = 32, page_size = 4, scales = tensor>
func.func @tensor_rank(%blocks: memref<?x2x?x4x2x32xi8>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32, %s: memref<?xf32>) {
  // expected-error @below {{expects 'scales' to be a 2-D memref of 'f32' [num_layers, kv_dim], got 'memref<?xf32>'}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x4x2x32xi8>, memref<?xi32>, memref<?x?xi32>, memref<?xf32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<i8, num_heads = 2, head_size = 32, page_size = 4, scales = tensor>
func.func @tensor_f16(%blocks: memref<?x2x?x4x2x32xi8>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32, %s: memref<?x2xf16>) {
  // expected-error @below {{expects 'scales' to be a 2-D memref of 'f32'}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x4x2x32xi8>, memref<?xi32>, memref<?x?xi32>, memref<?x2xf16> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<i8, num_heads = 1, head_size = 32, page_size = 4, mla = true, scales = tensor>
func.func @tensor_kv_dim(%blocks: memref<?x1x?x4x1x32xi8>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32, %s: memref<?x2xf32>) {
  // expected-error @below {{expects 'scales' dim 1 (kv_dim) to be 1 as the cache type says, got 2}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x1x?x4x1x32xi8>, memref<?xi32>, memref<?x?xi32>, memref<?x2xf32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<f8E5M2, num_heads = 2, head_size = 32, page_size = 4, scales = token_head>
func.func @token_head_page_size(%blocks: memref<?x2x?x4x2x32xf8E5M2>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32, %s: memref<?x2x?x8x2xf32>) {
  // expected-error @below {{expects 'scales' dim 3 (page_size) to be 4 as the cache type says, got 8}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x4x2x32xf8E5M2>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x8x2xf32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<f8E5M2, num_heads = 2, head_size = 32, page_size = 4, scales = token_head>
func.func @token_head_dynamic_heads(%blocks: memref<?x2x?x4x2x32xf8E5M2>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32, %s: memref<?x2x?x4x?xf32>) {
  // expected-error @below {{expects 'scales' dim 4 (num_heads) to be static}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x4x2x32xf8E5M2>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x4x?xf32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<i8, num_heads = 2, head_size = 32, page_size = 4, scales = block<8>>
func.func @block_rank(%blocks: memref<?x2x?x4x2x32xi8>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32, %s: memref<?x2x?x4x2xf32>) {
  // expected-error @below {{expects 'scales' to be a 6-D memref of 'f32' [num_pages, kv_dim, num_layers, page_size, num_heads, head_size / G]}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x4x2x32xi8>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x4x2xf32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<i8, num_heads = 2, head_size = 32, page_size = 4, scales = block<8>>
func.func @block_groups(%blocks: memref<?x2x?x4x2x32xi8>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32, %s: memref<?x2x?x4x2x8xf32>) {
  // expected-error @below {{expects 'scales' dim 5 (head_size / G) to be 4 as the cache type says, got 8}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x4x2x32xi8>, memref<?xi32>, memref<?x?xi32>, memref<?x2x?x4x2x8xf32> -> !c
  return
}

// -----

!c = !kvcache.continuous_collection<i8, num_heads = 2, head_size = 32, scales = block<8>>
func.func @block_not_contiguous(%blocks: memref<?x2x?x?x2x32xi8>, %cl: memref<?xi32>, %lt: memref<?xi32>, %a: i32, %b: i32,
                                %s: memref<?x2x?x?x2x4xf32, strided<[?, ?, ?, 16, 4, 1], offset: ?>>) {
  // expected-error @below {{expects the dims of 'scales' after num_layers to be contiguous (strides [8, 4, 1])}}
  %c = kvcache.continuous_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x?x2x32xi8>, memref<?xi32>, memref<?xi32>, memref<?x2x?x?x2x4xf32, strided<[?, ?, ?, 16, 4, 1], offset: ?>> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<i8, num_heads = 2, head_size = 32, page_size = 4, scales = tensor>
func.func @scales_memory_space(%blocks: memref<?x2x?x4x2x32xi8>, %cl: memref<?xi32>, %lt: memref<?x?xi32>, %a: i32, %b: i32, %s: memref<?x2xf32, 3>) {
  // expected-error @below {{expects 'scales' in the default memory space}}
  %c = kvcache.paged_collection %blocks, %cl, %lt, %a, %b, %s : memref<?x2x?x4x2x32xi8>, memref<?xi32>, memref<?x?xi32>, memref<?x2xf32, 3> -> !c
  return
}

// -----

// A raw cache (no scales) reads only stored codes.
!raw = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 32, page_size = 4>
func.func @raw_dequantizing_load(%k: !raw, %i: index) -> vector<4xf32> {
  // expected-error @below {{expects the accessed element type to be the cache element type 'f8E4M3FN', got 'vector<4xf32>'}}
  %x = kvcache.load %k[%i, %i, %i, %i] : !raw -> vector<4xf32>
  return %x : vector<4xf32>
}

// -----

!k = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 32, page_size = 4, scales = token_head>
func.func @quantizing_store(%k: !k, %x: vector<4xf32>, %i: index) {
  // expected-error @below {{expects the accessed element type to be the cache element type 'f8E4M3FN' (stores take stored values; kvcache.store_ragged quantizes), got 'vector<4xf32>'}}
  kvcache.store %x, %k[%i, %i, %i, %i] : !k, vector<4xf32>
  return
}

// -----

!k = !kvcache.paged_cache<i8, num_heads = 2, head_size = 32, page_size = 4, scales = token_head>
func.func @dequantizing_f64(%k: !k, %i: index) -> f64 {
  // expected-error @below {{expects the accessed element type to be the cache element type 'i8' (raw) or f32, f16, bf16 (dequantized), got 'f64'}}
  %x = kvcache.page_load %k[%i, %i, %i, %i] : !k -> f64
  return %x : f64
}

// -----

!k = !kvcache.paged_cache<i8, num_heads = 2, head_size = 32, page_size = 4, scales = block<8>>
func.func @dequantizing_across_groups(%k: !k, %i: index) -> vector<16xf16> {
  // expected-error @below {{expects the width of a dequantizing vector to divide the scale group G = 8 of 'scales = block<8>' (one scale per vector), got 16}}
  %x = kvcache.load %k[%i, %i, %i, %i] : !k -> vector<16xf16>
  return %x : vector<16xf16>
}

// -----

!raw = !kvcache.paged_cache<i8, num_heads = 2, head_size = 32, page_size = 4>
func.func @raw_store_ragged_floats(%k: !raw, %rows: memref<?x2x32xf32>, %offsets: memref<?xi32>) {
  // expected-error @below {{expects 'values' to have the cache element type 'i8', got 'memref<?x2x32xf32>'}}
  kvcache.store_ragged %k, %rows, %offsets : !raw, memref<?x2x32xf32>, memref<?xi32>
  return
}

// -----

!k = !kvcache.paged_cache<f8E5M2, num_heads = 2, head_size = 32, page_size = 4, scales = tensor>
func.func @gather_ragged_other_codes(%k: !k, %rows: memref<?x2x32xf8E4M3FN>, %offsets: memref<?xi32>) {
  // expected-error @below {{expects 'out' to have the cache element type 'f8E5M2' (raw) or f32, f16, bf16 (quantized with the cache's scales), got 'memref<?x2x32xf8E4M3FN>'}}
  kvcache.gather_ragged %k, %rows, %offsets : !k, memref<?x2x32xf8E4M3FN>, memref<?xi32>
  return
}

// -----

!raw = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 32, page_size = 4>
func.func @attention_on_raw_codes(%q: memref<?x2x32xf16>, %k: !raw, %v: !raw, %offsets: memref<?xi32>, %out: memref<?x2x32xf16>) {
  // expected-error @below {{needs values, not raw stored codes: the 'f8E4M3FN' cache has no 'scales'; give its type 'scales = tensor | token_head | block<G>'}}
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x2x32xf16>, !raw, !raw, memref<?xi32>, memref<?x2x32xf16>
  return
}

// -----

!k = !kvcache.paged_cache<i8, num_heads = 2, head_size = 32, page_size = 4, scales = token_head>
func.func @attention_on_codes_q(%q: memref<?x2x32xi8>, %k: !k, %v: !k, %offsets: memref<?xi32>, %out: memref<?x2x32xi8>) {
  // expected-error @below {{expects 'q' of f32, f16 or bf16 over a quantized cache, got 'memref<?x2x32xi8>'}}
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x2x32xi8>, !k, !k, memref<?xi32>, memref<?x2x32xi8>
  return
}

// -----

!f16 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 32, page_size = 4>
func.func @scale_of_float_cache(%k: !f16, %i: index) -> f32 {
  // expected-error @below {{'kvcache.load_scale' op needs a cache with 'scales', got '!kvcache.paged_cache<f16, num_heads = 2, head_size = 32, page_size = 4>'; a float or raw cache has no scales}}
  %s = kvcache.load_scale %k[%i, %i, %i, %i] : !f16 -> f32
  return %s : f32
}

// -----

!raw = !kvcache.paged_cache<i8, num_heads = 2, head_size = 32, page_size = 4>
func.func @scale_of_raw_cache(%k: !raw, %s: f32, %i: index) {
  // expected-error @below {{'kvcache.page_store_scale' op needs a cache with 'scales'}}
  kvcache.page_store_scale %s, %k[%i, %i, %i, %i] : !raw
  return
}

// -----

!k = !kvcache.paged_cache<i8, num_heads = 2, head_size = 32, page_size = 4, scales = token_head>
func.func @scale_head_out_of_range(%k: !k, %s: f32, %i: index) {
  %c2 = arith.constant 2 : index
  // expected-error @below {{'kvcache.store_scale' op head index 2 is out of range for num_heads = 2}}
  kvcache.store_scale %s, %k[%i, %c2, %i, %i] : !k
  return
}

// -----

!k = !kvcache.paged_cache<f8E5M2, num_heads = 2, head_size = 32, page_size = 4, scales = block<8>>
func.func @scale_element_out_of_range(%k: !k, %i: index) -> f32 {
  %c32 = arith.constant 32 : index
  // expected-error @below {{'kvcache.page_load_scale' op element range [32, 33) exceeds head_size = 32}}
  %s = kvcache.page_load_scale %k[%i, %i, %i, %c32] : !k -> f32
  return %s : f32
}
