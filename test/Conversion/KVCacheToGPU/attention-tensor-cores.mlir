// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu -canonicalize -cse | FileCheck %s
// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu=chip=sm_80 -canonicalize -cse | FileCheck %s --check-prefix=SM80
// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu=tensor-cores=false | FileCheck %s --check-prefix=OFF
// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu=chip=sm_75 | FileCheck %s --check-prefix=OFF

// The tensor-core design of attention_ragged (the header of
// lib/Conversion/KVCacheToGPU/AttentionMMA.cpp), read off the IR for a
// decode step with GQA group 4 (32 query heads, 8 KV heads, head 128 f16):
// 4 warps (128 threads) per (row, KV head, split), each computing the
// 16-head tile's scores and owning 32 output columns; steps of 32 keys
// streamed through two double-buffered, padded ([2 x 32 x 136]) shared
// buffers. A step: wait for K (one group still in flight: V), barrier, ONE
// lookup (kvcache.tile) per cache for the next step (V's issued with K's,
// off the critical path) and 4 cp.async for its K, the scores
// (8 ldmatrix.x4 of q, 16 of K, 32 mma.sync m16n8k16: 4 key tiles x 8 column
// steps), ONE
// max per row over the step (2 xor shuffles in the quad), exp2, then wait
// for V, barrier, the next step's V (no lookup left), P.V (4 ldmatrix.x4.trans, 8 mma.sync).
// Without tensor cores (tensor-cores=false, or sm_75) the CUDA-core kernel
// runs: no ldmatrix, no mma.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @gqa4(
// CHECK: gpu.launch_func @kvcache_kernels::@gqa4_attention_ragged blocks in ({{.*}}) threads in (%c128, %c1, %c1)
// CHECK: gpu.launch_func @kvcache_kernels::@gqa4_attention_merge
// CHECK-LABEL: gpu.func @gqa4_attention_ragged(
// CHECK-SAME: workgroup(%[[K:.*]] : memref<2x32x136xf16, #gpu.address_space<workgroup>>, %[[V:.*]] : memref<2x32x136xf16, #gpu.address_space<workgroup>>, %[[Q:.*]] : memref<16x136xf16, #gpu.address_space<workgroup>>)
// q, read once per block into shared memory (the 4 warps of the tile all
// need it; heads 4..15 zero rows); the A fragments are read with ldmatrix
// in each step (no registers held across the loop).
// CHECK: vector.load %arg0{{.*}} : memref<?x32x128xf16>, vector<8xf16>
// CHECK: vector.store {{.*}}, %[[Q]]
// CHECK: gpu.barrier
// CHECK-NOT: nvgpu.ldmatrix
// Step 0's K and V, one group each.
// CHECK: kvcache.tile %arg1
// CHECK-COUNT-4: nvgpu.device_async_copy {{.*}}, %[[K]][
// CHECK: nvvm.cp.async.commit.group
// CHECK: kvcache.tile %arg2
// CHECK-COUNT-4: nvgpu.device_async_copy {{.*}}, %[[V]][
// CHECK: nvvm.cp.async.commit.group
// The key loop.
// CHECK: scf.for {{.*}} iter_args(
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK: kvcache.tile %arg1
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: kvcache.tile %arg2
// CHECK-COUNT-4: nvgpu.device_async_copy {{.*}}, %[[K]][
// CHECK: nvvm.cp.async.commit.group
// CHECK-COUNT-24: nvgpu.ldmatrix %{{.*}}[{{.*}}] {numTiles = 4 : i32, transpose = false}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK-NEXT: arith.maximumf
// CHECK-NEXT: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: kvcache.tile
// CHECK-COUNT-4: nvgpu.device_async_copy {{.*}}, %[[V]][
// CHECK: nvvm.cp.async.commit.group
// CHECK-COUNT-4: nvgpu.ldmatrix %[[V]][{{.*}}] {numTiles = 4 : i32, transpose = true}
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: scf.yield
// The last, masked step; then the copies past the end land before the
// result is written.
// CHECK: arith.select
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: vector.store {{.*}} : memref<?x32x128xf16>, vector<2xf16>
// CHECK: vector.store {{.*}} : memref<?xf32>, vector<2xf32>
// OFF-LABEL: gpu.func @gqa4_attention_ragged(
// OFF-NOT: nvgpu.ldmatrix
// OFF-NOT: nvvm.mma.sync
// OFF: gpu.return
func.func @gqa4(%q: memref<?x32x128xf16>, %k: !cache, %v: !cache, %offsets: memref<?xi32>,
                %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}

