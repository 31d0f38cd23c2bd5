// RUN: kvcache-opt %s -convert-kvcache-to-gpu | FileCheck %s

// An existing gpu.module @kvcache_kernels (the user's own kernels, or an
// earlier run of the pass) receives the new kernels; a kernel name already
// taken in it gets the suffix _0, and the launch calls the renamed kernel.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK: gpu.module @kvcache_kernels {
// CHECK-NEXT: gpu.func @store_store_ragged() kernel {
// CHECK-NEXT: gpu.return
// CHECK-NEXT: }
// CHECK-NEXT: gpu.func @store_store_ragged_0(%{{.*}}: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %{{.*}}: memref<?x8x128xf16>, %{{.*}}: memref<?xi32>) kernel
// CHECK-LABEL: func.func @store
// CHECK: gpu.launch_func @kvcache_kernels::@store_store_ragged_0 blocks
// CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  gpu.module @kvcache_kernels {
    gpu.func @store_store_ragged() kernel {
      gpu.return
    }
  }
  func.func @store(%cache: !cache, %new: memref<?x8x128xf16>, %offsets: memref<?xi32>) {
    kvcache.store_ragged %cache, %new, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
    return
  }
}
