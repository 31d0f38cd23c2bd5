// @main of sharded-attention-allreduce.mlir (appended to the partitioned
// module): every rank builds the whole inputs, calls @whole on them and
// @attn_out on its slices (KV head `rank`, query heads and rows of wo
// 2 * rank and 2 * rank + 1), and prints 10 * rank + 1 when the results
// agree. Its helpers are in sharded-helpers.mlir.

func.func private @zeros() -> tensor<5x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<5x16xf32>) -> tensor<5x16xf32>
  return %z : tensor<5x16xf32>
}

func.func @main() {
  mpi.init
  %comm = mpi.comm_world : !mpi.comm
  %rank_i32 = mpi.comm_rank(%comm) : i32
  %rank = arith.index_cast %rank_i32 : i32 to index
  %c2 = arith.constant 2 : index
  %h0 = arith.muli %rank, %c2 : index
  %n_blocks = arith.constant 512 : index
  %n_q = arith.constant 160 : index
  %n_wo = arith.constant 512 : index
  %s1 = arith.constant 0.1 : f32
  %s2 = arith.constant 0.2 : f32
  %s3 = arith.constant 0.3 : f32
  %flat_blocks = func.call @values(%n_blocks, %s1) : (index, f32) -> tensor<?xf32>
  %flat_q = func.call @values(%n_q, %s2) : (index, f32) -> tensor<?xf32>
  %flat_wo = func.call @values(%n_wo, %s3) : (index, f32) -> tensor<?xf32>
  %static_blocks = tensor.cast %flat_blocks : tensor<?xf32> to tensor<512xf32>
  %static_q = tensor.cast %flat_q : tensor<?xf32> to tensor<160xf32>
  %static_wo = tensor.cast %flat_wo : tensor<?xf32> to tensor<512xf32>
  %blocks = tensor.expand_shape %static_blocks [[0, 1, 2, 3, 4, 5]] output_shape [4, 2, 1, 4, 2, 8]
      : tensor<512xf32> into tensor<4x2x1x4x2x8xf32>
  %q = tensor.expand_shape %static_q [[0, 1, 2]] output_shape [5, 4, 8] : tensor<160xf32> into tensor<5x4x8xf32>
  %wo = tensor.expand_shape %static_wo [[0, 1, 2]] output_shape [4, 8, 16] : tensor<512xf32> into tensor<4x8x16xf32>
  // Cached tokens 3 and 0, new rows 2 and 3, pages [2, 0] and [1, 3].
  %lengths = arith.constant dense<[3, 0]> : tensor<2xi32>
  %table = arith.constant dense<[[2, 0], [1, 3]]> : tensor<2x2xi32>
  %offsets = arith.constant dense<[0, 2, 5]> : tensor<3xi32>
  %max_seq = arith.constant 3 : i32
  %max_cache = arith.constant 5 : i32
  %zero = arith.constant 0.0 : f32
  %e_out = tensor.empty() : tensor<5x4x8xf32>
  %out = linalg.fill ins(%zero : f32) outs(%e_out : tensor<5x4x8xf32>) -> tensor<5x4x8xf32>
  %y = func.call @zeros() : () -> tensor<5x16xf32>
  %expected = func.call @whole(%blocks, %lengths, %table, %max_seq, %max_cache, %q, %offsets, %out, %wo, %y)
      : (tensor<4x2x1x4x2x8xf32>, tensor<2xi32>, tensor<2x2xi32>, i32, i32, tensor<5x4x8xf32>,
         tensor<3xi32>, tensor<5x4x8xf32>, tensor<4x8x16xf32>, tensor<5x16xf32>) -> tensor<5x16xf32>
  %my_blocks = tensor.extract_slice %blocks[0, 0, 0, 0, %rank, 0] [4, 2, 1, 4, 1, 8] [1, 1, 1, 1, 1, 1]
      : tensor<4x2x1x4x2x8xf32> to tensor<4x2x1x4x1x8xf32>
  %my_q = tensor.extract_slice %q[0, %h0, 0] [5, 2, 8] [1, 1, 1] : tensor<5x4x8xf32> to tensor<5x2x8xf32>
  %my_wo = tensor.extract_slice %wo[%h0, 0, 0] [2, 8, 16] [1, 1, 1] : tensor<4x8x16xf32> to tensor<2x8x16xf32>
  %e_my_out = tensor.empty() : tensor<5x2x8xf32>
  %my_out = linalg.fill ins(%zero : f32) outs(%e_my_out : tensor<5x2x8xf32>) -> tensor<5x2x8xf32>
  %my_y = func.call @zeros() : () -> tensor<5x16xf32>
  %got = func.call @attn_out(%my_blocks, %lengths, %table, %max_seq, %max_cache, %my_q, %offsets, %my_out, %my_wo, %my_y)
      : (tensor<4x2x1x4x1x8xf32>, tensor<2xi32>, tensor<2x2xi32>, i32, i32, tensor<5x2x8xf32>,
         tensor<3xi32>, tensor<5x2x8xf32>, tensor<2x8x16xf32>, tensor<5x16xf32>) -> tensor<5x16xf32>
  %got_any = tensor.cast %got : tensor<5x16xf32> to tensor<?x?xf32>
  %expected_any = tensor.cast %expected : tensor<5x16xf32> to tensor<?x?xf32>
  %y_any = tensor.cast %y : tensor<5x16xf32> to tensor<?x?xf32>
  %difference = func.call @max_difference(%got_any, %expected_any) : (tensor<?x?xf32>, tensor<?x?xf32>) -> f32
  %size = func.call @max_difference(%y_any, %expected_any) : (tensor<?x?xf32>, tensor<?x?xf32>) -> f32
  %one = arith.constant 1.0 : f32
  %tolerance = arith.constant 1.0e-4 : f32
  %nontrivial = arith.cmpf ogt, %size, %one : f32
  %agree = arith.cmpf ole, %difference, %tolerance : f32
  %ok = arith.andi %nontrivial, %agree : i1
  %ok_i32 = arith.extui %ok : i1 to i32
  %c10 = arith.constant 10 : i32
  %tens = arith.muli %rank_i32, %c10 : i32
  %code = arith.addi %tens, %ok_i32 : i32
  vector.print %code : i32
  mpi.finalize
  return
}
