// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf -canonicalize -cse | FileCheck %s

// attention_ragged on the CPU (lib/Conversion/KVCacheToSCF/AttentionToSCF.cpp):
// the tasks (sequence, KV head, tile of rows) are the iterations of the
// scf.parallel loop, which runs on every core under
// kvcache-to-cpu{parallel=true}. A tile of at least 16 lanes (rows x the
// group's heads) takes the row-tile kernel (attention-tiles.mlir); a
// smaller one (a decode row of GQA 4) the per-row loop checked here: per
// row and KV head, the query heads of the GQA group (here 4) take one
// pass over the keys together, so each K and V row is loaded once for all
// of them (one online-softmax state per head, loop-carried). The keys go in
// blocks of 8: per key and head, 16 partial sums of the dot product (no
// reduction across a vector), per head one shuffle tree for the block's 8
// scores, one max, one rescale and one vector 2^x (inline arithmetic: no
// libm call, which would spill every vector register), then 8 fused
// multiply-adds of V rows; the keys left (fewer than 8) one at a time, each
// dot product a reassociable reduction. The K and V rows 8 keys ahead are
// prefetched (rows of one head are num_heads * head_size apart, a stride
// the hardware prefetchers miss).

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @gqa4(
// One parallel task per (sequence, KV head, tile of 32 rows = 128 lanes /
// GQA 4): the outer loop, over the tiles of the longest sequence.
// CHECK: %[[LONGEST:.*]] = scf.for
// CHECK: arith.maxui
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[LONGEST]], %c32 : index
// CHECK: %[[PAIRS:.*]] = arith.muli %{{.*}}, %c2 : index
// CHECK: %[[TASKS:.*]] = arith.muli %[[PAIRS]], %[[TILES]] : index
// CHECK: scf.parallel (%[[TASK:.*]]) = (%c0) to (%[[TASKS]]) step (%c1) {
// CHECK: %[[TILE:.*]] = arith.remui %[[TASK]], %[[TILES]] : index
// CHECK: %[[REST:.*]] = arith.divui %[[TASK]], %[[TILES]] : index
// CHECK: %[[SEQ:.*]] = arith.divui %[[REST]], %c2 : index
// CHECK: %[[KV:.*]] = arith.remui %[[REST]], %c2 : index
// CHECK: %[[LANES:.*]] = arith.muli %{{.*}}, %c4 : index
// CHECK: %[[WORTH:.*]] = arith.cmpi uge, %[[LANES]], %c16 : index
// CHECK: scf.if %[[WORTH]] {
// CHECK: memref.dealloc
// CHECK: } else {
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK: %[[END:.*]] = arith.addi %[[P:.*]], %c1 : index
// CHECK: %[[H0:.*]] = arith.muli %[[KV]], %c4 : index
// CHECK: vector.load %arg0[%[[ROW]], %[[H0]], %c0] : memref<?x8x64xf16>, vector<64xf16>
// CHECK-COUNT-3: vector.load %arg0[%[[ROW]], %{{.*}}, %c0] : memref<?x8x64xf16>, vector<64xf16>
// CHECK: %[[BLOCKS:.*]] = arith.divui %[[END]], %c8 : index
// CHECK: %[[BLOCKED:.*]] = arith.muli %[[BLOCKS]], %c8 : index
// CHECK: %[[STATES:.*]]:12 = scf.for %[[FIRST:.*]] = %c0 to %[[BLOCKED]] step %c8 iter_args({{.*}}) -> (f32, f32, vector<64xf32>, f32, f32, vector<64xf32>, f32, f32, vector<64xf32>, f32, f32, vector<64xf32>) {
// CHECK: %[[AHEAD:.*]] = arith.addi %[[FIRST]], %c8 : index
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[AHEAD]], %[[P]] : index
// CHECK: %[[KTILE:.*]] = kvcache.tile %arg1[%[[SEQ]], %[[CLAMPED]], %[[KV]]]
// CHECK: memref.prefetch %[[KTILE]][%c0, %c0], read, locality<3>, data
// CHECK: memref.prefetch %[[KTILE]][%c0, %c32], read, locality<3>, data
// CHECK: %[[VTILE:.*]] = kvcache.tile %arg2[%[[SEQ]], %[[CLAMPED]], %[[KV]]]
// CHECK: memref.prefetch %[[VTILE]][%c0, %c0]
// CHECK: memref.prefetch %[[VTILE]][%c0, %c32]
// Each K row, loaded once, goes into 16 partial sums per head (one
// multiply, then a fused multiply-add per further 16 elements).
// CHECK: kvcache.page_load %arg1
// CHECK-NOT: vector.reduction
// CHECK: arith.mulf %{{.*}} : vector<16xf32>
// CHECK-COUNT-3: vector.fma %{{.*}} : vector<16xf32>
// CHECK: arith.mulf %{{.*}} : vector<16xf32>
// CHECK-COUNT-3: vector.fma %{{.*}} : vector<16xf32>
// CHECK: arith.mulf %{{.*}} : vector<16xf32>
// CHECK-COUNT-3: vector.fma %{{.*}} : vector<16xf32>
// CHECK: arith.mulf %{{.*}} : vector<16xf32>
// CHECK-COUNT-3: vector.fma %{{.*}} : vector<16xf32>
// CHECK-NOT: kvcache.page_load %arg2
// CHECK-COUNT-7: kvcache.page_load %arg1
// CHECK-NOT: kvcache.page_load %arg1
// CHECK-COUNT-8: kvcache.page_load %arg2
// CHECK-NOT: kvcache.page_load
// Per head: the 8 keys' sums reduced by one tree: pairs of vectors whose
// 16-lane segments halve (8 + 4 + 2 shuffle pairs), then the 2-lane
// segments of the last folded to 8 lanes, the scores in key order.
// CHECK-NOT: vector.reduction <add>{{.*}}vector<64xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: vector.shuffle %{{.*}}, %{{.*}} [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: arith.addf %{{.*}} : vector<16xf32>
// CHECK-COUNT-3: arith.addf %{{.*}} : vector<16xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27] : vector<16xf32>, vector<16xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29] : vector<16xf32>, vector<16xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: vector.shuffle %{{.*}}, %{{.*}} [1, 3, 5, 7, 9, 11, 13, 15] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: %[[DOTS:.*]] = arith.addf %{{.*}} : vector<8xf32>
// CHECK-NOT: math.exp2
// CHECK-NOT: func.call
// CHECK: vector.reduction <maximumf>, %[[DOTS]] : vector<8xf32> into f32
// CHECK: math.roundeven %{{.*}} : vector<8xf32>
// CHECK: arith.shli %{{.*}}, %{{.*}} : vector<8xi32>
// CHECK-COUNT-8: vector.fma %{{.*}} : vector<64xf32>
// CHECK: scf.yield
// The keys after the last full block, one at a time.
// CHECK: scf.for %[[KEY:.*]] = %[[BLOCKED]] to %[[END]] step %c1 iter_args(
// CHECK: kvcache.page_load %arg1
// CHECK-NOT: kvcache.page_load %arg1
// CHECK-COUNT-4: vector.reduction <add>
// CHECK: kvcache.page_load %arg2
// CHECK: math.roundeven %{{.*}} : f32
// CHECK: scf.yield
// CHECK-COUNT-4: vector.store %{{.*}}, %arg4[%[[ROW]], %{{.*}}, %c0] : memref<?x8x64xf16>, vector<64xf16>
func.func @gqa4(%q: memref<?x8x64xf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x64xf16>, !c, !c, memref<?xi32>, memref<?x8x64xf16>
  return
}

