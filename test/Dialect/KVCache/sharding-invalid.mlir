// RUN: kvcache-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(sharding-propagation))'

// Head sharding's errors (docs/Contract.md section 3.7).

// Heads that do not divide among the devices.
shard.grid @grid(shape = 4)
func.func @six_heads(%blocks: tensor<?x2x1x16x6x64xf16>, %lengths: tensor<2xi32>,
                     %table: tensor<2x4xi32>, %n: i32) -> index {
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x6x64xf16>
  // expected-error @below {{has 6 heads in a value of type 'tensor<?x2x1x16x6x64xf16>', not divisible among the 4 devices of @grid (a GQA group stays on one device): shard over a number of devices that divides it, or replicate the heads}}
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

// -----

// A continuous collection's heads that do not divide among the devices.
shard.grid @grid(shape = 4)
func.func @continuous_six_heads(%blocks: tensor<?x2x1x?x6x64xf16>, %lengths: tensor<?xi32>,
                                %table: tensor<?xi32>, %n: i32) -> index {
  %s = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x?x6x64xf16>
  // expected-error @below {{has 6 heads in a value of type 'tensor<?x2x1x?x6x64xf16>', not divisible among the 4 devices of @grid (a GQA group stays on one device): shard over a number of devices that divides it, or replicate the heads}}
  %c = kvcache.continuous_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x?x6x64xf16>, tensor<?xi32>, tensor<?xi32> -> !kvcache.continuous_collection<f16, num_heads = 6, head_size = 64>
  %l = kvcache.num_layers %c : !kvcache.continuous_collection<f16, num_heads = 6, head_size = 64>
  return %l : index
}

// -----

// copy_pages' pairs split: every device copies every pair.
shard.grid @grid(shape = 2)
func.func @pairs(%c: !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>,
                 %pairs: tensor<?x2xi32>) {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %p = shard.shard %pairs to %s annotate_for_users : tensor<?x2xi32>
  // expected-error @below {{can be sharded only on its heads: dimension 0 of a value of type 'tensor<?x2xi32>' is split}}
  kvcache.copy_pages %c, %p : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<?x2xi32>
  return
}

// -----

// gather_ragged's rows split on their tokens.
shard.grid @grid(shape = 2)
func.func @gather_tokens(%k: !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>,
                         %init: tensor<?x8x64xf16>, %ctx: tensor<3xi32>) -> tensor<?x8x64xf16> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %i = shard.shard %init to %s annotate_for_users : tensor<?x8x64xf16>
  // expected-error @below {{can be sharded only on its heads: dimension 0 of a value of type 'tensor<?x8x64xf16>' is split}}
  %g = kvcache.gather_ragged %k, %i, %ctx : !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<?x8x64xf16>, tensor<3xi32> -> tensor<?x8x64xf16>
  return %g : tensor<?x8x64xf16>
}

// -----

// A GQA group split: attention_ragged's query heads split while the 8 KV
// heads of their collection are replicated.
shard.grid @grid(shape = 2)
func.func @attention_group(%blocks: tensor<?x2x1x16x8x64xf16>, %lengths: tensor<2xi32>,
                           %table: tensor<2x4xi32>, %n: i32, %q: tensor<?x16x64xf16>,
                           %offsets: tensor<3xi32>, %out: tensor<?x16x64xf16>) -> tensor<?x16x64xf16> {
  %l = arith.constant 0 : index
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %b = shard.shard %blocks to %r : tensor<?x2x1x16x8x64xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x8x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %k = kvcache.get_key_cache %c[%l] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sq = shard.shard %q to %s annotate_for_users : tensor<?x16x64xf16>
  // expected-error @below {{has heads sharded two ways (a query head follows its KV head): split the heads of its rows over the grid axes of its collection's blocks, or replicate both; only a replicated collection of one KV head (MQA, MLA) serves query heads split alone}}
  %o = kvcache.attention_ragged %sq, %k, %k, %offsets, %out {scale = 0.125 : f32}
      : tensor<?x16x64xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x16x64xf16> -> tensor<?x16x64xf16>
  return %o : tensor<?x16x64xf16>
}

// -----

// rope_ragged's query heads split over a cache of 8 KV heads whose
// collection is not built here: its KV heads cannot follow.
shard.grid @grid(shape = 2)
func.func @rope_unknown(%k: !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>,
                        %q: tensor<?x16x64xf16>, %offsets: tensor<3xi32>,
                        %cs: tensor<?x32xf32>) -> tensor<?x16x64xf16> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sq = shard.shard %q to %s annotate_for_users : tensor<?x16x64xf16>
  // expected-error @below {{has its heads split, but the 8 KV heads of its operand of type '!kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>' have no sharding: build its collection in this function from tensors and annotate their blocks with the same split, or replicate the heads}}
  %o = kvcache.rope_ragged %sq, %k, %offsets, %cs, %sq {rotary_dims = 32 : i64, style = "half"}
      : tensor<?x16x64xf16>, !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>, tensor<3xi32>, tensor<?x32xf32>, tensor<?x16x64xf16> -> tensor<?x16x64xf16>
  return %o : tensor<?x16x64xf16>
}

