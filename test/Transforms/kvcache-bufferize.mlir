// RUN: kvcache-opt %s -split-input-file -kvcache-bufferize | FileCheck %s

// kvcache-bufferize (docs/Contract.md section 3.5): one-shot-bufferize with
// identity layouts at function boundaries, then the results that return an
// argument dropped, public functions included, with their calls.

!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// A destination-style public function: its results are its inits.
// CHECK-LABEL: func.func @attend(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x32x128xf16>, %[[LSE:[^:]*]]: memref<?x32xf32>) {
// CHECK-NEXT: kvcache.attention_ragged {{.*}}, %[[OUT]] lse(%[[LSE]]) {{.*}} : memref<?x32x128xf16>, {{.*}}, memref<?x32x128xf16>, memref<?x32xf32>{{$}}
// CHECK-NEXT: return{{$}}
func.func @attend(%q: tensor<?x32x128xf16>, %k: !k, %o: tensor<3xi32>,
                  %out: tensor<?x32x128xf16>, %lse: tensor<?x32xf32>)
    -> (tensor<?x32x128xf16>, tensor<?x32xf32>) {
  %r:2 = kvcache.attention_ragged %q, %k, %k, %o, %out lse(%lse) {scale = 0.125 : f32}
      : tensor<?x32x128xf16>, !k, !k, tensor<3xi32>, tensor<?x32x128xf16>, tensor<?x32xf32> -> tensor<?x32x128xf16>, tensor<?x32xf32>
  return %r#0, %r#1 : tensor<?x32x128xf16>, tensor<?x32xf32>
}

// A result that is not an argument stays; its call uses the argument for the
// dropped one.
// CHECK-LABEL: func.func @gather_twice(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x8x128xf16>, %[[N:[^:]*]]: index) -> memref<?x8x128xf16> {
// CHECK: %[[FRESH:.*]] = memref.alloc(%[[N]])
// CHECK: return %[[FRESH]] : memref<?x8x128xf16>
func.func @gather_twice(%k: !k, %o: tensor<3xi32>, %out: tensor<?x8x128xf16>, %n: index)
    -> (tensor<?x8x128xf16>, tensor<?x8x128xf16>) {
  %g = kvcache.gather_ragged %k, %out, %o : !k, tensor<?x8x128xf16>, tensor<3xi32> -> tensor<?x8x128xf16>
  %e = tensor.empty(%n) : tensor<?x8x128xf16>
  %h = kvcache.gather_ragged %k, %e, %o : !k, tensor<?x8x128xf16>, tensor<3xi32> -> tensor<?x8x128xf16>
  return %g, %h : tensor<?x8x128xf16>, tensor<?x8x128xf16>
}

// CHECK-LABEL: func.func @caller(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x8x128xf16>, %[[N:[^:]*]]: index) -> memref<?x8x128xf16> {
// CHECK: %[[H:.*]] = call @gather_twice({{.*}}, %[[OUT]], %[[N]]) : ({{.*}}) -> memref<?x8x128xf16>
// CHECK: return %[[H]] : memref<?x8x128xf16>
func.func @caller(%k: !k, %o: tensor<3xi32>, %out: tensor<?x8x128xf16>, %n: index)
    -> (tensor<?x8x128xf16>, tensor<?x8x128xf16>) {
  %g, %h = func.call @gather_twice(%k, %o, %out, %n)
      : (!k, tensor<3xi32>, tensor<?x8x128xf16>, index) -> (tensor<?x8x128xf16>, tensor<?x8x128xf16>)
  return %g, %h : tensor<?x8x128xf16>, tensor<?x8x128xf16>
}

// -----

// A module without tensors is left as it is: a memref function keeps the
// result that returns its argument.
// CHECK-LABEL: func.func @memref_form(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x8x128xf16>) -> memref<?x8x128xf16> {
// CHECK: return %[[OUT]] : memref<?x8x128xf16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @memref_form(%k: !k, %o: memref<3xi32>, %out: memref<?x8x128xf16>) -> memref<?x8x128xf16> {
  kvcache.gather_ragged %k, %out, %o : !k, memref<?x8x128xf16>, memref<3xi32>
  return %out : memref<?x8x128xf16>
}
