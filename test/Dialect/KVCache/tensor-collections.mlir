// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s -mlir-print-op-generic | kvcache-opt | FileCheck %s

// Collections built from tensors (docs/Contract.md section 3.5): the writes
// return the updated collection, which the later ops use, and
// collection_tensors gives its blocks (and scales) back.

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @paged
func.func @paged(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>,
                 %table: tensor<?x?xi32>, %n: i32, %rows: tensor<?x8x128xf16>,
                 %offsets: tensor<?xi32>, %pairs: tensor<?x2xi32>,
                 %layer: index) -> tensor<?x2x?x16x8x128xf16> {
  // CHECK: %[[C:.*]] = kvcache.paged_collection %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  // CHECK: %[[P:.*]] = kvcache.copy_pages %[[C]], %{{.*}} : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?x2xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %p = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  %k = kvcache.get_key_cache %p[%layer] : !c
  // CHECK: %[[S:.*]] = kvcache.store_ragged %{{.*}}, %{{.*}}, %{{.*}} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?x8x128xf16>, tensor<?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %s = kvcache.store_ragged %k, %rows, %offsets : !k, tensor<?x8x128xf16>, tensor<?xi32> -> !c
  // CHECK: %{{.*}} = kvcache.collection_tensors %[[S]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16> -> tensor<?x2x?x16x8x128xf16>
  %b = kvcache.collection_tensors %s : !c -> tensor<?x2x?x16x8x128xf16>
  return %b : tensor<?x2x?x16x8x128xf16>
}

!q = !kvcache.continuous_collection<f8E4M3FN, num_heads = 8, head_size = 128, scales = token_head>
!qk = !kvcache.continuous_cache<f8E4M3FN, num_heads = 8, head_size = 128, scales = token_head>

// CHECK-LABEL: func.func @continuous_scaled
func.func @continuous_scaled(%blocks: tensor<4x2x2x64x8x128xf8E4M3FN>,
                             %lengths: tensor<?xi32>, %table: tensor<?xi32>,
                             %scales: tensor<4x2x2x64x8xf32>, %n: i32,
                             %rows: tensor<?x8x128xf32>, %offsets: tensor<?xi32>)
    -> (tensor<4x2x2x64x8x128xf8E4M3FN>, tensor<4x2x2x64x8xf32>) {
  %c0 = arith.constant 0 : index
  // CHECK: kvcache.continuous_collection %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x2x2x64x8x128xf8E4M3FN>, tensor<?xi32>, tensor<?xi32>, tensor<4x2x2x64x8xf32> -> !kvcache.continuous_collection
  %c = kvcache.continuous_collection %blocks, %lengths, %table, %n, %n, %scales
      : tensor<4x2x2x64x8x128xf8E4M3FN>, tensor<?xi32>, tensor<?xi32>, tensor<4x2x2x64x8xf32> -> !q
  %v = kvcache.get_value_cache %c[%c0] : !q
  %s = kvcache.store_ragged %v, %rows, %offsets : !qk, tensor<?x8x128xf32>, tensor<?xi32> -> !q
  // CHECK: kvcache.collection_tensors %{{.*}} : !kvcache.continuous_collection<{{.*}}> -> tensor<4x2x2x64x8x128xf8E4M3FN>, tensor<4x2x2x64x8xf32>
  %b, %sc = kvcache.collection_tensors %s : !q -> tensor<4x2x2x64x8x128xf8E4M3FN>, tensor<4x2x2x64x8xf32>
  return %b, %sc : tensor<4x2x2x64x8x128xf8E4M3FN>, tensor<4x2x2x64x8xf32>
}
