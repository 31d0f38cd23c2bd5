// RUN: kvcache-opt %s -kvcache-bufferize -verify-diagnostics

// A grid that an op still uses: the shard dialect's collectives go to MPI
// (convert-shard-to-mpi) before kvcache-bufferize.
shard.grid @grid(shape = 2)
func.func @reduce(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{kvcache-bufferize: 'shard.all_reduce' uses shard.grid @grid, which no lowering takes: lower the shard dialect's collectives first (convert-shard-to-mpi)}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
