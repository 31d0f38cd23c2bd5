// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: FileCheck %s --check-prefix=SM80 --input-file=%t.sm_80.ptx

// Kernel ops on quantized caches on the GPU (quantized-kernels-ptxas.test
// assembles them). gather_ragged into float rows: each lane reads the codes
// of a 16-byte chunk of rows, its scale, and writes the dequantized chunk.
// On sm_90 (sm_89 and newer) fp8 codes are converted by the chip's cvt
// instructions, two at a time; on older chips (SM80) by integer operations
// and one multiply.

// f16 rows, 8 per chunk: 8 codes (one 64-bit load), one scale per token
// and head; 4 cvt.rn.f16x2.e4m3x2 decode them.
// CHECK-LABEL: .entry gather_fp8_token_head_gather_ragged(
// CHECK: ld.global.v4.b16
// CHECK-COUNT-4: cvt.rn.f16x2.e4m3x2
// CHECK: ld.global.b32
// CHECK: cvt.rn.f16x2.f32
// CHECK: st.global.v4.b32
// SM80-LABEL: .entry gather_fp8_token_head_gather_ragged(
// SM80-NOT: e4m3
// SM80: ld.global.v2.b32
// SM80: ld.global.b32
// SM80: cvt.rn.f16x2.f32
// SM80: st.global.v4.b32
// f32 rows, 4 per chunk, block<32> scales: 4 codes (one 32-bit load), the
// i8 codes converted exactly.
// CHECK-LABEL: .entry gather_i8_block_gather_ragged(
// CHECK: ld.global.b32
// CHECK: cvt.rn.f32.s16
// CHECK: st.global.v4.b32
// store_ragged of bf16 rows into a token_head cache (head 64: 8 chunks
// of 8): each lane widens its chunk, the 8 lanes of a head take the amax
// with 3 butterfly shuffles, divide (div.rn.f32: correctly rounded) and
// encode: 4 cvt.rn.satfinite.e4m3x2.f32 and a NaN test per value on sm_90,
// integer arithmetic on sm_80; the head's first lane writes the scale.
// CHECK-LABEL: .entry store_bf16_token_head_store_ragged(
// CHECK: ld.global.v4.b32
// CHECK-COUNT-3: shfl.sync.bfly.b32
// CHECK: div.rn.f32
// CHECK-COUNT-4: cvt.rn.satfinite.e4m3x2.f32
// CHECK-COUNT-8: setp.nan.f32
// CHECK: st.global.v2.b32
// CHECK: st.global.b32
// SM80-LABEL: .entry store_bf16_token_head_store_ragged(
// SM80-NOT: e4m3
// SM80: ld.global.v4.b32
// SM80-COUNT-3: shfl.sync.bfly.b32
// SM80: div.rn.f32
// SM80: st.global.v2.b32
// SM80: st.global.b32
// SM80-NOT: e4m3
// SM80-LABEL: .entry attention_i8_block_attention_ragged(
// attention_ragged over an i8 block<32> cache with f16 q/out (head 128,
// GQA 4) runs on tensor cores: the codes stream into shared memory by
// cp.async (16 bytes a chunk), each thread converts its chunks (i8 to f32,
// times the chunk's scale, to f16) into the K/V tile, then ldmatrix and
// mma.sync as for an f16 cache.
// CHECK-LABEL: .entry attention_i8_block_attention_ragged(
// CHECK: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16
// CHECK: cvt.rn.f32.s16
// CHECK: cvt.rn.f16x2.f32
// CHECK: st.shared.v4.b32
// CHECK: bar.sync
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK: st.global
// An fp8 token_head cache, bf16 q: the codes are decoded by
// cvt.rn.f16x2.e4m3x2 (sm_90; integer operations on sm_80, still on
// tensor cores), the bf16 mma.
// CHECK-LABEL: .entry attention_fp8_token_head_attention_ragged(
// CHECK: cp.async.cg.shared.global
// CHECK: cvt.rn.f16x2.e4m3x2
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// SM80-LABEL: .entry attention_fp8_token_head_attention_ragged(
// SM80-NOT: e4m3
// SM80: cp.async.cg.shared.global
// SM80: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// SM80-NOT: e4m3
// With f32 q (or scale groups under 16 elements) the CUDA-core kernel:
// 8 codes per slice (one 64-bit load), one scale per slice, straight from
// the cache.
// CHECK-LABEL: .entry attention_fp8_f32_attention_ragged(
// CHECK-NOT: cp.async
// CHECK-NOT: mma.sync
// CHECK: ld.global.v4.b16
// CHECK: cvt.rn.f16x2.e4m3x2
// CHECK: shfl.sync.bfly
// CHECK: st.global
// copy_pages of a block<32> collection: the codes in 16-byte chunks, then
// the page's scales one f32 per thread.
// CHECK-LABEL: .entry copy_with_scales_copy_pages(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK: ld.global.b32
// CHECK: st.global.b32
// CHECK-NOT: .entry

!t = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = token_head>
func.func @gather_fp8_token_head(%k: !t, %rows: memref<?x8x128xf16>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %rows, %offsets : !t, memref<?x8x128xf16>, memref<?xi32>
  return
}

!b = !kvcache.paged_cache<i8, num_heads = 2, head_size = 64, page_size = 16, scales = block<32>>
func.func @gather_i8_block(%k: !b, %rows: memref<?x2x64xf32>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %rows, %offsets : !b, memref<?x2x64xf32>, memref<?xi32>
  return
}

!s = !kvcache.paged_cache<f8E4M3FN, num_heads = 4, head_size = 64, page_size = 16, scales = token_head>
func.func @store_bf16_token_head(%k: !s, %rows: memref<?x4x64xbf16>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %rows, %offsets : !s, memref<?x4x64xbf16>, memref<?xi32>
  return
}

!a = !kvcache.paged_cache<i8, num_heads = 2, head_size = 128, page_size = 16, scales = block<32>>
func.func @attention_i8_block(%q: memref<?x8x128xf16>, %k: !a, %v: !a, %offsets: memref<?xi32>, %out: memref<?x8x128xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.0883883 : f32}
      : memref<?x8x128xf16>, !a, !a, memref<?xi32>, memref<?x8x128xf16>
  return
}

!ft = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 128, page_size = 16, scales = token_head>
func.func @attention_fp8_token_head(%q: memref<?x8x128xbf16>, %k: !ft, %v: !ft, %offsets: memref<?xi32>, %out: memref<?x8x128xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.0883883 : f32}
      : memref<?x8x128xbf16>, !ft, !ft, memref<?xi32>, memref<?x8x128xbf16>
  return
}

func.func @attention_fp8_f32(%q: memref<?x8x128xf32>, %k: !ft, %v: !ft, %offsets: memref<?xi32>, %out: memref<?x8x128xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.0883883 : f32}
      : memref<?x8x128xf32>, !ft, !ft, memref<?xi32>, memref<?x8x128xf32>
  return
}

!c = !kvcache.paged_collection<f8E5M2, num_heads = 2, head_size = 64, page_size = 16, scales = block<32>>
func.func @copy_with_scales(%c: !c, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %c, %pairs : !c, memref<?x2xi32>
  return
}
