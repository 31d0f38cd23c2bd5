// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx --check-prefixes=CHECK,SM90 \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem. \
// RUN:   --implicit-check-not='{{(ld|st)\.global\.(v2\.|b16|u16)}}'
// RUN: kvcache-compile %s --chip sm_80 -o %t.sm_80.ptx
// RUN: FileCheck %s --input-file=%t.sm_80.ptx --check-prefixes=CHECK,SM80 \
// RUN:   --implicit-check-not=div. --implicit-check-not=rem. \
// RUN:   --implicit-check-not='{{(ld|st)\.global\.(v2\.|b16|u16)}}'

// The kernel ops (docs/Contract.md, section 3.3) compiled by kvcache-compile
// to PTX for sm_90 and sm_80, one function (one kernel, named <function>_<op>)
// each, on caches whose token rows are a multiple of 16 bytes.
// kernel-ops-narrow.mlir has the head sizes that are not;
// kernel-ops-ptxas.test assembles both.
//
// What the PTX must show:
// - every row chunk moves as one 128-bit global access: ld.global.v4.b32 from
//   the source and st.global.v4.b32 to the destination; no 16-bit or 64-bit
//   global access anywhere (the implicit checks above; the i32 offsets,
//   pairs, cache lengths and lookup-table entries are ld.global.b32);
// - store_ragged and gather_ragged: a lane's chunks of a warp's tile (8 with
//   rows of 8 heads x 128 f16 or 2 x 64 f32: 2 rows of 4 chunks or 8 rows of
//   1; 6 with head_size 96), every load before the first store; copy_pages:
//   a load and a store for K, then for V (once for MLA);
// - no div or rem instruction anywhere: with page sizes and head sizes that
//   are powers of two the splits are shifts and masks, and the rest (head
//   size 96, page size 5) are multiplications by a magic number;
// - the block size, .maxntid: 256 (8 warps) for the ragged ops, min(chunks
//   per page, 256) for copy_pages;
// - an assert_write_mode = 1 cache checks its writes with the device-side
//   assertion, out of line after `ret`.

// SM90: .target sm_90
// SM80: .target sm_80
// CHECK: .extern .func __assertfail

// f16, 8 heads x 128, page size 16: 128 chunks of 8 x f16 per row,
// 2048 per page.