// -----

// The mma count of one step: 32 for the scores, 8 for P.V.
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-LABEL: gpu.func @count_attention_ragged(
// CHECK: scf.for {{.*}} iter_args(
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.shuffle
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
func.func @count(%q: memref<?x32x128xf16>, %k: !cache, %v: !cache, %offsets: memref<?xi32>,
                 %out: memref<?x32x128xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

// Multi-query, 64 query heads on one KV head: four 16-head tiles, one warp
// each (128 threads, every warp all 128 columns), one pass over K/V. One
// warp per tile: steps of 16 keys in 4 stages (3 steps in flight; the
// waits leave 5 groups, K and V of 2 steps and the next K, pending).
!mqa = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 128, page_size = 1>
// CHECK-LABEL: func.func @mqa64(
// CHECK: gpu.launch_func @kvcache_kernels::@mqa64_attention_ragged blocks in ({{.*}}) threads in (%c128, %c1, %c1)
// CHECK-LABEL: gpu.func @mqa64_attention_ragged(
// CHECK-SAME: workgroup(%{{.*}} : memref<4x16x136xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<4x16x136xbf16, #gpu.address_space<workgroup>>)
// The prologue commits K and V of steps 0, 1, 2.
// CHECK-COUNT-6: nvvm.cp.async.commit.group
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 5
// CHECK: nvvm.cp.async.wait.group 5
// bf16 operands travel as i32.
// CHECK: llvm.bitcast %{{.*}} : vector<2xbf16> to i32
// CHECK: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>
// CHECK-SAME: (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// OFF-LABEL: gpu.func @mqa64_attention_ragged(
// OFF-NOT: nvvm.mma.sync
// OFF: gpu.return
func.func @mqa64(%q: memref<?x64x128xbf16>, %k: !mqa, %v: !mqa, %offsets: memref<?xi32>,
                 %out: memref<?x64x128xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.0883883 : f32}
      : memref<?x64x128xbf16>, !mqa, !mqa, memref<?xi32>, memref<?x64x128xbf16>
  return
}

// -----

// 128 query heads on one KV head: 8 tiles, 8 warps; head size 64: steps of
// 16 keys in 4 stages, rows of 64 + 8 elements. A step is 16 x 8 chunks of
// 16 bytes: threads 0-127 copy, all 256 commit.
!c64 = !kvcache.paged_cache<f16, num_heads = 1, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @mqa128(
// CHECK: threads in (%c256, %c1, %c1)
// CHECK-LABEL: gpu.func @mqa128_attention_ragged(
// CHECK-SAME: workgroup(%{{.*}} : memref<4x16x72xf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<4x16x72xf16, #gpu.address_space<workgroup>>)
// CHECK: %[[COPIES:.*]] = arith.cmpi ult, %{{.*}}, %c128 : index
// CHECK: scf.if %[[COPIES]] {
// CHECK: nvgpu.device_async_copy
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: {{^ *}}}
// CHECK-NEXT: nvvm.cp.async.commit.group
func.func @mqa128(%q: memref<?x128x64xf16>, %k: !c64, %v: !c64, %offsets: memref<?xi32>,
                  %out: memref<?x128x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x128x64xf16>, !c64, !c64, memref<?xi32>, memref<?x128x64xf16>
  return
}

// -----

// A group of 12 (not a multiple of 16): heads 12..15 of the tile are zero
// rows in the staged q, never written.
!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 256, page_size = 16>
// CHECK-LABEL: gpu.func @group12_attention_ragged(
// CHECK-SAME: workgroup(%{{.*}} : memref<2x16x264xf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<2x16x264xf16, #gpu.address_space<workgroup>>, %[[Q:.*]] : memref<16x264xf16, #gpu.address_space<workgroup>>)
// CHECK: %[[HEAD:.*]] = arith.cmpi ult, %{{.*}}, %c12
// CHECK: vector.load {{.*}} : memref<?x24x256xf16>, vector<8xf16>
// CHECK: %[[CHUNK:.*]] = arith.select %{{.*}}, %{{.*}}, %[[ZERO:.*]] : vector<8xf16>
// CHECK-NEXT: vector.store %[[CHUNK]], %[[Q]]
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: scf.if %[[HEAD]]
// CHECK: vector.store {{.*}} : memref<?x24x256xf16>, vector<2xf16>
func.func @group12(%q: memref<?x24x256xf16>, %k: !c, %v: !c, %offsets: memref<?xi32>,
                   %out: memref<?x24x256xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.0625 : f32}
      : memref<?x24x256xf16>, !c, !c, memref<?xi32>, memref<?x24x256xf16>
  return
}

