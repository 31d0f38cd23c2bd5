// Tensor-core attention kernels (ldmatrix + mma.sync m16n8k16, f32
// accumulation) for f16 and bf16, head sizes 64, 128 and 256, groups of 1 to
// 128 query heads, paged and continuous caches: they assemble for sm_90 and
// sm_80 with no spills and call no libdevice function. The PTX twins
// (test/python/test_ptx_test_twins.py) run every function of this file on
// the GPU emulator against the numpy reference.
// REQUIRES: ptxas
// RUN: kvcache-compile %s -o %t.sm_90.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.sm_90.ptx
// RUN: %ptxas -arch=sm_90 -v %t.sm_90.ptx -o %t.sm_90.cubin 2>&1 | FileCheck %s
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.ptx -o %t.sm_80.cubin 2>&1 | FileCheck %s

// PTX-NOT: __nv_
// PTX-LABEL: .visible .entry gqa4_attention_ragged(
// PTX: cp.async.cg.shared.global
// PTX: cp.async.wait_group 1;
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-LABEL: .visible .entry mqa64_attention_ragged(
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-NOT: __nv_

// Eleven kernels (five attention kernels, four query-tile kernels: all but
// the group of 128, whose tile is one row; two merge kernels).
// CHECK-COUNT-11: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill

!g4 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!mqa = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 128, page_size = 1>
!d64 = !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 128>
!d256 = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 256, page_size = 16>
!cont = !kvcache.continuous_cache<f16, num_heads = 4, head_size = 64>
func.func @gqa4(%q: memref<?x32x128xf16>, %k: !g4, %v: !g4, %rows: memref<?xi32>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x32x128xf16>, !g4, !g4, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}
func.func @mqa64(%q: memref<?x64x128xbf16>, %k: !mqa, %v: !mqa, %rows: memref<?xi32>, %out: memref<?x64x128xbf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x64x128xbf16>, !mqa, !mqa, memref<?xi32>, memref<?x64x128xbf16>, memref<?xf32>
  return
}
func.func @mqa128(%q: memref<?x128x64xf16>, %k: !d64, %v: !d64, %rows: memref<?xi32>, %out: memref<?x128x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.125 : f32}
    : memref<?x128x64xf16>, !d64, !d64, memref<?xi32>, memref<?x128x64xf16>
  return
}
func.func @group12_d256(%q: memref<?x24x256xbf16>, %k: !d256, %v: !d256, %rows: memref<?xi32>, %out: memref<?x24x256xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0625 : f32}
    : memref<?x24x256xbf16>, !d256, !d256, memref<?xi32>, memref<?x24x256xbf16>
  return
}
func.func @continuous_gqa1(%q: memref<?x4x64xf16>, %k: !cont, %v: !cont, %rows: memref<?xi32>, %out: memref<?x4x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.125 : f32}
    : memref<?x4x64xf16>, !cont, !cont, memref<?xi32>, memref<?x4x64xf16>
  return
}
