// RUN: kvcache-opt %s -kvcache-bufferize 2>&1 | FileCheck %s
// RUN: kvcache-opt %s -kvcache-bufferize="gpu-alloc=true" 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: kvcache-opt %s -kvcache-bufferize="dealloc=false" 2>&1 | FileCheck %s --check-prefix=KEEP

// kvcache-bufferize frees the buffers bufferization allocates (docs/Contract.md
// section 6.1, option dealloc): ownership-based deallocation on the functions
// that free no memory themselves, gpu.dealloc for gpu.alloc'd buffers; a
// function that frees memory itself keeps its frees and gets a warning.

// CHECK: warning: kvcache-bufferize: the buffers bufferization allocates in this function are not freed: it frees memory itself
// GPU: warning: kvcache-bufferize: the buffers bufferization allocates in this function are not freed: it frees memory itself
// KEEP-NOT: warning

// A buffer for an intermediate value, freed after its last use.
func.func @thrice(%a: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %empty = tensor.empty(%n) : tensor<?xf32>
  %twice = linalg.add ins(%a, %a : tensor<?xf32>, tensor<?xf32>)
                      outs(%empty : tensor<?xf32>) -> tensor<?xf32>
  %thrice = linalg.add ins(%twice, %a : tensor<?xf32>, tensor<?xf32>)
                       outs(%out : tensor<?xf32>) -> tensor<?xf32>
  return %thrice : tensor<?xf32>
}

// A new buffer returned: its caller owns it and frees it.
func.func private @doubled(%a: tensor<8xf32>) -> tensor<8xf32> {
  %empty = tensor.empty() : tensor<8xf32>
  %twice = linalg.add ins(%a, %a : tensor<8xf32>, tensor<8xf32>)
                      outs(%empty : tensor<8xf32>) -> tensor<8xf32>
  return %twice : tensor<8xf32>
}

func.func @quadrupled(%a: tensor<8xf32>, %out: tensor<8xf32>) -> tensor<8xf32> {
  %twice = call @doubled(%a) : (tensor<8xf32>) -> tensor<8xf32>
  %four = linalg.add ins(%twice, %twice : tensor<8xf32>, tensor<8xf32>)
                     outs(%out : tensor<8xf32>) -> tensor<8xf32>
  return %four : tensor<8xf32>
}

// A function that frees memory itself: left as it is, with a warning.
func.func @frees_itself(%a: tensor<8xf32>, %out: tensor<8xf32>) -> tensor<8xf32> {
  %scratch = memref.alloc() : memref<8xf32>
  memref.dealloc %scratch : memref<8xf32>
  %empty = tensor.empty() : tensor<8xf32>
  %twice = linalg.add ins(%a, %a : tensor<8xf32>, tensor<8xf32>)
                      outs(%empty : tensor<8xf32>) -> tensor<8xf32>
  %thrice = linalg.add ins(%twice, %a : tensor<8xf32>, tensor<8xf32>)
                       outs(%out : tensor<8xf32>) -> tensor<8xf32>
  return %thrice : tensor<8xf32>
}

// CHECK-LABEL: func.func @thrice(
// CHECK: %[[A:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xf32>
// CHECK-NEXT: linalg.add {{.*}} outs(%[[A]] : memref<?xf32>)
// CHECK-NEXT: linalg.add ins(%[[A]], {{.*}})
// CHECK-NEXT: memref.dealloc %[[A]] : memref<?xf32>
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @doubled(
// CHECK: %[[A:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NOT: dealloc
// CHECK: return %[[A]] : memref<8xf32>
// CHECK-LABEL: func.func @quadrupled(
// CHECK-NEXT: %[[R:.*]] = call @doubled(
// CHECK-NEXT: linalg.add ins(%[[R]], %[[R]]
// CHECK-NEXT: %[[BASE:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[R]]
// CHECK-NEXT: memref.dealloc %[[BASE]] : memref<f32>
// CHECK-NEXT: return
// CHECK-LABEL: func.func @frees_itself(
// CHECK-NEXT: %[[S:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT: memref.dealloc %[[S]] : memref<8xf32>
// CHECK-NEXT: memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NOT: dealloc
// CHECK: return

// GPU-LABEL: func.func @thrice(
// GPU: %[[W:.*]] = gpu.wait async
// GPU-NEXT: %[[A:.*]], %[[T:.*]] = gpu.alloc async [%[[W]]] (%{{.*}}) : memref<?xf32>
// GPU-NEXT: gpu.wait [%[[T]]]
// GPU-NEXT: linalg.add {{.*}} outs(%[[A]] : memref<?xf32>)
// GPU-NEXT: linalg.add ins(%[[A]], {{.*}})
// GPU-NEXT: %[[W2:.*]] = gpu.wait async
// GPU-NEXT: %[[T2:.*]] = gpu.dealloc async [%[[W2]]] %[[A]] : memref<?xf32>
// GPU-NEXT: gpu.wait [%[[T2]]]
// GPU-NEXT: return
// GPU-LABEL: func.func private @doubled(
// GPU-NOT: dealloc
// GPU: return
// GPU-LABEL: func.func @quadrupled(
// GPU: %[[BASE:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata
// GPU-NEXT: %[[W:.*]] = gpu.wait async
// GPU-NEXT: %[[T:.*]] = gpu.dealloc async [%[[W]]] %[[BASE]] : memref<f32>
// GPU-NEXT: gpu.wait [%[[T]]]
// GPU-NEXT: return
// GPU-LABEL: func.func @frees_itself(
// GPU: gpu.alloc async
// GPU-NOT: dealloc
// GPU: return

// KEEP-LABEL: func.func @thrice(
// KEEP-NOT: dealloc
// KEEP-LABEL: func.func @quadrupled(
// KEEP-NOT: dealloc
// KEEP-LABEL: func.func @frees_itself(
// KEEP-NEXT: memref.alloc
// KEEP-NEXT: memref.dealloc
// KEEP-NOT: dealloc
// KEEP: return

// Two buffers returned by calls, freed after their last uses (by a run-time
// check that they differ). MLIR 22's deallocation simplification crashed
// here (its buffer-origin analysis read ops its folding of the duplicate
// constant 512 had erased); kvcache-bufferize canonicalizes first.
// CHECK-LABEL: func.func @two_calls(
// CHECK: %[[A:.*]] = call @filled(
// CHECK: %[[B:.*]] = call @filled(
// CHECK: call @first_element(%[[A]])
// CHECK: call @first_element(%[[B]])
// CHECK: memref.extract_strided_metadata %[[A]]
// CHECK: memref.extract_strided_metadata %[[B]]
// CHECK-COUNT-2: memref.dealloc %base_buffer
// CHECK: return
func.func private @filled(%n: index, %value: f32) -> tensor<?xf32> {
  %e = tensor.empty(%n) : tensor<?xf32>
  %g = linalg.fill ins(%value : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %g : tensor<?xf32>
}
func.func private @first_element(%a: tensor<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %x = tensor.extract %a[%c0] : tensor<?xf32>
  return %x : f32
}
func.func @two_calls() -> f32 {
  %n = arith.constant 512 : index
  %m = arith.constant 512 : index
  %s = arith.constant 0.2 : f32
  %t = arith.constant 0.3 : f32
  %a = func.call @filled(%n, %s) : (index, f32) -> tensor<?xf32>
  %b = func.call @filled(%m, %t) : (index, f32) -> tensor<?xf32>
  %x = func.call @first_element(%a) : (tensor<?xf32>) -> f32
  %y = func.call @first_element(%b) : (tensor<?xf32>) -> f32
  %z = arith.addf %x, %y : f32
  return %z : f32
}
