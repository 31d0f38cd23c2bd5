// RUN: kvcache-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' | FileCheck %s

// Head sharding (docs/Contract.md section 3.7): the blocks annotated with
// shard.shard on their head dimension give each device its own blocks of
// num_heads / N heads, collection and cache types of num_heads / N heads,
// rows and queries split on their heads (a GQA group of 2 query heads per
// KV head stays whole), and no communication between the ops.

shard.grid @grid(shape = 2)

// CHECK-LABEL: func.func @layer(
// CHECK-SAME: %[[B:.*]]: tensor<?x2x1x16x4x64xf16>, %[[LEN:.*]]: tensor<2xi32>, %[[T:.*]]: tensor<2x4xi32>, %[[N:.*]]: i32, %[[R:.*]]: tensor<?x4x64xf16>, %[[OFF:.*]]: tensor<3xi32>, %[[Q:.*]]: tensor<?x8x64xf16>, %[[O:.*]]: tensor<?x8x64xf16>)
// CHECK-SAME: -> (tensor<?x8x64xf16>, tensor<?x2x1x16x4x64xf16>)
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[C:.*]] = kvcache.paged_collection %[[B]], %[[LEN]], %[[T]], %[[N]], %[[N]] : tensor<?x2x1x16x4x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 4, head_size = 64, page_size = 16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[K:.*]] = kvcache.get_key_cache %[[C]]
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[C1:.*]] = kvcache.store_ragged %[[K]], %[[R]], %[[OFF]] : !kvcache.paged_cache<f16, num_heads = 4, head_size = 64, page_size = 16>, tensor<?x4x64xf16>, tensor<3xi32> -> !kvcache.paged_collection<f16, num_heads = 4, head_size = 64, page_size = 16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[K1:.*]] = kvcache.get_key_cache %[[C1]]
// CHECK: %[[V1:.*]] = kvcache.get_value_cache %[[C1]]
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[A:.*]] = kvcache.attention_ragged %[[Q]], %[[K1]], %[[V1]], %[[OFF]], %[[O]] {scale = 1.250000e-01 : f32} : tensor<?x8x64xf16>, !kvcache.paged_cache<f16, num_heads = 4, head_size = 64, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 4, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x8x64xf16> -> tensor<?x8x64xf16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[BT:.*]] = kvcache.collection_tensors %[[C1]] : !kvcache.paged_collection<f16, num_heads = 4, head_size = 64, page_size = 16> -> tensor<?x2x1x16x4x64xf16>
// CHECK-NEXT: return %[[A]], %[[BT]] : tensor<?x8x64xf16>, tensor<?x2x1x16x4x64xf16>
func.func @layer(%blocks: tensor<?x2x1x16x8x64xf16>, %lengths: tensor<2xi32>,
                 %table: tensor<2x4xi32>, %n: i32, %rows: tensor<?x8x64xf16>,
                 %offsets: tensor<3xi32>, %q: tensor<?x16x64xf16>,
                 %out: tensor<?x16x64xf16>)
    -> (tensor<?x16x64xf16>, tensor<?x2x1x16x8x64xf16>) {
  %l = arith.constant 0 : index
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x8x64xf16>
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %offs = shard.shard %offsets to %r : tensor<3xi32>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x8x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k = kvcache.get_key_cache %c[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %c1 = kvcache.store_ragged %k, %rows, %offs : !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<?x8x64xf16>, tensor<3xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k1 = kvcache.get_key_cache %c1[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %v1 = kvcache.get_value_cache %c1[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %o = kvcache.attention_ragged %q, %k1, %v1, %offs, %out {scale = 0.125 : f32}
      : tensor<?x16x64xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x16x64xf16> -> tensor<?x16x64xf16>
  %t = kvcache.collection_tensors %c1 : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16> -> tensor<?x2x1x16x8x64xf16>
  return %o, %t : tensor<?x16x64xf16>, tensor<?x2x1x16x8x64xf16>
}

// -----

shard.grid @grid(shape = 4)

// The same layer over 4 devices: 2 KV heads and 4 query heads each.
// CHECK-LABEL: func.func @layer4(
// CHECK-SAME: tensor<?x2x1x16x2x64xf16>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2x4xi32>, %{{.*}}: i32, %{{.*}}: tensor<?x2x64xf16>, %{{.*}}: tensor<3xi32>, %{{.*}}: tensor<?x4x64xf16>, %{{.*}}: tensor<?x4x64xf16>)
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.paged_collection {{.*}} -> !kvcache.paged_collection<f16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.store_ragged {{.*}} : !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>, tensor<?x2x64xf16>, tensor<3xi32> -> !kvcache.paged_collection<f16, num_heads = 2,
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.attention_ragged {{.*}} : tensor<?x4x64xf16>, !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x4x64xf16> -> tensor<?x4x64xf16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: return {{.*}} : tensor<?x4x64xf16>, tensor<?x2x1x16x2x64xf16>
func.func @layer4(%blocks: tensor<?x2x1x16x8x64xf16>, %lengths: tensor<2xi32>,
                 %table: tensor<2x4xi32>, %n: i32, %rows: tensor<?x8x64xf16>,
                 %offsets: tensor<3xi32>, %q: tensor<?x16x64xf16>,
                 %out: tensor<?x16x64xf16>)
    -> (tensor<?x16x64xf16>, tensor<?x2x1x16x8x64xf16>) {
  %l = arith.constant 0 : index
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x8x64xf16>
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %offs = shard.shard %offsets to %r : tensor<3xi32>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x8x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k = kvcache.get_key_cache %c[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %c1 = kvcache.store_ragged %k, %rows, %offs : !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<?x8x64xf16>, tensor<3xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k1 = kvcache.get_key_cache %c1[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %v1 = kvcache.get_value_cache %c1[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %o = kvcache.attention_ragged %q, %k1, %v1, %offs, %out {scale = 0.125 : f32}
      : tensor<?x16x64xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x16x64xf16> -> tensor<?x16x64xf16>
  %t = kvcache.collection_tensors %c1 : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16> -> tensor<?x2x1x16x8x64xf16>
  return %o, %t : tensor<?x16x64xf16>, tensor<?x2x1x16x8x64xf16>
}

// -----

// Per-head scales (token_head: heads last) follow the blocks; the lengths
// and the table are replicated.
shard.grid @grid(shape = 2)

// CHECK-LABEL: func.func @scales(
// CHECK-SAME: tensor<?x2x1x16x4x64xf8E4M3FN>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2x4xi32>, %{{.*}}: i32, %{{.*}}: tensor<?x2x1x16x4xf32>)
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.paged_collection {{.*}} : tensor<?x2x1x16x4x64xf8E4M3FN>, tensor<2xi32>, tensor<2x4xi32>, tensor<?x2x1x16x4xf32> -> !kvcache.paged_collection<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 16, scales = token_head>
// CHECK: kvcache.collection_tensors {{.*}} -> tensor<?x2x1x16x4x64xf8E4M3FN>, tensor<?x2x1x16x4xf32>
func.func @scales(%blocks: tensor<?x2x1x16x8x64xf8E4M3FN>, %lengths: tensor<2xi32>,
                  %table: tensor<2x4xi32>, %n: i32, %scales: tensor<?x2x1x16x8xf32>)
    -> (tensor<?x2x1x16x8x64xf8E4M3FN>, tensor<?x2x1x16x8xf32>) {
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x8x64xf8E4M3FN>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n, %scales
      : tensor<?x2x1x16x8x64xf8E4M3FN>, tensor<2xi32>, tensor<2x4xi32>, tensor<?x2x1x16x8xf32> -> !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 64, page_size = 16, scales = token_head>
  %t:2 = kvcache.collection_tensors %c : !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 64, page_size = 16, scales = token_head> -> tensor<?x2x1x16x8x64xf8E4M3FN>, tensor<?x2x1x16x8xf32>
  return %t#0, %t#1 : tensor<?x2x1x16x8x64xf8E4M3FN>, tensor<?x2x1x16x8xf32>
}

// -----

shard.grid @grid(shape = 2)
// An MLA collection (one latent head) is replicated: every device keeps the
// whole cache, types unchanged.
// CHECK-LABEL: func.func @mla(
// CHECK-SAME: tensor<?x1x1x16x1x64xf16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.paged_collection {{.*}} -> !kvcache.paged_collection<f16, num_heads = 1, head_size = 64, page_size = 16, mla = true>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.store_ragged {{.*}} : !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16, mla = true>, tensor<?x1x64xf16>, tensor<3xi32> -> !kvcache.paged_collection<f16, num_heads = 1, head_size = 64, page_size = 16, mla = true>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: return {{.*}} : tensor<?x1x1x16x1x64xf16>
func.func @mla(%blocks: tensor<?x1x1x16x1x64xf16>, %lengths: tensor<2xi32>, %table: tensor<2x4xi32>, %n: i32, %rows: tensor<?x1x64xf16>, %offsets: tensor<3xi32>) -> tensor<?x1x1x16x1x64xf16> {
  %l = arith.constant 0 : index
  %s = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x1x1x16x1x64xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n : tensor<?x1x1x16x1x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 1, head_size = 64, page_size = 16, mla = true>
  %k = kvcache.get_key_cache %c[%l] : !kvcache.paged_collection<f16, num_heads = 1, head_size = 64, page_size = 16, mla = true>
  %c1 = kvcache.store_ragged %k, %rows, %offsets : !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16, mla = true>, tensor<?x1x64xf16>, tensor<3xi32> -> !kvcache.paged_collection<f16, num_heads = 1, head_size = 64, page_size = 16, mla = true>
  %t = kvcache.collection_tensors %c1 : !kvcache.paged_collection<f16, num_heads = 1, head_size = 64, page_size = 16, mla = true> -> tensor<?x1x1x16x1x64xf16>
  return %t : tensor<?x1x1x16x1x64xf16>
}
