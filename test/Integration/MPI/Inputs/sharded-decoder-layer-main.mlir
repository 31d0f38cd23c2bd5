// @main of sharded-decoder-layer.test, appended to the layer partitioned
// for N ranks (@layer), the layer with every annotation replicated (@whole)
// and sharded-helpers.mlir: every rank builds the whole inputs, calls
// @whole on them and @layer on its slices (the KV heads of the blocks, wk
// and wv from rank * 4 / N, the query heads of wq and wo from rank * 8 / N,
// the MLP columns of w_gate, w_up and w_down from rank * 16 / N; the RUN
// lines define the slices' types, !my_blocks, !my_wq, !my_wkv, !my_wo,
// !my_w_gate_up and !my_w_down, before this file). It prints the largest difference of the rows,
// that of its blocks after the step (against its heads of @whole's blocks)
// and the largest |y|, then 10 * rank + 1 when |y| exceeds 1, the rows
// differ by at most 1e-5 of it and the blocks not at all.

func.func @main() {
  mpi.init
  %comm = mpi.comm_world : !mpi.comm
  %rank_i32 = mpi.comm_rank(%comm) : i32
  %rank = arith.index_cast %rank_i32 : i32 to index
  // A rank's KV heads, query heads and MLP columns: those of its slices'
  // types; its first ones.
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %my_blocks_shape = tensor.empty() : !my_blocks
  %kv = tensor.dim %my_blocks_shape, %c4 : !my_blocks
  %my_wq_shape = tensor.empty() : !my_wq
  %heads = tensor.dim %my_wq_shape, %c1 : !my_wq
  %my_w_down_shape = tensor.empty() : !my_w_down
  %mlp = tensor.dim %my_w_down_shape, %c0 : !my_w_down
  %kv0 = arith.muli %rank, %kv : index
  %h0 = arith.muli %rank, %heads : index
  %mlp0 = arith.muli %rank, %mlp : index

  %n_blocks = arith.constant 1024 : index
  %n_x = arith.constant 160 : index
  %n_table = arith.constant 64 : index
  %n_norm = arith.constant 32 : index
  %n_wq = arith.constant 2048 : index
  %n_wkv = arith.constant 1024 : index
  %n_mlp = arith.constant 512 : index
  %s1 = arith.constant 0.1 : f32
  %s2 = arith.constant 0.2 : f32
  %s3 = arith.constant 0.3 : f32
  %s4 = arith.constant 0.4 : f32
  %s5 = arith.constant 0.5 : f32
  %s6 = arith.constant 0.6 : f32
  %s7 = arith.constant 0.7 : f32
  %s8 = arith.constant 0.8 : f32
  %s9 = arith.constant 0.9 : f32
  %s10 = arith.constant 1.0 : f32
  %s11 = arith.constant 1.1 : f32
  %s12 = arith.constant 1.2 : f32
  %flat_blocks = func.call @values(%n_blocks, %s1) : (index, f32) -> tensor<?xf32>
  %flat_x = func.call @values(%n_x, %s2) : (index, f32) -> tensor<?xf32>
  %flat_table = func.call @values(%n_table, %s3) : (index, f32) -> tensor<?xf32>
  %flat_attn_norm = func.call @values(%n_norm, %s4) : (index, f32) -> tensor<?xf32>
  %flat_wq = func.call @values(%n_wq, %s5) : (index, f32) -> tensor<?xf32>
  %flat_wk = func.call @values(%n_wkv, %s6) : (index, f32) -> tensor<?xf32>
  %flat_wv = func.call @values(%n_wkv, %s7) : (index, f32) -> tensor<?xf32>
  %flat_wo = func.call @values(%n_wq, %s8) : (index, f32) -> tensor<?xf32>
  %flat_mlp_norm = func.call @values(%n_norm, %s9) : (index, f32) -> tensor<?xf32>
  %flat_gate = func.call @values(%n_mlp, %s10) : (index, f32) -> tensor<?xf32>
  %flat_up = func.call @values(%n_mlp, %s11) : (index, f32) -> tensor<?xf32>
  %flat_down = func.call @values(%n_mlp, %s12) : (index, f32) -> tensor<?xf32>
  %blocks_1d = tensor.cast %flat_blocks : tensor<?xf32> to tensor<1024xf32>
  %blocks = tensor.expand_shape %blocks_1d [[0, 1, 2, 3, 4, 5]] output_shape [4, 2, 1, 4, 4, 8]
      : tensor<1024xf32> into tensor<4x2x1x4x4x8xf32>
  %x_1d = tensor.cast %flat_x : tensor<?xf32> to tensor<160xf32>
  %x = tensor.expand_shape %x_1d [[0, 1]] output_shape [5, 32] : tensor<160xf32> into tensor<5x32xf32>
  %table_1d = tensor.cast %flat_table : tensor<?xf32> to tensor<64xf32>
  %cos_sin = tensor.expand_shape %table_1d [[0, 1]] output_shape [8, 8] : tensor<64xf32> into tensor<8x8xf32>
  %attn_norm = tensor.cast %flat_attn_norm : tensor<?xf32> to tensor<32xf32>
  %mlp_norm = tensor.cast %flat_mlp_norm : tensor<?xf32> to tensor<32xf32>
  %wq_1d = tensor.cast %flat_wq : tensor<?xf32> to tensor<2048xf32>
  %wq = tensor.expand_shape %wq_1d [[0, 1, 2]] output_shape [32, 8, 8] : tensor<2048xf32> into tensor<32x8x8xf32>
  %wk_1d = tensor.cast %flat_wk : tensor<?xf32> to tensor<1024xf32>
  %wk = tensor.expand_shape %wk_1d [[0, 1, 2]] output_shape [32, 4, 8] : tensor<1024xf32> into tensor<32x4x8xf32>
  %wv_1d = tensor.cast %flat_wv : tensor<?xf32> to tensor<1024xf32>
  %wv = tensor.expand_shape %wv_1d [[0, 1, 2]] output_shape [32, 4, 8] : tensor<1024xf32> into tensor<32x4x8xf32>
  %wo_1d = tensor.cast %flat_wo : tensor<?xf32> to tensor<2048xf32>
  %wo = tensor.expand_shape %wo_1d [[0, 1, 2]] output_shape [8, 8, 32] : tensor<2048xf32> into tensor<8x8x32xf32>
  %gate_1d = tensor.cast %flat_gate : tensor<?xf32> to tensor<512xf32>
  %w_gate = tensor.expand_shape %gate_1d [[0, 1]] output_shape [32, 16] : tensor<512xf32> into tensor<32x16xf32>
  %up_1d = tensor.cast %flat_up : tensor<?xf32> to tensor<512xf32>
  %w_up = tensor.expand_shape %up_1d [[0, 1]] output_shape [32, 16] : tensor<512xf32> into tensor<32x16xf32>
  %down_1d = tensor.cast %flat_down : tensor<?xf32> to tensor<512xf32>
  %w_down = tensor.expand_shape %down_1d [[0, 1]] output_shape [16, 32] : tensor<512xf32> into tensor<16x32xf32>
  // Cached tokens 3 and 0, new rows 2 and 3, pages [2, 0] and [1, 3].
  %lengths = arith.constant dense<[3, 0]> : tensor<2xi32>
  %table = arith.constant dense<[[2, 0], [1, 3]]> : tensor<2x2xi32>
  %offsets = arith.constant dense<[0, 2, 5]> : tensor<3xi32>
  %max_seq = arith.constant 3 : i32
  %max_cache = arith.constant 5 : i32

  %expected, %expected_blocks = func.call @whole(%blocks, %lengths, %table, %max_seq, %max_cache, %x, %offsets,
                               %cos_sin, %attn_norm, %wq, %wk, %wv, %wo, %mlp_norm,
                               %w_gate, %w_up, %w_down)
      : (tensor<4x2x1x4x4x8xf32>, tensor<2xi32>, tensor<2x2xi32>, i32, i32, tensor<5x32xf32>,
         tensor<3xi32>, tensor<8x8xf32>, tensor<32xf32>, tensor<32x8x8xf32>, tensor<32x4x8xf32>,
         tensor<32x4x8xf32>, tensor<8x8x32xf32>, tensor<32xf32>, tensor<32x16xf32>,
         tensor<32x16xf32>, tensor<16x32xf32>) -> (tensor<5x32xf32>, tensor<4x2x1x4x4x8xf32>)

  // The layer writes its blocks: the slices come from a second copy.
  %flat_blocks2 = func.call @values(%n_blocks, %s1) : (index, f32) -> tensor<?xf32>
  %blocks2_1d = tensor.cast %flat_blocks2 : tensor<?xf32> to tensor<1024xf32>
  %blocks2 = tensor.expand_shape %blocks2_1d [[0, 1, 2, 3, 4, 5]] output_shape [4, 2, 1, 4, 4, 8]
      : tensor<1024xf32> into tensor<4x2x1x4x4x8xf32>
  %blocks_part = tensor.extract_slice %blocks2[0, 0, 0, 0, %kv0, 0] [4, 2, 1, 4, %kv, 8] [1, 1, 1, 1, 1, 1]
      : tensor<4x2x1x4x4x8xf32> to tensor<4x2x1x4x?x8xf32>
  %my_blocks = tensor.cast %blocks_part : tensor<4x2x1x4x?x8xf32> to !my_blocks
  %wq_part = tensor.extract_slice %wq[0, %h0, 0] [32, %heads, 8] [1, 1, 1]
      : tensor<32x8x8xf32> to tensor<32x?x8xf32>
  %my_wq = tensor.cast %wq_part : tensor<32x?x8xf32> to !my_wq
  %wk_part = tensor.extract_slice %wk[0, %kv0, 0] [32, %kv, 8] [1, 1, 1]
      : tensor<32x4x8xf32> to tensor<32x?x8xf32>
  %my_wk = tensor.cast %wk_part : tensor<32x?x8xf32> to !my_wkv
  %wv_part = tensor.extract_slice %wv[0, %kv0, 0] [32, %kv, 8] [1, 1, 1]
      : tensor<32x4x8xf32> to tensor<32x?x8xf32>
  %my_wv = tensor.cast %wv_part : tensor<32x?x8xf32> to !my_wkv
  %wo_part = tensor.extract_slice %wo[%h0, 0, 0] [%heads, 8, 32] [1, 1, 1]
      : tensor<8x8x32xf32> to tensor<?x8x32xf32>
  %my_wo = tensor.cast %wo_part : tensor<?x8x32xf32> to !my_wo
  %gate_part = tensor.extract_slice %w_gate[0, %mlp0] [32, %mlp] [1, 1]
      : tensor<32x16xf32> to tensor<32x?xf32>
  %my_w_gate = tensor.cast %gate_part : tensor<32x?xf32> to !my_w_gate_up
  %up_part = tensor.extract_slice %w_up[0, %mlp0] [32, %mlp] [1, 1]
      : tensor<32x16xf32> to tensor<32x?xf32>
  %my_w_up = tensor.cast %up_part : tensor<32x?xf32> to !my_w_gate_up
  %down_part = tensor.extract_slice %w_down[%mlp0, 0] [%mlp, 32] [1, 1]
      : tensor<16x32xf32> to tensor<?x32xf32>
  %my_w_down = tensor.cast %down_part : tensor<?x32xf32> to !my_w_down
  %got, %got_blocks = func.call @layer(%my_blocks, %lengths, %table, %max_seq, %max_cache, %x, %offsets,
                          %cos_sin, %attn_norm, %my_wq, %my_wk, %my_wv, %my_wo, %mlp_norm,
                          %my_w_gate, %my_w_up, %my_w_down)
      : (!my_blocks, tensor<2xi32>, tensor<2x2xi32>, i32, i32, tensor<5x32xf32>,
         tensor<3xi32>, tensor<8x8xf32>, tensor<32xf32>, !my_wq, !my_wkv, !my_wkv, !my_wo,
         tensor<32xf32>, !my_w_gate_up, !my_w_gate_up, !my_w_down)
      -> (tensor<5x32xf32>, !my_blocks)

  // The rank's blocks against its heads of the whole blocks, as [32, ?].
  %expected_part = tensor.extract_slice %expected_blocks[0, 0, 0, 0, %kv0, 0] [4, 2, 1, 4, %kv, 8] [1, 1, 1, 1, 1, 1]
      : tensor<4x2x1x4x4x8xf32> to tensor<4x2x1x4x?x8xf32>
  %expected_rows = tensor.collapse_shape %expected_part [[0, 1, 2, 3], [4, 5]]
      : tensor<4x2x1x4x?x8xf32> into tensor<32x?xf32>
  %expected_blocks_any = tensor.cast %expected_rows : tensor<32x?xf32> to tensor<?x?xf32>
  %got_part = tensor.cast %got_blocks : !my_blocks to tensor<4x2x1x4x?x8xf32>
  %got_rows = tensor.collapse_shape %got_part [[0, 1, 2, 3], [4, 5]]
      : tensor<4x2x1x4x?x8xf32> into tensor<32x?xf32>
  %got_blocks_any = tensor.cast %got_rows : tensor<32x?xf32> to tensor<?x?xf32>
  %blocks_difference = func.call @max_difference(%got_blocks_any, %expected_blocks_any)
      : (tensor<?x?xf32>, tensor<?x?xf32>) -> f32

  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x32xf32>
  %zeros = linalg.fill ins(%zero : f32) outs(%e : tensor<5x32xf32>) -> tensor<5x32xf32>
  %got_any = tensor.cast %got : tensor<5x32xf32> to tensor<?x?xf32>
  %expected_any = tensor.cast %expected : tensor<5x32xf32> to tensor<?x?xf32>
  %zeros_any = tensor.cast %zeros : tensor<5x32xf32> to tensor<?x?xf32>
  %difference = func.call @max_difference(%got_any, %expected_any)
      : (tensor<?x?xf32>, tensor<?x?xf32>) -> f32
  %size = func.call @max_difference(%zeros_any, %expected_any)
      : (tensor<?x?xf32>, tensor<?x?xf32>) -> f32
  // Rank 0 prints @whole's rows, `( y, y, ... )`, for the numpy reference
  // (sharded_decoder_layer_reference.py).
  %c5 = arith.constant 5 : index
  %is_first = arith.cmpi eq, %rank, %c0 : index
  scf.if %is_first {
    scf.for %t = %c0 to %c5 step %c1 {
      %row = vector.transfer_read %expected[%t, %c0], %zero : tensor<5x32xf32>, vector<32xf32>
      vector.print %row : vector<32xf32>
    }
  }
  vector.print %difference : f32
  vector.print %blocks_difference : f32
  vector.print %size : f32
  %one = arith.constant 1.0 : f32
  %relative = arith.constant 1.0e-5 : f32
  %tolerance = arith.mulf %size, %relative : f32
  %nontrivial = arith.cmpf ogt, %size, %one : f32
  %agree = arith.cmpf ole, %difference, %tolerance : f32
  %no_difference = arith.constant 0.0 : f32
  %same_blocks = arith.cmpf oeq, %blocks_difference, %no_difference : f32
  %rows_ok = arith.andi %nontrivial, %agree : i1
  %ok = arith.andi %rows_ok, %same_blocks : i1
  %ok_i32 = arith.extui %ok : i1 to i32
  %c10 = arith.constant 10 : i32
  %tens = arith.muli %rank_i32, %c10 : i32
  %code = arith.addi %tens, %ok_i32 : i32
  vector.print %code : i32
  mpi.finalize
  return
}
