// RUN: kvcache-opt %s -convert-kvcache-to-gpu -canonicalize | FileCheck %s --check-prefixes=CHECK,SM90
// RUN: kvcache-opt %s -convert-kvcache-to-gpu=sm-count=10 -canonicalize | FileCheck %s --check-prefixes=CHECK,TEN
// RUN: kvcache-opt %s -convert-kvcache-to-gpu=chip=sm_80 -canonicalize | FileCheck %s --check-prefixes=CHECK,SM80
// RUN: kvcache-opt %s -convert-kvcache-to-gpu=tensor-cores=false -canonicalize | FileCheck %s --check-prefixes=CHECK,CUDA

// The host's split count never exceeds what fills the GPU: sm-count SMs
// (default: the chip's flagship, 132 for sm_90, 108 for sm_80) times the
// blocks of the attention kernel one SM holds (estimated from its threads,
// shared memory and registers: on tensor cores 5 for a group of up to 16
// heads of 128 (shared memory bounds it), 3 for 64 heads; on CUDA cores 4 for GQA 4 with 8-element
// slices, 9 for GQA 1, 2 for a pass of 8 heads), over the grid of one split
// (rows x kv_heads):
// splits = max(1, min(ceil(max_cache_length / keys-per-split), workspace
// capacity, fill, max-splits)) with fill = slots / (rows x kv_heads),
// rounded down, so a batch that already fills the GPU is not split.

!gqa4 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!mqa = !kvcache.paged_cache<f16, num_heads = 1, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @gqa4(
// SM90-DAG: %[[SLOTS:.*]] = arith.constant 660 : index
// TEN-DAG: %[[SLOTS:.*]] = arith.constant 50 : index
// SM80-DAG: %[[SLOTS:.*]] = arith.constant 540 : index
// CUDA-DAG: %[[SLOTS:.*]] = arith.constant 528 : index
// CHECK-DAG: %[[KV:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[MAXSPLITS:.*]] = arith.constant 16 : index
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[GRID:.*]] = arith.minui %[[ROWS]], %c65535
// CHECK: %[[WANTED:.*]] = arith.ceildivui
// CHECK: %[[CAPACITY:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[GRID]], %[[KV]]
// CHECK: %[[ATLEASTONE:.*]] = arith.maxui %[[BLOCKS]], %c1
// CHECK: %[[FILL:.*]] = arith.divui %[[SLOTS]], %[[ATLEASTONE]]
// CHECK: %[[A:.*]] = arith.minui %[[WANTED]], %[[CAPACITY]]
// CHECK: %[[B:.*]] = arith.minui %[[FILL]], %[[MAXSPLITS]]
// CHECK: %[[C:.*]] = arith.minui %[[A]], %[[B]]
// CHECK: %[[SPLITS:.*]] = arith.maxui %[[C]], %c1
// CHECK: gpu.launch_func @kvcache_kernels::@gqa4_attention_ragged blocks in (%[[GRID]], %[[KV]], %[[SPLITS]])
func.func @gqa4(%q: memref<?x32x128xf16>, %k: !gqa4, %v: !gqa4, %offsets: memref<?xi32>,
                %out: memref<?x32x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !gqa4, !gqa4, memref<?xi32>, memref<?x32x128xf16>, memref<?xf32>
  return
}

// GQA 1: on tensor cores the same kernel shape as GQA 4; on CUDA cores
// smaller kernels, more of them per SM.
// CHECK-LABEL: func.func @gqa1(
// SM90: arith.constant 660 : index
// TEN: arith.constant 50 : index
// SM80: arith.constant 540 : index
// CUDA: arith.constant 1188 : index
func.func @gqa1(%q: memref<?x8x128xf16>, %k: !gqa4, %v: !gqa4, %offsets: memref<?xi32>,
                %out: memref<?x8x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {scale = 0.0883883 : f32}
      : memref<?x8x128xf16>, !gqa4, !gqa4, memref<?xi32>, memref<?x8x128xf16>, memref<?xf32>
  return
}

// Multi-query (64 heads on one KV head): on tensor cores one pass of four
// 16-head tiles, 3 blocks per SM; on CUDA cores passes of 8 heads, 2.
// CHECK-LABEL: func.func @mqa(
// SM90: arith.constant 396 : index
// TEN: arith.constant 30 : index
// SM80: arith.constant 324 : index
// CUDA: arith.constant 264 : index
func.func @mqa(%q: memref<?x64x128xf16>, %k: !mqa, %v: !mqa, %offsets: memref<?xi32>,
               %out: memref<?x64x128xf16>, %ws: memref<?xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {scale = 0.0883883 : f32}
      : memref<?x64x128xf16>, !mqa, !mqa, memref<?xi32>, memref<?x64x128xf16>, memref<?xf32>
  return
}
