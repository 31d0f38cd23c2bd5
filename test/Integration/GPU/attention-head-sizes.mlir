// Attention at the head sizes of common models, 64 to 256 f16 with GQA 4:
// every kernel assembles for sm_90 and sm_80 with no spills. Sizes with few
// factors of two (80, 96, 112, 160, 192) give each lane a slice of 5 to 7
// elements (16 or 32 lanes per key), not 24 to 56 elements, which spilled
// up to 2.7 KB per thread.
// REQUIRES: ptxas
// RUN: kvcache-compile %s -o %t.sm_90.ptx
// RUN: %ptxas -arch=sm_90 -v %t.sm_90.ptx -o %t.sm_90.cubin 2>&1 | FileCheck %s
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.ptx -o %t.sm_80.cubin 2>&1 | FileCheck %s

// 8 attention kernels, 3 query-tile kernels (f16/bf16 at head sizes 64,
// 128 and 256) and 8 merge kernels.
// CHECK-COUNT-19: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill

!c64 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>
func.func @d64(%q: memref<?x32x64xf16>, %k: !c64, %v: !c64, %rows: memref<?xi32>, %out: memref<?x32x64xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.1 : f32} : memref<?x32x64xf16>, !c64, !c64, memref<?xi32>, memref<?x32x64xf16>, memref<?xf32>
  return
}
!c80 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 80, page_size = 16>
func.func @d80(%q: memref<?x32x80xf16>, %k: !c80, %v: !c80, %rows: memref<?xi32>, %out: memref<?x32x80xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.1 : f32} : memref<?x32x80xf16>, !c80, !c80, memref<?xi32>, memref<?x32x80xf16>, memref<?xf32>
  return
}
!c96 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>
func.func @d96(%q: memref<?x32x96xf16>, %k: !c96, %v: !c96, %rows: memref<?xi32>, %out: memref<?x32x96xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.1 : f32} : memref<?x32x96xf16>, !c96, !c96, memref<?xi32>, memref<?x32x96xf16>, memref<?xf32>
  return
}
!c112 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 112, page_size = 16>
func.func @d112(%q: memref<?x32x112xf16>, %k: !c112, %v: !c112, %rows: memref<?xi32>, %out: memref<?x32x112xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.1 : f32} : memref<?x32x112xf16>, !c112, !c112, memref<?xi32>, memref<?x32x112xf16>, memref<?xf32>
  return
}
!c128 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @d128(%q: memref<?x32x128xf16>, %k: !c128, %v: !c128, %rows: memref<?xi32>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.1 : f32} : memref<?x32x128xf16>, !c128, !c128, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}
!c160 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 160, page_size = 16>
func.func @d160(%q: memref<?x32x160xf16>, %k: !c160, %v: !c160, %rows: memref<?xi32>, %out: memref<?x32x160xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.1 : f32} : memref<?x32x160xf16>, !c160, !c160, memref<?xi32>, memref<?x32x160xf16>, memref<?xf32>
  return
}
!c192 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 192, page_size = 16>
func.func @d192(%q: memref<?x32x192xf16>, %k: !c192, %v: !c192, %rows: memref<?xi32>, %out: memref<?x32x192xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.1 : f32} : memref<?x32x192xf16>, !c192, !c192, memref<?xi32>, memref<?x32x192xf16>, memref<?xf32>
  return
}
!c256 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 256, page_size = 16>
func.func @d256(%q: memref<?x32x256xf16>, %k: !c256, %v: !c256, %rows: memref<?xi32>, %out: memref<?x32x256xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.1 : f32} : memref<?x32x256xf16>, !c256, !c256, memref<?xi32>, memref<?x32x256xf16>, memref<?xf32>
  return
}
