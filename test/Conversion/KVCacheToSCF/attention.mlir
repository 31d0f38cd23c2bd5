// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf -canonicalize -cse | FileCheck %s

// attention_ragged on the CPU (lib/Conversion/KVCacheToSCF/AttentionToSCF.cpp):
// per row and KV head, the query heads of the GQA group (here 4) take one
// pass over the keys together, so each K and V row is loaded once for all
// of them (one online-softmax state per head, loop-carried). The keys go in
// blocks of 8: per head, 8 scores as one vector, one max, one rescale and
// one vector 2^x (inline arithmetic: no libm call, which would spill every
// vector register), then 8 fused multiply-adds of V rows; the keys left
// (fewer than 8) one at a time. The K and V rows 8 keys ahead are
// prefetched (rows of one head are num_heads * head_size apart, a stride
// the hardware prefetchers miss); each dot product is a reassociable
// reduction (a tree, not 64 dependent adds). The tasks (sequence, KV
// head) are the iterations of the scf.parallel loop, which runs on every
// core under kvcache-to-cpu{parallel=true}.

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @gqa4(
// One parallel task per (sequence, KV head): the outer loop.
// CHECK: %[[TASKS:.*]] = arith.muli %{{.*}}, %c2 : index
// CHECK: scf.parallel (%[[TASK:.*]]) = (%c0) to (%[[TASKS]]) step (%c1) {
// CHECK: %[[SEQ:.*]] = arith.divui %[[TASK]], %c2 : index
// CHECK: %[[KV:.*]] = arith.remui %[[TASK]], %c2 : index
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
// CHECK-COUNT-8: kvcache.page_load %arg1
// CHECK-NOT: kvcache.page_load %arg1
// CHECK-COUNT-32: vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<64xf32> into f32
// CHECK-COUNT-8: kvcache.page_load %arg2
// CHECK-NOT: kvcache.page_load
// CHECK-NOT: math.exp2
// CHECK-NOT: func.call
// CHECK: vector.reduction <maximumf>, %{{.*}} : vector<8xf32> into f32
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
// CHECK: scf.for %[[FIRST:.*]] = %c0 to %c12 step %c6 {
// CHECK-COUNT-6: vector.load %arg0
// CHECK: scf.for {{.*}} step %c8 iter_args({{.*}}) -> (f32, f32, vector<16xf32>, f32, f32, vector<16xf32>, f32, f32, vector<16xf32>, f32, f32, vector<16xf32>, f32, f32, vector<16xf32>, f32, f32, vector<16xf32>) {
// CHECK-COUNT-48: vector.reduction <add>
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