// -----

// A GQA group split: rope_ragged's query heads split while the 4 KV heads
// of its collection built from tensors are replicated.
shard.grid @grid(shape = 2)
!gc = !kvcache.paged_collection<f16, num_heads = 4, head_size = 64, page_size = 16>
!gk = !kvcache.paged_cache<f16, num_heads = 4, head_size = 64, page_size = 16>
func.func @rope_group(%blocks: tensor<?x2x1x16x4x64xf16>, %lengths: tensor<2xi32>,
                      %table: tensor<2x4xi32>, %n: i32, %offsets: tensor<3xi32>,
                      %cs: tensor<?x32xf32>, %q: tensor<?x8x64xf16>)
    -> (tensor<?x8x64xf16>, tensor<?x2x1x16x4x64xf16>) {
  %l = arith.constant 0 : index
  %all = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %b = shard.shard %blocks to %all : tensor<?x2x1x16x4x64xf16>
  %heads = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sq = shard.shard %q to %heads annotate_for_users : tensor<?x8x64xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x4x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !gc
  %k = kvcache.get_key_cache %c[%l] : !gc
  // expected-error @below {{has heads sharded two ways (a query head follows its KV head)}}
  %r, %c1 = kvcache.rope_ragged %sq, %k, %offsets, %cs, %sq {rotary_dims = 32 : i64, style = "half"}
      : tensor<?x8x64xf16>, !gk, tensor<3xi32>, tensor<?x32xf32>, tensor<?x8x64xf16> -> tensor<?x8x64xf16>, !gc
  %t = kvcache.collection_tensors %c1 : !gc -> tensor<?x2x1x16x4x64xf16>
  return %r, %t : tensor<?x8x64xf16>, tensor<?x2x1x16x4x64xf16>
}

// -----

// MLA query heads that do not divide among the devices.
shard.grid @grid(shape = 4)
func.func @mla_six_heads(%k: !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>,
                         %q: tensor<?x6x96xf16>, %offsets: tensor<3xi32>,
                         %out: tensor<?x6x64xf16>) -> tensor<?x6x64xf16> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sq = shard.shard %q to %s annotate_for_users : tensor<?x6x96xf16>
  // expected-error @below {{has 6 heads in a value of type 'tensor<?x6x96xf16>', not divisible among the 4 devices of @grid}}
  %o = kvcache.mla_attention_ragged %sq, %k, %offsets, %out {scale = 0.125 : f32, v_head_size = 64 : i64}
      : tensor<?x6x96xf16>, !kvcache.paged_cache<f16, num_heads = 1, head_size = 96, page_size = 16, mla = true>, tensor<3xi32>, tensor<?x6x64xf16> -> tensor<?x6x64xf16>
  return %o : tensor<?x6x64xf16>
}

// -----

// merge_states' heads that do not divide among the devices.
shard.grid @grid(shape = 4)
func.func @merge_six_heads(%a: tensor<?x6x64xf32>, %la: tensor<?x6xf32>) -> tensor<?x6x64xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sa = shard.shard %a to %s annotate_for_users : tensor<?x6x64xf32>
  // expected-error @below {{has 6 heads in a value of type 'tensor<?x6x64xf32>', not divisible among the 4 devices of @grid}}
  %m = kvcache.merge_states %sa, %la, %sa, %la, %sa
      : tensor<?x6x64xf32>, tensor<?x6xf32>, tensor<?x6x64xf32>, tensor<?x6xf32>, tensor<?x6x64xf32> -> tensor<?x6x64xf32>
  return %m : tensor<?x6x64xf32>
}

// -----

// Blocks sharded on a grid the module does not define: the shard dialect's
// own symbol check reports it before head sharding looks at the grid.
func.func @unknown_grid(%blocks: tensor<?x2x1x16x8x64xf16>, %lengths: tensor<2xi32>,
                        %table: tensor<2x4xi32>, %n: i32) -> index {
  // expected-error @below {{Undefined required grid symbol "nowhere".}}
  %s = shard.sharding @nowhere split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %s : tensor<?x2x1x16x8x64xf16>
  %c = kvcache.paged_collection %b, %lengths, %table, %n, %n
      : tensor<?x2x1x16x8x64xf16>, tensor<2xi32>, tensor<2x4xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  %l = kvcache.num_layers %c : !kvcache.paged_collection<f16, num_heads = 8, head_size = 64, page_size = 16>
  return %l : index
}
