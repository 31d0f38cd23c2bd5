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

!b = !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>
!bk = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>

// rope_ragged on a collection built from tensors returns the new q_out and
// the updated collection; on a bare layer cache only the new q_out.
// CHECK-LABEL: func.func @rope
func.func @rope(%blocks: tensor<?x2x?x16x8x128xbf16>, %lengths: tensor<?xi32>,
                %table: tensor<?x?xi32>, %n: i32, %q: tensor<?x32x128xbf16>,
                %offsets: tensor<?xi32>, %cs: tensor<?x64xf32>,
                %positions: tensor<?xi32>, %other: !bk)
    -> (tensor<?x2x?x16x8x128xbf16>, tensor<?x32x128xbf16>) {
  %l = arith.constant 1 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xbf16>, tensor<?xi32>, tensor<?x?xi32> -> !b
  %k = kvcache.get_key_cache %c[%l] : !b
  // CHECK: %[[Q1:.*]], %[[C1:.*]] = kvcache.rope_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {rotary_dims = 64 : i64, style = "half"} : tensor<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16> -> tensor<?x32x128xbf16>, !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>
  %q1, %c1 = kvcache.rope_ragged %q, %k, %offsets, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : tensor<?x32x128xbf16>, !bk, tensor<?xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16> -> tensor<?x32x128xbf16>, !b
  %k1 = kvcache.get_key_cache %c1[%l] : !b
  // CHECK: %[[Q2:.*]], %[[C2:.*]] = kvcache.rope_ragged %[[Q1]], %{{.*}}, %{{.*}}, %{{.*}}, %[[Q1]] positions(%{{.*}}) {rotary_dims = 64 : i64, style = "interleaved"} : {{.*}}, tensor<?xi32> -> tensor<?x32x128xbf16>, !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>
  %q2, %c2 = kvcache.rope_ragged %q1, %k1, %offsets, %cs, %q1 positions(%positions) {rotary_dims = 64 : i64, style = "interleaved"}
      : tensor<?x32x128xbf16>, !bk, tensor<?xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16>, tensor<?xi32> -> tensor<?x32x128xbf16>, !b
  // CHECK: kvcache.rope_ragged %[[Q2]], {{.*}} : tensor<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, tensor<?xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16> -> tensor<?x32x128xbf16>{{$}}
  %q3 = kvcache.rope_ragged %q2, %other, %offsets, %cs, %q2 {rotary_dims = 64 : i64, style = "half"}
      : tensor<?x32x128xbf16>, !bk, tensor<?xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16> -> tensor<?x32x128xbf16>
  // CHECK: kvcache.collection_tensors %[[C2]] :
  %b = kvcache.collection_tensors %c2 : !b -> tensor<?x2x?x16x8x128xbf16>
  return %b, %q3 : tensor<?x2x?x16x8x128xbf16>, tensor<?x32x128xbf16>
}
