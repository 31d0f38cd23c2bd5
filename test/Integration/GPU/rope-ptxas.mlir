// rope_ragged's kernels (bf16 heads of 128 with R = 128 and R = 64, in
// place and into q_out with positions; an MLA latent row of 576 with R = 64;
// f16 heads of 80 with R = 32, checked) assemble for sm_90 and sm_80 with no
// spills and no stack frame.
// REQUIRES: ptxas
// RUN: kvcache-compile %s -o %t.sm_90.ptx
// RUN: %ptxas -arch=sm_90 -v %t.sm_90.ptx -o %t.sm_90.cubin 2>&1 | FileCheck %s --implicit-check-not=spill
// RUN: kvcache-compile %s --chip sm_80 --checked -o %t.sm_80.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.ptx -o %t.sm_80.cubin 2>&1 | FileCheck %s --implicit-check-not=spill

// CHECK: Function properties for partial_rope_ragged
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Function properties for mla_rope_ragged
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Function properties for half_rope_ragged
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK: Function properties for llama_rope_ragged
// CHECK-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

!c = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>
!mla = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
!phi = !kvcache.paged_cache<f16, num_heads = 32, head_size = 80, page_size = 16>

func.func @llama(%q: memref<?x32x128xbf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x128xf32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 128 : i64, style = "interleaved"}
      : memref<?x32x128xbf16>, !c, memref<?xi32>, memref<?x128xf32>, memref<?x32x128xbf16>
  return
}

func.func @half(%q: memref<?x32x128xbf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x64xf32>,
                %out: memref<?x32x128xbf16>, %p: memref<?xi32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %out positions(%p) {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xbf16>, !c, memref<?xi32>, memref<?x64xf32>, memref<?x32x128xbf16>, memref<?xi32>
  return
}

func.func @mla(%q: memref<?x16x576xbf16>, %k: !mla, %o: memref<?xi32>, %cs: memref<?x64xf32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "interleaved"}
      : memref<?x16x576xbf16>, !mla, memref<?xi32>, memref<?x64xf32>, memref<?x16x576xbf16>
  return
}

func.func @partial(%q: memref<?x32x80xf16>, %k: !phi, %o: memref<?xi32>, %cs: memref<?x32xf32>,
                   %out: memref<?x32x80xf16>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %out {rotary_dims = 32 : i64, style = "half"}
      : memref<?x32x80xf16>, !phi, memref<?xi32>, memref<?x32xf32>, memref<?x32x80xf16>
  return
}
