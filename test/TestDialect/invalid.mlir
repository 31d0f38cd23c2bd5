// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// Verifier rules of the test_kv CSR kind: its type parameters, its
// constructor, and the kvcache ops' rules that read the kind through the
// type interfaces (layer range, MLA, page_size of tile and page accesses).

// expected-error @below {{unsupported element type 'i8'; expected f32, f16 or bf16}}
func.func private @element(!test_kv.csr_collection<i8, num_heads = 2, head_size = 8, page_size = 4>)

// -----

// expected-error @below {{expected page_size > 0, got 0}}
func.func private @page_size(!test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 0>)

// -----

// expected-error @below {{expected page_size * num_heads * head_size < 2^31 elements (one page of one layer)}}
func.func private @huge_page(!test_kv.csr_collection<f16, num_heads = 65536, head_size = 128, page_size = 256>)

// -----

// expected-error @below {{expected assert_write_mode to be 0 or 1, got 2}}
func.func private @write_mode(!test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4, assert_write_mode = 2>)

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @blocks_page_size(%blocks: memref<?x2x?x8x2x8xf16>, %indptr: memref<?xi32>, %indices: memref<?xi32>,
                            %lengths: memref<?xi32>, %n: i32) {
  // expected-error @below {{'test_kv.csr_collection' op expects 'blocks' dim 3 (page_size) to be static and 4 as the collection type says, got 'memref<?x2x?x8x2x8xf16>'}}
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x2x?x8x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  return
}

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4, mla = true>
func.func @blocks_kv_dim(%blocks: memref<?x2x?x4x2x8xf16>, %indptr: memref<?xi32>, %indices: memref<?xi32>,
                         %lengths: memref<?xi32>, %n: i32) {
  // expected-error @below {{expects 'blocks' dim 1 (kv_dim) to be static and 1 as the collection type says}}
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  return
}

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @blocks_element(%blocks: memref<?x2x?x4x2x8xf32>, %indptr: memref<?xi32>, %indices: memref<?xi32>,
                          %lengths: memref<?xi32>, %n: i32) {
  // expected-error @below {{expects 'blocks' element type 'f32' to match the collection element type 'f16'}}
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x2x?x4x2x8xf32>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  return
}

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @blocks_rank(%blocks: memref<?x4x2x8xf16>, %indptr: memref<?xi32>, %indices: memref<?xi32>,
                       %lengths: memref<?xi32>, %n: i32) {
  // expected-error @below {{operand #0 must be 6D memref of any type values, but got 'memref<?x4x2x8xf16>'}}
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x4x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  return
}

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @blocks_inner_strides(%blocks: memref<?x2x?x4x2x8xf16, strided<[?, ?, ?, 32, 8, 1]>>, %indptr: memref<?xi32>,
                                %indices: memref<?xi32>, %lengths: memref<?xi32>, %n: i32) {
  // expected-error @below {{expects the inner dims [page_size, num_heads, head_size] of 'blocks' to be contiguous}}
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x2x?x4x2x8xf16, strided<[?, ?, ?, 32, 8, 1]>>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  return
}

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @blocks_offset(%blocks: memref<?x2x?x4x2x8xf16, strided<[?, ?, ?, 16, 8, 1], offset: 4>>, %indptr: memref<?xi32>,
                         %indices: memref<?xi32>, %lengths: memref<?xi32>, %n: i32) {
  // expected-error @below {{expects the offset and outer strides of 'blocks' to be multiples of head_size = 8}}
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x2x?x4x2x8xf16, strided<[?, ?, ?, 16, 8, 1], offset: 4>>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  return
}

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @indptr_2d(%blocks: memref<?x2x?x4x2x8xf16>, %indptr: memref<?x?xi32>, %indices: memref<?xi32>,
                     %lengths: memref<?xi32>, %n: i32) {
  // expected-error @below {{operand #1 must be 1-D memref of i32 with the identity layout in the default memory space, but got 'memref<?x?xi32>'}}
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x2x?x4x2x8xf16>, memref<?x?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  return
}

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @indices_strided(%blocks: memref<?x2x?x4x2x8xf16>, %indptr: memref<?xi32>,
                           %indices: memref<?xi32, strided<[2]>>, %lengths: memref<?xi32>, %n: i32) {
  // expected-error @below {{operand #2 must be 1-D memref of i32 with the identity layout in the default memory space, but got 'memref<?xi32, strided<[2]>>'}}
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?xi32, strided<[2]>>, memref<?xi32> -> !collection
  return
}

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @lengths_memory_space(%blocks: memref<?x2x?x4x2x8xf16>, %indptr: memref<?xi32>, %indices: memref<?xi32>,
                                %lengths: memref<?xi32, 3>, %n: i32) {
  // expected-error @below {{operand #3 must be 1-D memref of i32 with the identity layout in the default memory space, but got 'memref<?xi32, 3>'}}
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<?xi32, 3> -> !collection
  return
}

