// RUN: kvcache-opt %s -verify-diagnostics -convert-kvcache-to-gpu

// Kernels go into gpu.module @kvcache_kernels: another symbol of that name
// is an error naming the op, not a crash or a kernel somewhere else.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @kvcache_kernels() {
  return
}

func.func @store(%cache: !cache, %new: memref<?x8x128xf16>, %offsets: memref<?xi32>) {
  // expected-error @+1 {{'kvcache.store_ragged' op cannot be lowered to a GPU kernel: symbol @kvcache_kernels is taken by something other than a gpu.module; rename it}}
  kvcache.store_ragged %cache, %new, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}
