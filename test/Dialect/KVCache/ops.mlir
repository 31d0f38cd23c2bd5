// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s -mlir-print-op-generic | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Round trip of every type and op of the dialect, through the custom and the
// generic form. Types print their parameters in canonical order with the
// defaults (mla = false, assert_write_mode = 0) elided.

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @collection_types
// CHECK-SAME: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>,
// CHECK-SAME: !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
// CHECK-SAME: !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>,
// CHECK-SAME: !kvcache.paged_collection<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>,
// CHECK-SAME: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>,
// CHECK-SAME: !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>,
// CHECK-SAME: !kvcache.paged_collection<f16, num_heads = 1, head_size = 512, page_size = 128, mla = true, assert_write_mode = 1>)
func.func @collection_types(
    %plain: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>,
    %mla: !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
    %checked: !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>,
    %fp8: !kvcache.paged_collection<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>,
    // Keys in any order.
    %reordered: !kvcache.paged_collection<f16, page_size = 16, head_size = 128, num_heads = 8>,
    // Explicit defaults are elided when printed.
    %defaults: !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16, mla = false, assert_write_mode = 0>,
    %mla_checked: !kvcache.paged_collection<f16, assert_write_mode = 1, page_size = 128, mla = true, head_size = 512, num_heads = 1>) {
  return
}

// CHECK-LABEL: func.func @cache_types
// CHECK-SAME: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>,
// CHECK-SAME: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
// CHECK-SAME: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>,
// CHECK-SAME: !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>,
// CHECK-SAME: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>,
// CHECK-SAME: !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>,
// CHECK-SAME: !kvcache.paged_cache<f16, num_heads = 1, head_size = 512, page_size = 128, mla = true, assert_write_mode = 1>)
func.func @cache_types(
    %plain: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>,
    %mla: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
    %checked: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>,
    %fp8: !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>,
    %reordered: !kvcache.paged_cache<f16, head_size = 128, page_size = 16, num_heads = 8>,
    %defaults: !kvcache.paged_cache<bf16, mla = false, num_heads = 8, head_size = 128, assert_write_mode = 0, page_size = 16>,
    %mla_checked: !kvcache.paged_cache<f16, mla = true, num_heads = 1, head_size = 512, page_size = 128, assert_write_mode = 1>) {
  return
}

