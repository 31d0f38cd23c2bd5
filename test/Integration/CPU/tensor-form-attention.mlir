// A tensor-level program (docs/Contract.md section 3.5) through kvcache-to-cpu
// and kvcache-to-emulated-gpu, which bufferize it first (kvcache-bufferize):
// @attend, on tensors, stores a step's K and V rows and attends with them; it
// becomes a function with no results that writes the caller's `out` in
// place, and main, on tensors too, calls it that way.

// RUN: kvcache-opt %s -kvcache-bufferize | FileCheck %s --check-prefix=BUF
// RUN: kvcache-opt %s -kvcache-to-cpu | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.emu.mlir
// RUN: %emu_run %t.emu.mlir -e main | FileCheck %s

!collection = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 2>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 2>

// BUF-LABEL: func.func @attend
// BUF-SAME: %[[OUT:[^:]*]]: memref<?x1x4xf32>) {
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: kvcache.attention_ragged {{.*}}, %[[OUT]] {scale = 1.000000e+00 : f32} : memref<?x1x4xf32>
// BUF-NEXT: return{{$}}
func.func @attend(%k: !cache, %v: !cache, %q: tensor<?x1x4xf32>,
                  %new_k: tensor<?x1x4xf32>, %new_v: tensor<?x1x4xf32>,
                  %offsets: tensor<?xi32>, %out: tensor<?x1x4xf32>)
    -> tensor<?x1x4xf32> {
  kvcache.store_ragged %k, %new_k, %offsets : !cache, tensor<?x1x4xf32>, tensor<?xi32>
  kvcache.store_ragged %v, %new_v, %offsets : !cache, tensor<?x1x4xf32>, tensor<?xi32>
  %o = kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 1.0 : f32}
      : tensor<?x1x4xf32>, !cache, !cache, tensor<?xi32>, tensor<?x1x4xf32> -> tensor<?x1x4xf32>
  return %o : tensor<?x1x4xf32>
}

// One sequence with an empty cache gets 2 tokens. Row 0 sees key 0 only:
// out0 = v0. Row 1 sees keys 0 and 1 with scores q1.k0 = 0 and
// q1.k1 = ln 3: weights 1/4 and 3/4, out1 = (v0 + 3 v1) / 4 = (1, 5, 6, 8).
// BUF-LABEL: func.func @main
// BUF: call @attend({{.*}}) : ({{.*}}) -> (){{$}}
// CHECK:      ( 4, 8, 0, -4 )
// CHECK-NEXT: ( 1, 5, 6, 8 )
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %blocks = memref.alloc() : memref<2x2x1x2x1x4xf32>
  linalg.fill ins(%zero : f32) outs(%blocks : memref<2x2x1x2x1x4xf32>)
  %table = memref.alloc() : memref<1x2xi32>
  %lengths = memref.alloc() : memref<1xi32>
  %i0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  memref.store %i0, %table[%c0, %c0] : memref<1x2xi32>
  memref.store %i1, %table[%c0, %c1] : memref<1x2xi32>
  memref.store %i0, %lengths[%c0] : memref<1xi32>
  %table_d = memref.cast %table : memref<1x2xi32> to memref<?x?xi32>
  %lengths_d = memref.cast %lengths : memref<1xi32> to memref<?xi32>
  %two = arith.constant 2 : i32
  %c = kvcache.paged_collection %blocks, %lengths_d, %table_d, %two, %two
      : memref<2x2x1x2x1x4xf32>, memref<?xi32>, memref<?x?xi32> -> !collection
  %k = kvcache.get_key_cache %c[%c0] : !collection
  %v = kvcache.get_value_cache %c[%c0] : !collection

  %q_s = arith.constant dense<[[[0.0, 0.0, 0.0, 0.0]], [[0.0, 1.09861229, 0.0, 0.0]]]> : tensor<2x1x4xf32>
  %k_s = arith.constant dense<[[[1.0, 0.0, 0.0, 0.0]], [[0.0, 1.0, 0.0, 0.0]]]> : tensor<2x1x4xf32>
  %v_s = arith.constant dense<[[[4.0, 8.0, 0.0, -4.0]], [[0.0, 4.0, 8.0, 12.0]]]> : tensor<2x1x4xf32>
  %o_s = arith.constant dense<[0, 2]> : tensor<2xi32>
  %q = tensor.cast %q_s : tensor<2x1x4xf32> to tensor<?x1x4xf32>
  %new_k = tensor.cast %k_s : tensor<2x1x4xf32> to tensor<?x1x4xf32>
  %new_v = tensor.cast %v_s : tensor<2x1x4xf32> to tensor<?x1x4xf32>
  %offsets = tensor.cast %o_s : tensor<2xi32> to tensor<?xi32>
  %init = tensor.empty(%c2) : tensor<?x1x4xf32>
  %out = func.call @attend(%k, %v, %q, %new_k, %new_v, %offsets, %init)
      : (!cache, !cache, tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?xi32>, tensor<?x1x4xf32>) -> tensor<?x1x4xf32>

  %buffer = bufferization.to_buffer %out : tensor<?x1x4xf32> to memref<?x1x4xf32>
  scf.for %row = %c0 to %c2 step %c1 {
    %r = vector.load %buffer[%row, %c0, %c0] : memref<?x1x4xf32>, vector<4xf32>
    vector.print %r : vector<4xf32>
  }
  memref.dealloc %blocks : memref<2x2x1x2x1x4xf32>
  memref.dealloc %table : memref<1x2xi32>
  memref.dealloc %lengths : memref<1xi32>
  return
}