// -----

// CUDA cores where tensor cores do not apply: f32 caches, head sizes other
// than 64, 128 and 256.
!f32 = !kvcache.paged_cache<f32, num_heads = 8, head_size = 128, page_size = 16>
!d96 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 96, page_size = 16>
// CHECK-LABEL: gpu.func @f32_attention_ragged(
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @d96_attention_ragged(
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.return
func.func @f32(%q: memref<?x32x128xf32>, %k: !f32, %v: !f32, %offsets: memref<?xi32>,
               %out: memref<?x32x128xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.0883883 : f32}
      : memref<?x32x128xf32>, !f32, !f32, memref<?xi32>, memref<?x32x128xf32>
  return
}
func.func @d96(%q: memref<?x32x96xf16>, %k: !d96, %v: !d96, %offsets: memref<?xi32>,
               %out: memref<?x32x96xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.1 : f32}
      : memref<?x32x96xf16>, !d96, !d96, memref<?xi32>, memref<?x32x96xf16>
  return
}

// -----

// An f8E4M3FN cache with token_head scales: the codes stream into code
// buffers and each thread converts the chunks it copied. K's tile gets the
// codes' values alone (exact in f16) and each score is multiplied by its
// key's scale, parked per key row ([stages][keys per step]) and read as a
// pair (keys 8 n + 2 tig, + 1); V's chunks are multiplied by their scales.
!t = !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 128, page_size = 16, scales = token_head>
// CHECK-LABEL: gpu.func @fp8_token_head_attention_ragged(
// CHECK-SAME: workgroup(%[[K:[^ ]*]] : memref<1x32x136xf16, #gpu.address_space<workgroup>>, %[[V:[^ ]*]] : memref<1x32x136xf16, #gpu.address_space<workgroup>>, %[[KCODES:[^ ]*]] : memref<2x32x128xf8E4M3FN, #gpu.address_space<workgroup>>, %[[VCODES:[^ ]*]] : memref<2x32x128xf8E4M3FN, #gpu.address_space<workgroup>>, %[[KSCALES:[^ ]*]] : memref<2x32xf32, #gpu.address_space<workgroup>>, %[[VSCALES:[^ ]*]] : memref<2x256xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: vector.load %[[KCODES]]
// CHECK-NOT: arith.mulf
// CHECK: arith.extf %{{.*}} : vector<16xf8E4M3FN> to vector<16xf16>
// CHECK-NOT: arith.mulf
// CHECK: vector.store %{{.*}}, %[[K]]
// CHECK-NOT: arith.mulf
// CHECK: gpu.barrier
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: %[[PAIR:.*]] = vector.load %[[KSCALES]][%{{.*}}, %{{.*}}] : memref<2x32xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK: %[[S0:.*]] = vector.extract %[[PAIR]][0]
// CHECK: arith.mulf %{{.*}}, %[[S0]] : f32
// CHECK: arith.mulf %{{.*}}, %[[S0]] : f32
// CHECK: %[[S1:.*]] = vector.extract %[[PAIR]][1]
// CHECK: arith.mulf %{{.*}}, %[[S1]] : f32
// CHECK: arith.mulf %{{.*}}, %[[S1]] : f32
// CHECK-COUNT-3: vector.load %[[KSCALES]]
// CHECK: memref.store %{{.*}}, %[[KSCALES]]
// CHECK: vector.load %[[VCODES]]
// CHECK: %[[VSCALE:.*]] = memref.load %[[VSCALES]]
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[VSCALE]] : f32 to vector<16xf32>
// CHECK: arith.mulf %{{.*}}, %[[SPLAT]] : vector<16xf32>
// CHECK: vector.store %{{.*}}, %[[V]]
func.func @fp8_token_head(%q: memref<?x16x128xf16>, %k: !t, %v: !t, %offsets: memref<?xi32>, %out: memref<?x16x128xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x16x128xf16>, !t, !t, memref<?xi32>, memref<?x16x128xf16>
  return
}

