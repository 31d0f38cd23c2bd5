// Attention kernels for query groups that take several passes over the keys
// (64 heads of 128, 12 heads of 64 in passes of 8 with masked slots) and for
// heads of one element (128 keys per step, partial states merged in loops)
// assemble for sm_90 and sm_80 with no spills, and compile fast.
// REQUIRES: ptxas
// RUN: ulimit -t 30; kvcache-compile %s -o %t.sm_90.ptx
// RUN: %ptxas -arch=sm_90 -v %t.sm_90.ptx -o %t.sm_90.cubin 2>&1 | FileCheck %s
// RUN: ulimit -t 30; kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.ptx -o %t.sm_80.cubin 2>&1 | FileCheck %s

// Seven kernels: three attention kernels, two query-tile kernels, two merge
// kernels.
// CHECK-COUNT-7: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill

!c128 = !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>
!c1 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>
!c64 = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>
func.func @mqa64(%q: memref<?x64x128xf16>, %k: !c128, %v: !c128, %rows: memref<?xi32>, %out: memref<?x64x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x64x128xf16>, !c128, !c128, memref<?xi32>, memref<?x64x128xf16>, memref<?xf32>
  return
}
func.func @group12(%q: memref<?x24x64xbf16>, %k: !c64, %v: !c64, %rows: memref<?xi32>, %out: memref<?x24x64xbf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.125 : f32}
    : memref<?x24x64xbf16>, !c64, !c64, memref<?xi32>, memref<?x24x64xbf16>, memref<?xf32>
  return
}
func.func @tiny_head(%q: memref<?x256x1xf16>, %k: !c1, %v: !c1, %rows: memref<?xi32>, %out: memref<?x256x1xf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 1.0 : f32}
    : memref<?x256x1xf16>, !c1, !c1, memref<?xi32>, memref<?x256x1xf16>
  return
}
