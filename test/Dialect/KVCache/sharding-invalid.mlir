// RUN: kvcache-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(sharding-propagation))'

// Head sharding's errors (docs/Contract.md section 3.7).

// Heads that do not divide among the devices.
shard.grid @grid(shape = 4)
func.func @six_heads(%blocks: tensor<?x2x1x16x6x64xf16>, %lengths: tensor<2xi32>,
                     %table: tensor<2x4xi32>, %n: i32) -> index {
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x6x64xf16>
  // expected-error @below {{has 6 heads in a value of type 'tensor<?x2x1x16x6x64xf16>', not divisible among the 4 devices of @grid (a GQA group stays on one device)}}
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x6x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 6, head_size = 64, page_size = 16>
  %l = kvcache.num_layers %c : !kvcache.paged_collection<f16, num_heads = 6, head_size = 64, page_size = 16>
  return %l : index
}

// -----

// Blocks split on their pages.
shard.grid @grid(shape = 2)
func.func @pages(%blocks: tensor<?x2x1x16x8x64xf16>, %lengths: tensor<2xi32>,
                 %table: tensor<2x4xi32>, %n: i32) -> index {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x8x64xf16>
  // expected-error @below {{can be sharded only on its heads: dimension 0 of a value of type 'tensor<?x2x1x16x8x64xf16>' is split}}
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x8x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %l = kvcache.num_layers %c : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  return %l : index
}

// -----

// Rows sharded while their collection is replicated.
shard.grid @grid(shape = 2)
func.func @rows(%blocks: tensor<?x2x1x16x8x64xf16>, %lengths: tensor<2xi32>,
                %table: tensor<2x4xi32>, %n: i32, %rows: tensor<?x8x64xf16>,
                %offsets: tensor<3xi32>) -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16> {
  %l = arith.constant 0 : index
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %b = shard.shard %blocks to %r : tensor<?x2x1x16x8x64xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x8x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k = kvcache.get_key_cache %c[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %v = shard.shard %rows to %s annotate_for_users : tensor<?x8x64xf16>
  // expected-error @below {{has heads sharded two ways}}
  %c1 = kvcache.store_ragged %k, %v, %offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<?x8x64xf16>, tensor<3xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  return %c1 : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
}