// -----

// A group of 12 heads takes two passes of 6 (the largest divisor of at
// most 8): 6 states per pass, each K and V row read twice per row.
!c = !kvcache.paged_cache<f32, num_heads = 1, head_size = 16, page_size = 16>
// CHECK-LABEL: func.func @group12(
// CHECK: memref.dealloc
// CHECK: } else {
// CHECK: scf.for %[[FIRST:.*]] = %c0 to %c12 step %c6 {
// CHECK-COUNT-6: vector.load %arg0
// CHECK: scf.for {{.*}} step %c8 iter_args({{.*}}) -> (f32, f32, vector<16xf32>, f32, f32, vector<16xf32>, f32, f32, vector<16xf32>, f32, f32, vector<16xf32>, f32, f32, vector<16xf32>, f32, f32, vector<16xf32>) {
// CHECK-NOT: vector.reduction <add>{{.*}}vector<16xf32>
// CHECK-COUNT-48: arith.mulf %{{.*}} : vector<16xf32>
// CHECK-NOT: vector.reduction <add>{{.*}}vector<16xf32>
// CHECK: scf.yield
// CHECK: scf.for {{.*}} step %c1 iter_args(
// CHECK-COUNT-6: vector.reduction <add>
// CHECK: scf.yield
// CHECK-COUNT-6: vector.store
func.func @group12(%q: memref<?x12x16xf32>, %k: !c, %offsets: memref<?xi32>, %out: memref<?x12x16xf32>) {
  kvcache.attention_ragged %q, %k, %k, %offsets, %out {scale = 0.25 : f32}
      : memref<?x12x16xf32>, !c, !c, memref<?xi32>, memref<?x12x16xf32>
  return
}
