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

// -----

// A continuous collection shards as a paged one; gather_ragged's rows follow
// the cache.
shard.grid @grid(shape = 2)
// CHECK-LABEL: func.func @continuous(
// CHECK-SAME: %[[B:.*]]: tensor<?x2x1x?x4x64xf16>, %{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?xi32>, %{{.*}}: i32, %{{.*}}: tensor<3xi32>, %[[I:.*]]: tensor<?x4x64xf16>)
// CHECK-SAME: -> tensor<?x4x64xf16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[C:.*]] = kvcache.continuous_collection %[[B]], {{.*}} : tensor<?x2x1x?x4x64xf16>, tensor<?xi32>, tensor<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 4, head_size = 64>
// CHECK: %[[V:.*]] = kvcache.get_value_cache %[[C]]
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[G:.*]] = kvcache.gather_ragged %[[V]], %[[I]], %{{.*}} : !kvcache.continuous_cache<f16, num_heads = 4, head_size = 64>, tensor<?x4x64xf16>, tensor<3xi32> -> tensor<?x4x64xf16>
// CHECK-NEXT: return %[[G]] : tensor<?x4x64xf16>
func.func @continuous(%blocks: tensor<?x2x1x?x8x64xf16>, %lengths: tensor<?xi32>,
                      %table: tensor<?xi32>, %n: i32, %ctx: tensor<3xi32>,
                      %init: tensor<?x8x64xf16>) -> tensor<?x8x64xf16> {
  %l = arith.constant 0 : index
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x?x8x64xf16>
  %c = kvcache.continuous_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x?x8x64xf16>, tensor<?xi32>, tensor<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 8, head_size = 64>
  %v = kvcache.get_value_cache %c[%l] : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 64>
  %g = kvcache.gather_ragged %v, %init, %ctx
      : !kvcache.continuous_cache<f16, num_heads = 8, head_size = 64>, tensor<?x8x64xf16>, tensor<3xi32> -> tensor<?x8x64xf16>
  return %g : tensor<?x8x64xf16>
}

// -----

