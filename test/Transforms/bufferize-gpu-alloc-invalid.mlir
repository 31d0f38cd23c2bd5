// RUN: kvcache-opt %s -split-input-file -verify-diagnostics -kvcache-bufferize=gpu-alloc=true
// RUN: kvcache-opt %s -split-input-file -kvcache-bufferize="gpu-alloc=true dealloc=false" | FileCheck %s

// With gpu-alloc (the GPU pipelines' linalg-to-gpu), a buffer the
// deallocation would free on the host but that may be device memory or not
// (here the argument or a gpu.alloc'd buffer, by a run-time condition) is
// an error that names the way out; with dealloc=false it is not freed.

// CHECK-LABEL: func.func @either(
// CHECK: gpu.alloc
// CHECK-NOT: dealloc
// CHECK: return
func.func @either(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %r = scf.if %c -> tensor<4xf32> {
    scf.yield %a : tensor<4xf32>
  } else {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    scf.yield %f : tensor<4xf32>
  }
  // expected-error @+1 {{kvcache-bufferize: cannot tell whether this buffer is device memory (use dealloc=false)}}
  return %r : tensor<4xf32>
}

// -----

// A result that is one of two arguments, chosen at run time, in a function
// that allocates: the deallocation returns a copy of it
// (bufferization.clone), which would copy device memory on the host.

// CHECK-LABEL: func.func @pick(
// CHECK: gpu.alloc
// CHECK-NOT: bufferization.clone
// CHECK-NOT: dealloc
// CHECK: return
func.func @pick(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: i1) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{kvcache-bufferize: cannot free device buffers that need a copy (use dealloc=false)}}
  %r = scf.if %c -> tensor<4xf32> {
    scf.yield %a : tensor<4xf32>
  } else {
    scf.yield %b : tensor<4xf32>
  }
  return %r, %f : tensor<4xf32>, tensor<4xf32>
}
