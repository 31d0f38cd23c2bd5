// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf -canonicalize -cse | FileCheck %s

// attention_ragged on the CPU (lib/Conversion/KVCacheToSCF/AttentionToSCF.cpp):
// the tasks are the iterations of the scf.parallel loop, which runs on
// every core under kvcache-to-cpu{parallel=true}: one per (sequence, KV
// head, tile of rows), or per (sequence, tile of rows) with all the KV
// heads when every row is a decode row (no tile of 16 lanes) and there are
// at least 4 sequences per thread (here 1: serial code). A tile of at least
// 16 lanes (rows x the group's heads) takes the row-tile kernel
// (attention-tiles.mlir), its task's KV heads one after the other; a
// smaller one (a decode row of GQA 4) the decode kernel
// (AttentionDecodeToSCF.cpp): per row, the scaled q rows of the task's
// query heads in a buffer, with their running max and sum and their
// outputs; then per block of 16 keys each KV head in turn, the query heads
// of its group (here 4) taking the block together, so each K and V row is
// converted once for all of them. Pages of 16 tokens: each block is a tile
// of its page (one page lookup per block, KV head and cache). Per block and
// KV head: the K and V rows two (block, KV head) steps ahead prefetched;
// per key and head 16 partial sums of the dot product (no reduction across
// a vector), per head one shuffle tree for the block's 16 scores, built as
// the keys come, -inf past the row's end, one max, one rescale and one
// vector 2^x (inline arithmetic: no libm call, which would spill every
// vector register), the weights stored; then per 16 value elements each
// head's output chunk rescaled, each V chunk converted once and added to
// every head with its broadcast weight.

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @gqa4(
// The tiles of 32 rows (128 lanes / GQA 4) of the longest sequence.
// CHECK: %[[NSEQ:.*]] = arith.select
// CHECK: %[[LONGEST:.*]] = scf.for
// CHECK: arith.maxui
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[LONGEST]], %c32 : index
// KV heads per task: 2 with at least 4 sequences and decode rows only.
// CHECK-NEXT: %[[ENOUGH:.*]] = arith.cmpi uge, %[[NSEQ]], %c4 : index
// CHECK-NEXT: %[[LANES:.*]] = arith.muli %[[LONGEST]], %c4 : index
// CHECK-NEXT: %[[DECODE:.*]] = arith.cmpi ult, %[[LANES]], %c16 : index
// CHECK-NEXT: %[[WHOLE:.*]] = arith.andi %[[ENOUGH]], %[[DECODE]] : i1
// CHECK-NEXT: %[[NKV:.*]] = arith.select %[[WHOLE]], %c2, %c1 : index
// CHECK-NEXT: %[[HEADTASKS:.*]] = arith.divui %c2, %[[NKV]] : index
// CHECK-NEXT: %[[PAIRS:.*]] = arith.muli %[[NSEQ]], %[[HEADTASKS]] : index
// CHECK-NEXT: %[[TASKS:.*]] = arith.muli %[[PAIRS]], %[[TILES]] : index
// CHECK: scf.parallel (%[[TASK:.*]]) = (%c0) to (%[[TASKS]]) step (%c1) {
// CHECK: %[[TILE:.*]] = arith.remui %[[TASK]], %[[TILES]] : index
// CHECK: %[[REST:.*]] = arith.divui %[[TASK]], %[[TILES]] : index
// CHECK: %[[SEQ:.*]] = arith.divui %[[REST]], %[[HEADTASKS]] : index
// CHECK: %[[CHUNK:.*]] = arith.remui %[[REST]], %[[HEADTASKS]] : index
// CHECK: %[[KV0:.*]] = arith.muli %[[CHUNK]], %[[NKV]] : index
// CHECK: %[[KVEND:.*]] = arith.addi %[[KV0]], %[[NKV]] : index
// CHECK: %[[TLANES:.*]] = arith.muli %{{.*}}, %c4 : index
// CHECK: %[[WORTH:.*]] = arith.cmpi uge, %[[TLANES]], %c16 : index
// CHECK: scf.if %[[WORTH]] {
// CHECK-NEXT: scf.for %{{.*}} = %[[KV0]] to %[[KVEND]] step %c1 {
// CHECK: memref.dealloc
// CHECK: } else {
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK: %[[P:.*]] = arith.addi
// CHECK-NEXT: %[[END:.*]] = arith.addi %[[P]], %c1 : index
// The task's query heads: 4 per KV head.
// CHECK: %[[QHEADS:.*]] = arith.muli %[[NKV]], %c4 : index
// CHECK: %[[H0:.*]] = arith.muli %[[KV0]], %c4 : index
// CHECK: %[[QROWS:.*]] = memref.alloc(%[[QHEADS]]) {alignment = 64 : i64} : memref<?x64xf32>
// CHECK: %[[STATS:.*]] = memref.alloc(%[[QHEADS]]) {alignment = 64 : i64} : memref<?x2xf32>
// CHECK: %[[OUTPUT:.*]] = memref.alloc(%[[QHEADS]]) {alignment = 64 : i64} : memref<?x64xf32>
// CHECK: %[[WEIGHTS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x16xf32>
// CHECK: scf.for %[[I:.*]] = %c0 to %[[QHEADS]] step %c1 {
// CHECK: %[[HEAD:.*]] = arith.addi %[[H0]], %[[I]] : index
// CHECK: vector.load %arg0[%[[ROW]], %[[HEAD]], %c0] : memref<?x8x64xf16>, vector<64xf16>
// CHECK: vector.store %{{.*}}, %[[QROWS]][%[[I]], %c0] : memref<?x64xf32>, vector<64xf32>
// CHECK: memref.store %{{.*}}, %[[STATS]][%[[I]], %c0] : memref<?x2xf32>
// CHECK: memref.store %{{.*}}, %[[STATS]][%[[I]], %c1] : memref<?x2xf32>
// CHECK: vector.store %{{.*}}, %[[OUTPUT]][%[[I]], %c0] : memref<?x64xf32>, vector<64xf32>
// Blocks, then the task's KV heads.
// CHECK: scf.for %[[FIRST:.*]] = %c0 to %[[END]] step %c16 {
// First the next block's rows of the task's KV heads (the last block's when
// there is none), K then V, each 64-byte line loaded, the loads kept by an
// empty asm that uses their bits (no prefetch instructions).
// CHECK-NEXT: %[[REM:.*]] = arith.remui %[[P]], %c16 : index
// CHECK-NEXT: %[[LASTBLOCK:.*]] = arith.subi %[[P]], %[[REM]] : index
// CHECK-NEXT: %[[AHEAD:.*]] = arith.addi %[[FIRST]], %c16 : index
// CHECK-NEXT: %[[A0:.*]] = arith.minui %[[AHEAD]], %[[LASTBLOCK]] : index
// CHECK-NEXT: %[[KSEEN:.*]] = scf.for %[[AH:.*]] = %c0 to %[[NKV]] step %c1 iter_args(%[[KACC:.*]] = %{{.*}}) -> (vector<16xi32>) {
// CHECK-NEXT: %[[AKV:.*]] = arith.addi %[[KV0]], %[[AH]] : index
// CHECK-NEXT: %[[KAHEAD:.*]] = kvcache.tile %arg1[%[[SEQ]], %[[A0]], %[[AKV]]] : {{.*}} -> memref<16x64xf16, strided<[128, 1], offset: ?>>
// CHECK-NEXT: %[[L0:.*]] = vector.load %[[KAHEAD]][%c0, %c0] : memref<16x64xf16, strided<[128, 1], offset: ?>>, vector<32xf16>
// CHECK-NEXT: %[[W0:.*]] = vector.bitcast %[[L0]] : vector<32xf16> to vector<16xi32>
// CHECK-NEXT: arith.ori %[[KACC]], %[[W0]] : vector<16xi32>
// CHECK-NEXT: vector.load %[[KAHEAD]][%c0, %c32]
// CHECK-COUNT-30: vector.load %[[KAHEAD]]
// CHECK: scf.yield
// CHECK: %[[VSEEN:.*]] = scf.for %{{.*}} = %c0 to %[[NKV]] step %c1 iter_args(%{{.*}} = %[[KSEEN]]) -> (vector<16xi32>) {
// CHECK: %[[VAHEAD:.*]] = kvcache.tile %arg2[%[[SEQ]], %[[A0]],
// CHECK-COUNT-32: vector.load %[[VAHEAD]]
// CHECK: %[[WORD:.*]] = vector.reduction <or>, %[[VSEEN]] : vector<16xi32> into i32
// CHECK-NEXT: llvm.inline_asm has_side_effects "", "r" %[[WORD]] : (i32) -> ()
// CHECK-NEXT: scf.for %[[H:.*]] = %c0 to %[[NKV]] step %c1 {
// CHECK-NEXT: %[[KV:.*]] = arith.addi %[[KV0]], %[[H]] : index
// CHECK-NEXT: %[[PASS:.*]] = arith.muli %[[H]], %c4 : index
// CHECK: %[[LEFT:.*]] = arith.subi %[[END]], %[[FIRST]] : index
// CHECK: %[[COUNT:.*]] = arith.minui %[[LEFT]], %c16 : index
// CHECK-NOT: memref.prefetch
// The scores, the 4 heads together: their q chunks of a sweep of 64
// elements (here the whole head: 16 vectors), then a loop over the 4
// groups of 4 keys. Per key: its K row from the block's tile (no lookup
// per key), loaded and converted once, 16 partial sums per head (one
// multiply, then a fused multiply-add per further 16 elements), the heads'
// 4 vectors halved together into one (8 + 4 lanes per head); the group's
// keys halved together as they come (2, then 1 lane per head and key).
// CHECK: %[[KTILE:.*]] = kvcache.tile %arg1[%[[SEQ]], %[[FIRST]], %[[KV]]] : {{.*}} -> memref<16x64xf16, strided<[128, 1], offset: ?>>
// CHECK: vector.load %[[QROWS]][%[[PASS]], %c0] : memref<?x64xf32>, vector<64xf32>
// CHECK-COUNT-3: vector.load %[[QROWS]][%{{.*}}, %c0] : memref<?x64xf32>, vector<64xf32>
// CHECK: scf.for %[[G:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: %[[GK:.*]] = arith.muli %[[G]], %c4 : index
// CHECK-NEXT: %[[K0:.*]] = arith.addi %[[FIRST]], %[[GK]] : index
// The group's tokens stop at the last key (its row's position).
// CHECK-NEXT: %[[T0:.*]] = arith.minui %[[K0]], %[[P]] : index
// CHECK-NEXT: %[[R0:.*]] = arith.subi %[[T0]], %[[FIRST]] : index
// CHECK-NOT: kvcache.lookup
// CHECK-NEXT: vector.load %[[KTILE]][%[[R0]], %c0] : memref<16x64xf16, strided<[128, 1], offset: ?>>, vector<64xf16>
// CHECK-NOT: vector.reduction
// CHECK-COUNT-4: arith.mulf %{{.*}} : vector<16xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: vector.shuffle %{{.*}}, %{{.*}} [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: arith.addf %{{.*}} : vector<16xf32>
// CHECK-COUNT-2: vector.shuffle
// CHECK-NEXT: arith.addf %{{.*}} : vector<16xf32>
// CHECK-NEXT: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: vector.shuffle %{{.*}}, %{{.*}} [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: arith.addf %{{.*}} : vector<16xf32>
// CHECK: vector.load %[[KTILE]]
// CHECK-COUNT-4: arith.mulf %{{.*}} : vector<16xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29] : vector<16xf32>, vector<16xf32>
// CHECK-COUNT-2: vector.load %[[KTILE]]
// CHECK-NOT: vector.load %[[KTILE]]
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: vector.shuffle %{{.*}}, %{{.*}} [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: %[[GROUP:.*]] = arith.addf %{{.*}} : vector<16xf32>
// CHECK-NEXT: vector.store %[[GROUP]], %[[GROUPS:.*]][%[[G]], %c0] : memref<4x16xf32>, vector<16xf32>
// CHECK-NEXT: }
// The 4 groups' vectors (lane 4 x key + head) transposed into each head's
// vector of the block's 16 scores.
// CHECK: %[[W0:.*]] = vector.load %[[GROUPS]][%c0, %c0] : memref<4x16xf32>, vector<16xf32>
// CHECK: %[[W1:.*]] = vector.load %[[GROUPS]][%c1, %c0]
// CHECK: %[[W2:.*]] = vector.load %[[GROUPS]][%c2, %c0]
// CHECK: %[[W3:.*]] = vector.load %[[GROUPS]][%c3, %c0]
// CHECK-NEXT: %[[A:.*]] = vector.shuffle %[[W0]], %[[W1]] [0, 4, 8, 12, 16, 20, 24, 28] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: %[[B:.*]] = vector.shuffle %[[W2]], %[[W3]] [0, 4, 8, 12, 16, 20, 24, 28] : vector<16xf32>, vector<16xf32>
// CHECK-NEXT: %[[DOTS:.*]] = vector.shuffle %[[A]], %[[B]] [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xf32>, vector<8xf32>
// CHECK-COUNT-9: vector.shuffle
// -inf from the block's count on (no keys before the row's first here).
// CHECK: %[[C32:.*]] = arith.index_castui %[[COUNT]] : index to i32
// CHECK: %[[CV:.*]] = vector.broadcast %[[C32]] : i32 to vector<16xi32>
// CHECK: %[[SEEN:.*]] = arith.cmpi ugt, %[[CV]], %{{.*}} : vector<16xi32>
// CHECK-NEXT: %[[SCORES:.*]] = arith.select %[[SEEN]], %[[DOTS]], %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK-NOT: math.exp2
// CHECK-NOT: func.call
// The block's V tile (located before the softmax: its rows are the P V
// loop's).
// CHECK: %[[VTILE:.*]] = kvcache.tile %arg2[%[[SEQ]], %[[FIRST]], %[[KV]]]
// CHECK: vector.reduction <maximumf>, %[[SCORES]] : vector<16xf32> into f32
// CHECK: math.roundeven %{{.*}} : vector<16xf32>
// CHECK: arith.shli %{{.*}}, %{{.*}} : vector<16xi32>
// CHECK: vector.store %{{.*}}, %[[WEIGHTS]][%c0, %c0] : memref<4x16xf32>, vector<16xf32>
// CHECK-COUNT-3: vector.store %{{.*}}, %[[WEIGHTS]][%{{.*}}, %c0] : memref<4x16xf32>, vector<16xf32>
// P V per 16 value elements: each V chunk loaded once for the 4 heads.
// CHECK: scf.for %[[E:.*]] = %c0 to %c64 step %c16 {
// CHECK: vector.load %[[OUTPUT]][%[[PASS]], %[[E]]] : memref<?x64xf32>, vector<16xf32>
// CHECK-COUNT-3: vector.load %[[OUTPUT]][%{{.*}}, %[[E]]] : memref<?x64xf32>, vector<16xf32>
// CHECK: vector.load %[[VTILE]][%{{.*}}, %[[E]]] : {{.*}}, vector<16xf16>
// The even and the odd keys go into two sums per head (two chains of
// fused multiply-adds, not one of 16), added before the store.
// CHECK: memref.load %[[WEIGHTS]][%c0, %c0] : memref<4x16xf32>
// CHECK: vector.fma %{{.*}} : vector<16xf32>
// CHECK-COUNT-3: vector.fma %{{.*}} : vector<16xf32>
// CHECK-COUNT-4: arith.mulf %{{.*}} : vector<16xf32>
// CHECK-COUNT-56: vector.fma %{{.*}} : vector<16xf32>
// CHECK-NOT: vector.fma
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}} : vector<16xf32>
// CHECK-NEXT: vector.store %[[SUM]], %[[OUTPUT]][%[[PASS]], %[[E]]] : memref<?x64xf32>, vector<16xf32>
// CHECK-COUNT-3: vector.store %{{.*}}, %[[OUTPUT]][%{{.*}}, %[[E]]] : memref<?x64xf32>, vector<16xf32>
// The heads' running max and sum back in the buffer.
// CHECK: memref.store %{{.*}}, %[[STATS]][%[[PASS]], %c0] : memref<?x2xf32>
// CHECK-NEXT: memref.store %{{.*}}, %[[STATS]][%[[PASS]], %c1] : memref<?x2xf32>
// CHECK-COUNT-6: memref.store %{{.*}}, %[[STATS]]
// The rows written from the final states, head by head.
// CHECK: scf.for %[[J:.*]] = %c0 to %[[QHEADS]] step %c1 {
// CHECK: vector.load %[[OUTPUT]][%[[J]], %c0] : memref<?x64xf32>, vector<64xf32>
// CHECK: vector.store %{{.*}}, %arg4[%[[ROW]], %{{.*}}, %c0] : memref<?x8x64xf16>, vector<64xf16>
// CHECK: memref.dealloc %[[QROWS]]
// CHECK: memref.dealloc %[[STATS]]
// CHECK: memref.dealloc %[[OUTPUT]]
// CHECK: memref.dealloc %[[WEIGHTS]]
func.func @gqa4(%q: memref<?x8x64xf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x64xf16>, !c, !c, memref<?xi32>, memref<?x8x64xf16>
  return
}

