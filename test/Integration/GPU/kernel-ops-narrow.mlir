// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx --check-prefixes=CHECK,SM90 \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem. \
// RUN:   --implicit-check-not=global.v4
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: FileCheck %s --input-file=%t.sm_80.ptx --check-prefixes=CHECK,SM80 \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem. \
// RUN:   --implicit-check-not=global.v4

// The kernel ops on caches whose head_size is not a multiple of 8, compiled
// to PTX for sm_90 and sm_80 (kernel-ops-ptxas.test assembles it): the
// widest access that head_size allows, never a wider one, and no div or rem
// instruction anywhere.

// SM90: .target sm_90
// SM80: .target sm_80

// head_size 100 = 4 x 25: 8-byte chunks of 4 x f16 (ld/st.global.v2.b32),
// 200 per row: a warp's tile is one row, 7 chunks per lane (the last one in
// lanes 0 to 7), every load before the first store.

// CHECK-LABEL: .visible .entry store_head_size_100_store_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-7: ld.global.v2.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v2
// CHECK-COUNT-7: st.global.v2.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v2
// CHECK: ret;
func.func @store_head_size_100(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 100, page_size = 16>, %new: memref<?x8x100xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 100, page_size = 16>, memref<?x8x100xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_head_size_100_gather_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-7: ld.global.v2.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v2
// CHECK-COUNT-7: st.global.v2.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v2
// CHECK: ret;
func.func @gather_head_size_100(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 100, page_size = 16>, %out: memref<?x8x100xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 100, page_size = 16>, memref<?x8x100xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_head_size_100_copy_pages(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.v2.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v2.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ld.global.v2.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v2.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ret;
func.func @copy_head_size_100(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 100, page_size = 16>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 100, page_size = 16>, memref<?x2xi32>
  return
}

// head_size 5 (odd): one f16 per chunk (ld/st.global.b16), 40 per row: a
// warp's tile is 6 rows, 8 chunks per lane (the last one in lanes 0 to 15),
// every load before the first store.

// CHECK-LABEL: .visible .entry store_head_size_5_store_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-NOT: global.v2
// CHECK-COUNT-8: ld.global.b16 %rs{{[0-9]+}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.{{v2|b16}}
// CHECK-COUNT-8: st.global.b16 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], %rs{{[0-9]+}};
// CHECK-NOT: global.{{v2|b16}}
// CHECK: ret;
func.func @store_head_size_5(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 5, page_size = 16>, %new: memref<?x8x5xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 5, page_size = 16>, memref<?x8x5xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_head_size_5_gather_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-NOT: global.v2
// CHECK-COUNT-8: ld.global.b16 %rs{{[0-9]+}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.{{v2|b16}}
// CHECK-COUNT-8: st.global.b16 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], %rs{{[0-9]+}};
// CHECK-NOT: global.{{v2|b16}}
// CHECK: ret;
func.func @gather_head_size_5(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 5, page_size = 16>, %out: memref<?x8x5xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 5, page_size = 16>, memref<?x8x5xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_head_size_5_copy_pages(
// CHECK: .maxntid 256, 1, 1
// CHECK-NOT: global.v2
// CHECK: ld.global.b16 %rs{{[0-9]+}}, [%rd{{[0-9]+}}];
// CHECK-NOT: global.v2
// CHECK: st.global.b16 [%rd{{[0-9]+}}], %rs{{[0-9]+}};
// CHECK-NOT: global.v2
// CHECK: ld.global.b16 %rs{{[0-9]+}}, [%rd{{[0-9]+}}];
// CHECK-NOT: global.v2
// CHECK: st.global.b16 [%rd{{[0-9]+}}], %rs{{[0-9]+}};
// CHECK-NOT: global.v2
// CHECK: ret;
func.func @copy_head_size_5(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 5, page_size = 16>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 5, page_size = 16>, memref<?x2xi32>
  return
}
