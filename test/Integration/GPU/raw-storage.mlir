// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx

// The kernel ops on raw storage caches (f8E4M3FN, f8E5M2, i8 without
// scales: codes moved unchanged) compile to PTX (raw-storage-ptxas.test
// assembles it). One-byte elements move in the same 16-byte chunks as
// wider ones: 16 codes per ld/st.global.v4.b32.

// CHECK-LABEL: .entry store_fp8_store_ragged(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK-LABEL: .entry gather_fp8_gather_ragged(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK-LABEL: .entry copy_e5m2_copy_pages(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// Head size 3: one code at a time.
// CHECK-LABEL: .entry store_narrow_i8_store_ragged(
// CHECK: ld.global.{{(u8|b8)}}
// CHECK: st.global.{{(u8|b8)}}
// CHECK-LABEL: .entry gather_continuous_i8_gather_ragged(
// CHECK: st.global.v4.b32

!fp8 = !kvcache.paged_cache<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16>
func.func @store_fp8(%k: !fp8, %rows: memref<?x8x128xf8E4M3FN>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %rows, %offsets : !fp8, memref<?x8x128xf8E4M3FN>, memref<?xi32>
  return
}
func.func @gather_fp8(%k: !fp8, %rows: memref<?x8x128xf8E4M3FN>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %rows, %offsets : !fp8, memref<?x8x128xf8E4M3FN>, memref<?xi32>
  return
}

!e5m2 = !kvcache.paged_collection<f8E5M2, num_heads = 2, head_size = 64, page_size = 1>
func.func @copy_e5m2(%c: !e5m2, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %c, %pairs : !e5m2, memref<?x2xi32>
  return
}

!narrow = !kvcache.paged_cache<i8, num_heads = 1, head_size = 3, page_size = 5>
func.func @store_narrow_i8(%k: !narrow, %rows: memref<?x1x3xi8>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %rows, %offsets : !narrow, memref<?x1x3xi8>, memref<?xi32>
  return
}

!cont = !kvcache.continuous_cache<i8, num_heads = 4, head_size = 64>
func.func @gather_continuous_i8(%k: !cont, %rows: memref<?x4x64xi8>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %rows, %offsets : !cont, memref<?x4x64xi8>, memref<?xi32>
  return
}
