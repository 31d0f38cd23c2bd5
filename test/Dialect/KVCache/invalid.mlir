// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// One case per verifier rule and per user-facing parse error of the
// kvcache types and ops.

//===----------------------------------------------------------------------===//
// Type parameters
//===----------------------------------------------------------------------===//

// expected-error @below {{unsupported element type 'i32'; expected f32, f16, bf16, or a storage type (f8E4M3FN, f8E5M2, i8)}}
func.func private @element_type_i32(%cache: !kvcache.paged_collection<i32, num_heads = 8, head_size = 128, page_size = 16>)

// -----

// expected-error @below {{unsupported element type 'f64'; expected f32, f16, bf16, or a storage type (f8E4M3FN, f8E5M2, i8)}}
func.func private @element_type_f64(%cache: !kvcache.paged_cache<f64, num_heads = 8, head_size = 128, page_size = 16>)

// -----

// expected-error @below {{unsupported element type 'f8E4M3FNUZ'}}
func.func private @element_type_f8E4M3FNUZ(%cache: !kvcache.paged_collection<f8E4M3FNUZ, num_heads = 8, head_size = 128, page_size = 16>)

// -----

// expected-error @below {{expected num_heads > 0, got 0}}
func.func private @zero_num_heads(%cache: !kvcache.paged_cache<f16, num_heads = 0, head_size = 128, page_size = 16>)

// -----

// expected-error @below {{expected head_size > 0, got -1}}
func.func private @negative_head_size(%cache: !kvcache.paged_collection<f16, num_heads = 8, head_size = -1, page_size = 16>)

// -----

// expected-error @below {{expected page_size > 0, got 0}}
func.func private @zero_page_size(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 0>)

// -----

// expected-error @below {{expected assert_write_mode to be 0 or 1, got 2}}
func.func private @assert_write_mode_2(%cache: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 2>)

// -----

// expected-error @below {{expected assert_write_mode to be 0 or 1, got -1}}
func.func private @negative_assert_write_mode(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = -1>)

// -----

//===----------------------------------------------------------------------===//
// Type syntax
//===----------------------------------------------------------------------===//

// expected-error @below {{expected 'true' or 'false'}}
// expected-error @below {{failed to parse KVCache_PagedCollectionType parameter 'mla'}}
func.func private @mla_bad_keyword(%cache: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16, mla = maybe>)

// -----

// expected-error @below {{expected 'true' or 'false'}}
// expected-error @below {{failed to parse KVCache_PagedCacheType parameter 'mla'}}
func.func private @mla_integer(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, mla = 1>)

// -----

// expected-error @below {{duplicate or unknown struct parameter name: kv_dim}}
func.func private @unknown_key(%cache: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16, kv_dim = 2>)

// -----

// expected-error @below {{duplicate or unknown struct parameter name: num_heads}}
func.func private @duplicate_key(%cache: !kvcache.paged_cache<f16, num_heads = 8, num_heads = 8, head_size = 128, page_size = 16>)

// -----

// expected-error @below {{struct is missing required parameter: head_size}}
func.func private @missing_head_size(%cache: !kvcache.paged_collection<f16, num_heads = 8, page_size = 16>)

// -----

// expected-error @below {{expected non-function type}}
// expected-error @below {{failed to parse KVCache_PagedCacheType parameter 'element_type'}}
func.func private @missing_element_type(%cache: !kvcache.paged_cache<num_heads = 8, head_size = 128, page_size = 16>)

// -----

// expected-error @below {{unknown  type `paged_bogus` in dialect `kvcache`}}
func.func private @unknown_type(%cache: !kvcache.paged_bogus<f16, num_heads = 8, head_size = 128, page_size = 16>)

// -----

//===----------------------------------------------------------------------===//
// paged_collection
//===----------------------------------------------------------------------===//

func.func @blocks_rank_5(%blocks: memref<?x2x?x16x8xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' of rank 6 [num_pages, kv_dim, num_layers, page_size, num_heads, head_size], got 'memref<?x2x?x16x8xf16>'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_rank_7(%blocks: memref<?x2x?x16x8x128x1xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' of rank 6}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128x1xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_element_type(%blocks: memref<?x2x?x16x8x128xf32>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' element type 'f32' to match the collection element type 'f16'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf32>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_memory_space(%blocks: memref<?x2x?x16x8x128xf16, 1>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' in the default memory space, got 'memref<?x2x?x16x8x128xf16, 1>'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16, 1>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_dynamic_kv_dim(%blocks: memref<?x?x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 1 (kv_dim) to be static}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x?x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_kv_dim_1_without_mla(%blocks: memref<?x1x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 1 (kv_dim) to be 2 as the cache type says, got 1}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x1x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @mla_blocks_kv_dim_2(%blocks: memref<?x2x?x64x1x576xbf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 1 (kv_dim) to be 1 as the cache type says, got 2}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x64x1x576xbf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
  return
}

// -----

func.func @mla_blocks_dynamic_kv_dim(%blocks: memref<?x?x?x64x1x576xbf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 1 (kv_dim) to be static}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x?x?x64x1x576xbf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
  return
}

// -----

func.func @blocks_dynamic_page_size(%blocks: memref<?x2x?x?x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 3 (page_size) to be static}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x?x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_page_size_mismatch(%blocks: memref<?x2x?x32x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 3 (page_size) to be 16 as the cache type says, got 32}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x32x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @mla_blocks_page_size_mismatch(%blocks: memref<?x1x?x16x1x576xbf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 3 (page_size) to be 64 as the cache type says, got 16}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x1x?x16x1x576xbf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
  return
}

// -----