//===----------------------------------------------------------------------===//
// Access ops: the examples of docs/Contract.md, section 3.2
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @spec_access_ops
// CHECK-SAME: (%[[BLOCKS:.*]]: memref<?x2x?x16x8x128xf16>, %[[CACHE_LENGTHS:.*]]: memref<?xi32>, %[[LOOKUP_TABLE:.*]]: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:.*]]: i32, %[[MAX_CACHE_LENGTH:.*]]: i32, %[[LAYER:.*]]: index, %[[B:.*]]: index, %[[T:.*]]: index, %[[H:.*]]: index, %[[D:.*]]: index)
// CHECK: %[[C:.*]] = kvcache.paged_collection %[[BLOCKS]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %[[K:.*]] = kvcache.get_key_cache %[[C]][%[[LAYER]]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %[[V:.*]] = kvcache.get_value_cache %[[C]][%[[LAYER]]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.cache_length %[[C]][%[[B]]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.max_seq_length %[[C]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.max_cache_length %[[C]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.cache_length %[[K]][%[[B]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.max_seq_length %[[V]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.max_cache_length %[[K]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %[[PAGE:page]], %[[SLOT:slot]] = kvcache.lookup %[[K]][%[[B]], %[[T]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %[[X:.*]] = kvcache.load %[[K]][%[[B]], %[[H]], %[[T]], %[[D]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
// CHECK: kvcache.store %[[X]], %[[K]][%[[B]], %[[H]], %[[T]], %[[D]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
// CHECK: %[[Y:.*]] = kvcache.page_load %[[K]][%[[PAGE]], %[[SLOT]], %[[H]], %[[D]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
// CHECK: kvcache.page_store %[[Y]], %[[K]][%[[PAGE]], %[[SLOT]], %[[H]], %[[D]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
// CHECK: %{{.*}} = kvcache.tile %[[K]][%[[B]], %[[T]], %[[H]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16, strided<[1024, 1], offset: ?>>
// CHECK: %[[SCALAR:.*]] = kvcache.load %[[V]][%[[B]], %[[H]], %[[T]], %[[D]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
// CHECK: kvcache.store %[[SCALAR]], %[[V]][%[[B]], %[[H]], %[[T]], %[[D]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, f16
// CHECK: %[[PAGE_SCALAR:.*]] = kvcache.page_load %[[V]][%[[PAGE]], %[[SLOT]], %[[H]], %[[D]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
// CHECK: kvcache.page_store %[[PAGE_SCALAR]], %[[V]][%[[PAGE]], %[[SLOT]], %[[H]], %[[D]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, f16
// CHECK: return
func.func @spec_access_ops(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
                           %max_seq_length: i32, %max_cache_length: i32,
                           %layer: index, %b: index, %t: index, %h: index, %d: index) {
  %c = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
         : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %k = kvcache.get_key_cache %c[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %v = kvcache.get_value_cache %c[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %n = kvcache.cache_length %c[%b] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %s = kvcache.max_seq_length %c : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %m = kvcache.max_cache_length %c : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  // The metadata queries also take a layer cache.
  %k_n = kvcache.cache_length %k[%b] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  %v_s = kvcache.max_seq_length %v : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  %k_m = kvcache.max_cache_length %k : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  %page, %slot = kvcache.lookup %k[%b, %t] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  %x = kvcache.load %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
  kvcache.store %x, %k[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
  %y = kvcache.page_load %k[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> vector<8xf16>
  kvcache.page_store %y, %k[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, vector<8xf16>
  %tile = kvcache.tile %k[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<16x128xf16, strided<[1024, 1], offset: ?>>
  // Scalar accesses.
  %scalar = kvcache.load %v[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
  kvcache.store %scalar, %v[%b, %h, %t, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, f16
  %page_scalar = kvcache.page_load %v[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> f16
  kvcache.page_store %page_scalar, %v[%page, %slot, %h, %d] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, f16
  return
}

// GENERIC-LABEL: sym_name = "spec_access_ops"
// GENERIC: "kvcache.get_key_cache"(%{{.*}}, %{{.*}}) : (!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, index) -> !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// GENERIC: "kvcache.lookup"(%{{.*}}, %{{.*}}, %{{.*}}) : (!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, index, index) -> (index, index)

// The unit attributes the lowerings set: `serves_write` (cache_length,
// page_load) and `read_only` (lookup), inherent (properties in the generic
// form).

// CHECK-LABEL: func.func @write_mode_attributes
// CHECK: kvcache.cache_length %{{.*}}[%{{.*}}] {serves_write} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>
// CHECK: kvcache.lookup %{{.*}}[%{{.*}}, %{{.*}}] {read_only} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>
// CHECK: kvcache.page_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {serves_write} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1> -> vector<8xf16>
// GENERIC-LABEL: sym_name = "write_mode_attributes"
// GENERIC: "kvcache.cache_length"(%{{.*}}, %{{.*}}) <{serves_write}>
// GENERIC: "kvcache.lookup"(%{{.*}}, %{{.*}}, %{{.*}}) <{read_only}>
// GENERIC: "kvcache.page_load"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{serves_write}>
func.func @write_mode_attributes(%k: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>,
                                 %b: index, %t: index, %h: index, %d: index) -> (index, vector<8xf16>) {
  %n = kvcache.cache_length %k[%b] {serves_write} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>
  %page, %slot = kvcache.lookup %k[%b, %t] {read_only} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>
  %x = kvcache.page_load %k[%page, %slot, %h, %d] {serves_write} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1> -> vector<8xf16>
  return %n, %x : index, vector<8xf16>
}

//===----------------------------------------------------------------------===//
// paged_collection: blocks layouts and metadata shapes
//===----------------------------------------------------------------------===//

// Any strided layout whose inner three dims are contiguous; num_pages,
// num_layers, the outer strides and the offset may be dynamic.

// CHECK-LABEL: func.func @collection_strided_blocks
// CHECK-SAME: (%[[BLOCKS:.*]]: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:.*]]: memref<?xi32>, %[[LOOKUP_TABLE:.*]]: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:.*]]: i32, %[[MAX_CACHE_LENGTH:.*]]: i32)
// CHECK: kvcache.paged_collection %[[BLOCKS]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] : memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @collection_strided_blocks(%blocks: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>,
                                     %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
                                     %max_seq_length: i32, %max_cache_length: i32) -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16> {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return %collection : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
}

// Static shapes everywhere, a padded static strided layout, and a constant
// layer index in range of the static num_layers.

// CHECK-LABEL: func.func @collection_static_shapes
// CHECK-SAME: (%[[BLOCKS:.*]]: memref<64x2x4x4x2x64xf32>, %[[PADDED:.*]]: memref<64x2x4x4x2x64xf32, strided<[8192, 4096, 1024, 128, 64, 1], offset: 256>>, %[[CACHE_LENGTHS:.*]]: memref<3xi32>, %[[LOOKUP_TABLE:.*]]: memref<3x16xi32>, %[[MAX_SEQ_LENGTH:.*]]: i32, %[[MAX_CACHE_LENGTH:.*]]: i32)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[C:.*]] = kvcache.paged_collection %[[BLOCKS]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] : memref<64x2x4x4x2x64xf32>, memref<3xi32>, memref<3x16xi32> -> !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>
// CHECK: %[[PADDED_C:.*]] = kvcache.paged_collection %[[PADDED]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] : memref<64x2x4x4x2x64xf32, strided<[8192, 4096, 1024, 128, 64, 1], offset: 256>>, memref<3xi32>, memref<3x16xi32> -> !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4>
// CHECK: kvcache.get_key_cache %[[C]][%[[C0]]] : !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>
// CHECK: kvcache.get_value_cache %[[PADDED_C]][%[[C3]]] : !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4>
func.func @collection_static_shapes(%blocks: memref<64x2x4x4x2x64xf32>,
                                    %padded_blocks: memref<64x2x4x4x2x64xf32, strided<[8192, 4096, 1024, 128, 64, 1], offset: 256>>,
                                    %cache_lengths: memref<3xi32>, %lookup_table: memref<3x16xi32>,
                                    %max_seq_length: i32, %max_cache_length: i32) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<64x2x4x4x2x64xf32>, memref<3xi32>, memref<3x16xi32> -> !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>
  %padded = kvcache.paged_collection %padded_blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<64x2x4x4x2x64xf32, strided<[8192, 4096, 1024, 128, 64, 1], offset: 256>>, memref<3xi32>, memref<3x16xi32> -> !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4>
  %first_key = kvcache.get_key_cache %collection[%c0] : !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>
  %last_value = kvcache.get_value_cache %padded[%c3] : !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4>
  return
}

// An MLA collection has kv_dim 1 and only a key cache; the layer cache keeps
// mla and assert_write_mode.

// CHECK-LABEL: func.func @collection_mla
// CHECK-SAME: (%[[BLOCKS:.*]]: memref<?x1x?x64x1x576xbf16>, %[[CACHE_LENGTHS:.*]]: memref<?xi32>, %[[LOOKUP_TABLE:.*]]: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:.*]]: i32, %[[MAX_CACHE_LENGTH:.*]]: i32, %[[LAYER:.*]]: index)
// CHECK: %[[C:.*]] = kvcache.paged_collection %[[BLOCKS]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] : memref<?x1x?x64x1x576xbf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>
// CHECK: %[[K:.*]] = kvcache.get_key_cache %[[C]][%[[LAYER]]] : !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>
// CHECK: return %[[K]] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>
func.func @collection_mla(%blocks: memref<?x1x?x64x1x576xbf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
                          %max_seq_length: i32, %max_cache_length: i32, %layer: index)
    -> !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1> {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x1x?x64x1x576xbf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>
  %key = kvcache.get_key_cache %collection[%layer] : !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>
  return %key : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true, assert_write_mode = 1>
}

// A raw f8E4M3FN collection (no scales): stored codes, moved unchanged.

// CHECK-LABEL: func.func @collection_fp8
// CHECK: kvcache.paged_collection %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<?x2x?x32x4x64xf8E4M3FN>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>
func.func @collection_fp8(%blocks: memref<?x2x?x32x4x64xf8E4M3FN>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
                          %max_seq_length: i32, %max_cache_length: i32) {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x32x4x64xf8E4M3FN>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>
  return
}

//===----------------------------------------------------------------------===//
// Element access: element types, widths and constant indices at the bounds
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @access_element_types
// CHECK-SAME: (%[[F32:.*]]: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, %[[BF16:.*]]: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %[[FP8:.*]]: !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>, %[[B:.*]]: index, %[[T:.*]]: index)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C60:.*]] = arith.constant 60 : index
// CHECK-DAG: %[[C63:.*]] = arith.constant 63 : index
// CHECK-DAG: %[[C568:.*]] = arith.constant 568 : index
// CHECK: %[[X32:.*]] = kvcache.load %[[F32]][%[[B]], %[[C1]], %[[T]], %[[C63]]] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1> -> f32
// CHECK: kvcache.store %[[X32]], %[[F32]][%[[B]], %[[C1]], %[[T]], %[[C63]]] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, f32
// CHECK: %[[V32:.*]] = kvcache.load %[[F32]][%[[B]], %[[C0]], %[[T]], %[[C60]]] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1> -> vector<4xf32>
// CHECK: kvcache.page_store %[[V32]], %[[F32]][%[[B]], %[[C3]], %[[C1]], %[[C60]]] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, vector<4xf32>
// CHECK: %[[WHOLE_ROW:.*]] = kvcache.page_load %[[BF16]][%[[B]], %[[T]], %[[C0]], %[[C0]]] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true> -> vector<576xbf16>
// CHECK: kvcache.store %[[WHOLE_ROW]], %[[BF16]][%[[B]], %[[C0]], %[[T]], %[[C0]]] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, vector<576xbf16>
// CHECK: %[[TAIL:.*]] = kvcache.load %[[BF16]][%[[B]], %[[C0]], %[[T]], %[[C568]]] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true> -> vector<8xbf16>
// CHECK: %[[X8:.*]] = kvcache.load %[[FP8]][%[[B]], %[[C3]], %[[T]], %[[C0]]] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32> -> vector<16xf8E4M3FN>
// CHECK: kvcache.store %[[X8]], %[[FP8]][%[[B]], %[[C3]], %[[T]], %[[C0]]] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>, vector<16xf8E4M3FN>
// CHECK: %[[S8:.*]] = kvcache.page_load %[[FP8]][%[[B]], %[[T]], %[[C0]], %[[C63]]] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32> -> f8E4M3FN
// CHECK: kvcache.page_store %[[S8]], %[[FP8]][%[[B]], %[[T]], %[[C0]], %[[C63]]] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>, f8E4M3FN
// CHECK: return %[[TAIL]] : vector<8xbf16>
func.func @access_element_types(%f32_cache: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>,
                                %bf16_cache: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
                                %fp8_cache: !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>,
                                %b: index, %t: index) -> vector<8xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c60 = arith.constant 60 : index
  %c63 = arith.constant 63 : index
  %c568 = arith.constant 568 : index
  // Last head, last element.
  %x = kvcache.load %f32_cache[%b, %c1, %t, %c63] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1> -> f32
  kvcache.store %x, %f32_cache[%b, %c1, %t, %c63] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, f32
  // d + W == head_size, last slot of the page.
  %v = kvcache.load %f32_cache[%b, %c0, %t, %c60] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1> -> vector<4xf32>
  kvcache.page_store %v, %f32_cache[%b, %c3, %c1, %c60] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, vector<4xf32>
  // W == head_size.
  %row = kvcache.page_load %bf16_cache[%b, %t, %c0, %c0] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true> -> vector<576xbf16>
  kvcache.store %row, %bf16_cache[%b, %c0, %t, %c0] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, vector<576xbf16>
  %tail = kvcache.load %bf16_cache[%b, %c0, %t, %c568] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true> -> vector<8xbf16>
  %x8 = kvcache.load %fp8_cache[%b, %c3, %t, %c0] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32> -> vector<16xf8E4M3FN>
  kvcache.store %x8, %fp8_cache[%b, %c3, %t, %c0] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>, vector<16xf8E4M3FN>
  %s8 = kvcache.page_load %fp8_cache[%b, %t, %c0, %c63] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32> -> f8E4M3FN
  kvcache.page_store %s8, %fp8_cache[%b, %t, %c0, %c63] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>, f8E4M3FN
  return %tail : vector<8xbf16>
}

//===----------------------------------------------------------------------===//
// tile
//===----------------------------------------------------------------------===//

// T may be any divisor of page_size.

// CHECK-LABEL: func.func @tiles
// CHECK-SAME: (%[[K:.*]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[MLA:.*]]: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %[[FP8:.*]]: !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>, %[[B:.*]]: index, %[[T:.*]]: index, %[[H:.*]]: index)
// CHECK: kvcache.tile %[[K]][%[[B]], %[[T]], %[[H]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<1x128xf16, strided<[1024, 1], offset: ?>>
// CHECK: kvcache.tile %[[K]][%[[B]], %[[T]], %[[H]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<8x128xf16, strided<[1024, 1], offset: ?>>
// CHECK: kvcache.tile %[[MLA]][%[[B]], %[[T]], %[[H]]] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true> -> memref<64x576xbf16, strided<[576, 1], offset: ?>>
// CHECK: kvcache.tile %[[FP8]][%[[B]], %[[T]], %[[H]]] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32> -> memref<4x64xf8E4M3FN, strided<[256, 1], offset: ?>>
func.func @tiles(%k: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>,
                 %mla: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
                 %fp8: !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32>,
                 %b: index, %t: index, %h: index) {
  %one_row = kvcache.tile %k[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<1x128xf16, strided<[1024, 1], offset: ?>>
  %half_page = kvcache.tile %k[%b, %t, %h] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16> -> memref<8x128xf16, strided<[1024, 1], offset: ?>>
  %mla_page = kvcache.tile %mla[%b, %t, %h] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true> -> memref<64x576xbf16, strided<[576, 1], offset: ?>>
  %fp8_rows = kvcache.tile %fp8[%b, %t, %h] : !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 32> -> memref<4x64xf8E4M3FN, strided<[256, 1], offset: ?>>
  return
}

//===----------------------------------------------------------------------===//
// Kernel ops: the examples of docs/Contract.md, section 3.3
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @spec_kernel_ops
// CHECK-SAME: (%[[C:.*]]: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[LAYER:.*]]: index, %[[NEW:.*]]: memref<?x8x128xf16>, %[[ROW_OFFSETS:.*]]: memref<?xi32>, %[[OUT_ROWS:.*]]: memref<?x8x128xf16>, %[[CTX_OFFSETS:.*]]: memref<?xi32>, %[[PAIRS:.*]]: memref<?x2xi32>, %[[Q:.*]]: memref<?x32x128xf16>, %[[OUT:.*]]: memref<?x32x128xf16>, %[[WORKSPACE:.*]]: memref<?xf32>)
// CHECK: %[[K:.*]] = kvcache.get_key_cache %[[C]][%[[LAYER]]]
// CHECK: %[[V:.*]] = kvcache.get_value_cache %[[C]][%[[LAYER]]]
// CHECK: kvcache.store_ragged %[[K]], %[[NEW]], %[[ROW_OFFSETS]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
// CHECK: kvcache.gather_ragged %[[K]], %[[OUT_ROWS]], %[[CTX_OFFSETS]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
// CHECK: kvcache.copy_pages %[[C]], %[[PAIRS]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32>
// CHECK: kvcache.attention_ragged %[[Q]], %[[K]], %[[V]], %[[ROW_OFFSETS]], %[[OUT]] {scale = 8.838830e-02 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>{{$}}
// CHECK: kvcache.attention_ragged %[[Q]], %[[K]], %[[V]], %[[ROW_OFFSETS]], %[[OUT]], %[[WORKSPACE]] {scale = 8.838830e-02 : f32} : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>{{$}}
func.func @spec_kernel_ops(%c: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %layer: index,
                           %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>,
                           %out_rows: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32>,
                           %pairs: memref<?x2xi32>,
                           %q: memref<?x32x128xf16>, %out: memref<?x32x128xf16>, %workspace: memref<?xf32>) {
  %k = kvcache.get_key_cache %c[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %v = kvcache.get_value_cache %c[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  kvcache.store_ragged %k, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
  kvcache.gather_ragged %k, %out_rows, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
  kvcache.copy_pages %c, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32>
  kvcache.attention_ragged %q, %k, %v, %row_offsets, %out {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>
  kvcache.attention_ragged %q, %k, %v, %row_offsets, %out, %workspace {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}

// GENERIC-LABEL: sym_name = "spec_kernel_ops"
// The operand segments are q, key_cache, value_cache, row_offsets, out, lse,
// workspace, sinks, alibi: `lse` follows `out` (the inits, one range).
// GENERIC: "kvcache.attention_ragged"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>, scale = 8.838830e-02 : f32}> : (memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>) -> ()
// GENERIC: "kvcache.attention_ragged"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 1, 0, 0, 0, 0>, scale = 8.838830e-02 : f32}> : (memref<?x32x128xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>) -> ()

// Static token counts and batch sizes, other element types, an MLA cache in
// the ragged ops, and q_heads == num_heads (no grouping).

// CHECK-LABEL: func.func @kernel_ops_static_shapes
// CHECK-SAME: (%[[C:.*]]: !kvcache.paged_collection<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>, %[[MLA:.*]]: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %[[F32_K:.*]]: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, %[[F32_V:.*]]: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, %[[NEW:.*]]: memref<5x2x64xbf16>, %[[ROW_OFFSETS:.*]]: memref<3xi32>, %[[LATENTS:.*]]: memref<?x1x576xbf16>, %[[PAIRS:.*]]: memref<4x2xi32>, %[[Q:.*]]: memref<3x2x64xf32>, %[[WORKSPACE:.*]]: memref<4096xf32>)
// CHECK: %[[K:.*]] = kvcache.get_key_cache %[[C]][%{{.*}}] : !kvcache.paged_collection<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>
// CHECK: kvcache.store_ragged %[[K]], %[[NEW]], %[[ROW_OFFSETS]] : !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>, memref<5x2x64xbf16>, memref<3xi32>
// CHECK: kvcache.gather_ragged %[[K]], %[[NEW]], %[[ROW_OFFSETS]] : !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>, memref<5x2x64xbf16>, memref<3xi32>
// CHECK: kvcache.store_ragged %[[MLA]], %[[LATENTS]], %[[ROW_OFFSETS]] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?x1x576xbf16>, memref<3xi32>
// CHECK: kvcache.gather_ragged %[[MLA]], %[[LATENTS]], %[[ROW_OFFSETS]] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?x1x576xbf16>, memref<3xi32>
// CHECK: kvcache.copy_pages %[[C]], %[[PAIRS]] : !kvcache.paged_collection<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>, memref<4x2xi32>
// CHECK: kvcache.attention_ragged %[[Q]], %[[F32_K]], %[[F32_V]], %[[ROW_OFFSETS]], %[[Q]], %[[WORKSPACE]] {scale = 1.250000e-01 : f32} : memref<3x2x64xf32>, !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, memref<3xi32>, memref<3x2x64xf32>, memref<4096xf32>
func.func @kernel_ops_static_shapes(%c: !kvcache.paged_collection<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>,
                                    %mla: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
                                    %f32_key: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>,
                                    %f32_value: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>,
                                    %new: memref<5x2x64xbf16>, %row_offsets: memref<3xi32>,
                                    %latents: memref<?x1x576xbf16>, %pairs: memref<4x2xi32>,
                                    %q: memref<3x2x64xf32>, %workspace: memref<4096xf32>) {
  %c0 = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%c0] : !kvcache.paged_collection<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>
  kvcache.store_ragged %k, %new, %row_offsets : !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>, memref<5x2x64xbf16>, memref<3xi32>
  kvcache.gather_ragged %k, %new, %row_offsets : !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>, memref<5x2x64xbf16>, memref<3xi32>
  kvcache.store_ragged %mla, %latents, %row_offsets : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?x1x576xbf16>, memref<3xi32>
  kvcache.gather_ragged %mla, %latents, %row_offsets : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?x1x576xbf16>, memref<3xi32>
  kvcache.copy_pages %c, %pairs : !kvcache.paged_collection<bf16, num_heads = 2, head_size = 64, page_size = 32, assert_write_mode = 1>, memref<4x2xi32>
  // In-place: q and out may be the same buffer type (and value).
  kvcache.attention_ragged %q, %f32_key, %f32_value, %row_offsets, %q, %workspace {scale = 0.125 : f32}
      : memref<3x2x64xf32>, !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>, memref<3xi32>, memref<3x2x64xf32>, memref<4096xf32>
  return
}

//===----------------------------------------------------------------------===//
// Region boundaries
//===----------------------------------------------------------------------===//

// Values of both types cross func.call, func.return and scf regions.

// CHECK-LABEL: func.func @layer_loop
// CHECK-SAME: (%[[C:.*]]: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[NUM_LAYERS:.*]]: index, %[[B:.*]]: index)
// CHECK: %[[RESULT:.*]] = scf.for %[[LAYER:.*]] = %{{.*}} to %[[NUM_LAYERS]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[C]]) -> (!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>)
// CHECK: %[[K:.*]] = kvcache.get_key_cache %[[ACC]][%[[LAYER]]]
// CHECK: %{{.*}} = func.call @cache_length_of(%[[K]], %[[B]]) : (!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, index) -> index
// CHECK: scf.yield %[[ACC]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: return %[[RESULT]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @layer_loop(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>,
                      %num_layers: index, %b: index) -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %result = scf.for %layer = %c0 to %num_layers step %c1
      iter_args(%acc = %collection) -> (!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>) {
    %key = kvcache.get_key_cache %acc[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
    %length = func.call @cache_length_of(%key, %b) : (!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, index) -> index
    scf.yield %acc : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  }
  return %result : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
}

// CHECK-LABEL: func.func private @cache_length_of
// CHECK-SAME: (!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, index) -> index
func.func private @cache_length_of(!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, index) -> index

//===----------------------------------------------------------------------===//
// The queries of the argument checks
//===----------------------------------------------------------------------===//

// num_sequences and capacity take a collection or a layer cache of either
// kind; `unchecked` is a unit attribute of lookup (inherent: a property in
// the generic form), next to `read_only`.

// CHECK-LABEL: func.func @argument_check_queries
// CHECK-SAME: (%[[PC:[^:]*]]: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[PK:[^:]*]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[CC:[^:]*]]: !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>, %[[CK:[^:]*]]: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>, %[[B:[^:]*]]: index, %[[T:[^:]*]]: index)
// CHECK: %{{.*}} = kvcache.num_sequences %[[PC]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.num_sequences %[[PK]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.num_sequences %[[CC]] : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
// CHECK: %{{.*}} = kvcache.num_sequences %[[CK]] : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>
// CHECK: %{{.*}} = kvcache.capacity %[[PC]][%[[B]]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.capacity %[[PK]][%[[B]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}} = kvcache.capacity %[[CC]][%[[B]]] : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
// CHECK: %{{.*}} = kvcache.capacity %[[CK]][%[[B]]] : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>
// CHECK: %{{.*}}, %{{.*}} = kvcache.lookup %[[PK]][%[[B]], %[[T]]] {unchecked} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK: %{{.*}}, %{{.*}} = kvcache.lookup %[[CK]][%[[B]], %[[T]]] {read_only, unchecked} : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>
// GENERIC-LABEL: sym_name = "argument_check_queries"
// GENERIC: "kvcache.num_sequences"(%{{.*}}) : (!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>) -> index
// GENERIC: "kvcache.capacity"(%{{.*}}, %{{.*}}) : (!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, index) -> index
// GENERIC: "kvcache.lookup"(%{{.*}}, %{{.*}}, %{{.*}}) <{unchecked}>
// GENERIC: "kvcache.lookup"(%{{.*}}, %{{.*}}, %{{.*}}) <{read_only, unchecked}>
func.func @argument_check_queries(%pc: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>,
                                  %pk: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>,
                                  %cc: !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>,
                                  %ck: !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>,
                                  %b: index, %t: index)
    -> (index, index, index, index, index, index, index, index, index, index) {
  %n0 = kvcache.num_sequences %pc : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %n1 = kvcache.num_sequences %pk : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  %n2 = kvcache.num_sequences %cc : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  %n3 = kvcache.num_sequences %ck : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>
  %t0 = kvcache.capacity %pc[%b] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %t1 = kvcache.capacity %pk[%b] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  %t2 = kvcache.capacity %cc[%b] : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
  %t3 = kvcache.capacity %ck[%b] : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>
  %page, %slot = kvcache.lookup %pk[%b, %t] {unchecked} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  %block, %token = kvcache.lookup %ck[%b, %t] {unchecked, read_only} : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>
  return %n0, %n1, %n2, %n3, %t0, %t1, %t2, %t3, %page, %block
      : index, index, index, index, index, index, index, index, index, index
}
