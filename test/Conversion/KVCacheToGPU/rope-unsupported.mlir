// RUN: kvcache-opt %s -convert-kvcache-to-gpu -verify-diagnostics
// RUN: not kvcache-opt %s -kvcache-to-emulated-gpu 2>&1 | FileCheck %s

// rope_ragged has no GPU kernel yet: the GPU lowering and the pipelines
// built on it report it (docs/Status.md), without crashing.

// CHECK: error: 'kvcache.rope_ragged' op is not supported on the GPU pipelines yet
!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 16, page_size = 16>
func.func @rope(%q: memref<?x4x16xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x8xf32>) {
  // expected-error @below {{'kvcache.rope_ragged' op is not supported on the GPU pipelines yet (convert-kvcache-to-gpu has no kernel for it); it runs on the CPU (kvcache-to-cpu)}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 8 : i64, style = "half"}
      : memref<?x4x16xf16>, !c, memref<?xi32>, memref<?x8xf32>, memref<?x4x16xf16>
  return
}