// -----

// The layer range of a constant index, from the constructor's static
// num_layers (CollectionOpInterface::getStaticNumLayers).
!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @layer_range(%blocks: memref<?x2x3x4x2x8xf16>, %indptr: memref<?xi32>, %indices: memref<?xi32>,
                       %lengths: memref<?xi32>, %n: i32) {
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %n, %n
      : memref<?x2x3x4x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  %c3 = arith.constant 3 : index
  // expected-error @below {{'kvcache.get_key_cache' op layer index 3 is out of range for a collection of 3 layers}}
  %k = kvcache.get_key_cache %c[%c3] : !collection
  return
}

// -----

func.func @mla_value(%c: !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4, mla = true>, %l: index) {
  // expected-error @below {{an MLA collection (mla = true) has no value cache}}
  %v = kvcache.get_value_cache %c[%l] : !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4, mla = true>
  return
}

// -----

!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @tile_rows(%k: !cache, %b: index, %t: index, %h: index) {
  // expected-error @below {{expects the tile row count 3 to divide page_size}}
  %tile = kvcache.tile %k[%b, %t, %h] : !cache -> memref<3x8xf16, strided<[16, 1], offset: ?>>
  return
}

// -----

!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @page_slot(%k: !cache, %p: index, %h: index, %d: index) {
  %c4 = arith.constant 4 : index
  // expected-error @below {{slot 4 is out of range for page_size = 4}}
  %x = kvcache.page_load %k[%p, %c4, %h, %d] : !cache -> f16
  return
}

// -----

// The kvcache ops take the CSR types only where the interfaces say: a
// layer cache is not a collection.
!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @cache_not_collection(%k: !cache, %pairs: memref<?x2xi32>) {
  // expected-error @below {{operand #0 must be KV cache collection}}
  kvcache.copy_pages %k, %pairs : !cache, memref<?x2xi32>
  return
}

// -----

!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>
func.func @rows_heads(%k: !cache, %rows: memref<?x4x8xf16>, %offsets: memref<?xi32>) {
  // expected-error @below {{expects 'values' dim 1 (num_heads) to be 2 as the cache type says, got 4}}
  kvcache.store_ragged %k, %rows, %offsets : !cache, memref<?x4x8xf16>, memref<?xi32>
  return
}

// -----

// Key and value caches of two kinds are two types.
func.func @attention_mixed_kinds(%q: memref<?x2x8xf16>, %k: !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>,
                                 %v: !kvcache.paged_cache<f16, num_heads = 2, head_size = 8, page_size = 4>,
                                 %offsets: memref<?xi32>) {
  // expected-error @below {{expects the key and value caches to have one type, got '!test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>' and '!kvcache.paged_cache<f16, num_heads = 2, head_size = 8, page_size = 4>'}}
  kvcache.attention_ragged %q, %k, %v, %offsets, %q {scale = 1.0 : f32}
      : memref<?x2x8xf16>, !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>,
        !kvcache.paged_cache<f16, num_heads = 2, head_size = 8, page_size = 4>, memref<?xi32>, memref<?x2x8xf16>
  return
}

// -----

!mla = !test_kv.csr_cache<f16, num_heads = 1, head_size = 8, page_size = 4, mla = true>
func.func @attention_mla(%q: memref<?x2x8xf16>, %k: !mla, %offsets: memref<?xi32>) {
  // expected-error @below {{does not support MLA caches (mla = true)}}
  kvcache.attention_ragged %q, %k, %k, %offsets, %q {scale = 1.0 : f32}
      : memref<?x2x8xf16>, !mla, !mla, memref<?xi32>, memref<?x2x8xf16>
  return
}
