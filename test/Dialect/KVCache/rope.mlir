// RUN: kvcache-opt %s | kvcache-opt | FileCheck %s
// RUN: kvcache-opt %s --mlir-print-op-generic | kvcache-opt | FileCheck %s

// rope_ragged (docs/Contract.md 3.3): the optional positions clause after
// q_out, its type last; in place (q_out = q); an MLA cache rotates the last
// rotary_dims elements of its latent row; a cache with a per-layer scale
// re-encodes.

!c = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @in_place(
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: memref<?x32x128xbf16>
// CHECK: kvcache.rope_ragged %[[Q]], %{{.*}}, %{{.*}}, %{{.*}}, %[[Q]] {rotary_dims = 128 : i64, style = "interleaved"} : memref<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, memref<?x128xf32>, memref<?x32x128xbf16>{{$}}
func.func @in_place(%q: memref<?x32x128xbf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x128xf32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 128 : i64, style = "interleaved"}
      : memref<?x32x128xbf16>, !c, memref<?xi32>, memref<?x128xf32>, memref<?x32x128xbf16>
  return
}

// CHECK-LABEL: func.func @positions(
// CHECK: kvcache.rope_ragged %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} positions(%{{.*}}) {rotary_dims = 32 : i64, style = "half"} : memref<4x32x128xbf16>, {{.*}}, memref<3xi32>, memref<4096x32xf32>, memref<4x32x128xbf16>, memref<4xi32>
func.func @positions(%q: memref<4x32x128xbf16>, %k: !c, %o: memref<3xi32>, %cs: memref<4096x32xf32>,
                     %out: memref<4x32x128xbf16>, %p: memref<4xi32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %out positions(%p) {rotary_dims = 32 : i64, style = "half"}
      : memref<4x32x128xbf16>, !c, memref<3xi32>, memref<4096x32xf32>, memref<4x32x128xbf16>, memref<4xi32>
  return
}

// CHECK-LABEL: func.func @mla(
// CHECK: kvcache.rope_ragged {{.*}} {rotary_dims = 64 : i64, style = "interleaved"} : memref<?x1x576xbf16>, !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
func.func @mla(%q: memref<?x1x576xbf16>, %k: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
               %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "interleaved"}
      : memref<?x1x576xbf16>, !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?xi32>, memref<?x64xf32>, memref<?x1x576xbf16>
  return
}

// CHECK-LABEL: func.func @tensor_scale(
// CHECK: kvcache.rope_ragged {{.*}} : memref<?x16x64xf32>, !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 16, scales = tensor>
func.func @tensor_scale(%q: memref<?x16x64xf32>, %k: !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 16, scales = tensor>,
                        %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x16x64xf32>, !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 16, scales = tensor>, memref<?xi32>, memref<?x64xf32>, memref<?x16x64xf32>
  return
}
