// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s -mlir-print-op-generic | kvcache-opt | FileCheck %s

// Round trip of the CSR collection kind of the test_kv dialect (test/lib):
// its types, its constructor, and every kvcache op that takes a collection
// or a layer cache, on it. The kvcache ops know the kind only through the
// type interfaces.

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>

// CHECK-LABEL: func.func @types
// CHECK-SAME: !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>,
// CHECK-SAME: !test_kv.csr_collection<bf16, num_heads = 1, head_size = 16, page_size = 2, mla = true>,
// CHECK-SAME: !test_kv.csr_collection<f32, num_heads = 2, head_size = 8, page_size = 4, assert_write_mode = 1>,
// CHECK-SAME: !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>,
// CHECK-SAME: !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4, mla = true, assert_write_mode = 1>)
func.func @types(
    %plain: !collection,
    %mla: !test_kv.csr_collection<bf16, num_heads = 1, head_size = 16, page_size = 2, mla = true>,
    %checked: !test_kv.csr_collection<f32, num_heads = 2, head_size = 8, page_size = 4, assert_write_mode = 1>,
    // Keys in any order; explicit defaults are elided.
    %reordered: !test_kv.csr_collection<f16, page_size = 4, mla = false, head_size = 8, num_heads = 2>,
    %cache: !test_kv.csr_cache<f16, assert_write_mode = 1, num_heads = 2, head_size = 8, page_size = 4, mla = true>) {
  return
}

// CHECK-LABEL: func.func @csr_collection
// CHECK: %[[C:.*]] = test_kv.csr_collection %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
// CHECK: test_kv.csr_collection %{{.*}} : memref<9x2x3x4x2x8xf16, strided<[1024, 512, 128, 16, 8, 1], offset: 64>>, memref<3xi32>, memref<5xi32>, memref<2xi32> -> !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
// CHECK: return %[[C]]
func.func @csr_collection(%blocks: memref<?x2x?x4x2x8xf16>, %kv_indptr: memref<?xi32>,
                          %kv_indices: memref<?xi32>, %cache_lengths: memref<?xi32>,
                          %max_seq_length: i32, %max_cache_length: i32,
                          %padded: memref<9x2x3x4x2x8xf16, strided<[1024, 512, 128, 16, 8, 1], offset: 64>>,
                          %static_indptr: memref<3xi32>, %static_indices: memref<5xi32>,
                          %static_lengths: memref<2xi32>) -> !collection {
  %c = test_kv.csr_collection %blocks, %kv_indptr, %kv_indices, %cache_lengths, %max_seq_length, %max_cache_length
      : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  %s = test_kv.csr_collection %padded, %static_indptr, %static_indices, %static_lengths, %max_seq_length, %max_cache_length
      : memref<9x2x3x4x2x8xf16, strided<[1024, 512, 128, 16, 8, 1], offset: 64>>, memref<3xi32>, memref<5xi32>, memref<2xi32> -> !collection
  return %c : !collection
}

// CHECK-LABEL: func.func @access_ops
// CHECK: %[[K:.*]] = kvcache.get_key_cache %{{.*}}[%{{.*}}] : !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
// CHECK: %[[V:.*]] = kvcache.get_value_cache %{{.*}}[%{{.*}}] : !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
// CHECK: kvcache.cache_length %{{.*}}[%{{.*}}] : !test_kv.csr_collection
// CHECK: kvcache.cache_length %[[K]][%{{.*}}] {serves_write} : !test_kv.csr_cache
// CHECK: kvcache.max_seq_length %{{.*}} : !test_kv.csr_collection
// CHECK: kvcache.max_cache_length %[[K]] : !test_kv.csr_cache
// CHECK: kvcache.num_pages %{{.*}} : !test_kv.csr_collection
// CHECK: kvcache.num_layers %{{.*}} : !test_kv.csr_collection
// CHECK: %[[PAGE:.*]], %[[SLOT:.*]] = kvcache.lookup %[[K]][%{{.*}}, %{{.*}}] {read_only} : !test_kv.csr_cache
// CHECK: kvcache.load %[[K]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4> -> vector<8xf16>
// CHECK: kvcache.store %{{.*}}, %[[V]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>, f16
// CHECK: kvcache.page_load %[[K]][%[[PAGE]], %[[SLOT]], %{{.*}}, %{{.*}}] {serves_write} : !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4> -> vector<4xf16>
// CHECK: kvcache.page_store %{{.*}}, %[[V]][%[[PAGE]], %[[SLOT]], %{{.*}}, %{{.*}}] : !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>, vector<4xf16>
// CHECK: kvcache.tile %[[K]][%{{.*}}, %{{.*}}, %{{.*}}] : !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4> -> memref<2x8xf16, strided<[16, 1], offset: ?>>
func.func @access_ops(%c: !collection, %layer: index, %b: index, %t: index, %h: index, %d: index, %x: f16) {
  %k = kvcache.get_key_cache %c[%layer] : !collection
  %v = kvcache.get_value_cache %c[%layer] : !collection
  %n = kvcache.cache_length %c[%b] : !collection
  %w = kvcache.cache_length %k[%b] {serves_write} : !cache
  %s = kvcache.max_seq_length %c : !collection
  %m = kvcache.max_cache_length %k : !cache
  %p = kvcache.num_pages %c : !collection
  %l = kvcache.num_layers %c : !collection
  %page, %slot = kvcache.lookup %k[%b, %t] {read_only} : !cache
  %row = kvcache.load %k[%b, %h, %t, %d] : !cache -> vector<8xf16>
  kvcache.store %x, %v[%b, %h, %t, %d] : !cache, f16
  %half = kvcache.page_load %k[%page, %slot, %h, %d] {serves_write} : !cache -> vector<4xf16>
  kvcache.page_store %half, %v[%page, %slot, %h, %d] : !cache, vector<4xf16>
  %tile = kvcache.tile %k[%b, %t, %h] : !cache -> memref<2x8xf16, strided<[16, 1], offset: ?>>
  return
}

// CHECK-LABEL: func.func @kernel_ops
// CHECK: kvcache.store_ragged %{{.*}}, %{{.*}}, %{{.*}} : !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>, memref<?x2x8xf16>, memref<?xi32>
// CHECK: kvcache.gather_ragged %{{.*}}, %{{.*}}, %{{.*}} : !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>, memref<?x2x8xf16>, memref<?xi32>
// CHECK: kvcache.copy_pages %{{.*}}, %{{.*}} : !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>, memref<?x2xi32>
// CHECK: kvcache.attention_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f32} : memref<?x4x8xf16>, !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>, !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>, memref<?xi32>, memref<?x4x8xf16>
func.func @kernel_ops(%c: !collection, %rows: memref<?x2x8xf16>, %offsets: memref<?xi32>,
                      %pairs: memref<?x2xi32>, %q: memref<?x4x8xf16>, %out: memref<?x4x8xf16>) {
  %c0 = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%c0] : !collection
  %v = kvcache.get_value_cache %c[%c0] : !collection
  kvcache.store_ragged %k, %rows, %offsets : !cache, memref<?x2x8xf16>, memref<?xi32>
  kvcache.gather_ragged %v, %rows, %offsets : !cache, memref<?x2x8xf16>, memref<?xi32>
  kvcache.copy_pages %c, %pairs : !collection, memref<?x2xi32>
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.5 : f32}
      : memref<?x4x8xf16>, !cache, !cache, memref<?xi32>, memref<?x4x8xf16>
  return
}
