// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// Verifier rules of the continuous-batching kind (docs/Contract.md, sections
// 2, 4.1-4.6): one error per rule.

// expected-error @below {{struct is missing required parameter: head_size}}
func.func private @no_head_size(!kvcache.continuous_collection<f16, num_heads = 8>)

// -----

// A continuous collection has no page size.
// expected-error @below {{duplicate or unknown struct parameter name: page_size}}
func.func private @page_size(!kvcache.continuous_collection<f16, num_heads = 8, head_size = 128, page_size = 16>)

// -----

// expected-error @below {{expected num_heads > 0, got 0}}
func.func private @zero_heads(!kvcache.continuous_cache<f16, num_heads = 0, head_size = 128>)

// -----

// expected-error @below {{expected num_heads * head_size < 2^31 elements (one token row), got num_heads = 65536, head_size = 32768}}
func.func private @huge_row(!kvcache.continuous_collection<f16, num_heads = 65536, head_size = 32768>)

// -----

// expected-error @below {{unsupported element type 'i16'; expected f32, f16, bf16, or a storage type (f8E4M3FN, f8E5M2, i8)}}
func.func private @element(!kvcache.continuous_cache<i16, num_heads = 8, head_size = 128>)

// -----

// expected-error @below {{expected assert_write_mode to be 0 or 1, got 2}}
func.func private @mode(!kvcache.continuous_cache<f16, num_heads = 8, head_size = 128, assert_write_mode = 2>)

// -----

func.func @blocks_rank(%blocks: memref<?x2x?x8x128xf16>, %l: memref<?xi32>, %t: memref<?xi32>, %s: i32) {
  // expected-error @below {{expects 'blocks' of rank 6 [num_blocks, kv_dim, num_layers, block_tokens, num_heads, head_size], got 'memref<?x2x?x8x128xf16>'}}
  %c = kvcache.continuous_collection %blocks, %l, %t, %s, %s
      : memref<?x2x?x8x128xf16>, memref<?xi32>, memref<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  return
}

// -----

func.func @blocks_heads(%blocks: memref<?x2x?x?x4x128xf16>, %l: memref<?xi32>, %t: memref<?xi32>, %s: i32) {
  // expected-error @below {{expects 'blocks' dim 4 (num_heads) to be 8 as the cache type says, got 4}}
  %c = kvcache.continuous_collection %blocks, %l, %t, %s, %s
      : memref<?x2x?x?x4x128xf16>, memref<?xi32>, memref<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  return
}

// -----

func.func @blocks_kv(%blocks: memref<?x2x?x?x8x128xf16>, %l: memref<?xi32>, %t: memref<?xi32>, %s: i32) {
  // expected-error @below {{expects 'blocks' dim 1 (kv_dim) to be 1 as the cache type says, got 2}}
  %c = kvcache.continuous_collection %blocks, %l, %t, %s, %s
      : memref<?x2x?x?x8x128xf16>, memref<?xi32>, memref<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128, mla = true>
  return
}

// -----

func.func @blocks_element(%blocks: memref<?x2x?x?x8x128xbf16>, %l: memref<?xi32>, %t: memref<?xi32>, %s: i32) {
  // expected-error @below {{expects 'blocks' element type 'bf16' to match the collection element type 'f16'}}
  %c = kvcache.continuous_collection %blocks, %l, %t, %s, %s
      : memref<?x2x?x?x8x128xbf16>, memref<?xi32>, memref<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  return
}

// -----

func.func @blocks_inner(%blocks: memref<?x2x?x?x8x128xf16, strided<[?, ?, ?, 2048, 128, 1]>>, %l: memref<?xi32>, %t: memref<?xi32>, %s: i32) {
  // expected-error @below {{expects the inner dims [block_tokens, num_heads, head_size] of 'blocks' to be contiguous (strides [1024, 128, 1])}}
  %c = kvcache.continuous_collection %blocks, %l, %t, %s, %s
      : memref<?x2x?x?x8x128xf16, strided<[?, ?, ?, 2048, 128, 1]>>, memref<?xi32>, memref<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  return
}

// -----

// The lookup table of a continuous collection is 1-D: one block per sequence.
func.func @table_rank(%blocks: memref<?x2x?x?x8x128xf16>, %l: memref<?xi32>, %t: memref<?x?xi32>, %s: i32) {
  // expected-error @below {{expects 'lookup_table' to be a 1-D memref of 'i32' [batch] (the block of each sequence), got 'memref<?x?xi32>'}}
  %c = kvcache.continuous_collection %blocks, %l, %t, %s, %s
      : memref<?x2x?x?x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  return
}