// copy_pages copies each device's heads of the pages (the pairs are
// replicated); gather_ragged reads the device's KV heads; merge_states
// merges the device's heads.
shard.grid @grid(shape = 2)
// CHECK-LABEL: func.func @kernels(
// CHECK-SAME: %{{.*}}: tensor<?x2x1x16x4x64xf16>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2x4xi32>, %{{.*}}: i32, %{{.*}}: tensor<?x2xi32>, %{{.*}}: tensor<3xi32>, %{{.*}}: tensor<?x4x64xf16>, %{{.*}}: tensor<?x4xf32>)
// CHECK-SAME: -> (tensor<?x4x64xf16>, tensor<?x4xf32>, tensor<?x2x1x16x4x64xf16>)
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[P:.*]] = kvcache.copy_pages %{{.*}}, %{{.*}} : !kvcache.paged_collection<f16, num_heads = 4, head_size = 64, page_size = 16>, tensor<?x2xi32> -> !kvcache.paged_collection<f16, num_heads = 4, head_size = 64, page_size = 16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[K:.*]] = kvcache.get_key_cache %[[P]]
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[G:.*]] = kvcache.gather_ragged %[[K]], %{{.*}}, %{{.*}} : !kvcache.paged_cache<f16, num_heads = 4, head_size = 64, page_size = 16>, tensor<?x4x64xf16>, tensor<3xi32> -> tensor<?x4x64xf16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[M:.*]]:2 = kvcache.merge_states %[[G]], %{{.*}}, %[[G]], %{{.*}}, %[[G]], %{{.*}} : tensor<?x4x64xf16>, tensor<?x4xf32>, tensor<?x4x64xf16>, tensor<?x4xf32>, tensor<?x4x64xf16>, tensor<?x4xf32> -> tensor<?x4x64xf16>, tensor<?x4xf32>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: return %[[M]]#0, %[[M]]#1, %{{.*}} : tensor<?x4x64xf16>, tensor<?x4xf32>, tensor<?x2x1x16x4x64xf16>
func.func @kernels(%blocks: tensor<?x2x1x16x8x64xf16>, %lengths: tensor<2xi32>,
                   %table: tensor<2x4xi32>, %n: i32, %pairs: tensor<?x2xi32>,
                   %offsets: tensor<3xi32>, %rows: tensor<?x8x64xf16>,
                   %lse: tensor<?x8xf32>)
    -> (tensor<?x8x64xf16>, tensor<?x8xf32>, tensor<?x2x1x16x8x64xf16>) {
  %l = arith.constant 0 : index
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x8x64xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x8x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %p = kvcache.copy_pages %c, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<?x2xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k = kvcache.get_key_cache %p[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %g = kvcache.gather_ragged %k, %rows, %offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<?x8x64xf16>, tensor<3xi32> -> tensor<?x8x64xf16>
  %m:2 = kvcache.merge_states %g, %lse, %g, %lse, %g, %lse
      : tensor<?x8x64xf16>, tensor<?x8xf32>, tensor<?x8x64xf16>, tensor<?x8xf32>, tensor<?x8x64xf16>, tensor<?x8xf32> -> tensor<?x8x64xf16>, tensor<?x8xf32>
  %t = kvcache.collection_tensors %p : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16> -> tensor<?x2x1x16x8x64xf16>
  return %m#0, %m#1, %t : tensor<?x8x64xf16>, tensor<?x8xf32>, tensor<?x2x1x16x8x64xf16>
}

// -----

// merge_states alone, on partial results split on their heads.
shard.grid @grid(shape = 4)
// CHECK-LABEL: func.func @merge(
// CHECK-SAME: %{{.*}}: tensor<?x4x64xf32>, %{{.*}}: tensor<?x4xf32>, %{{.*}}: tensor<?x4x64xf32>, %{{.*}}: tensor<?x4xf32>)
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.merge_states {{.*}} -> tensor<?x4x64xf32>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: return {{.*}} : tensor<?x4x64xf32>
func.func @merge(%a: tensor<?x16x64xf32>, %la: tensor<?x16xf32>,
                 %b: tensor<?x16x64xf32>, %lb: tensor<?x16xf32>) -> tensor<?x16x64xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sa = shard.shard %a to %s : tensor<?x16x64xf32>
  %m = kvcache.merge_states %sa, %la, %b, %lb, %sa
      : tensor<?x16x64xf32>, tensor<?x16xf32>, tensor<?x16x64xf32>, tensor<?x16xf32>, tensor<?x16x64xf32> -> tensor<?x16x64xf32>
  return %m : tensor<?x16x64xf32>
}

// -----

// One KV head cannot split: over a cache of one head (MQA, here a function
// argument, so replicated) the query heads split alone. rope_ragged rotates
// the device's 8 of the 16 query heads and, on every device alike, its copy
// of the keys; attention_ragged attends with them.
shard.grid @grid(shape = 2)
!k1 = !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @mqa(
// CHECK-SAME: %{{.*}}: !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16>, %{{.*}}: tensor<3xi32>, %{{.*}}: tensor<?x32xf32>, %{{.*}}: tensor<?x8x64xf16>, %{{.*}}: tensor<?x8x64xf16>)
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[R:.*]] = kvcache.rope_ragged {{.*}} : tensor<?x8x64xf16>, !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x32xf32>, tensor<?x8x64xf16> -> tensor<?x8x64xf16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[A:.*]] = kvcache.attention_ragged %[[R]], {{.*}} : tensor<?x8x64xf16>, !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x8x64xf16> -> tensor<?x8x64xf16>
// CHECK-NEXT: return %[[A]] : tensor<?x8x64xf16>
func.func @mqa(%k: !k1, %offsets: tensor<3xi32>, %cs: tensor<?x32xf32>,
               %q: tensor<?x16x64xf16>, %out: tensor<?x16x64xf16>) -> tensor<?x16x64xf16> {
  %heads = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sq = shard.shard %q to %heads : tensor<?x16x64xf16>
  %r = kvcache.rope_ragged %sq, %k, %offsets, %cs, %sq {rotary_dims = 32 : i64, style = "half"}
      : tensor<?x16x64xf16>, !k1, tensor<3xi32>, tensor<?x32xf32>, tensor<?x16x64xf16> -> tensor<?x16x64xf16>
  %o = kvcache.attention_ragged %r, %k, %k, %offsets, %out {scale = 0.125 : f32}
      : tensor<?x16x64xf16>, !k1, !k1, tensor<3xi32>, tensor<?x16x64xf16> -> tensor<?x16x64xf16>
  return %o : tensor<?x16x64xf16>
}

