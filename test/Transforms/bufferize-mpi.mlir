// RUN: kvcache-opt %s -split-input-file -verify-diagnostics -kvcache-bufferize | FileCheck %s

// kvcache-bufferize frees the buffers bufferization allocates around the
// blocking mpi ops, whose memory effects the project registers (MLIR 22
// declares none, and the deallocation would reject them): the buffer an
// all-reduce writes is freed after its last read; a send reads its buffer, a
// receive writes its own.

// CHECK-LABEL: func.func @all_reduce(
// CHECK: %[[BUF:.*]] = memref.alloc()
// CHECK: linalg.generic
// CHECK: mpi.allreduce(%[[BUF]], %[[BUF]], MPI_SUM
// CHECK: memref.load %[[BUF]]
// CHECK: memref.dealloc %[[BUF]]
// CHECK: return
func.func @all_reduce(%x: tensor<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %unused: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %buf = bufferization.to_buffer %y : tensor<4xf32> to memref<4xf32>
  %comm = mpi.comm_world : !mpi.comm
  mpi.allreduce(%buf, %buf, MPI_SUM, %comm) : memref<4xf32>, memref<4xf32>
  %v = memref.load %buf[%c0] : memref<4xf32>
  return %v : f32
}

// CHECK-LABEL: func.func @send_receive(
// CHECK: %[[OUT:.*]] = memref.alloc()
// CHECK: mpi.send(%[[OUT]]
// CHECK: %[[IN:.*]] = memref.alloc()
// CHECK: mpi.recv(%[[IN]]
// CHECK-DAG: memref.dealloc %[[OUT]]
// CHECK-DAG: memref.dealloc %[[IN]]
// CHECK: return
func.func @send_receive(%x: tensor<4xf32>, %peer: i32) -> f32 {
  %c0 = arith.constant 0 : index
  %tag = arith.constant 7 : i32
  mpi.init
  %comm = mpi.comm_world : !mpi.comm
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.copy ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %out = bufferization.to_buffer %y : tensor<4xf32> to memref<4xf32>
  mpi.send(%out, %tag, %peer, %comm) : memref<4xf32>, i32, i32
  %e_in = tensor.empty() : tensor<4xf32>
  %in = bufferization.to_buffer %e_in : tensor<4xf32> to memref<4xf32>
  mpi.recv(%in, %tag, %peer, %comm) : memref<4xf32>, i32, i32
  %v = memref.load %in[%c0] : memref<4xf32>
  mpi.barrier(%comm)
  mpi.finalize
  return %v : f32
}

// -----

// A non-blocking send keeps its buffer in use until mpi.wait, which the
// deallocation cannot see: no effects are registered for it, and the
// deallocation rejects it (dealloc=false lowers such a function).
func.func @isend(%x: tensor<4xf32>, %peer: i32) {
  %tag = arith.constant 7 : i32
  %comm = mpi.comm_world : !mpi.comm
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.copy ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %out = bufferization.to_buffer %y : tensor<4xf32> to memref<4xf32>
  // expected-error @+1 {{ops with unknown memory side effects are not supported}}
  %req = mpi.isend(%out, %tag, %peer, %comm) : memref<4xf32>, i32, i32 -> !mpi.request
  mpi.wait(%req) : !mpi.request
  return
}
