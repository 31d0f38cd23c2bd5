// mla_attention_ragged's kernels assemble for sm_90 and sm_80: DeepSeek's
// latent rows (576 = 512 + 64, bf16, 16, 32, 64 and 128 query heads over
// one latent head, with a workspace: the attention and the merge kernel),
// an fp8 latent cache with token_head scales, and an f16 cache whose
// lanes' slices straddle v_head_size; none spills (at 16-128 heads the
// tensor-core kernel, q's dims split over 4 warps per 16-head tile, one
// block per SM, up to 32 heads per block: 64 heads in two blocks, 128 in
// four; the fp8 cache the CUDA-core kernel, a 576-element head in slices
// of 18 elements, 32 lanes per key).
// REQUIRES: ptxas
// RUN: kvcache-compile %s -o %t.sm_90.ptx
// RUN: %ptxas -arch=sm_90 -v %t.sm_90.ptx -o %t.sm_90.cubin 2>&1 | FileCheck %s
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.ptx -o %t.sm_80.cubin 2>&1 | FileCheck %s

// 6 attention kernels and 4 merge kernels.
// CHECK-COUNT-10: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill

!m = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
func.func @deepseek16(%q: memref<?x16x576xbf16>, %k: !m, %rows: memref<?xi32>, %out: memref<?x16x512xbf16>, %ws: memref<?xf32>) {
  kvcache.mla_attention_ragged %q, %k, %rows, %out, %ws {scale = 0.0721688 : f32, v_head_size = 512 : i64} : memref<?x16x576xbf16>, !m, memref<?xi32>, memref<?x16x512xbf16>, memref<?xf32>
  return
}

func.func @deepseek32(%q: memref<?x32x576xbf16>, %k: !m, %rows: memref<?xi32>, %out: memref<?x32x512xbf16>, %ws: memref<?xf32>) {
  kvcache.mla_attention_ragged %q, %k, %rows, %out, %ws {scale = 0.0721688 : f32, v_head_size = 512 : i64} : memref<?x32x576xbf16>, !m, memref<?xi32>, memref<?x32x512xbf16>, memref<?xf32>
  return
}

func.func @deepseek64(%q: memref<?x64x576xbf16>, %k: !m, %rows: memref<?xi32>, %out: memref<?x64x512xbf16>, %ws: memref<?xf32>) {
  kvcache.mla_attention_ragged %q, %k, %rows, %out, %ws {scale = 0.0721688 : f32, v_head_size = 512 : i64} : memref<?x64x576xbf16>, !m, memref<?xi32>, memref<?x64x512xbf16>, memref<?xf32>
  return
}

func.func @deepseek128(%q: memref<?x128x576xbf16>, %k: !m, %rows: memref<?xi32>, %out: memref<?x128x512xbf16>, %ws: memref<?xf32>) {
  kvcache.mla_attention_ragged %q, %k, %rows, %out, %ws {scale = 0.0721688 : f32, v_head_size = 512 : i64} : memref<?x128x576xbf16>, !m, memref<?xi32>, memref<?x128x512xbf16>, memref<?xf32>
  return
}

!f8 = !kvcache.paged_cache<f8E4M3FN, num_heads = 1, head_size = 576, page_size = 64, mla = true, scales = token_head>
func.func @fp8(%q: memref<?x16x576xbf16>, %k: !f8, %rows: memref<?xi32>, %out: memref<?x16x512xbf16>) {
  kvcache.mla_attention_ragged %q, %k, %rows, %out {scale = 0.0721688 : f32, v_head_size = 512 : i64} : memref<?x16x576xbf16>, !f8, memref<?xi32>, memref<?x16x512xbf16>
  return
}

!h = !kvcache.paged_cache<f16, num_heads = 1, head_size = 48, page_size = 16, mla = true>
func.func @straddling(%q: memref<?x64x48xf16>, %k: !h, %rows: memref<?xi32>, %out: memref<?x64x40xf16>, %lse: memref<?x64xf32>) {
  kvcache.mla_attention_ragged %q, %k, %rows, %out lse(%lse) {scale = 0.125 : f32, v_head_size = 40 : i64, softcap = 3.0 : f32} : memref<?x64x48xf16>, !h, memref<?xi32>, memref<?x64x40xf16>, memref<?x64xf32>
  return
}
