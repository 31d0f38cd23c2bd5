// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu | FileCheck %s

// The GPU design of attention_ragged (flash-decoding, see the header of
// lib/Conversion/KVCacheToGPU/AttentionToGPU.cpp), read off the IR for a
// decode step with GQA group 4 (32 query heads, 8 KV heads, head 128 f16):
// a block per (row, KV head, split) of 128 threads; in each step of the key
// loop a thread issues ONE cp.async of its 16-byte K slice and ONE of its V
// slice (after one kvcache.tile lookup per key and cache), waits for the
// previous group, reads the two slices from shared memory once and uses them
// for all 4 query heads of the group (4 dot products); the last, partial
// step of keys is peeled off the loop; partial states merge
// through shared memory; with a workspace a second kernel merges the splits.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @decode_with_workspace
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %c8, {{.*}} = %{{.*}}) threads({{.*}}) in ({{.*}} = %c128, {{.*}}) module(@kvcache_kernels) function(@decode_with_workspace_attention_ragged) workgroup(%[[K_SHARED:[a-z0-9_]+]] : memref<2x8x128xf16, #gpu.address_space<workgroup>>, %[[V_SHARED:[a-z0-9_]+]] : memref<2x8x128xf16, #gpu.address_space<workgroup>>, %{{[a-z0-9_]+}} : memref<8x4x130xf32, #gpu.address_space<workgroup>>)
// Each row's keys are split by a division of i32 (a 32-bit div in PTX).
// CHECK: %[[CHUNK:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: arith.index_castui %[[CHUNK]] : i32 to index
// The key loop carries (max, sum, accumulator) for each of the 4 heads.
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>)
// CHECK: kvcache.tile %{{.*}} -> memref<1x128xf16, strided<[1024, 1], offset: ?>>
// CHECK-NOT: kvcache.
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[K_SHARED]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK-NEXT: kvcache.tile %{{.*}} -> memref<1x128xf16, strided<[1024, 1], offset: ?>>
// CHECK-NOT: kvcache.
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[V_SHARED]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK-NEXT: %[[GROUP:.*]] = nvgpu.device_async_create_group
// CHECK-NEXT: nvgpu.device_async_wait %[[GROUP]] {numGroups = 1 : i32}
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: vector.load %[[K_SHARED]]{{.*}} vector<8xf16>
// CHECK-NEXT: vector.load %[[V_SHARED]]{{.*}} vector<8xf16>
// CHECK-NOT: vector.load
// Per head: q . k as one multiply and 7 fused multiply-adds over the 8
// elements of the slice, then a 4-level xor-shuffle sum over the 16 lanes of
// the key; 4 heads, no more loads. Steps before the last are full: no
// select on a head's state in that loop.
// CHECK-COUNT-7: llvm.intr.fma
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32
// CHECK-COUNT-3: gpu.shuffle xor %{{.*}}, %c8_i32
// CHECK-NOT: vector.load {{.*}}xf16
// CHECK-NOT: arith.select {{.*}} : vector<8xf32>
// CHECK: scf.yield
// The last step, when partial, runs once after the loop with its keys past
// the end masked.
// CHECK: scf.if %{{.*}} -> (f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>) {
// CHECK-COUNT-4: arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK: } else {
// After the key loop, the last (empty, zero-filling) prefetch lands before
// the buffers are reused by the next row.
// CHECK: %[[LAST:.*]] = nvgpu.device_async_create_group{{ *$}}
// CHECK-NEXT: nvgpu.device_async_wait %[[LAST]] {numGroups = 0 : i32}
// A group of 4 heads takes one pass over the keys: no loop over heads.
// CHECK-NOT: scf.for
// CHECK: gpu.barrier
// CHECK-NOT: scf.for
// CHECK: gpu.barrier
// CHECK: gpu.launch {{.*}} module(@kvcache_kernels) function(@decode_with_workspace_attention_merge)
func.func @decode_with_workspace(%q: memref<?x32x128xf16>, %k: !cache, %v: !cache, %rows: memref<?xi32>, %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out, %ws {scale = 0.0883883 : f32}
    : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// negative_: without a workspace there is one split and no merge kernel;
// exp2 is NVVM's ex2.approx intrinsic (no libdevice).

// CHECK-LABEL: func.func @negative_no_workspace
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %c8, {{.*}} = %c1{{(_[0-9]+)?}})
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NOT: math.exp
// CHECK-NOT: attention_merge
// CHECK: return
func.func @negative_no_workspace(%q: memref<?x32x128xf16>, %k: !cache, %v: !cache, %rows: memref<?xi32>, %out: memref<?x32x128xf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0883883 : f32}
    : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

// A multi-query group of 64 heads (head 128 f16) takes 8 passes over the
// keys of 8 heads each, so a thread holds 8 running states, not 64: the
// shared partial states are sized for 8 heads, the key loop carries 8
// (max, sum, accumulator) triples, and each pass ends with a barrier before
// the next pass reuses the shared state.