// -----

// rope_ragged on a GQA collection built from tensors, split on its 4 KV
// heads: each device rotates its 4 of the 8 query heads (the groups of its
// 2 KV heads) and the keys of its KV heads, and returns its collection.
shard.grid @grid(shape = 2)
!gc = !kvcache.paged_collection<f16, num_heads = 4, head_size = 64, page_size = 16>
!gk = !kvcache.paged_cache<f16, num_heads = 4, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @gqa_rope(
// CHECK-SAME: %[[B:.*]]: tensor<?x2x1x16x2x64xf16>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2x4xi32>, %{{.*}}: i32, %[[R:.*]]: tensor<?x2x64xf16>, %[[OFF:.*]]: tensor<3xi32>, %[[CS:.*]]: tensor<?x32xf32>, %[[Q:.*]]: tensor<?x4x64xf16>, %[[O:.*]]: tensor<?x4x64xf16>)
// CHECK-SAME: -> (tensor<?x4x64xf16>, tensor<?x2x1x16x2x64xf16>)
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[C1:.*]] = kvcache.store_ragged %{{.*}}, %[[R]], %[[OFF]] : !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>, tensor<?x2x64xf16>, tensor<3xi32> -> !kvcache.paged_collection<f16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[K1:.*]] = kvcache.get_key_cache %[[C1]]
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[QR:.*]], %[[C2:.*]] = kvcache.rope_ragged %[[Q]], %[[K1]], %[[OFF]], %[[CS]], %[[Q]] {rotary_dims = 32 : i64, style = "half"} : tensor<?x4x64xf16>, !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x32xf32>, tensor<?x4x64xf16> -> tensor<?x4x64xf16>, !kvcache.paged_collection<f16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[K2:.*]] = kvcache.get_key_cache %[[C2]]
// CHECK: %[[V2:.*]] = kvcache.get_value_cache %[[C2]]
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[A:.*]] = kvcache.attention_ragged %[[QR]], %[[K2]], %[[V2]], %[[OFF]], %[[O]] {{.*}} -> tensor<?x4x64xf16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[BT:.*]] = kvcache.collection_tensors %[[C2]] : !kvcache.paged_collection<f16, num_heads = 2, head_size = 64, page_size = 16> -> tensor<?x2x1x16x2x64xf16>
// CHECK-NEXT: return %[[A]], %[[BT]] : tensor<?x4x64xf16>, tensor<?x2x1x16x2x64xf16>
func.func @gqa_rope(%blocks: tensor<?x2x1x16x4x64xf16>, %lengths: tensor<2xi32>,
                    %table: tensor<2x4xi32>, %n: i32, %rows: tensor<?x4x64xf16>,
                    %offsets: tensor<3xi32>, %cs: tensor<?x32xf32>,
                    %q: tensor<?x8x64xf16>, %out: tensor<?x8x64xf16>)
    -> (tensor<?x8x64xf16>, tensor<?x2x1x16x4x64xf16>) {
  %l = arith.constant 0 : index
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x4x64xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x4x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !gc
  %k = kvcache.get_key_cache %c[%l] : !gc
  %c1 = kvcache.store_ragged %k, %rows, %offsets : !gk, tensor<?x4x64xf16>, tensor<3xi32> -> !gc
  %k1 = kvcache.get_key_cache %c1[%l] : !gc
  %r, %c2 = kvcache.rope_ragged %q, %k1, %offsets, %cs, %q {rotary_dims = 32 : i64, style = "half"}
      : tensor<?x8x64xf16>, !gk, tensor<3xi32>, tensor<?x32xf32>, tensor<?x8x64xf16> -> tensor<?x8x64xf16>, !gc
  %k2 = kvcache.get_key_cache %c2[%l] : !gc
  %v2 = kvcache.get_value_cache %c2[%l] : !gc
  %o = kvcache.attention_ragged %r, %k2, %v2, %offsets, %out {scale = 0.125 : f32}
      : tensor<?x8x64xf16>, !gk, !gk, tensor<3xi32>, tensor<?x8x64xf16> -> tensor<?x8x64xf16>
  %t = kvcache.collection_tensors %c2 : !gc -> tensor<?x2x1x16x4x64xf16>
  return %o, %t : tensor<?x8x64xf16>, tensor<?x2x1x16x4x64xf16>
}

