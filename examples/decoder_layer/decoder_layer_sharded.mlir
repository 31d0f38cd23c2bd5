// The decoder layer of decoder_layer.mlir sharded on its heads over a grid
// of N devices with MLIR's shard dialect (docs/Contract.md section 3.7), in
// the form upstream's sharding-propagation and shard-partition accept, where
// every op needs a sharding model: static shapes; helpers that the `inline`
// pass inlines first (func.call has no model; the inliner's canonicalization
// folds their tensor.cast and tensor.dim away); the collection built from
// tensors; the q, k, v projections linalg.generic ops to heads [T, H, D] and
// the output projection one from heads, so that nothing depends on
// contiguous head chunks; the rotary embedding kvcache.rope_ragged (of the
// queries, and of the stored keys in the cache, at their positions in their
// sequences). f32 throughout, so that N devices can be compared with one
// within f32 rounding; small sizes: 4 KV heads of 8, 8 query heads (GQA
// groups of 2), pages of 4 tokens, hidden 32, MLP 16, 5 rows.
//
// The only annotations are those of the arguments and of the results: the
// blocks, wq, wk, wv split on their heads, wo on its input heads, w_gate and
// w_up on their columns, w_down on its rows, the rest replicated.
// Propagation splits the projections, the cache and the attention on the
// heads (a GQA group stays on one device) and the MLP on its columns; the
// output projection's sum over (head, dim) and the down projection's over
// the MLP columns then leave each device a partial sum, which shard-partition
// completes with a shard.all_reduce (convert-shard-to-mpi: an
// MPI_Allreduce), the layer's two communications (Megatron-LM's tensor
// parallelism). Each device keeps and reads only the blocks of its heads:
// tensor<4x2x1x4x(4/N)x8xf32>, 4096 / N bytes of the 4096.
//
//   kvcache-opt examples/decoder_layer/decoder_layer_sharded.mlir \
//     --pass-pipeline='builtin.module(inline,func.func(sharding-propagation,shard-partition),convert-shard-to-mpi)'
//
// The grid below has 2 devices; test/Integration/MPI/sharded-decoder-layer.test
// partitions the layer for 1, 2 and 4 and runs it under MPI.

shard.grid @grid(shape = 2)

!blocks = tensor<4x2x1x4x4x8xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 4, head_size = 8, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 4, head_size = 8, page_size = 4>
!rows = tensor<5x32xf32>
!q_heads = tensor<5x8x8xf32>
!kv_heads = tensor<5x4x8xf32>

#rows = affine_map<(t, k) -> (t, k)>
#row = affine_map<(t, k) -> (t)>
#column = affine_map<(t, k) -> (k)>
// Projections to heads: [T, K] x [K, H, D] -> [T, H, D].
#x = affine_map<(t, h, d, k) -> (t, k)>
#w = affine_map<(t, h, d, k) -> (k, h, d)>
#heads = affine_map<(t, h, d, k) -> (t, h, d)>
// The output projection: [T, H, D] x [H, D, N] -> [T, N].
#o_in = affine_map<(t, n, h, d) -> (t, h, d)>
#o_w = affine_map<(t, n, h, d) -> (h, d, n)>
#o_out = affine_map<(t, n, h, d) -> (t, n)>

