// No 64-bit integer division or remainder in the attention kernels (main and
// merge, with and without a workspace) for sm_90 and sm_80, over head sizes
// 1 to 256, MHA, GQA and MQA groups and several page sizes: the per-row split
// bounds divide in i32 (one div.u32), every other division is by a constant.
// A div.u64 or rem.u64 is a long software sequence on the GPU.
// RUN: kvcache-compile %s -o %t.sm_90.ptx
// RUN: FileCheck %s < %t.sm_90.ptx
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: FileCheck %s < %t.sm_80.ptx
// attention-no-div64-ptxas.test assembles both.

// CHECK-LABEL: .visible .entry gqa4_d64_attention_ragged(
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK: div.u32
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK-LABEL: .visible .entry gqa4_d64_attention_merge(
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK-LABEL: .visible .entry gqa8_d128_attention_ragged(
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK: div.u32
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK-LABEL: .visible .entry mha_d96_attention_ragged(
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK: div.u32
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK-LABEL: .visible .entry mha_d96_attention_merge(
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK-LABEL: .visible .entry gqa12_d80_attention_ragged(
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK: div.u32
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK-LABEL: .visible .entry gqa12_d80_attention_merge(
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK-LABEL: .visible .entry mqa2_d256_attention_ragged(
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK: div.u32
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK-LABEL: .visible .entry tiny_d1_attention_ragged(
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK: div.u32
// CHECK-NOT: {{(div|rem)\.[us]64}}
// CHECK-LABEL: .visible .entry tiny_d1_attention_merge(
// CHECK-NOT: {{(div|rem)\.[us]64}}

// The functions with %ws have a workspace (context splits and a merge
// kernel); the others run one split per row.
!c64 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 64, page_size = 16>
func.func @gqa4_d64(%q: memref<?x32x64xf16>, %k: !c64, %v: !c64, %rows: memref<?xi32>, %out: memref<?x32x64xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.125 : f32}
    : memref<?x32x64xf16>, !c64, !c64, memref<?xi32>, memref<?x32x64xf16>, memref<?xf32>
  return
}
!c128 = !kvcache.paged_cache<bf16, num_heads = 4, head_size = 128, page_size = 1>
func.func @gqa8_d128(%q: memref<?x32x128xbf16>, %k: !c128, %v: !c128, %rows: memref<?xi32>, %out: memref<?x32x128xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0883883 : f32}
    : memref<?x32x128xbf16>, !c128, !c128, memref<?xi32>, memref<?x32x128xbf16>
  return
}
!c96 = !kvcache.paged_cache<f16, num_heads = 12, head_size = 96, page_size = 3>
func.func @mha_d96(%q: memref<?x12x96xf16>, %k: !c96, %v: !c96, %rows: memref<?xi32>, %out: memref<?x12x96xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.102 : f32}
    : memref<?x12x96xf16>, !c96, !c96, memref<?xi32>, memref<?x12x96xf16>, memref<?xf32>
  return
}
!c80 = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 80, page_size = 16>
func.func @gqa12_d80(%q: memref<?x24x80xbf16>, %k: !c80, %v: !c80, %rows: memref<?xi32>, %out: memref<?x24x80xbf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.111 : f32}
    : memref<?x24x80xbf16>, !c80, !c80, memref<?xi32>, memref<?x24x80xbf16>, memref<?xf32>
  return
}
!c256 = !kvcache.paged_cache<f32, num_heads = 1, head_size = 256, page_size = 32>
func.func @mqa2_d256(%q: memref<?x2x256xf32>, %k: !c256, %v: !c256, %rows: memref<?xi32>, %out: memref<?x2x256xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0625 : f32}
    : memref<?x2x256xf32>, !c256, !c256, memref<?xi32>, memref<?x2x256xf32>
  return
}
!c1 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>
func.func @tiny_d1(%q: memref<?x16x1xf16>, %k: !c1, %v: !c1, %rows: memref<?xi32>, %out: memref<?x16x1xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 1.0 : f32}
    : memref<?x16x1xf16>, !c1, !c1, memref<?xi32>, memref<?x16x1xf16>, memref<?xf32>
  return
}
