// Found by kvcache-fuzz (a time-out): head sizes with no factor of two (129,
// 575) gave GPU attention one lane per key holding the whole head, 8 heads
// per pass: key loops of thousands of operations over 129- and 575-element
// vectors, and kvcache-to-ptx took 7.5 s here (over 10 s under the
// sanitizers). Wide slices now take fewer heads per pass (about 64 floats
// of q and accumulators per thread); the pipeline must end well inside the
// CPU time limit.
// RUN: ulimit -t 30; kvcache-opt %s -kvcache-to-ptx | FileCheck %s
// CHECK: gpu.binary @kvcache_kernels

!c128 = !kvcache.paged_cache<f32, num_heads = 1, head_size = 129, page_size = 5>
!c1 = !kvcache.paged_cache<f32, num_heads = 8, head_size = 1, page_size = 5>
!c64 = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 575, page_size = 1>
func.func @mqa64(%q: memref<5x575x129xf32>, %k: !c128, %v: !c128, %rows: memref<5xi32>, %out: memref<5x575x129xf32>, %ws: memref<5xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<5x575x129xf32>, !c128, !c128, memref<5xi32>, memref<5x575x129xf32>, memref<5xf32>
  return
}
func.func @group12(%q: memref<5x256x575xbf16>, %k: !c64, %v: !c64, %rows: memref<5xi32>, %out: memref<5x256x575xbf16>, %ws: memref<5xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.3 : f32}
    : memref<5x256x575xbf16>, !c64, !c64, memref<5xi32>, memref<5x256x575xbf16>, memref<5xf32>
  return
}
func.func @tiny_head(%q: memref<5x256x1xf32>, %k: !c1, %v: !c1, %rows: memref<5xi32>, %out: memref<5x256x1xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 1.0 : f32}
    : memref<5x256x1xf32>, !c1, !c1, memref<5xi32>, memref<5x256x1xf32>
  return
}