// CHECK-LABEL: .visible .entry store_f16_store_ragged(
// The operands in order (docs/Contract.md, section 7): the cache (25
// parameters, its max_seq_length and max_cache_length .u32), new (9),
// row_offsets (5).
// CHECK: .param .u32 store_f16_store_ragged_param_23,
// CHECK-NEXT: .param .u32 store_f16_store_ragged_param_24,
// CHECK-NEXT: .param .u64 .ptr .align 1 store_f16_store_ragged_param_25,
// CHECK: .param .u64 .ptr .align 1 store_f16_store_ragged_param_34,
// CHECK: .param .u64 store_f16_store_ragged_param_38
// CHECK-NEXT: )
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @store_f16(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_f16_gather_ragged(
// CHECK: .param .u32 gather_f16_gather_ragged_param_23,
// CHECK-NEXT: .param .u32 gather_f16_gather_ragged_param_24,
// CHECK-NEXT: .param .u64 .ptr .align 1 gather_f16_gather_ragged_param_25,
// CHECK: .param .u64 .ptr .align 1 gather_f16_gather_ragged_param_34,
// CHECK: .param .u64 gather_f16_gather_ragged_param_38
// CHECK-NEXT: )
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @gather_f16(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_f16_copy_pages(
// The collection (29 parameters: a 6-D blocks memref is 15), pairs (7).
// CHECK: .param .u32 copy_f16_copy_pages_param_27,
// CHECK-NEXT: .param .u32 copy_f16_copy_pages_param_28,
// CHECK-NEXT: .param .u64 .ptr .align 1 copy_f16_copy_pages_param_29,
// CHECK: .param .u64 copy_f16_copy_pages_param_35
// CHECK-NEXT: )
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ret;
func.func @copy_f16(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32>
  return
}

// f32, 2 heads x 64: 32 chunks of 4 x f32 per row (8 rows per tile, one
// chunk of each per lane), 512 per page.

// CHECK-LABEL: .visible .entry store_f32_store_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @store_f32(%cache: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 16>, %new: memref<?x2x64xf32>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 16>, memref<?x2x64xf32>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_f32_gather_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @gather_f32(%cache: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 16>, %out: memref<?x2x64xf32>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 16>, memref<?x2x64xf32>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_f32_copy_pages(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ret;
func.func @copy_f32(%collection: !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 16>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 16>, memref<?x2xi32>
  return
}

// bf16, 8 heads x 128: as f16.

// CHECK-LABEL: .visible .entry store_bf16_store_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @store_bf16(%cache: !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, %new: memref<?x8x128xbf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xbf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_bf16_gather_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @gather_bf16(%cache: !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, %out: memref<?x8x128xbf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xbf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_bf16_copy_pages(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ret;
func.func @copy_bf16(%collection: !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32>
  return
}

// head_size 96 (not a power of two, a multiple of 8): 96 chunks per row, 2
// rows per tile, 6 chunks per lane.

// CHECK-LABEL: .visible .entry store_head_size_96_store_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-6: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-6: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @store_head_size_96(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, %new: memref<?x8x96xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, memref<?x8x96xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_head_size_96_gather_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-6: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-6: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @gather_head_size_96(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, %out: memref<?x8x96xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, memref<?x8x96xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_head_size_96_copy_pages(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ret;
func.func @copy_head_size_96(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 96, page_size = 16>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 96, page_size = 16>, memref<?x2xi32>
  return
}

// page_size 1: every token its own page; a page is one row (128 chunks).

// CHECK-LABEL: .visible .entry store_page_size_1_store_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @store_page_size_1(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 1>, %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 1>, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_page_size_1_gather_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @gather_page_size_1(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 1>, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 1>, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_page_size_1_copy_pages(
// CHECK: .maxntid 128, 1, 1
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ret;
func.func @copy_page_size_1(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 1>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 1>, memref<?x2xi32>
  return
}

// page_size 5: token / 5 and token mod 5 by multiplication.

// CHECK-LABEL: .visible .entry store_page_size_5_store_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @store_page_size_5(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 5>, %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 5>, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_page_size_5_gather_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @gather_page_size_5(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 5>, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 5>, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_page_size_5_copy_pages(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ret;
func.func @copy_page_size_5(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 5>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 5>, memref<?x2xi32>
  return
}

// assert_write_mode = 1: store_ragged checks its lookups and copy_pages its
// page stores (destination page) with __assertfail; the accesses stay
// 128-bit.

// The checks between the stores make LLVM place the second row's stores
// before the loop header in the text (they still run after every load): 8
// loads, then the first row's 4 stores.
// CHECK-LABEL: .visible .entry store_checked_store_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-4: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
// CHECK: call.uni __assertfail,
func.func @store_checked(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_checked_gather_ragged(
// CHECK: .maxntid 256, 1, 1
// CHECK-COUNT-8: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}{{(\+[0-9]+)?}}];
// CHECK-NOT: global.v4
// CHECK-COUNT-8: st.global.v4.b32 [%rd{{[0-9]+}}{{(\+[0-9]+)?}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: global.v4
// CHECK: ret;
func.func @gather_checked(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry copy_checked_copy_pages(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK: ret;
// CHECK: call.uni __assertfail,
func.func @copy_checked(%collection: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, memref<?x2xi32>
  return
}

// An MLA collection (K only): 64 x 576 bf16 = 4608 chunks per page, one copy.

// CHECK-LABEL: .visible .entry copy_mla_copy_pages(
// CHECK: .maxntid 256, 1, 1
// CHECK: ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK: st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-NOT: {{(ld|st)\.global\.v4}}
// CHECK: ret;
func.func @copy_mla(%collection: !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, memref<?x2xi32>
  return
}
