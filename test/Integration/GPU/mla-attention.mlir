// mla_attention_ragged's kernels assemble for sm_90 and sm_80: DeepSeek's
// latent rows (576 = 512 + 64, bf16, 16, 32, 64 and 128 query heads over
// one latent head, with a workspace: the attention and the merge kernel;
// 64 heads with lse and a window, and with a soft cap, a sink and lse,
// without one), an fp8 latent cache with token_head scales, and an f16
// cache whose lanes' slices straddle v_head_size; none spills (at 16-128
// heads the tensor-core kernel, q's dims split over the warps of each
// 16-head tile, one block per SM: 16 and 32 heads in one block of 4 warps
// per tile, 64 in one block of four tiles of 2 warps (255 registers), 128
// in two; with a soft cap, ALiBi or a sink, and on sm_80 with any clause
// but noncausal, blocks of 32 heads; the fp8 cache the CUDA-core kernel, a
// 576-element head in slices of 18 elements, 32 lanes per key).
// REQUIRES: ptxas
// RUN: kvcache-compile %s -o %t.sm_90.ptx
// RUN: %ptxas -arch=sm_90 -v %t.sm_90.ptx -o %t.sm_90.cubin 2>&1 | FileCheck %s
// RUN: %ptxas -arch=sm_90 -v %t.sm_90.ptx -o %t.sm_90.cubin 2>&1 | FileCheck %s --check-prefix=WIDE
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.ptx -o %t.sm_80.cubin 2>&1 | FileCheck %s

// 8 attention kernels and 4 merge kernels.
// CHECK-COUNT-12: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill

// The 64- and 128-head kernels (blocks of 64 heads: 8 warps' partial scores
// next to two stages of 16 latent rows, in static shared memory) within
// ptxas's 255 registers; the block of 32 heads of the soft-capped one.
// WIDE-LABEL: Compiling entry function 'capped64_mla_attention_ragged'
// WIDE: 0 bytes spill stores
// WIDE-NEXT: Used {{[0-9]+}} registers, used 1 barriers, 45568 bytes smem
// WIDE-LABEL: Compiling entry function 'window64_mla_attention_ragged'
// WIDE: 0 bytes spill stores
// WIDE-NEXT: Used {{[0-9]+}} registers, used 1 barriers, 45568 bytes smem
// WIDE-LABEL: Compiling entry function 'deepseek128_mla_attention_ragged'
// WIDE: 0 bytes spill stores
// WIDE-NEXT: Used {{1[0-9][0-9]|2[0-4][0-9]|25[0-5]}} registers, used 1 barriers, 45568 bytes smem
// WIDE-LABEL: Compiling entry function 'deepseek64_mla_attention_ragged'
// WIDE: 0 bytes spill stores
// WIDE-NEXT: Used {{1[0-9][0-9]|2[0-4][0-9]|25[0-5]}} registers, used 1 barriers, 45568 bytes smem

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

func.func @window64(%q: memref<?x64x576xbf16>, %k: !m, %rows: memref<?xi32>, %out: memref<?x64x512xbf16>, %lse: memref<?x64xf32>) {
  kvcache.mla_attention_ragged %q, %k, %rows, %out lse(%lse) {scale = 0.0721688 : f32, v_head_size = 512 : i64, window = 128 : i64} : memref<?x64x576xbf16>, !m, memref<?xi32>, memref<?x64x512xbf16>, memref<?x64xf32>
  return
}

func.func @capped64(%q: memref<?x64x576xbf16>, %k: !m, %rows: memref<?xi32>, %out: memref<?x64x512xbf16>, %sinks: memref<64xf32>, %lse: memref<?x64xf32>) {
  kvcache.mla_attention_ragged %q, %k, %rows, %out sinks(%sinks) lse(%lse) {scale = 0.0721688 : f32, v_head_size = 512 : i64, softcap = 30.0 : f32} : memref<?x64x576xbf16>, !m, memref<?xi32>, memref<?x64x512xbf16>, memref<64xf32>, memref<?x64xf32>
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
