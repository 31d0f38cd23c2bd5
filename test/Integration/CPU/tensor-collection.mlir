// A collection built from tensors (docs/Contract.md section 3.5) through
// kvcache-to-cpu and kvcache-to-emulated-gpu: @step, on tensors, stores a
// step's K and V rows into a cache it builds from its arguments, copies
// page 0 onto page 1 and attends, each op on the collection the one before
// returned; it returns the updated blocks and the attention's output, both
// its own arguments, so it becomes a function with no results that writes
// the caller's cache and `out` in place (no copy of the cache).

// RUN: kvcache-opt %s -kvcache-bufferize | FileCheck %s --check-prefix=BUF
// RUN: kvcache-opt %s -kvcache-to-cpu | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.emu.mlir
// RUN: %emu_run %t.emu.mlir -e main | FileCheck %s

!collection = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 2>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 2>
!blocks = tensor<?x2x?x2x1x4xf32>

// BUF-LABEL: func.func @step
// BUF-SAME: (%[[B:[^:]*]]: memref<?x2x?x2x1x4xf32>, {{.*}}, %[[OUT:[^:]*]]: memref<?x1x4xf32>) {
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: kvcache.paged_collection %[[B]],
// BUF: kvcache.attention_ragged {{.*}}, %[[OUT]] {scale = 1.000000e+00 : f32} : memref<?x1x4xf32>
// BUF-NEXT: return{{$}}
func.func @step(%blocks: !blocks, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>,
                %max: i32, %q: tensor<?x1x4xf32>, %new_k: tensor<?x1x4xf32>,
                %new_v: tensor<?x1x4xf32>, %offsets: tensor<?xi32>,
                %pairs: tensor<?x2xi32>, %out: tensor<?x1x4xf32>)
    -> (!blocks, tensor<?x1x4xf32>) {
  %c0 = arith.constant 0 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max, %max
      : !blocks, tensor<?xi32>, tensor<?x?xi32> -> !collection
  %k = kvcache.get_key_cache %c[%c0] : !collection
  %c1 = kvcache.store_ragged %k, %new_k, %offsets : !cache, tensor<?x1x4xf32>, tensor<?xi32> -> !collection
  %v = kvcache.get_value_cache %c1[%c0] : !collection
  %c2 = kvcache.store_ragged %v, %new_v, %offsets : !cache, tensor<?x1x4xf32>, tensor<?xi32> -> !collection
  %c3 = kvcache.copy_pages %c2, %pairs : !collection, tensor<?x2xi32> -> !collection
  %k3 = kvcache.get_key_cache %c3[%c0] : !collection
  %v3 = kvcache.get_value_cache %c3[%c0] : !collection
  %o = kvcache.attention_ragged %q, %k3, %v3, %offsets, %out {scale = 1.0 : f32}
      : tensor<?x1x4xf32>, !cache, !cache, tensor<?xi32>, tensor<?x1x4xf32> -> tensor<?x1x4xf32>
  %b = kvcache.collection_tensors %c3 : !collection -> !blocks
  return %b, %o : !blocks, tensor<?x1x4xf32>
}

// One sequence with an empty cache gets 2 tokens on page 0. Row 0 sees key
// 0 only: out0 = v0. Row 1 sees keys 0 and 1 with scores q1.k0 = 0 and
// q1.k1 = ln 3: weights 1/4 and 3/4, out1 = (v0 + 3 v1) / 4 = (1, 5, 6, 8).
// Then the cache: V of token 0 on page 0, and K of token 1 copied to page 1.
// BUF-LABEL: func.func @main
// BUF: call @step({{.*}}) : ({{.*}}) -> (){{$}}
// CHECK:      ( 4, 8, 0, -4 )
// CHECK-NEXT: ( 1, 5, 6, 8 )
// CHECK-NEXT: ( 4, 8, 0, -4 )
// CHECK-NEXT: ( 0, 1, 0, 0 )
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<2x2x1x2x1x4xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%empty : tensor<2x2x1x2x1x4xf32>) -> tensor<2x2x1x2x1x4xf32>
  %blocks = tensor.cast %filled : tensor<2x2x1x2x1x4xf32> to !blocks
  %table_s = arith.constant dense<[[0, 1]]> : tensor<1x2xi32>
  %lengths_s = arith.constant dense<0> : tensor<1xi32>
  %pairs_s = arith.constant dense<[[0, 1]]> : tensor<1x2xi32>
  %table = tensor.cast %table_s : tensor<1x2xi32> to tensor<?x?xi32>
  %lengths = tensor.cast %lengths_s : tensor<1xi32> to tensor<?xi32>
  %pairs = tensor.cast %pairs_s : tensor<1x2xi32> to tensor<?x2xi32>
  %two = arith.constant 2 : i32

  %q_s = arith.constant dense<[[[0.0, 0.0, 0.0, 0.0]], [[0.0, 1.09861229, 0.0, 0.0]]]> : tensor<2x1x4xf32>
  %k_s = arith.constant dense<[[[1.0, 0.0, 0.0, 0.0]], [[0.0, 1.0, 0.0, 0.0]]]> : tensor<2x1x4xf32>
  %v_s = arith.constant dense<[[[4.0, 8.0, 0.0, -4.0]], [[0.0, 4.0, 8.0, 12.0]]]> : tensor<2x1x4xf32>
  %o_s = arith.constant dense<[0, 2]> : tensor<2xi32>
  %q = tensor.cast %q_s : tensor<2x1x4xf32> to tensor<?x1x4xf32>
  %new_k = tensor.cast %k_s : tensor<2x1x4xf32> to tensor<?x1x4xf32>
  %new_v = tensor.cast %v_s : tensor<2x1x4xf32> to tensor<?x1x4xf32>
  %offsets = tensor.cast %o_s : tensor<2xi32> to tensor<?xi32>
  %init = tensor.empty(%c2) : tensor<?x1x4xf32>
  %cache, %out = func.call @step(%blocks, %lengths, %table, %two, %q, %new_k, %new_v, %offsets, %pairs, %init)
      : (!blocks, tensor<?xi32>, tensor<?x?xi32>, i32, tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?xi32>, tensor<?x2xi32>, tensor<?x1x4xf32>) -> (!blocks, tensor<?x1x4xf32>)

  %buffer = bufferization.to_buffer %out : tensor<?x1x4xf32> to memref<?x1x4xf32>
  scf.for %row = %c0 to %c2 step %c1 {
    %r = vector.load %buffer[%row, %c0, %c0] : memref<?x1x4xf32>, vector<4xf32>
    vector.print %r : vector<4xf32>
  }
  %blocks_buffer = bufferization.to_buffer %cache : !blocks to memref<?x2x?x2x1x4xf32>
  %v0 = vector.load %blocks_buffer[%c0, %c1, %c0, %c0, %c0, %c0] : memref<?x2x?x2x1x4xf32>, vector<4xf32>
  vector.print %v0 : vector<4xf32>
  %k1 = vector.load %blocks_buffer[%c1, %c0, %c0, %c1, %c0, %c0] : memref<?x2x?x2x1x4xf32>, vector<4xf32>
  vector.print %k1 : vector<4xf32>
  return
}
