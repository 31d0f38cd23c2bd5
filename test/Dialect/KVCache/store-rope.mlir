// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s --mlir-print-op-generic | kvcache-opt | FileCheck %s

// store_ragged's rope clause (docs/Contract.md 3.3): rope(%cos_sin) and the
// optional positions(%positions) after the offsets, their types last, the
// attributes rotary_dims and style; on a float cache, a cache with
// token_head scales, and in the tensor form.

!c = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>
!q = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>

// CHECK-LABEL: func.func @float_cache(
// CHECK: kvcache.store_ragged %{{.*}}, %{{.*}}, %{{.*}} rope(%{{.*}}) {rotary_dims = 128 : i64, style = "interleaved"} : !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xbf16>, memref<?xi32>, memref<?x128xf32>{{$}}
func.func @float_cache(%k: !c, %new: memref<?x8x128xbf16>, %o: memref<?xi32>, %cs: memref<?x128xf32>) {
  kvcache.store_ragged %k, %new, %o rope(%cs) {rotary_dims = 128 : i64, style = "interleaved"}
      : !c, memref<?x8x128xbf16>, memref<?xi32>, memref<?x128xf32>
  return
}

// CHECK-LABEL: func.func @token_head_positions(
// CHECK: kvcache.store_ragged %{{.*}}, %{{.*}}, %{{.*}} rope(%{{.*}}) positions(%{{.*}}) {rotary_dims = 64 : i64, style = "half"} : !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>, memref<?x8x128xf16>, memref<?xi32>, memref<4096x64xf32>, memref<?xi32>{{$}}
func.func @token_head_positions(%k: !q, %new: memref<?x8x128xf16>, %o: memref<?xi32>, %cs: memref<4096x64xf32>, %p: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %o rope(%cs) positions(%p) {rotary_dims = 64 : i64, style = "half"}
      : !q, memref<?x8x128xf16>, memref<?xi32>, memref<4096x64xf32>, memref<?xi32>
  return
}

// CHECK-LABEL: func.func @tensor_form(
// CHECK: kvcache.store_ragged %{{.*}}, %{{.*}}, %{{.*}} rope(%{{.*}}) positions(%{{.*}}) {rotary_dims = 32 : i64, style = "half"} : {{.*}}, tensor<?x8x128xf16>, tensor<?xi32>, tensor<?x32xf32>, tensor<?xi32>{{$}}
func.func @tensor_form(%k: !q, %new: tensor<?x8x128xf16>, %o: tensor<?xi32>, %cs: tensor<?x32xf32>, %p: tensor<?xi32>) {
  kvcache.store_ragged %k, %new, %o rope(%cs) positions(%p) {rotary_dims = 32 : i64, style = "half"}
      : !q, tensor<?x8x128xf16>, tensor<?xi32>, tensor<?x32xf32>, tensor<?xi32>
  return
}