// -----

// MQA on a collection built from tensors: its one KV head is replicated,
// the query heads split alone, and each device's collection (the one
// rope_ragged returns) keeps num_heads = 1.
shard.grid @grid(shape = 2)
!mqc = !kvcache.paged_collection<f16, num_heads = 1, head_size = 64, page_size = 16>
!mqk = !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @mqa_rope(
// CHECK-SAME: %{{.*}}: tensor<?x2x1x16x1x64xf16>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2x4xi32>, %{{.*}}: i32, %{{.*}}: tensor<3xi32>, %{{.*}}: tensor<?x32xf32>, %{{.*}}: tensor<?x4x64xf16>)
// CHECK-SAME: -> (tensor<?x4x64xf16>, tensor<?x2x1x16x1x64xf16>)
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[QR:.*]], %[[C:.*]] = kvcache.rope_ragged {{.*}} : tensor<?x4x64xf16>, !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x32xf32>, tensor<?x4x64xf16> -> tensor<?x4x64xf16>, !kvcache.paged_collection<f16, num_heads = 1, head_size = 64, page_size = 16>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[BT:.*]] = kvcache.collection_tensors %[[C]] : !kvcache.paged_collection<f16, num_heads = 1, head_size = 64, page_size = 16> -> tensor<?x2x1x16x1x64xf16>
// CHECK-NEXT: return %[[QR]], %[[BT]] : tensor<?x4x64xf16>, tensor<?x2x1x16x1x64xf16>
func.func @mqa_rope(%blocks: tensor<?x2x1x16x1x64xf16>, %lengths: tensor<2xi32>,
                    %table: tensor<2x4xi32>, %n: i32, %offsets: tensor<3xi32>,
                    %cs: tensor<?x32xf32>, %q: tensor<?x8x64xf16>)
    -> (tensor<?x8x64xf16>, tensor<?x2x1x16x1x64xf16>) {
  %l = arith.constant 0 : index
  %all = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %b = shard.shard %blocks to %all : tensor<?x2x1x16x1x64xf16>
  %heads = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sq = shard.shard %q to %heads : tensor<?x8x64xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x1x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !mqc
  %k = kvcache.get_key_cache %c[%l] : !mqc
  %r, %c1 = kvcache.rope_ragged %sq, %k, %offsets, %cs, %sq {rotary_dims = 32 : i64, style = "half"}
      : tensor<?x8x64xf16>, !mqk, tensor<3xi32>, tensor<?x32xf32>, tensor<?x8x64xf16> -> tensor<?x8x64xf16>, !mqc
  %t = kvcache.collection_tensors %c1 : !mqc -> tensor<?x2x1x16x1x64xf16>
  return %r, %t : tensor<?x8x64xf16>, tensor<?x2x1x16x1x64xf16>
}

// -----