// RMSNorm of each row: x / sqrt(mean(x^2) + 1e-5) * w.
func.func private @rms_norm(%x: !rows, %w: tensor<32xf32>) -> !rows {
  %zero = arith.constant 0.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %k = arith.constant 32.0 : f32
  %sums_init = tensor.empty() : tensor<5xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%sums_init : tensor<5xf32>) -> tensor<5xf32>
  %sums = linalg.generic {indexing_maps = [#rows, #row],
                          iterator_types = ["parallel", "reduction"]}
      ins(%x : !rows) outs(%zeros : tensor<5xf32>) {
  ^bb0(%v: f32, %sum: f32):
    %square = arith.mulf %v, %v : f32
    %next = arith.addf %sum, %square : f32
    linalg.yield %next : f32
  } -> tensor<5xf32>
  %init = tensor.empty() : !rows
  %y = linalg.generic {indexing_maps = [#rows, #row, #column, #rows],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %sums, %w : !rows, tensor<5xf32>, tensor<32xf32>) outs(%init : !rows) {
  ^bb0(%v: f32, %sum: f32, %g: f32, %unused: f32):
    %mean = arith.divf %sum, %k : f32
    %shifted = arith.addf %mean, %eps : f32
    %root = math.sqrt %shifted : f32
    %normed = arith.divf %v, %root : f32
    %scaled = arith.mulf %normed, %g : f32
    linalg.yield %scaled : f32
  } -> !rows
  return %y : !rows
}

// x + y: a residual connection.
func.func private @residual(%x: !rows, %y: !rows) -> !rows {
  %init = tensor.empty() : !rows
  %sum = linalg.generic {indexing_maps = [#rows, #rows, #rows],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : !rows, !rows) outs(%init : !rows) {
  ^bb0(%a: f32, %b: f32, %unused: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> !rows
  return %sum : !rows
}

// x @ w: [5, 32] x [32, H, 8] -> [5, H, 8] (8 query or 4 KV heads; the
// inliner's canonicalization makes H static again).
func.func private @project_heads(%x: !rows, %w: tensor<32x?x8xf32>) -> tensor<5x?x8xf32> {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %h = tensor.dim %w, %c1 : tensor<32x?x8xf32>
  %init = tensor.empty(%h) : tensor<5x?x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<5x?x8xf32>) -> tensor<5x?x8xf32>
  %y = linalg.generic {indexing_maps = [#x, #w, #heads],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : !rows, tensor<32x?x8xf32>) outs(%acc : tensor<5x?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> tensor<5x?x8xf32>
  return %y : tensor<5x?x8xf32>
}

// x @ w with w [K, N]: an MLP projection.
func.func private @project(%x: tensor<5x?xf32>, %w: tensor<?x?xf32>) -> tensor<5x?xf32> {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %w, %c1 : tensor<?x?xf32>
  %init = tensor.empty(%n) : tensor<5x?xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<5x?xf32>) -> tensor<5x?xf32>
  %y = linalg.matmul ins(%x, %w : tensor<5x?xf32>, tensor<?x?xf32>)
                     outs(%acc : tensor<5x?xf32>) -> tensor<5x?xf32>
  return %y : tensor<5x?xf32>
}

// SwiGLU: silu(g) * u.
func.func private @swiglu(%gate: tensor<5x16xf32>, %up: tensor<5x16xf32>) -> tensor<5x16xf32> {
  %one = arith.constant 1.0 : f32
  %init = tensor.empty() : tensor<5x16xf32>
  %y = linalg.generic {indexing_maps = [#rows, #rows, #rows],
                       iterator_types = ["parallel", "parallel"]}
      ins(%gate, %up : tensor<5x16xf32>, tensor<5x16xf32>) outs(%init : tensor<5x16xf32>) {
  ^bb0(%g: f32, %u: f32, %unused: f32):
    %minus_g = arith.negf %g : f32
    %e = math.exp %minus_g : f32
    %denominator = arith.addf %one, %e : f32
    %silu = arith.divf %g, %denominator : f32
    %product = arith.mulf %silu, %u : f32
    linalg.yield %product : f32
  } -> tensor<5x16xf32>
  return %y : tensor<5x16xf32>
}

// One layer over a step's 5 rows `x` (row_offsets: each sequence's rows;
// the rotary position of a row is its position in its sequence): the new
// rows, and the blocks with the step's keys and values. Weights: wq
// [hidden, 8, 8], wk and wv [hidden, 4, 8], wo [8, 8, hidden], w_gate and
// w_up [hidden, mlp], w_down [mlp, hidden]; cos_sin [positions, 8]: 4
// (cos, sin) pairs a row.
func.func @layer(
    %blocks: !blocks, %cache_lengths: tensor<2xi32>, %lookup_table: tensor<2x2xi32>,
    %max_seq_length: i32, %max_cache_length: i32,
    %x: !rows, %row_offsets: tensor<3xi32>, %cos_sin: tensor<8x8xf32>,
    %attn_norm: tensor<32xf32>, %wq: tensor<32x8x8xf32>, %wk: tensor<32x4x8xf32>,
    %wv: tensor<32x4x8xf32>, %wo: tensor<8x8x32xf32>, %mlp_norm: tensor<32xf32>,
    %w_gate: tensor<32x16xf32>, %w_up: tensor<32x16xf32>, %w_down: tensor<16x32xf32>)
    -> (!rows, !blocks) {
  %layer = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %all = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %split_blocks = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %split_1 = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %split_0 = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %my_blocks = shard.shard %blocks to %split_blocks : !blocks
  %my_wq = shard.shard %wq to %split_1 : tensor<32x8x8xf32>
  %my_wk = shard.shard %wk to %split_1 : tensor<32x4x8xf32>
  %my_wv = shard.shard %wv to %split_1 : tensor<32x4x8xf32>
  %my_wo = shard.shard %wo to %split_0 : tensor<8x8x32xf32>
  %lengths = shard.shard %cache_lengths to %all : tensor<2xi32>
  %table = shard.shard %lookup_table to %all : tensor<2x2xi32>
  %offsets = shard.shard %row_offsets to %all : tensor<3xi32>
  %rotary = shard.shard %cos_sin to %all : tensor<8x8xf32>
  %xs = shard.shard %x to %all : !rows
  %my_w_gate = shard.shard %w_gate to %split_1 : tensor<32x16xf32>
  %my_w_up = shard.shard %w_up to %split_1 : tensor<32x16xf32>
  %my_w_down = shard.shard %w_down to %split_0 : tensor<16x32xf32>

  // Attention block: K and V stored, then the queries and the stored keys
  // rotated, then attention over each sequence's whole context.
  %collection = kvcache.paged_collection %my_blocks, %lengths, %table,
      %max_seq_length, %max_cache_length
      : !blocks, tensor<2xi32>, tensor<2x2xi32> -> !collection
  %normed = func.call @rms_norm(%xs, %attn_norm) : (!rows, tensor<32xf32>) -> !rows
  %wq_any = tensor.cast %my_wq : tensor<32x8x8xf32> to tensor<32x?x8xf32>
  %q_any = func.call @project_heads(%normed, %wq_any)
      : (!rows, tensor<32x?x8xf32>) -> tensor<5x?x8xf32>
  %q = tensor.cast %q_any : tensor<5x?x8xf32> to !q_heads
  %wk_any = tensor.cast %my_wk : tensor<32x4x8xf32> to tensor<32x?x8xf32>
  %k_any = func.call @project_heads(%normed, %wk_any)
      : (!rows, tensor<32x?x8xf32>) -> tensor<5x?x8xf32>
  %k = tensor.cast %k_any : tensor<5x?x8xf32> to !kv_heads
  %wv_any = tensor.cast %my_wv : tensor<32x4x8xf32> to tensor<32x?x8xf32>
  %v_any = func.call @project_heads(%normed, %wv_any)
      : (!rows, tensor<32x?x8xf32>) -> tensor<5x?x8xf32>
  %v = tensor.cast %v_any : tensor<5x?x8xf32> to !kv_heads
  %key_cache = kvcache.get_key_cache %collection[%layer] : !collection
  %with_k = kvcache.store_ragged %key_cache, %k, %offsets
      : !cache, !kv_heads, tensor<3xi32> -> !collection
  %value_cache = kvcache.get_value_cache %with_k[%layer] : !collection
  %with_kv = kvcache.store_ragged %value_cache, %v, %offsets
      : !cache, !kv_heads, tensor<3xi32> -> !collection
  %stored_keys = kvcache.get_key_cache %with_kv[%layer] : !collection
  %q_init = tensor.empty() : !q_heads
  %q_rotated, %rotated = kvcache.rope_ragged %q, %stored_keys, %offsets, %rotary, %q_init
      {rotary_dims = 8 : i64, style = "half"}
      : !q_heads, !cache, tensor<3xi32>, tensor<8x8xf32>, !q_heads -> !q_heads, !collection
  %keys = kvcache.get_key_cache %rotated[%layer] : !collection
  %values = kvcache.get_value_cache %rotated[%layer] : !collection
  %attn_init = tensor.empty() : !q_heads
  %attn = kvcache.attention_ragged %q_rotated, %keys, %values, %offsets, %attn_init
      {scale = 0.353553391 : f32}
      : !q_heads, !cache, !cache, tensor<3xi32>, !q_heads -> !q_heads
  // The output projection, a sum over (head, dim): partial on each device.
  %o_init = tensor.empty() : !rows
  %o_zeros = linalg.fill ins(%zero : f32) outs(%o_init : !rows) -> !rows
  %o = linalg.generic {indexing_maps = [#o_in, #o_w, #o_out],
                       iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%attn, %my_wo : !q_heads, tensor<8x8x32xf32>) outs(%o_zeros : !rows) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %c, %m : f32
    linalg.yield %s : f32
  } -> !rows
  %h = func.call @residual(%xs, %o) : (!rows, !rows) -> !rows

  // MLP block, split on its columns: w_down's sum is partial.
  %h_normed = func.call @rms_norm(%h, %mlp_norm) : (!rows, tensor<32xf32>) -> !rows
  %h_any = tensor.cast %h_normed : !rows to tensor<5x?xf32>
  %w_gate_any = tensor.cast %my_w_gate : tensor<32x16xf32> to tensor<?x?xf32>
  %gate_any = func.call @project(%h_any, %w_gate_any)
      : (tensor<5x?xf32>, tensor<?x?xf32>) -> tensor<5x?xf32>
  %gate = tensor.cast %gate_any : tensor<5x?xf32> to tensor<5x16xf32>
  %w_up_any = tensor.cast %my_w_up : tensor<32x16xf32> to tensor<?x?xf32>
  %up_any = func.call @project(%h_any, %w_up_any)
      : (tensor<5x?xf32>, tensor<?x?xf32>) -> tensor<5x?xf32>
  %up = tensor.cast %up_any : tensor<5x?xf32> to tensor<5x16xf32>
  %act = func.call @swiglu(%gate, %up) : (tensor<5x16xf32>, tensor<5x16xf32>) -> tensor<5x16xf32>
  %act_any = tensor.cast %act : tensor<5x16xf32> to tensor<5x?xf32>
  %w_down_any = tensor.cast %my_w_down : tensor<16x32xf32> to tensor<?x?xf32>
  %down_any = func.call @project(%act_any, %w_down_any)
      : (tensor<5x?xf32>, tensor<?x?xf32>) -> tensor<5x?xf32>
  %down = tensor.cast %down_any : tensor<5x?xf32> to !rows
  %y = func.call @residual(%h, %down) : (!rows, !rows) -> !rows
  %result = shard.shard %y to %all : !rows
  %new_blocks = kvcache.collection_tensors %rotated : !collection -> !blocks
  %my_new_blocks = shard.shard %new_blocks to %split_blocks : !blocks
  return %result, %my_new_blocks : !rows, !blocks
}