// -----

func.func @table_layout(%blocks: memref<?x2x?x?x8x128xf16>, %l: memref<?xi32>, %t: memref<?xi32, strided<[2]>>, %s: i32) {
  // expected-error @below {{expects 'lookup_table' with the identity (row-major) layout, got 'memref<?xi32, strided<[2]>>'; copy it into a contiguous buffer}}
  %c = kvcache.continuous_collection %blocks, %l, %t, %s, %s
      : memref<?x2x?x?x8x128xf16>, memref<?xi32>, memref<?xi32, strided<[2]>> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  return
}

// -----

func.func @layer_range(%blocks: memref<?x2x3x?x8x128xf16>, %l: memref<?xi32>, %t: memref<?xi32>, %s: i32) {
  %c = kvcache.continuous_collection %blocks, %l, %t, %s, %s
      : memref<?x2x3x?x8x128xf16>, memref<?xi32>, memref<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  %layer = arith.constant 3 : index
  // expected-error @below {{layer index 3 is out of range for a collection of 3 layers}}
  %k = kvcache.get_key_cache %c[%layer] : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  return
}

// -----

func.func @mla_value(%c: !kvcache.continuous_collection<bf16, num_heads = 1, head_size = 576, mla = true>, %layer: index) {
  // expected-error @below {{an MLA collection (mla = true) has no value cache; use kvcache.get_key_cache}}
  %v = kvcache.get_value_cache %c[%layer] : !kvcache.continuous_collection<bf16, num_heads = 1, head_size = 576, mla = true>
  return
}

// -----

func.func @layer_of_layer(%k: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, %layer: index) {
  // expected-error @below {{expected a KV cache collection operand, got '!kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>'}}
  %kk = kvcache.get_key_cache %k[%layer] : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>
  return
}

// -----

// copy_pages needs pages.
func.func @copy_pages(%c: !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>, %pairs: memref<?x2xi32>) {
  // expected-error @below {{needs a collection with pages of a static size; '!kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>' (kind "continuous") has none: copy a sequence's tokens with kvcache.gather_ragged and kvcache.store_ragged instead}}
  kvcache.copy_pages %c, %pairs : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>, memref<?x2xi32>
  return
}

// -----

func.func @tile_zero(%k: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, %b: index, %t: index, %h: index) {
  // expected-error @below {{expects a positive tile row count, got 0; expected memref<T x 128 x f16, strided<[1024, 1], offset: ?>>, got 'memref<0x128xf16, strided<[1024, 1], offset: ?>>'}}
  %tile = kvcache.tile %k[%b, %t, %h] : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128> -> memref<0x128xf16, strided<[1024, 1], offset: ?>>
  return
}

// -----

func.func @tile_layout(%k: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result layout; expected memref<T x 128 x f16, strided<[1024, 1], offset: ?>>, got 'memref<7x128xf16, strided<[128, 1], offset: ?>>'}}
  %tile = kvcache.tile %k[%b, %t, %h] : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128> -> memref<7x128xf16, strided<[128, 1], offset: ?>>
  return
}

// -----

// Key and value caches of one attention are of one kind.
func.func @mixed_kinds(%q: memref<?x8x128xf16>, %k: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>,
                       %v: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %o: memref<?xi32>) {
  // expected-error @below {{expects the key and value caches to have one type, got '!kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>' and '!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>'}}
  kvcache.attention_ragged %q, %k, %v, %o, %q {scale = 1.0 : f32}
      : memref<?x8x128xf16>, !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x8x128xf16>
  return
}

// -----

func.func @rows(%k: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, %rows: memref<?x4x128xf16>, %o: memref<?xi32>) {
  // expected-error @below {{expects 'values' dim 1 (num_heads) to be 8 as the cache type says, got 4}}
  kvcache.store_ragged %k, %rows, %o : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, memref<?x4x128xf16>, memref<?xi32>
  return
}

// -----

func.func @access_element(%k: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, %b: index, %t: index) {
  %h = arith.constant 8 : index
  %d = arith.constant 0 : index
  // expected-error @below {{head index 8 is out of range for num_heads = 8}}
  %x = kvcache.load %k[%b, %h, %t, %d] : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128> -> vector<8xf16>
  return
}
