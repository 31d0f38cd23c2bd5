// RUN: kvcache-opt %s -convert-kvcache-to-scf -split-input-file -verify-diagnostics
// RUN: kvcache-opt %s -convert-kvcache-to-gpu -split-input-file -verify-diagnostics

// rope_ragged reads q, q_out and cos_sin in vectors on the CPU and the GPU:
// a strided innermost dimension is an error of both lowerings.

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 16, page_size = 16>

func.func @strided_q(%q: memref<?x4x16xf16, strided<[128, 32, 2]>>, %k: !c, %o: memref<?xi32>, %cs: memref<?x8xf32>, %out: memref<?x4x16xf16, strided<[128, 32, 2]>>) {
  // expected-error @+1 {{cannot be lowered: 'q', 'q_out' and 'cos_sin' need a unit innermost stride (copy them into contiguous buffers)}}
  kvcache.rope_ragged %q, %k, %o, %cs, %out {rotary_dims = 8 : i64, style = "interleaved"}
    : memref<?x4x16xf16, strided<[128, 32, 2]>>, !c, memref<?xi32>, memref<?x8xf32>, memref<?x4x16xf16, strided<[128, 32, 2]>>
  return
}