!mqa = !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @mqa_group_in_passes
// CHECK: gpu.launch {{.*}} function(@mqa_group_in_passes_attention_ragged) workgroup({{.*}} : memref<2x8x128xf16, #gpu.address_space<workgroup>>, {{.*}} : memref<2x8x128xf16, #gpu.address_space<workgroup>>, {{.*}} : memref<8x8x130xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %[[FIRST:.*]] = %c0{{(_[0-9]+)?}} to %c64{{(_[0-9]+)?}} step %c8{{(_[0-9]+)?}} {
// The pass's first head: kv_head * 64 + first.
// CHECK: %[[LOCAL:.*]] = arith.addi %[[FIRST]], %c0{{(_[0-9]+)?}} : index
// CHECK: %[[BASE:.*]] = arith.muli %{{.*}}, %c64{{(_[0-9]+)?}} : index
// CHECK: arith.addi %[[BASE]], %[[LOCAL]] : index
// CHECK-NOT: arith.minui {{.*}}%c63
// CHECK: scf.for {{.*}} -> (f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>) {
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK: gpu.barrier
// CHECK-COUNT-8: vector.store {{.*}}, %arg{{[0-9]+}}[%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64x128xf16>, vector<8xf16>
// CHECK: gpu.barrier
// CHECK-NEXT: }
// CHECK: gpu.terminator
func.func @mqa_group_in_passes(%q: memref<?x64x128xf16>, %k: !mqa, %v: !mqa, %rows: memref<?xi32>, %out: memref<?x64x128xf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.0883883 : f32}
    : memref<?x64x128xf16>, !mqa, !mqa, memref<?xi32>, memref<?x64x128xf16>
  return
}

// -----

// A group of 9 heads: 2 passes of 5 (heads spread evenly over the passes);
// the second pass's extra slot repeats head 8 (the index is clamped) and
// writes nothing (its stores are guarded).

!c = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>

// CHECK-LABEL: func.func @group_not_multiple_of_pass
// CHECK: gpu.launch
// CHECK: scf.for %[[FIRST:.*]] = %c0{{(_[0-9]+)?}} to %c10{{(_[0-9]+)?}} step %c5{{(_[0-9]+)?}} {
// CHECK-COUNT-5: %[[VALID:.*]] = arith.cmpi ult, %[[LOCAL:.*]], %c9{{(_[0-9]+)?}} : index
// CHECK: scf.for {{.*}} -> (f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>) {
// CHECK: gpu.barrier
// CHECK: scf.if %[[VALID]] {
// CHECK: vector.store {{.*}} : memref<?x18x64xbf16>, vector<8xbf16>
// CHECK: gpu.barrier
// CHECK: gpu.terminator
func.func @group_not_multiple_of_pass(%q: memref<?x18x64xbf16>, %k: !c, %v: !c, %rows: memref<?xi32>, %out: memref<?x18x64xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.125 : f32}
    : memref<?x18x64xbf16>, !c, !c, memref<?xi32>, memref<?x18x64xbf16>
  return
}

// -----

// A group of 12 heads: 2 passes of 6, nothing masked.

!c = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>

// CHECK-LABEL: func.func @group_in_even_passes
// CHECK: gpu.launch {{.*}} workgroup({{.*}}, {{.*}}, {{.*}} : memref<16x6x66xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c12{{(_[0-9]+)?}} step %c6{{(_[0-9]+)?}} {
// CHECK-NOT: arith.minui
// CHECK: gpu.terminator
func.func @group_in_even_passes(%q: memref<?x24x64xbf16>, %k: !c, %v: !c, %rows: memref<?xi32>, %out: memref<?x24x64xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.125 : f32}
    : memref<?x24x64xbf16>, !c, !c, memref<?xi32>, memref<?x24x64xbf16>
  return
}

// -----

// Heads of one element: one lane per key, 128 keys per step; the block
// merges its 128 partial states per head in loops, not unrolled (which made
// kvcache-to-ptx take over a minute, test/Fuzz).

!tiny = !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>

// CHECK-LABEL: func.func @tiny_head
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c128{{(_[0-9]+)?}}, {{.*}} workgroup({{.*}} : memref<128x8x3xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} to %c32{{(_[0-9]+)?}} step %c8
// CHECK: gpu.barrier
// CHECK: %[[GROUPS:.*]] = arith.divui %{{.*}}, %c1{{(_[0-9]+)?}} : index
// CHECK: scf.for {{.*}} = %c0{{(_[0-9]+)?}} to %[[GROUPS]] step %c1{{(_[0-9]+)?}} iter_args({{.*}}) -> (f32) {
// CHECK: scf.for {{.*}} = %c0{{(_[0-9]+)?}} to %[[GROUPS]] step %c1{{(_[0-9]+)?}} iter_args({{.*}}) -> (f32, vector<1xf32>) {
func.func @tiny_head(%q: memref<?x256x1xf16>, %k: !tiny, %v: !tiny, %rows: memref<?xi32>, %out: memref<?x256x1xf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 1.0 : f32}
    : memref<?x256x1xf16>, !tiny, !tiny, memref<?xi32>, memref<?x256x1xf16>
  return
}

// -----

// Head size 96 (f16): 16 lanes per key hold 6 elements each (12 bytes, not
// a cp.async size: K and V are read straight from the cache), 8 keys per
// step of 128 threads.

!d96 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>

// CHECK-LABEL: func.func @head_size_96
// CHECK: gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c128{{(_[0-9]+)?}}, {{.*}} workgroup({{.*}} : memref<8x4x98xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: scf.for {{.*}} -> (f32, f32, vector<6xf32>, f32, f32, vector<6xf32>, f32, f32, vector<6xf32>, f32, f32, vector<6xf32>) {
// CHECK: kvcache.page_load {{.*}} -> vector<6xf16>
// CHECK: kvcache.page_load {{.*}} -> vector<6xf16>
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32
func.func @head_size_96(%q: memref<?x32x96xf16>, %k: !d96, %v: !d96, %rows: memref<?xi32>, %out: memref<?x32x96xf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.1 : f32}
    : memref<?x32x96xf16>, !d96, !d96, memref<?xi32>, memref<?x32x96xf16>
  return
}
