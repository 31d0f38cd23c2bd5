// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s -mlir-print-op-generic | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s -canonicalize | FileCheck %s --check-prefix=CANON

// Round trip of the continuous-batching kind: its types (parameters in
// canonical order, defaults elided, no page_size), its constructor, and every
// access and kernel op taking it through the collection type interfaces.

!coll = !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
!cache = !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>

// CHECK-LABEL: func.func @types
// CHECK-SAME: !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>,
// CHECK-SAME: !kvcache.continuous_collection<bf16, num_heads = 1, head_size = 576, mla = true>,
// CHECK-SAME: !kvcache.continuous_collection<f32, num_heads = 2, head_size = 64, assert_write_mode = 1>,
// CHECK-SAME: !kvcache.continuous_collection<f16, num_heads = 1, head_size = 512, mla = true, assert_write_mode = 1>,
// CHECK-SAME: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>,
// CHECK-SAME: !kvcache.continuous_cache<bf16, num_heads = 2, head_size = 64>)
func.func @types(
    %plain: !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>,
    %mla: !kvcache.continuous_collection<bf16, num_heads = 1, head_size = 576, mla = true>,
    %checked: !kvcache.continuous_collection<f32, num_heads = 2, head_size = 64, assert_write_mode = 1>,
    // Keys in any order; explicit defaults elided.
    %reordered: !kvcache.continuous_collection<f16, assert_write_mode = 1, mla = true, head_size = 512, num_heads = 1>,
    %cache: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128, mla = false, assert_write_mode = 0>,
    %other: !kvcache.continuous_cache<bf16, head_size = 64, num_heads = 2>) {
  return
}

// CHECK-LABEL: func.func @build
// CHECK: %[[C:.*]] = kvcache.continuous_collection %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<?x2x?x?x8x128xf16>, memref<?xi32>, memref<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
// CHECK: kvcache.get_key_cache %[[C]][%{{.*}}] : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
// CHECK: kvcache.get_value_cache %[[C]][%{{.*}}] : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
// CANON-LABEL: func.func @build
// CANON: %[[S:.*]] = arith.index_castui %arg3 : i32 to index
// CANON: %[[M:.*]] = arith.index_castui %arg4 : i32 to index
// CANON: return %{{.*}}, %{{.*}}, %[[S]], %[[M]]
func.func @build(%blocks: memref<?x2x?x?x8x128xf16>, %lengths: memref<?xi32>,
                 %table: memref<?xi32>, %s: i32, %m: i32, %layer: index)
    -> (!cache, !cache, index, index) {
  %c = kvcache.continuous_collection %blocks, %lengths, %table, %s, %m
      : memref<?x2x?x?x8x128xf16>, memref<?xi32>, memref<?xi32> -> !coll
  %k = kvcache.get_key_cache %c[%layer] : !coll
  %v = kvcache.get_value_cache %c[%layer] : !coll
  // Canonicalized to the constructor's operands.
  %max_seq = kvcache.max_seq_length %k : !cache
  %max_cache = kvcache.max_cache_length %c : !coll
  return %k, %v, %max_seq, %max_cache : !cache, !cache, index, index
}

// A static block_tokens, strided blocks.
// CHECK-LABEL: func.func @build_static
// CHECK: kvcache.continuous_collection {{.*}} : memref<4x1x3x4096x1x576xbf16, strided<[7077888, 7077888, 2359296, 576, 576, 1], offset: 576>>, memref<?xi32>, memref<3xi32> -> !kvcache.continuous_collection<bf16, num_heads = 1, head_size = 576, mla = true>
func.func @build_static(%blocks: memref<4x1x3x4096x1x576xbf16, strided<[7077888, 7077888, 2359296, 576, 576, 1], offset: 576>>,
                        %lengths: memref<?xi32>, %table: memref<3xi32>, %s: i32, %m: i32) {
  %c = kvcache.continuous_collection %blocks, %lengths, %table, %s, %m
      : memref<4x1x3x4096x1x576xbf16, strided<[7077888, 7077888, 2359296, 576, 576, 1], offset: 576>>, memref<?xi32>, memref<3xi32>
      -> !kvcache.continuous_collection<bf16, num_heads = 1, head_size = 576, mla = true>
  return
}

// CHECK-LABEL: func.func @access
// CHECK: kvcache.cache_length %{{.*}}[%{{.*}}] : !kvcache.continuous_collection
// CHECK: kvcache.num_pages %{{.*}} : !kvcache.continuous_collection
// CHECK: kvcache.num_layers %{{.*}} : !kvcache.continuous_collection
// CHECK: %page, %slot = kvcache.lookup %{{.*}}[%{{.*}}, %{{.*}}] {read_only} : !kvcache.continuous_cache
// CHECK: kvcache.load %{{.*}} : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128> -> vector<8xf16>
// CHECK: kvcache.store %{{.*}} : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, vector<8xf16>
// CHECK: kvcache.page_load %{{.*}}[%page, %slot, %{{.*}}, %{{.*}}] : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128> -> f16
// CHECK: kvcache.page_store %{{.*}} : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, f16
// CHECK: kvcache.tile %{{.*}} : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128> -> memref<24x128xf16, strided<[1024, 1], offset: ?>>
func.func @access(%c: !coll, %k: !cache, %b: index, %h: index, %t: index, %d: index) -> memref<24x128xf16, strided<[1024, 1], offset: ?>> {
  %n = kvcache.cache_length %c[%b] : !coll
  %p = kvcache.num_pages %c : !coll
  %l = kvcache.num_layers %c : !coll
  %page, %slot = kvcache.lookup %k[%b, %t] {read_only} : !cache
  %x = kvcache.load %k[%b, %h, %t, %d] : !cache -> vector<8xf16>
  kvcache.store %x, %k[%b, %h, %t, %d] : !cache, vector<8xf16>
  %e = kvcache.page_load %k[%page, %slot, %h, %d] : !cache -> f16
  kvcache.page_store %e, %k[%page, %slot, %h, %d] : !cache, f16
  // Any tile height: blocks have no static page size.
  %tile = kvcache.tile %k[%b, %t, %h] : !cache -> memref<24x128xf16, strided<[1024, 1], offset: ?>>
  return %tile : memref<24x128xf16, strided<[1024, 1], offset: ?>>
}

// CHECK-LABEL: func.func @kernels
// CHECK: kvcache.store_ragged %{{.*}} : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, memref<?x8x128xf16>, memref<?xi32>
// CHECK: kvcache.gather_ragged %{{.*}} : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, memref<?x8x128xf16>, memref<?xi32>
// CHECK: kvcache.attention_ragged {{.*}} : memref<?x32x128xf16>, !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
func.func @kernels(%k: !cache, %v: !cache, %rows: memref<?x8x128xf16>, %offsets: memref<?xi32>,
                   %q: memref<?x32x128xf16>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.store_ragged %k, %rows, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  kvcache.gather_ragged %k, %rows, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}