// -----

// A group of 12 heads takes two passes of 6 (the largest divisor of at
// most 8): 6 states per pass, each K and V row read twice per row. At head
// size 24 (not a multiple of 16) the passes are the per-row loop's KeyPass:
// blocks of 8 keys (8-lane partial sums of the 24 elements), then the keys
// left one at a time.
!c = !kvcache.paged_cache<f32, num_heads = 1, head_size = 24, page_size = 16>
// CHECK-LABEL: func.func @group12(
// CHECK: memref.dealloc
// CHECK: } else {
// CHECK: scf.for %[[FIRST:.*]] = %c0 to %c12 step %c6 {
// CHECK-COUNT-6: vector.load %arg0
// CHECK: scf.for {{.*}} step %c8 iter_args({{.*}}) -> (f32, f32, vector<24xf32>, f32, f32, vector<24xf32>, f32, f32, vector<24xf32>, f32, f32, vector<24xf32>, f32, f32, vector<24xf32>, f32, f32, vector<24xf32>) {
// CHECK-NOT: vector.reduction <add>{{.*}}vector<24xf32>
// CHECK-COUNT-48: arith.mulf %{{.*}} : vector<8xf32>
// CHECK-NOT: vector.reduction <add>{{.*}}vector<24xf32>
// CHECK: scf.yield
// CHECK: scf.for {{.*}} step %c1 iter_args(
// CHECK-COUNT-6: vector.reduction <add>
// CHECK: scf.yield
// CHECK-COUNT-6: vector.store
func.func @group12(%q: memref<?x12x24xf32>, %k: !c, %offsets: memref<?xi32>, %out: memref<?x12x24xf32>) {
  kvcache.attention_ragged %q, %k, %k, %offsets, %out {scale = 0.25 : f32}
      : memref<?x12x24xf32>, !c, !c, memref<?xi32>, memref<?x12x24xf32>
  return
}