func.func @blocks_dynamic_num_heads(%blocks: memref<?x2x?x16x?x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 4 (num_heads) to be static}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x?x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_num_heads_mismatch(%blocks: memref<?x2x?x16x4x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 4 (num_heads) to be 8 as the cache type says, got 4}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x4x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @mla_blocks_num_heads_mismatch(%blocks: memref<?x1x?x64x2x576xbf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 4 (num_heads) to be 1 as the cache type says, got 2}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x1x?x64x2x576xbf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
  return
}

// -----

func.func @blocks_dynamic_head_size(%blocks: memref<?x2x?x16x8x?xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 5 (head_size) to be static}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x?xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_head_size_mismatch(%blocks: memref<?x2x?x16x8x64xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 5 (head_size) to be 128 as the cache type says, got 64}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x64xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @mla_blocks_head_size_mismatch(%blocks: memref<?x1x?x64x1x512xbf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'blocks' dim 5 (head_size) to be 576 as the cache type says, got 512}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x1x?x64x1x512xbf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
  return
}

// -----

func.func @blocks_padded_rows(%blocks: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 2048, 128, 1], offset: ?>>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects the inner dims [page_size, num_heads, head_size] of 'blocks' to be contiguous (strides [1024, 128, 1])}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 2048, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_dynamic_row_stride(%blocks: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, ?, 128, 1], offset: ?>>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects the inner dims [page_size, num_heads, head_size] of 'blocks' to be contiguous (strides [1024, 128, 1])}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, ?, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_padded_heads(%blocks: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 2048, 256, 1], offset: ?>>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects the inner dims [page_size, num_heads, head_size] of 'blocks' to be contiguous (strides [1024, 128, 1])}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 2048, 256, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_strided_elements(%blocks: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 2], offset: ?>>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects the inner dims [page_size, num_heads, head_size] of 'blocks' to be contiguous (strides [1024, 128, 1])}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 2], offset: ?>>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @blocks_not_strided(%blocks: memref<?x2x?x16x8x128xf16, affine_map<(d0, d1, d2, d3, d4, d5) -> (d5, d4, d3, d2, d1, d0)>>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects the inner dims [page_size, num_heads, head_size] of 'blocks' to be contiguous (strides [1024, 128, 1])}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16, affine_map<(d0, d1, d2, d3, d4, d5) -> (d5, d4, d3, d2, d1, d0)>>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @cache_lengths_rank_2(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?x?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'cache_lengths' to be a 1-D memref of 'i32' [batch], got 'memref<?x?xi32>'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?x?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @cache_lengths_i64(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi64>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'cache_lengths' to be a 1-D memref of 'i32' [batch], got 'memref<?xi64>'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi64>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @cache_lengths_memory_space(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32, 1>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'cache_lengths' in the default memory space, got 'memref<?xi32, 1>'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32, 1>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @lookup_table_rank_1(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'lookup_table' to be a 2-D memref of 'i32' [batch, max_pages], got 'memref<?xi32>'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @lookup_table_ui32(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xui32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'lookup_table' to be a 2-D memref of 'i32' [batch, max_pages], got 'memref<?x?xui32>'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xui32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @lookup_table_memory_space(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32, #gpu.address_space<workgroup>>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'lookup_table' in the default memory space, got 'memref<?x?xi32, #gpu.address_space<workgroup>>'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32, #gpu.address_space<workgroup>> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @max_seq_length_i64(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i64, %max_cache_length: i32) {
  // expected-error @below {{operand #3 must be 32-bit signless integer, but got 'i64'}}
  %collection = "kvcache.paged_collection"(%blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length)
      : (memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32>, i64, i32) -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @max_cache_length_index(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: index) {
  // expected-error @below {{operand #4 must be 32-bit signless integer, but got 'index'}}
  %collection = "kvcache.paged_collection"(%blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length)
      : (memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32>, i32, index) -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

// The custom form fixes the scalars to i32.
func.func @max_seq_length_i64_custom(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    // expected-note @below {{prior use here}}
    %max_seq_length: i64, %max_cache_length: i32) {
  // expected-error @below {{use of value '%max_seq_length' expects different type than prior uses: 'i32' vs 'i64'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

// A tensor among memrefs: the tensor form takes tensors only.
func.func @cache_lengths_tensor(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: tensor<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{'kvcache.paged_collection' op expects its data operands in one form, all memrefs or all tensors, got 'memref<?x2x?x16x8x128xf16>' and 'tensor<?xi32>'}}
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length : memref<?x2x?x16x8x128xf16>, tensor<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// get_key_cache / get_value_cache
//===----------------------------------------------------------------------===//

func.func @key_cache_layer_out_of_range(%blocks: memref<?x2x4x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  %layer = arith.constant 4 : index
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x4x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  // expected-error @below {{layer index 4 is out of range for a collection of 4 layers}}
  %cache = kvcache.get_key_cache %collection[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @value_cache_layer_out_of_range(%blocks: memref<?x2x4x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  %layer = arith.constant 7 : index
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x4x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  // expected-error @below {{layer index 7 is out of range for a collection of 4 layers}}
  %cache = kvcache.get_value_cache %collection[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @key_cache_negative_layer(%blocks: memref<?x2x4x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) {
  %layer = arith.constant -1 : index
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x4x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  // expected-error @below {{layer index -1 is out of range for a collection of 4 layers}}
  %cache = kvcache.get_key_cache %collection[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

// The tensor form: the layer count of the collection's constructor, seen
// through the writers whose results bufferize to its collection.
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @layer_out_of_range_after_writes(%blocks: tensor<?x2x2x16x8x128xf16>, %lengths: tensor<?xi32>,
    %table: tensor<?x?xi32>, %n: i32, %pairs: tensor<?x2xi32>, %rows: tensor<?x8x128xf16>,
    %offsets: tensor<?xi32>) {
  %l0 = arith.constant 0 : index
  %l2 = arith.constant 2 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x2x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %c1 = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  %k = kvcache.get_key_cache %c1[%l0] : !c
  %c2 = kvcache.store_ragged %k, %rows, %offsets : !k, tensor<?x8x128xf16>, tensor<?xi32> -> !c
  // expected-error @below {{layer index 2 is out of range for a collection of 2 layers}}
  %v = kvcache.get_value_cache %c2[%l2] : !c
  return
}

// -----

func.func @value_cache_of_mla(%collection: !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %layer: index) {
  // expected-error @below {{an MLA collection (mla = true) has no value cache; use kvcache.get_key_cache}}
  %value = kvcache.get_value_cache %collection[%layer] : !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
  return
}

// -----

func.func @key_cache_of_layer_cache(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %layer: index) {
  // expected-error @below {{expected a KV cache collection operand, got '!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>'}}
  %key = kvcache.get_key_cache %cache[%layer] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @key_cache_wrong_result_type(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %layer: index) {
  // expected-error @below {{inferred type(s) '!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>' are incompatible with return type(s) of operation '!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 32>'}}
  // expected-error @below {{failed to infer returned types}}
  %key = "kvcache.get_key_cache"(%collection, %layer) : (!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, index) -> !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 32>
  return
}

// -----

// The layer cache keeps the collection's assert_write_mode.
func.func @value_cache_result_without_assert_write_mode(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, %layer: index) {
  // expected-error @below {{failed to infer returned types}}
  // expected-error @below {{are incompatible with return type(s)}}
  %value = "kvcache.get_value_cache"(%collection, %layer) : (!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, index) -> !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Metadata queries and lookup
//===----------------------------------------------------------------------===//

func.func @lookup_on_collection(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index) {
  // expected-error @below {{operand #0 must be KV cache of one layer (a type implementing KVCacheTypeInterface}}
  %page, %slot = kvcache.lookup %collection[%b, %t] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @cache_length_of_memref(%cache_lengths: memref<?xi32>, %b: index) {
  // expected-error @below {{operand #0 must be KV cache collection or layer cache, but got 'memref<?xi32>'}}
  %length = "kvcache.cache_length"(%cache_lengths, %b) : (memref<?xi32>, index) -> index
  return
}

// -----

func.func @max_seq_length_i32_result(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>) {
  // expected-error @below {{result #0 must be index, but got 'i32'}}
  %max_seq_length = "kvcache.max_seq_length"(%collection) : (!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>) -> i32
  return
}

// -----

//===----------------------------------------------------------------------===//
// load / store / page_load / page_store
//===----------------------------------------------------------------------===//

func.func @load_wrong_element_type(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %h: index, %t: index, %d: index) {
  // expected-error @below {{expects the accessed element type to be the cache element type 'f16', got 'f32'}}
  %x = kvcache.load %cache[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f32
  return
}

// -----

func.func @store_wrong_vector_element_type(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: vector<8xf32>, %b: index, %h: index, %t: index, %d: index) {
  // expected-error @below {{expects the accessed element type to be the cache element type 'f16', got 'vector<8xf32>'}}
  kvcache.store %value, %cache[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf32>
  return
}

// -----

func.func @page_load_wrong_element_type(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %page: index, %slot: index, %h: index, %d: index) {
  // expected-error @below {{expects the accessed element type to be the cache element type 'f16', got 'vector<8xbf16>'}}
  %x = kvcache.page_load %cache[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xbf16>
  return
}

// -----

func.func @page_store_integer(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: i16, %page: index, %slot: index, %h: index, %d: index) {
  // expected-error @below {{expects the accessed element type to be the cache element type 'f16', got 'i16'}}
  kvcache.page_store %value, %cache[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, i16
  return
}

// -----

func.func @load_2d_vector(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %h: index, %t: index, %d: index) {
  // expected-error @below {{expects a scalar or a 1-D fixed-size vector, got 'vector<2x4xf16>'}}
  %x = kvcache.load %cache[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<2x4xf16>
  return
}

// -----

func.func @store_2d_vector(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: vector<1x8xf16>, %b: index, %h: index, %t: index, %d: index) {
  // expected-error @below {{expects a scalar or a 1-D fixed-size vector, got 'vector<1x8xf16>'}}
  kvcache.store %value, %cache[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<1x8xf16>
  return
}

// -----

func.func @page_load_0d_vector(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %page: index, %slot: index, %h: index, %d: index) {
  // expected-error @below {{expects a scalar or a 1-D fixed-size vector, got 'vector<f16>'}}
  %x = kvcache.page_load %cache[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<f16>
  return
}

// -----

func.func @page_store_scalable_vector(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: vector<[8]xf16>, %page: index, %slot: index, %h: index, %d: index) {
  // expected-error @below {{expects a scalar or a 1-D fixed-size vector, got 'vector<[8]xf16>'}}
  kvcache.page_store %value, %cache[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<[8]xf16>
  return
}

// -----

func.func @load_vector_wider_than_head(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %h: index, %t: index, %d: index) {
  // expected-error @below {{expects a vector width <= head_size = 128, got 256}}
  %x = kvcache.load %cache[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<256xf16>
  return
}

// -----

func.func @store_vector_wider_than_head(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: vector<256xf16>, %b: index, %h: index, %t: index, %d: index) {
  // expected-error @below {{expects a vector width <= head_size = 128, got 256}}
  kvcache.store %value, %cache[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<256xf16>
  return
}

// -----

func.func @page_load_vector_wider_than_head(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %page: index, %slot: index, %h: index, %d: index) {
  // expected-error @below {{expects a vector width <= head_size = 128, got 256}}
  %x = kvcache.page_load %cache[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<256xf16>
  return
}

// -----

func.func @page_store_vector_wider_than_head(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: vector<256xf16>, %page: index, %slot: index, %h: index, %d: index) {
  // expected-error @below {{expects a vector width <= head_size = 128, got 256}}
  kvcache.page_store %value, %cache[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<256xf16>
  return
}

// -----

func.func @load_element_range(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %h: index, %t: index, %d: index) {
  %c128 = arith.constant 128 : index
  // expected-error @below {{element range [128, 136) exceeds head_size = 128}}
  %x = kvcache.load %cache[%b, %h, %t, %c128] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
  return
}

// -----

func.func @store_scalar_past_head(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: f16, %b: index, %h: index, %t: index, %d: index) {
  %c128 = arith.constant 128 : index
  // expected-error @below {{element range [128, 129) exceeds head_size = 128}}
  kvcache.store %value, %cache[%b, %h, %t, %c128] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, f16
  return
}

// -----

func.func @page_load_element_range(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %page: index, %slot: index, %h: index, %d: index) {
  %c120 = arith.constant 120 : index
  // expected-error @below {{element range [120, 136) exceeds head_size = 128}}
  %x = kvcache.page_load %cache[%page, %slot, %h, %c120] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<16xf16>
  return
}

// -----

func.func @page_store_element_range(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: vector<16xf16>, %page: index, %slot: index, %h: index, %d: index) {
  %c120 = arith.constant 120 : index
  // expected-error @below {{element range [120, 136) exceeds head_size = 128}}
  kvcache.page_store %value, %cache[%page, %slot, %h, %c120] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<16xf16>
  return
}

// -----

func.func @load_negative_element(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %h: index, %t: index, %d: index) {
  %c_neg = arith.constant -1 : index
  // expected-error @below {{element range [-1, 0) exceeds head_size = 128}}
  %x = kvcache.load %cache[%b, %h, %t, %c_neg] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
  return
}

// -----

func.func @load_unaligned_vector(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %h: index, %t: index, %d: index) {
  %c4 = arith.constant 4 : index
  // expected-error @below {{element index 4 is not a multiple of the vector width 8 (vector accesses are aligned to their width)}}
  %x = kvcache.load %cache[%b, %h, %t, %c4] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
  return
}

// -----

func.func @store_unaligned_vector(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: vector<8xf16>, %b: index, %h: index, %t: index, %d: index) {
  %c4 = arith.constant 4 : index
  // expected-error @below {{element index 4 is not a multiple of the vector width 8 (vector accesses are aligned to their width)}}
  kvcache.store %value, %cache[%b, %h, %t, %c4] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
  return
}

// -----

func.func @page_load_unaligned_vector(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %page: index, %slot: index, %h: index, %d: index) {
  %c4 = arith.constant 4 : index
  // expected-error @below {{element index 4 is not a multiple of the vector width 8 (vector accesses are aligned to their width)}}
  %x = kvcache.page_load %cache[%page, %slot, %h, %c4] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
  return
}

// -----

func.func @page_store_unaligned_vector(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: vector<8xf16>, %page: index, %slot: index, %h: index, %d: index) {
  %c4 = arith.constant 4 : index
  // expected-error @below {{element index 4 is not a multiple of the vector width 8 (vector accesses are aligned to their width)}}
  kvcache.page_store %value, %cache[%page, %slot, %h, %c4] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
  return
}

// -----

func.func @load_head_out_of_range(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %h: index, %t: index, %d: index) {
  %c8 = arith.constant 8 : index
  // expected-error @below {{head index 8 is out of range for num_heads = 8}}
  %x = kvcache.load %cache[%b, %c8, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
  return
}

// -----

func.func @store_head_out_of_range(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: vector<8xf16>, %b: index, %h: index, %t: index, %d: index) {
  %c8 = arith.constant 8 : index
  // expected-error @below {{head index 8 is out of range for num_heads = 8}}
  kvcache.store %value, %cache[%b, %c8, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
  return
}

// -----

func.func @page_load_head_out_of_range(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %page: index, %slot: index, %h: index, %d: index) {
  %c8 = arith.constant 8 : index
  // expected-error @below {{head index 8 is out of range for num_heads = 8}}
  %x = kvcache.page_load %cache[%page, %slot, %c8, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
  return
}

// -----

func.func @page_store_negative_head(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: f16, %page: index, %slot: index, %h: index, %d: index) {
  %c_neg = arith.constant -1 : index
  // expected-error @below {{head index -1 is out of range for num_heads = 8}}
  kvcache.page_store %value, %cache[%page, %slot, %c_neg, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, f16
  return
}

// -----

func.func @page_load_slot_out_of_range(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %page: index, %slot: index, %h: index, %d: index) {
  %c16 = arith.constant 16 : index
  // expected-error @below {{slot 16 is out of range for page_size = 16}}
  %x = kvcache.page_load %cache[%page, %c16, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
  return
}

// -----

func.func @page_store_slot_out_of_range(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: f16, %page: index, %slot: index, %h: index, %d: index) {
  %c16 = arith.constant 16 : index
  // expected-error @below {{slot 16 is out of range for page_size = 16}}
  kvcache.page_store %value, %cache[%page, %c16, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, f16
  return
}

// -----

func.func @page_store_negative_slot(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: f16, %page: index, %slot: index, %h: index, %d: index) {
  %c_neg = arith.constant -1 : index
  // expected-error @below {{slot -1 is out of range for page_size = 16}}
  kvcache.page_store %value, %cache[%page, %c_neg, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, f16
  return
}

// -----

//===----------------------------------------------------------------------===//
// tile
//===----------------------------------------------------------------------===//

func.func @tile_rows_not_dividing_page(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{expects the tile row count 3 to divide page_size; expected memref<T x 128 x f16, strided<[1024, 1], offset: ?>> with page_size (16) % T == 0, got 'memref<3x128xf16, strided<[1024, 1], offset: ?>>'}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<3x128xf16, strided<[1024, 1], offset: ?>>
  return
}

// -----

func.func @tile_rows_past_page(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{expects the tile row count 32 to divide page_size}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<32x128xf16, strided<[1024, 1], offset: ?>>
  return
}

// -----

func.func @tile_zero_rows(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{expects a positive tile row count, got 0}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<0x128xf16, strided<[1024, 1], offset: ?>>
  return
}

// -----

func.func @tile_wrong_head_size(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{expects tile rows of head_size = 128 elements}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x64xf16, strided<[1024, 1], offset: ?>>
  return
}

// -----

func.func @tile_dynamic_head_size(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{expects tile rows of head_size = 128 elements}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x?xf16, strided<[1024, 1], offset: ?>>
  return
}

// -----

func.func @tile_static_offset(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result layout}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16, strided<[1024, 1], offset: 0>>
  return
}

// -----

func.func @tile_identity_layout(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result layout}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16>
  return
}

// -----

func.func @tile_head_major_stride(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result layout}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16, strided<[128, 1], offset: ?>>
  return
}

// -----

func.func @tile_dynamic_stride(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result layout}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16, strided<[?, 1], offset: ?>>
  return
}

// -----

func.func @tile_strided_elements(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result layout}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16, strided<[1024, 2], offset: ?>>
  return
}

// -----

func.func @tile_wrong_element_type(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result type; expected memref<T x 128 x f16, strided<[1024, 1], offset: ?>> with page_size (16) % T == 0, got 'memref<16x128xf32, strided<[1024, 1], offset: ?>>'}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf32, strided<[1024, 1], offset: ?>>
  return
}

// -----

func.func @tile_dynamic_rows(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result type}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<?x128xf16, strided<[1024, 1], offset: ?>>
  return
}

// -----

func.func @tile_rank_3(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result type}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<1x16x128xf16, strided<[16384, 1024, 1], offset: ?>>
  return
}

// -----

func.func @tile_memory_space(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  // expected-error @below {{has a wrong result type}}
  %tile = kvcache.tile %cache[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16, strided<[1024, 1], offset: ?>, 3>
  return
}

// -----

func.func @tile_head_out_of_range(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %t: index, %h: index) {
  %c8 = arith.constant 8 : index
  // expected-error @below {{head index 8 is out of range for num_heads = 8}}
  %tile = kvcache.tile %cache[%b, %t, %c8] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16, strided<[1024, 1], offset: ?>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// store_ragged / gather_ragged
//===----------------------------------------------------------------------===//

func.func @store_ragged_rank_2(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x1024xf16>, %row_offsets: memref<?xi32>) {
  // expected-error @below {{operand #1 must be 3-D memref [tokens, heads, head_size] in the default memory space, or a tensor of that shape, but got 'memref<?x1024xf16>'}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x1024xf16>, memref<?xi32>
  return
}

// -----

func.func @store_ragged_wrong_element_type(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x8x128xbf16>, %row_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'values' to have the cache element type 'f16', got 'memref<?x8x128xbf16>'}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xbf16>, memref<?xi32>
  return
}

// -----

func.func @store_ragged_wrong_num_heads(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x4x128xf16>, %row_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'values' dim 1 (num_heads) to be 8 as the cache type says, got 4}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x4x128xf16>, memref<?xi32>
  return
}

// -----

func.func @store_ragged_wrong_head_size(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x8x64xf16>, %row_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'values' dim 2 (head_size) to be 128 as the cache type says, got 64}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x64xf16>, memref<?xi32>
  return
}

// -----

func.func @store_ragged_dynamic_num_heads(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x?x128xf16>, %row_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'values' dim 1 (num_heads) to be static, got 'memref<?x?x128xf16>'}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x?x128xf16>, memref<?xi32>
  return
}

// -----

func.func @store_ragged_dynamic_head_size(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<5x8x?xf16>, %row_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'values' dim 2 (head_size) to be static, got 'memref<5x8x?xf16>'}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<5x8x?xf16>, memref<?xi32>
  return
}

// -----

func.func @store_ragged_rows_memory_space(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x8x128xf16, 1>, %row_offsets: memref<?xi32>) {
  // expected-error @below {{operand #1 must be 3-D memref [tokens, heads, head_size] in the default memory space, or a tensor of that shape, but got 'memref<?x8x128xf16, 1>'}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16, 1>, memref<?xi32>
  return
}

// -----

func.func @store_ragged_offsets_rank_2(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x8x128xf16>, %row_offsets: memref<?x2xi32>) {
  // expected-error @below {{operand #2 must be 1-D memref of i32 [batch + 1] in the default memory space, or a tensor of that shape, but got 'memref<?x2xi32>'}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?x2xi32>
  return
}

// -----

func.func @store_ragged_offsets_i64(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x8x128xf16>, %row_offsets: memref<3xi64>) {
  // expected-error @below {{operand #2 must be 1-D memref of i32 [batch + 1] in the default memory space, or a tensor of that shape, but got 'memref<3xi64>'}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<3xi64>
  return
}

// -----

func.func @store_ragged_offsets_memory_space(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32, 1>) {
  // expected-error @below {{operand #2 must be 1-D memref of i32 [batch + 1] in the default memory space, or a tensor of that shape, but got 'memref<?xi32, 1>'}}
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32, 1>
  return
}

// -----

func.func @gather_ragged_rank_2(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x1024xf16>, %ctx_offsets: memref<?xi32>) {
  // expected-error @below {{operand #1 must be 3-D memref [tokens, heads, head_size] in the default memory space, or a tensor of that shape, but got 'memref<?x1024xf16>'}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x1024xf16>, memref<?xi32>
  return
}

// -----

func.func @gather_ragged_wrong_element_type(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x8x128xbf16>, %ctx_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'out' to have the cache element type 'f16', got 'memref<?x8x128xbf16>'}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xbf16>, memref<?xi32>
  return
}

// -----

func.func @gather_ragged_wrong_num_heads(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x4x128xf16>, %ctx_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'out' dim 1 (num_heads) to be 8 as the cache type says, got 4}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x4x128xf16>, memref<?xi32>
  return
}

// -----

func.func @gather_ragged_wrong_head_size(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x8x64xf16>, %ctx_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'out' dim 2 (head_size) to be 128 as the cache type says, got 64}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x64xf16>, memref<?xi32>
  return
}

// -----

func.func @gather_ragged_dynamic_num_heads(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x?x128xf16>, %ctx_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'out' dim 1 (num_heads) to be static, got 'memref<?x?x128xf16>'}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x?x128xf16>, memref<?xi32>
  return
}

// -----

func.func @gather_ragged_dynamic_head_size(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<5x8x?xf16>, %ctx_offsets: memref<?xi32>) {
  // expected-error @below {{expects 'out' dim 2 (head_size) to be static, got 'memref<5x8x?xf16>'}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<5x8x?xf16>, memref<?xi32>
  return
}

// -----

func.func @gather_ragged_rows_memory_space(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x8x128xf16, 1>, %ctx_offsets: memref<?xi32>) {
  // expected-error @below {{operand #1 must be 3-D memref [tokens, heads, head_size] in the default memory space, or a tensor of that shape, but got 'memref<?x8x128xf16, 1>'}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16, 1>, memref<?xi32>
  return
}

// -----

func.func @gather_ragged_offsets_rank_2(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?x2xi32>) {
  // expected-error @below {{operand #2 must be 1-D memref of i32 [batch + 1] in the default memory space, or a tensor of that shape, but got 'memref<?x2xi32>'}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?x2xi32>
  return
}

// -----

func.func @gather_ragged_offsets_i64(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x8x128xf16>, %ctx_offsets: memref<3xi64>) {
  // expected-error @below {{operand #2 must be 1-D memref of i32 [batch + 1] in the default memory space, or a tensor of that shape, but got 'memref<3xi64>'}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<3xi64>
  return
}

// -----

func.func @gather_ragged_offsets_memory_space(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32, 1>) {
  // expected-error @below {{operand #2 must be 1-D memref of i32 [batch + 1] in the default memory space, or a tensor of that shape, but got 'memref<?xi32, 1>'}}
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32, 1>
  return
}

// -----

//===----------------------------------------------------------------------===//
// copy_pages
//===----------------------------------------------------------------------===//

func.func @pairs_three_columns(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %pairs: memref<?x3xi32>) {
  // expected-error @below {{operand #1 must be 2-D memref of i32 [num_pairs, 2] of (src, dst) page pairs in the default memory space, or a tensor of that shape, but got 'memref<?x3xi32>'}}
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x3xi32>
  return
}

// -----

func.func @pairs_rank_1(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %pairs: memref<?xi32>) {
  // expected-error @below {{operand #1 must be 2-D memref of i32 [num_pairs, 2] of (src, dst) page pairs in the default memory space, or a tensor of that shape, but got 'memref<?xi32>'}}
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>
  return
}

// -----

func.func @pairs_dynamic_columns(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %pairs: memref<?x?xi32>) {
  // expected-error @below {{operand #1 must be 2-D memref of i32 [num_pairs, 2] of (src, dst) page pairs in the default memory space, or a tensor of that shape, but got 'memref<?x?xi32>'}}
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x?xi32>
  return
}

// -----

func.func @pairs_i64(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %pairs: memref<?x2xi64>) {
  // expected-error @below {{operand #1 must be 2-D memref of i32 [num_pairs, 2] of (src, dst) page pairs in the default memory space, or a tensor of that shape, but got 'memref<?x2xi64>'}}
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi64>
  return
}

// -----

func.func @pairs_rank_3(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %pairs: memref<?x2x1xi32>) {
  // expected-error @below {{operand #1 must be 2-D memref of i32 [num_pairs, 2] of (src, dst) page pairs in the default memory space, or a tensor of that shape, but got 'memref<?x2x1xi32>'}}
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2x1xi32>
  return
}

// -----

func.func @pairs_memory_space(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %pairs: memref<?x2xi32, 1>) {
  // expected-error @below {{operand #1 must be 2-D memref of i32 [num_pairs, 2] of (src, dst) page pairs in the default memory space, or a tensor of that shape, but got 'memref<?x2xi32, 1>'}}
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32, 1>
  return
}

// -----

func.func @copy_pages_of_layer_cache(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %pairs: memref<?x2xi32>) {
  // expected-error @below {{operand #0 must be KV cache collection (a type implementing KVCollectionTypeInterface}}
  "kvcache.copy_pages"(%cache, %pairs) : (!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32>) -> ()
  return
}

// -----

//===----------------------------------------------------------------------===//
// attention_ragged
//===----------------------------------------------------------------------===//

func.func @attention_out_static_tokens(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<4x32x128xf16>) {
  // expected-error @below {{expects 'q' and 'out' to have one type, got 'memref<?x32x128xf16>' and 'memref<4x32x128xf16>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<4x32x128xf16>
  return
}

// -----

func.func @attention_out_element_type(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xbf16>) {
  // expected-error @below {{expects 'q' and 'out' to have one type, got 'memref<?x32x128xf16>' and 'memref<?x32x128xbf16>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xbf16>
  return
}

// -----

func.func @attention_q_heads_not_multiple(%q: memref<?x12x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x12x128xf16>) {
  // expected-error @below {{expects 'q' dim 1 (q_heads) to be a static multiple of num_heads = 8, got 'memref<?x12x128xf16>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x12x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x12x128xf16>
  return
}

// -----

func.func @attention_q_heads_fewer(%q: memref<?x4x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x4x128xf16>) {
  // expected-error @below {{expects 'q' dim 1 (q_heads) to be a static multiple of num_heads = 8, got 'memref<?x4x128xf16>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x4x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x4x128xf16>
  return
}

// -----

func.func @attention_dynamic_q_heads(%q: memref<?x?x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x?x128xf16>) {
  // expected-error @below {{expects 'q' dim 1 (q_heads) to be a static multiple of num_heads = 8, got 'memref<?x?x128xf16>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x?x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x?x128xf16>
  return
}

// -----

func.func @attention_wrong_head_size(%q: memref<?x32x64xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x64xf16>) {
  // expected-error @below {{expects 'q' dim 2 (head_size) to be 128 as the cache type says, got 64}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x64xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x64xf16>
  return
}

// -----

func.func @attention_dynamic_head_size(%q: memref<?x32x?xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x?xf16>) {
  // expected-error @below {{expects 'q' dim 2 (head_size) to be static, got 'memref<?x32x?xf16>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x?xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x?xf16>
  return
}

// -----

func.func @attention_q_element_type(%q: memref<?x32x128xf32>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf32>) {
  // expected-error @below {{expects 'q' to have the cache element type 'f16', got 'memref<?x32x128xf32>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x128xf32>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf32>
  return
}

// -----

func.func @attention_q_rank_2(%q: memref<?x4096xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x4096xf16>) {
  // expected-error @below {{operand #0 must be 3-D memref [tokens, heads, head_size] in the default memory space, or a tensor of that shape, but got 'memref<?x4096xf16>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x4096xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x4096xf16>
  return
}

// -----

func.func @attention_q_memory_space(%q: memref<?x32x128xf16, 1>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16, 1>) {
  // expected-error @below {{operand #0 must be 3-D memref [tokens, heads, head_size] in the default memory space, or a tensor of that shape, but got 'memref<?x32x128xf16, 1>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x128xf16, 1>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16, 1>
  return
}

// -----

func.func @attention_key_value_types(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{expects the key and value caches to have one type, got '!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>' and '!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

func.func @attention_key_value_head_size(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{expects the key and value caches to have one type, got '!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>' and '!kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

func.func @attention_mla(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, mla = true>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, mla = true>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{does not support MLA caches (mla = true)}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, mla = true>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, mla = true>, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

func.func @attention_row_offsets_i64(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi64>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{operand #3 must be 1-D memref of i32 [batch + 1] in the default memory space, or a tensor of that shape, but got 'memref<?xi64>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi64>, memref<?x32x128xf16>
  return
}

// -----

func.func @attention_row_offsets_rank_2(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?x?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{operand #3 must be 1-D memref of i32 [batch + 1] in the default memory space, or a tensor of that shape, but got 'memref<?x?xi32>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x?xi32>, memref<?x32x128xf16>
  return
}

// -----

func.func @attention_workspace_f16(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>, %workspace: memref<?xf16>) {
  // expected-error @below {{operand #5 must be 1-D memref of f32 in the default memory space, but got 'memref<?xf16>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out, %workspace {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>, memref<?xf16>
  return
}

// -----

func.func @attention_workspace_rank_2(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>, %workspace: memref<?x?xf32>) {
  // expected-error @below {{operand #5 must be 1-D memref of f32 in the default memory space, but got 'memref<?x?xf32>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out, %workspace {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>, memref<?x?xf32>
  return
}

// -----

func.func @attention_workspace_memory_space(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>, %workspace: memref<?xf32, 1>) {
  // expected-error @below {{operand #5 must be 1-D memref of f32 in the default memory space, but got 'memref<?xf32, 1>'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out, %workspace {scale = 0.0883883 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32, 1>
  return
}

// -----

func.func @attention_missing_scale(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{requires attribute 'scale'}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out  : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

func.func @attention_scale_f64(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{attribute 'scale' failed to satisfy constraint: 32-bit float attribute}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f64} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

func.func @attention_scale_untyped(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{attribute 'scale' failed to satisfy constraint: 32-bit float attribute}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

func.func @attention_scale_integer(%q: memref<?x32x128xf16>, %key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %value: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{attribute 'scale' failed to satisfy constraint: 32-bit float attribute}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 1 : i32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

func.func @huge_constant_element(%k: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %b: index, %h: index, %t: index) -> f16 {
  %d = arith.constant 9223372036854775807 : index
  // expected-error @below {{element range [9223372036854775807, }}
  %x = kvcache.load %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
  return %x : f16
}

// -----

func.func @strided_cache_lengths(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32, strided<[2]>>, %lookup_table: memref<?x?xi32>, %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'cache_lengths' with the identity (row-major) layout}}
  %c = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32, strided<[2]>>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

func.func @strided_lookup_table(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32, strided<[1, ?]>>, %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects 'lookup_table' with the identity (row-major) layout}}
  %c = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32, strided<[1, ?]>> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

// expected-error @below {{expected page_size * num_heads * head_size < 2^31 elements (one page of one layer), got page_size = 16, num_heads = 4611686018427387904, head_size = 4}}
func.func @page_too_large(%k: !kvcache.paged_cache<f16, num_heads = 4611686018427387904, head_size = 4, page_size = 16>) {
  return
}

// -----

// Head rows must stay aligned: a static offset or outer stride of blocks that
// is not a multiple of head_size is rejected.
func.func @blocks_offset_breaks_rows(%blocks: memref<4x2x1x16x8x128xf16, strided<[32768, 16384, 16384, 1024, 128, 1], offset: 3>>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>, %max_seq_length: i32, %max_cache_length: i32) {
  // expected-error @below {{expects the offset and outer strides of 'blocks' to be multiples of head_size = 128 (head rows must stay aligned)}}
  %c = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<4x2x1x16x8x128xf16, strided<[32768, 16384, 16384, 1024, 128, 1], offset: 3>>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Former discardable attributes: now inherent (`serves_write`, `read_only`)
//===----------------------------------------------------------------------===//

// The old spellings are rejected, not ignored: an ignored one would change
// which accesses an assert_write_mode = 1 cache checks.

!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

func.func @lookup_discardable_read_only(%cache: !write_checked, %b: index, %t: index) -> (index, index) {
  // expected-error @below {{'kvcache.read_only' is no longer a discardable attribute: use the inherent attribute `read_only` of kvcache.lookup}}
  %page, %slot = kvcache.lookup %cache[%b, %t] {kvcache.read_only} : !write_checked
  return %page, %slot : index, index
}

// -----

!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

func.func @cache_length_discardable_serves_write(%cache: !write_checked, %b: index) -> index {
  // expected-error @below {{'kvcache.serves_write' is no longer a discardable attribute: use the inherent attribute `serves_write` of kvcache.cache_length and kvcache.page_load}}
  %n = kvcache.cache_length %cache[%b] {kvcache.serves_write} : !write_checked
  return %n : index
}

// -----

!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

func.func @page_load_discardable_serves_write(%cache: !write_checked, %page: index, %slot: index, %h: index, %d: index) -> vector<8xf16> {
  // expected-error @below {{'kvcache.serves_write' is no longer a discardable attribute: use the inherent attribute `serves_write` of kvcache.cache_length and kvcache.page_load}}
  %x = kvcache.page_load %cache[%page, %slot, %h, %d] {kvcache.serves_write} : !write_checked -> vector<8xf16>
  return %x : vector<8xf16>
}

// -----

// In the generic form too, and next to the inherent attribute.

!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

func.func @generic_lookup_discardable_read_only(%cache: !write_checked, %b: index, %t: index) -> (index, index) {
  // expected-error @below {{'kvcache.read_only' is no longer a discardable attribute}}
  %page, %slot = "kvcache.lookup"(%cache, %b, %t) <{read_only}> {kvcache.read_only} : (!write_checked, index, index) -> (index, index)
  return %page, %slot : index, index
}

// -----

// On any other op as well.

!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

func.func @load_discardable_serves_write(%cache: !write_checked, %b: index, %h: index, %t: index, %d: index) -> vector<8xf16> {
  // expected-error @below {{'kvcache.serves_write' is no longer a discardable attribute}}
  %x = kvcache.load %cache[%b, %h, %t, %d] {kvcache.serves_write} : !write_checked -> vector<8xf16>
  return %x : vector<8xf16>
}

//===----------------------------------------------------------------------===//
// num_sequences, capacity, lookup {unchecked}
//===----------------------------------------------------------------------===//

// Every kind of this repository implements the sequence hooks, so the
// verifier's "needs a kind that describes its sequences" cannot be reached
// here; the operand constraints can.

func.func @num_sequences_of_memref(%table: memref<?x?xi32>) -> index {
  // expected-error @below {{'kvcache.num_sequences' op operand #0 must be}}
  %n = "kvcache.num_sequences"(%table) : (memref<?x?xi32>) -> index
  return %n : index
}

// -----

func.func @capacity_of_memref(%table: memref<?x?xi32>, %b: index) -> index {
  // expected-error @below {{'kvcache.capacity' op operand #0 must be}}
  %t = "kvcache.capacity"(%table, %b) : (memref<?x?xi32>, index) -> index
  return %t : index
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @capacity_of_i32_batch(%cache: !cache, %b: i32) -> index {
  // expected-error @below {{'kvcache.capacity' op operand #1 must be index}}
  %t = "kvcache.capacity"(%cache, %b) : (!cache, i32) -> index
  return %t : index
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @num_sequences_i32_result(%cache: !cache) -> i32 {
  // expected-error @below {{'kvcache.num_sequences' op result #0 must be index}}
  %n = "kvcache.num_sequences"(%cache) : (!cache) -> i32
  return %n : i32
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @lookup_unchecked_not_unit(%cache: !cache, %b: index, %t: index) -> (index, index) {
  // expected-error @below {{invalid properties {unchecked = 1 : i32} for op kvcache.lookup}}
  %page, %slot = "kvcache.lookup"(%cache, %b, %t) <{unchecked = 1 : i32}> : (!cache, index, index) -> (index, index)
  return %page, %slot : index, index
}
