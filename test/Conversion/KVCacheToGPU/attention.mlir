// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu=tensor-cores=false | FileCheck %s

// The CUDA-core design of attention_ragged (flash-decoding, see the header
// of lib/Conversion/KVCacheToGPU/AttentionToGPU.cpp; tensor-cores=false
// forces it where the tensor-core kernel would be used, which
// attention-tensor-cores.mlir checks), read off the IR for a
// decode step with GQA group 4 (32 query heads, 8 KV heads, head 128 f16):
// a block per (row, KV head, split) of 128 threads; in each step of the key
// loop a thread issues ONE cp.async of its 16-byte K slice and ONE of its V
// slice (after one kvcache.tile lookup per key and cache), waits for the
// previous group, reads the two slices from shared memory once and uses them
// for all 4 query heads of the group (4 dot products); the last, partial
// step of keys is peeled off the loop; partial states merge
// through shared memory; with a workspace a second kernel merges the splits.
// Each kernel is a gpu.func in gpu.module @kvcache_kernels (after the host
// function in each split) taking exactly the op's operands, in order (the
// merge kernel: workspace, row offsets, out and the number of splits),
// launched by a gpu.launch_func inside the host's scf.if guard.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @decode_with_workspace
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<?x32x128xf16>, %[[K:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[V:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[ROWS:[a-z0-9_]+]]: memref<?xi32>, %[[OUT:[a-z0-9_]+]]: memref<?x32x128xf16>, %[[WS:[a-z0-9_]+]]: memref<?xf32>)
// A block per (row, KV head, split): grid (rows, 8, splits), 128 threads.
// CHECK: scf.if
// CHECK: gpu.launch_func @kvcache_kernels::@decode_with_workspace_attention_ragged blocks in (%[[GRID:[a-z0-9_]+]], %c8{{(_[0-9]+)?}}, %[[SPLITS:[a-z0-9_]+]]) threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) args(%[[Q]] : memref<?x32x128xf16>, %[[K]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[V]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[ROWS]] : memref<?xi32>, %[[OUT]] : memref<?x32x128xf16>, %[[WS]] : memref<?xf32>){{$}}
// With more than one split, the merge kernel: a block per (row, query head),
// given the number of splits of the first launch.
// CHECK-NEXT: %[[ONE:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-NEXT: %[[MANY_SPLITS:[a-z0-9_]+]] = arith.cmpi ult, %[[ONE]], %[[SPLITS]] : index
// CHECK-NEXT: scf.if %[[MANY_SPLITS]] {
// CHECK: gpu.launch_func @kvcache_kernels::@decode_with_workspace_attention_merge blocks in (%[[GRID]], %c32{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) args(%[[WS]] : memref<?xf32>, %[[ROWS]] : memref<?xi32>, %[[OUT]] : memref<?x32x128xf16>, %[[SPLITS]] : index){{$}}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-LABEL: gpu.module @kvcache_kernels
// CHECK-LABEL: gpu.func @decode_with_workspace_attention_ragged(
// CHECK-SAME: {{^}}%[[KQ:[a-z0-9_]+]]: memref<?x32x128xf16>, %[[KK:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[KV:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[KROWS:[a-z0-9_]+]]: memref<?xi32>, %[[KOUT:[a-z0-9_]+]]: memref<?x32x128xf16>, %[[KWS:[a-z0-9_]+]]: memref<?xf32>) workgroup(%[[K_SHARED:[a-z0-9_]+]] : memref<2x8x128xf16, #gpu.address_space<workgroup>>, %[[V_SHARED:[a-z0-9_]+]] : memref<2x8x128xf16, #gpu.address_space<workgroup>>, %{{[a-z0-9_]+}} : memref<8x4x130xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
// CHECK-NOT: kvcache.num_pages
// The kernel reads its operands through its parameters: the row offsets, the
// sequence's length in K, the query rows, K and V tiles; it writes out and
// the workspace.
// CHECK: memref.load %[[KROWS]][
// CHECK: kvcache.cache_length %[[KK]][
// Each row's keys are split by a division of i32 (a 32-bit div in PTX).
// CHECK: %[[CHUNK:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: arith.index_castui %[[CHUNK]] : i32 to index
// CHECK: vector.load %[[KQ]][{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// The key loop carries (max, sum, accumulator) for each of the 4 heads.
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>)
// CHECK: kvcache.tile %[[KK]][{{.*}} -> memref<1x128xf16, strided<[1024, 1], offset: ?>>
// CHECK-NOT: kvcache.
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[K_SHARED]][{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK-NEXT: kvcache.tile %[[KV]][{{.*}} -> memref<1x128xf16, strided<[1024, 1], offset: ?>>
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
// CHECK-COUNT-7: llvm.intr.fmuladd
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
// CHECK: vector.store %{{.*}}, %[[KOUT]][{{.*}}] {alignment = 16 : i64} : memref<?x32x128xf16>, vector<8xf16>
// CHECK-NOT: scf.for
// CHECK: vector.store %{{.*}}, %[[KWS]][{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NOT: scf.for
// CHECK: gpu.barrier
// CHECK: gpu.return
// The merge kernel: for each element of a (row, query head), the partial
// outputs of the splits weighted by exp2(max_i - max) and summed, one fused
// multiply-add per split, then divided by the summed weights.
// CHECK-LABEL: gpu.func @decode_with_workspace_attention_merge(
// CHECK-SAME: {{^}}%[[M_WS:[a-z0-9_]+]]: memref<?xf32>, %[[M_ROWS:[a-z0-9_]+]]: memref<?xi32>, %[[M_OUT:[a-z0-9_]+]]: memref<?x32x128xf16>, %[[M_SPLITS:[a-z0-9_]+]]: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
// CHECK: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// CHECK: memref.load %[[M_ROWS]][
// CHECK: scf.for %[[E:[a-z0-9_]+]] = %[[TX]] to %c128{{(_[0-9]+)?}} step %c128{{(_[0-9]+)?}} {
// CHECK: scf.for %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}} to %[[M_SPLITS]] step %{{[a-z0-9_]+}} iter_args(%[[ACC:[a-z0-9_]+]] = %{{[a-z0-9_]+}}) -> (f32) {
// CHECK: %[[AT:[a-z0-9_]+]] = arith.addi %{{[a-z0-9_]+}}, %[[E]] : index
// CHECK-NEXT: %[[O:[a-z0-9_]+]] = memref.load %[[M_WS]][%[[AT]]] : memref<?xf32>
// CHECK: %[[W:[a-z0-9_]+]] = arith.select %{{.*}} : f32
// CHECK-NEXT: %[[SUM:[a-z0-9_]+]] = llvm.intr.fmuladd(%[[W]], %[[O]], %[[ACC]]) : (f32, f32, f32) -> f32
// CHECK-NEXT: scf.yield %[[SUM]] : f32
// CHECK: arith.divf
// CHECK: memref.store %{{[a-z0-9_]+}}, %[[M_OUT]][%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[E]]] : memref<?x32x128xf16>
// CHECK: gpu.return
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
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<?x32x128xf16>, %[[K:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[V:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[ROWS:[a-z0-9_]+]]: memref<?xi32>, %[[OUT:[a-z0-9_]+]]: memref<?x32x128xf16>)
// CHECK-NOT: attention_merge
// CHECK: gpu.launch_func @kvcache_kernels::@negative_no_workspace_attention_ragged blocks in (%{{[a-z0-9_]+}}, %c8{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) args(%[[Q]] : memref<?x32x128xf16>, %[[K]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[V]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[ROWS]] : memref<?xi32>, %[[OUT]] : memref<?x32x128xf16>){{$}}
// CHECK-NOT: attention_merge
// CHECK-LABEL: gpu.func @negative_no_workspace_attention_ragged(
// CHECK-SAME: {{^}}%{{[a-z0-9_]+}}: memref<?x32x128xf16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x32x128xf16>) workgroup({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
// CHECK-NOT: math.exp
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NOT: math.exp
// CHECK-NOT: attention_merge
// The only kernel of the gpu.module ends it and the module.
// CHECK: gpu.return
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
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
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<?x64x128xf16>, %[[K:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>, %[[V:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>, %[[ROWS:[a-z0-9_]+]]: memref<?xi32>, %[[OUT:[a-z0-9_]+]]: memref<?x64x128xf16>)
// CHECK: gpu.launch_func @kvcache_kernels::@mqa_group_in_passes_attention_ragged blocks in (%{{[a-z0-9_]+}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) args(%[[Q]] : memref<?x64x128xf16>, %[[K]] : !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>, %[[V]] : !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>, %[[ROWS]] : memref<?xi32>, %[[OUT]] : memref<?x64x128xf16>){{$}}
// CHECK-LABEL: gpu.func @mqa_group_in_passes_attention_ragged(
// CHECK-SAME: {{^}}%{{[a-z0-9_]+}}: memref<?x64x128xf16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[KOUT:[a-z0-9_]+]]: memref<?x64x128xf16>) workgroup(%{{[a-z0-9_]+}} : memref<2x8x128xf16, #gpu.address_space<workgroup>>, %{{[a-z0-9_]+}} : memref<2x8x128xf16, #gpu.address_space<workgroup>>, %{{[a-z0-9_]+}} : memref<8x8x130xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
// CHECK: scf.for %[[FIRST:.*]] = %c0{{(_[0-9]+)?}} to %c64{{(_[0-9]+)?}} step %c8{{(_[0-9]+)?}} {
// The pass's first head: kv_head * 64 + first.
// CHECK: %[[LOCAL:.*]] = arith.addi %[[FIRST]], %c0{{(_[0-9]+)?}} : index
// CHECK: %[[BASE:.*]] = arith.muli %{{.*}}, %c64{{(_[0-9]+)?}} : index
// CHECK: arith.addi %[[BASE]], %[[LOCAL]] : index
// CHECK-NOT: arith.minui {{.*}}%c63
// CHECK: scf.for {{.*}} -> (f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>) {
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK: gpu.barrier
// CHECK-COUNT-8: vector.store {{.*}}, %[[KOUT]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64x128xf16>, vector<8xf16>
// CHECK: gpu.barrier
// CHECK-NEXT: }
// CHECK: gpu.return
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
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<?x18x64xbf16>, %[[K:[a-z0-9_]+]]: !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %[[V:[a-z0-9_]+]]: !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %[[ROWS:[a-z0-9_]+]]: memref<?xi32>, %[[OUT:[a-z0-9_]+]]: memref<?x18x64xbf16>)
// CHECK: gpu.launch_func @kvcache_kernels::@group_not_multiple_of_pass_attention_ragged blocks in (%{{[a-z0-9_]+}}, %c2{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) args(%[[Q]] : memref<?x18x64xbf16>, %[[K]] : !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %[[V]] : !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %[[ROWS]] : memref<?xi32>, %[[OUT]] : memref<?x18x64xbf16>){{$}}
// CHECK-LABEL: gpu.func @group_not_multiple_of_pass_attention_ragged(
// CHECK-SAME: {{^}}%{{[a-z0-9_]+}}: memref<?x18x64xbf16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x18x64xbf16>) workgroup({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
// CHECK: scf.for %[[FIRST:.*]] = %c0{{(_[0-9]+)?}} to %c10{{(_[0-9]+)?}} step %c5{{(_[0-9]+)?}} {
// CHECK-COUNT-5: %[[VALID:.*]] = arith.cmpi ult, %[[LOCAL:.*]], %c9{{(_[0-9]+)?}} : index
// CHECK: scf.for {{.*}} -> (f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>, f32, f32, vector<8xf32>) {
// CHECK: gpu.barrier
// CHECK: scf.if %[[VALID]] {
// CHECK: vector.store {{.*}} : memref<?x18x64xbf16>, vector<8xbf16>
// CHECK: gpu.barrier
// CHECK: gpu.return
func.func @group_not_multiple_of_pass(%q: memref<?x18x64xbf16>, %k: !c, %v: !c, %rows: memref<?xi32>, %out: memref<?x18x64xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.125 : f32}
    : memref<?x18x64xbf16>, !c, !c, memref<?xi32>, memref<?x18x64xbf16>
  return
}

// -----

// A group of 12 heads: 2 passes of 6, nothing masked.

!c = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>

// CHECK-LABEL: func.func @group_in_even_passes
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<?x24x64xbf16>, %[[K:[a-z0-9_]+]]: !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %[[V:[a-z0-9_]+]]: !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %[[ROWS:[a-z0-9_]+]]: memref<?xi32>, %[[OUT:[a-z0-9_]+]]: memref<?x24x64xbf16>)
// CHECK: gpu.launch_func @kvcache_kernels::@group_in_even_passes_attention_ragged blocks in (%{{[a-z0-9_]+}}, %c2{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) args(%[[Q]] : memref<?x24x64xbf16>, %[[K]] : !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %[[V]] : !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %[[ROWS]] : memref<?xi32>, %[[OUT]] : memref<?x24x64xbf16>){{$}}
// CHECK-LABEL: gpu.func @group_in_even_passes_attention_ragged(
// CHECK-SAME: {{^}}%{{[a-z0-9_]+}}: memref<?x24x64xbf16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 1>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x24x64xbf16>) workgroup(%{{[a-z0-9_]+}} : {{.*}}, %{{[a-z0-9_]+}} : {{.*}}, %{{[a-z0-9_]+}} : memref<16x6x66xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
// CHECK: scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c12{{(_[0-9]+)?}} step %c6{{(_[0-9]+)?}} {
// CHECK-NOT: arith.minui
// CHECK: gpu.return
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
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<?x256x1xf16>, %[[K:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>, %[[V:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>, %[[ROWS:[a-z0-9_]+]]: memref<?xi32>, %[[OUT:[a-z0-9_]+]]: memref<?x256x1xf16>)
// CHECK: gpu.launch_func @kvcache_kernels::@tiny_head_attention_ragged blocks in (%{{[a-z0-9_]+}}, %c8{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) args(%[[Q]] : memref<?x256x1xf16>, %[[K]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>, %[[V]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>, %[[ROWS]] : memref<?xi32>, %[[OUT]] : memref<?x256x1xf16>){{$}}
// CHECK-LABEL: gpu.func @tiny_head_attention_ragged(
// CHECK-SAME: {{^}}%{{[a-z0-9_]+}}: memref<?x256x1xf16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x256x1xf16>) workgroup(%{{[a-z0-9_]+}} : memref<128x8x3xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
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
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<?x32x96xf16>, %[[K:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, %[[V:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, %[[ROWS:[a-z0-9_]+]]: memref<?xi32>, %[[OUT:[a-z0-9_]+]]: memref<?x32x96xf16>)
// CHECK: gpu.launch_func @kvcache_kernels::@head_size_96_attention_ragged blocks in (%{{[a-z0-9_]+}}, %c8{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) threads in (%c128{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}, %c1{{(_[0-9]+)?}}) args(%[[Q]] : memref<?x32x96xf16>, %[[K]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, %[[V]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, %[[ROWS]] : memref<?xi32>, %[[OUT]] : memref<?x32x96xf16>){{$}}
// CHECK-LABEL: gpu.func @head_size_96_attention_ragged(
// CHECK-SAME: {{^}}%{{[a-z0-9_]+}}: memref<?x32x96xf16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, %{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x32x96xf16>) workgroup(%{{[a-z0-9_]+}} : memref<8x4x98xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
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
