// RUN: kvcache-opt %s -split-input-file -verify-diagnostics -convert-kvcache-to-gpu

// rope_ragged on the GPU indexes q's rows with products of small constants:
// a q row of more than 2^31 - 1 elements is an error, not an overflow (a
// fuzzer input: 2^62 heads).

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 17, page_size = 17>
func.func @huge(%q: memref<?x4611686018427387904x17xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x8xf32>) {
  // expected-error @+1 {{'kvcache.rope_ragged' op cannot be lowered to a GPU kernel: q has 4611686018427387904 heads of 17 elements, over 2^31 - 1 elements per row}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 8 : i64, style = "interleaved"}
      : memref<?x4611686018427387904x17xf16>, !c, memref<?xi32>, memref<?x8xf32>, memref<?x4611686018427387904x17xf16>
  return
}

// -----

// 2^24 heads of 128: 2^31 elements, one over the limit.
!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 128, page_size = 16>
func.func @one_over(%q: memref<?x16777216x128xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  // expected-error @+1 {{q has 16777216 heads of 128 elements, over 2^31 - 1 elements per row}}
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x16777216x128xf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x16777216x128xf16>
  return
}