// -----

// DeepSeek's latent rows (576 = 512 + 64) at 128 query heads: two blocks
// per (row, latent head), 64 heads (4 tiles of 2 warps, q's dims split
// over a tile's warps) each, on sm_90 and sm_80. Block y reads latent head
// y / 2 and q's heads from 64 y.
!mla = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
// CHECK-LABEL: func.func @mla128(
// CHECK: gpu.launch_func @kvcache_kernels::@mla128_mla_attention_ragged blocks in (%{{.*}}, %c2, %c1) threads in (%c256, %c1, %c1)
// CHECK-LABEL: gpu.func @mla128_mla_attention_ragged(
// CHECK-SAME: workgroup(%{{.*}} : memref<2x16x584xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x2x32x4xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[Y:.*]] = gpu.block_id  y
// CHECK: %[[LATENT:.*]] = arith.divui %[[Y]], %c2 : index
// CHECK: %[[FIRST:.*]] = arith.muli %[[Y]], %c64 : index
// CHECK: %[[HEAD:.*]] = arith.addi %[[FIRST]], %{{.*}} : index
// CHECK: vector.load %arg0[%{{.*}}, %[[HEAD]], %{{.*}}] {{.*}} : memref<?x128x576xbf16>
// CHECK: kvcache.tile %arg1[%{{.*}}, %{{.*}}, %[[LATENT]]]
// SM80-LABEL: func.func @mla128(
// SM80: gpu.launch_func @kvcache_kernels::@mla128_mla_attention_ragged blocks in (%{{.*}}, %c2, %c1) threads in (%c256, %c1, %c1)
func.func @mla128(%q: memref<?x128x576xbf16>, %k: !mla, %offsets: memref<?xi32>,
                  %out: memref<?x128x512xbf16>) {
  kvcache.mla_attention_ragged %q, %k, %offsets, %out {scale = 0.0721688 : f32, v_head_size = 512 : i64}
      : memref<?x128x576xbf16>, !mla, memref<?xi32>, memref<?x128x512xbf16>
  return
}

// -----

// Clauses that leave a block of 64 heads too few registers take blocks of
// 32 (2 tiles of 4 warps): a soft cap anywhere; a window on sm_80, where
// sm_90 keeps one block of 64 heads.
!mla = !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
// CHECK-LABEL: func.func @mla128_capped(
// CHECK: gpu.launch_func @kvcache_kernels::@mla128_capped_mla_attention_ragged blocks in (%{{.*}}, %c4, %c1) threads in (%c256, %c1, %c1)
// CHECK-LABEL: func.func @mla64_window(
// CHECK: gpu.launch_func @kvcache_kernels::@mla64_window_mla_attention_ragged blocks in (%{{.*}}, %c1, %c1) threads in (%c256, %c1, %c1)
// SM80-LABEL: func.func @mla128_capped(
// SM80: gpu.launch_func @kvcache_kernels::@mla128_capped_mla_attention_ragged blocks in (%{{.*}}, %c4, %c1) threads in (%c256, %c1, %c1)
// SM80-LABEL: func.func @mla64_window(
// SM80: gpu.launch_func @kvcache_kernels::@mla64_window_mla_attention_ragged blocks in (%{{.*}}, %c2, %c1) threads in (%c256, %c1, %c1)
func.func @mla128_capped(%q: memref<?x128x576xbf16>, %k: !mla, %offsets: memref<?xi32>,
                         %out: memref<?x128x512xbf16>) {
  kvcache.mla_attention_ragged %q, %k, %offsets, %out {scale = 0.0721688 : f32, v_head_size = 512 : i64, softcap = 30.0 : f32}
      : memref<?x128x576xbf16>, !mla, memref<?xi32>, memref<?x128x512xbf16>
  return
}
func.func @mla64_window(%q: memref<?x64x576xbf16>, %k: !mla, %offsets: memref<?xi32>,
                        %out: memref<?x64x512xbf16>) {
  kvcache.mla_attention_ragged %q, %k, %offsets, %out {scale = 0.0721688 : f32, v_head_size = 512 : i64, window = 128 : i64}
      : memref<?x64x576xbf16>, !mla, memref<?xi32>, memref<?x64x512xbf16>
  return
}