// MLA: the latent cache (one head) stays replicated and the query heads
// split alone: q, out, lse and the sinks get 8 of the 16 query heads, the
// cache types keep num_heads = 1.
shard.grid @grid(shape = 2)
!mc = !kvcache.paged_collection<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
!mk = !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
// CHECK-LABEL: func.func @mla_attention(
// CHECK-SAME: %{{.*}}: tensor<?x1x1x16x1x96xf16>, %{{.*}}: tensor<2xi32>, %{{.*}}: tensor<2x4xi32>, %{{.*}}: i32, %{{.*}}: tensor<3xi32>, %{{.*}}: tensor<?x8x96xf16>, %{{.*}}: tensor<?x8x64xf16>, %{{.*}}: tensor<?x8xf32>, %{{.*}}: tensor<8xf32>)
// CHECK-SAME: -> (tensor<?x8x64xf16>, tensor<?x8xf32>)
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.paged_collection {{.*}} -> !kvcache.paged_collection<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: %[[A:.*]]:2 = kvcache.mla_attention_ragged {{.*}} sinks(%{{.*}}) lse(%{{.*}}) {scale = 1.250000e-01 : f32, v_head_size = 64 : i64} : tensor<?x8x96xf16>, !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>, tensor<3xi32>, tensor<?x8x64xf16>, tensor<8xf32>, tensor<?x8xf32> -> tensor<?x8x64xf16>, tensor<?x8xf32>
// CHECK-NEXT: return %[[A]]#0, %[[A]]#1 : tensor<?x8x64xf16>, tensor<?x8xf32>
func.func @mla_attention(%blocks: tensor<?x1x1x16x1x96xf16>, %lengths: tensor<2xi32>,
                         %table: tensor<2x4xi32>, %n: i32, %offsets: tensor<3xi32>,
                         %q: tensor<?x16x96xf16>, %out: tensor<?x16x64xf16>,
                         %lse: tensor<?x16xf32>, %sinks: tensor<16xf32>)
    -> (tensor<?x16x64xf16>, tensor<?x16xf32>) {
  %l = arith.constant 0 : index
  %all = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %b = shard.shard %blocks to %all : tensor<?x1x1x16x1x96xf16>
  %offs = shard.shard %offsets to %all : tensor<3xi32>
  %heads = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sq = shard.shard %q to %heads : tensor<?x16x96xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n : tensor<?x1x1x16x1x96xf16>, tensor<2xi32>, tensor<2x4xi32> -> !mc
  %k = kvcache.get_key_cache %c[%l] : !mc
  %o:2 = kvcache.mla_attention_ragged %sq, %k, %offs, %out sinks(%sinks) lse(%lse) {scale = 0.125 : f32, v_head_size = 64 : i64}
      : tensor<?x16x96xf16>, !mk, tensor<3xi32>, tensor<?x16x64xf16>, tensor<16xf32>, tensor<?x16xf32> -> tensor<?x16x64xf16>, tensor<?x16xf32>
  return %o#0, %o#1 : tensor<?x16x64xf16>, tensor<?x16xf32>
}

// -----

shard.grid @grid(shape = 4)

// Keys stored rotated (store_ragged's rope clause) and the queries rotated
// by attention_ragged's: each device rotates its own heads with the whole
// table and positions (replicated), q splits on its heads.
// CHECK-LABEL: func.func @rope_clauses(
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.store_ragged {{.*}} rope(%{{.*}}) positions(%{{.*}}) {{.*}} : !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>, tensor<?x2x64xf16>, tensor<3xi32>, tensor<?x32xf32>, tensor<?xi32> -> !kvcache.paged_collection<f16, num_heads = 2,
// CHECK-NOT: {{shard\.|mpi\.}}
// CHECK: kvcache.attention_ragged {{.*}} rope(%{{.*}}) positions(%{{.*}}) {{.*}} : tensor<?x4x64xf16>, !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x4x64xf16>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x4x64xf16>
// CHECK-NOT: {{shard\.|mpi\.}}
func.func @rope_clauses(%blocks: tensor<?x2x1x16x8x64xf16>, %lengths: tensor<2xi32>,
                        %table: tensor<2x4xi32>, %n: i32, %rows: tensor<?x8x64xf16>,
                        %offsets: tensor<3xi32>, %q: tensor<?x16x64xf16>,
                        %out: tensor<?x16x64xf16>, %cs: tensor<?x32xf32>, %p: tensor<?xi32>)
    -> tensor<?x16x64xf16> {
  %l = arith.constant 0 : index
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x8x64xf16>
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %offs = shard.shard %offsets to %r : tensor<3xi32>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x8x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k = kvcache.get_key_cache %c[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %c1 = kvcache.store_ragged %k, %rows, %offs rope(%cs) positions(%p) {rotary_dims = 32 : i64, style = "half"}
      : !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<?x8x64xf16>, tensor<3xi32>, tensor<?x32xf32>, tensor<?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k1 = kvcache.get_key_cache %c1[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %v1 = kvcache.get_value_cache %c1[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %o = kvcache.attention_ragged %q, %k1, %v1, %offs, %out rope(%cs) positions(%p) {rotary_dims = 32 : i64, scale = 0.125 : f32, style = "half"}
      : tensor<?x16x64xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x16x64xf16>, tensor<?x32xf32>, tensor<?xi32> -> tensor<?x16x64xf16>
  return %o : tensor<?x16x64xf16>
}
