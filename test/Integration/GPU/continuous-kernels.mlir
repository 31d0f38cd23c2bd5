// RUN: kvcache-compile %s -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx --implicit-check-not=rem. \
// RUN:   --implicit-check-not=div.u64 --implicit-check-not=div.s64
// RUN: kvcache-compile %s --chip sm_80 --checked -o %t.checked.ptx
// RUN: FileCheck %s --input-file=%t.checked.ptx --check-prefix=CHECKED

// The kernel ops on continuous-batching caches compiled to PTX: a lookup is
// one load of the sequence's block (no division or remainder: the token is
// the slot; attention's only integer division is its 32-bit key split), row
// chunks move as 128-bit global accesses, attention streams K and V through
// cp.async. continuous-kernels-ptxas.test assembles them;
// test/python/test_ptx_test_twins.py runs every function on the emulator.

!cache = !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>
!mla_cache = !kvcache.continuous_cache<bf16, num_heads = 1, head_size = 576, mla = true>

// CHECK-LABEL: .visible .entry store_store_ragged(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK: ret;
func.func @store(%k: !cache, %rows: memref<?x8x128xf16>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %rows, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_gather_ragged(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK: ret;
func.func @gather(%v: !cache, %rows: memref<?x8x128xf16>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %v, %rows, %offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry gather_mla_gather_ragged(
// CHECK: ld.global.v4.b32
// CHECK: st.global.v4.b32
// CHECK: ret;
func.func @gather_mla(%k: !mla_cache, %rows: memref<?x1x576xbf16>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %rows, %offsets : !mla_cache, memref<?x1x576xbf16>, memref<?xi32>
  return
}

// CHECK-LABEL: .visible .entry attention_attention_ragged(
// CHECK: cp.async
// CHECK: ex2.approx
// CHECK: ret;
// CHECK-LABEL: .visible .entry attention_attention_merge(
func.func @attention(%q: memref<?x32x128xf16>, %k: !cache, %v: !cache, %offsets: memref<?xi32>,
                     %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}

// Checked: every kernel checks its accesses with the device-side assertion.
// CHECKED-LABEL: .visible .entry store_store_ragged(
// CHECKED: call.uni __assertfail
// CHECKED-LABEL: .visible .entry gather_gather_ragged(
// CHECKED: call.uni __assertfail
// CHECKED-LABEL: .visible .entry gather_mla_gather_ragged(
// CHECKED: call.uni __assertfail
// CHECKED-LABEL: .visible .entry attention_attention_ragged(
// CHECKED: call.uni __assertfail
