// RUN: kvcache-opt %s -convert-kvcache-to-scf -canonicalize -cse | FileCheck %s

// The CPU's row-tile kernel of attention_ragged
// (lib/Conversion/KVCacheToSCF/AttentionTilesToSCF.cpp): a task's tile of up
// to 32 rows of one sequence, times the 4 query heads of the KV head's
// group, is up to 128 lanes, in vectors of 16; the steps run over the
// vectors the tile's rows fill. Its buffers: q^T (scaled, transposed 16
// lanes x 16 elements at a time by shuffles), the block's K and V rows as
// f32, the block's weights, the lanes' rescale factors, output rows,
// softmax states and key ranges. Per block of 16 keys from the first row's
// first key to the last row's end: the rows loaded once (not prefetched),
// converted to f32, rows past the end zero; per vector of
// lanes the 16 keys' scores in registers (per head element one vector of
// q^T and one broadcast K element per key), -inf only in blocks some row
// does not see whole, the online softmax; P V per 4 lanes
// and 64 head elements (16 accumulators), each V vector loaded once for 4
// broadcast weights. Then out and the buffers freed; smaller tiles take
// the per-row loop.

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @gqa4(
// CHECK: scf.parallel
// CHECK: %[[ROWS:.*]] = arith.minui %{{.*}}, %c32 : index
// CHECK: %[[LANES:.*]] = arith.muli %[[ROWS]], %c4 : index
// CHECK: %[[WORTH:.*]] = arith.cmpi uge, %[[LANES]], %c16 : index
// CHECK: scf.if %[[WORTH]] {
// CHECK: %[[VECTORS:.*]] = arith.ceildivui %[[LANES]], %c16 : index
// CHECK: %[[QT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x128xf32>
// CHECK: %[[KB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x64xf32>
// CHECK: %[[VB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x64xf32>
// CHECK: %[[WB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x128xf32>
// CHECK: %[[RB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128xf32>
// CHECK: %[[OB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128x64xf32>
// CHECK: %[[ST:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x128xf32>
// CHECK: %[[KR:.*]] = memref.alloc() {alignment = 64 : i64} : memref<3x128xi32>
// CHECK: %[[USED:.*]] = arith.muli %[[VECTORS]], %c16 : index
// q^T, 16 lanes x 16 head elements at a time: 4 stages of 16 shuffles.
// CHECK: scf.for %[[V:.*]] = %c0 to %[[USED]] step %c16 {
// CHECK: scf.for %[[D:.*]] = %c0 to %c64 step %c16 {
// CHECK-COUNT-16: vector.load %arg0[%{{.*}}, %{{.*}}, %[[D]]] : memref<?x8x64xf16>, vector<16xf16>
// CHECK-COUNT-64: vector.shuffle
// CHECK-COUNT-16: vector.store %{{.*}}, %[[QT]][%{{.*}}, %[[V]]] : memref<64x128xf32>, vector<16xf32>
// CHECK: scf.for %[[LANE:.*]] = %[[V]] to %{{.*}} step %c1 {
// CHECK: memref.store %{{.*}}, %[[KR]][%c0, %[[LANE]]] : memref<3x128xi32>
// CHECK: memref.store %{{.*}}, %[[KR]][%c1, %[[LANE]]] : memref<3x128xi32>
// CHECK: memref.store %{{.*}}, %[[ST]][%c0, %[[LANE]]] : memref<2x128xf32>
// CHECK: memref.store %{{.*}}, %[[ST]][%c1, %[[LANE]]] : memref<2x128xf32>
// CHECK: vector.store %{{.*}}, %[[OB]][%[[LANE]], %c0] : memref<128x64xf32>, vector<64xf32>
// CHECK: scf.for %[[FIRST:.*]] = %c0 to %[[END:.*]] step %c16 {
// CHECK: %[[LEFT:.*]] = arith.subi %[[END]], %[[FIRST]] : index
// CHECK: %[[COUNT:.*]] = arith.minui %[[LEFT]], %c16 : index
// CHECK: scf.for %[[J:.*]] = %c0 to %[[COUNT]] step %c1 {
// CHECK-NOT: memref.prefetch
// CHECK: kvcache.lookup %arg1
// CHECK: kvcache.page_load %arg1{{.*}} -> vector<64xf16>
// CHECK: vector.store %{{.*}}, %[[KB]][%[[J]], %c0] : memref<16x64xf32>, vector<64xf32>
// CHECK: kvcache.lookup %arg2
// CHECK: vector.store %{{.*}}, %[[VB]][%[[J]], %c0] : memref<16x64xf32>, vector<64xf32>
// CHECK: scf.for %[[J:.*]] = %[[COUNT]] to %c16 step %c1 {
// CHECK: vector.store %{{.*}}, %[[KB]][%[[J]], %c0]
// CHECK: vector.store %{{.*}}, %[[VB]][%[[J]], %c0]
// The mask: only where a row sees part of the block.
// CHECK: %[[BEFORE:.*]] = arith.cmpi ult, %[[FIRST]], %{{.*}} : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[FIRST]], %c16 : index
// CHECK: %[[AFTER:.*]] = arith.cmpi ult, %{{.*}}, %[[NEXT]] : index
// CHECK: %[[CROSSES:.*]] = arith.ori %[[BEFORE]], %[[AFTER]] : i1
// Scores: 16 keys x 16 lanes in registers.
// CHECK: scf.for %[[V:.*]] = %c0 to %[[USED]] step %c16 {
// CHECK: %[[S:.*]]:16 = scf.for %[[D:.*]] = %c0 to %c64 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK: vector.load %[[QT]][%[[D]], %[[V]]] : memref<64x128xf32>, vector<16xf32>
// CHECK-COUNT-16: vector.fma
// CHECK-NEXT: scf.yield
// CHECK: %[[MASKED:.*]]:16 = scf.if %[[CROSSES]] -> (
// CHECK: vector.load %[[KR]][%c0, %[[V]]] : memref<3x128xi32>, vector<16xi32>
// CHECK: vector.load %[[KR]][%c1, %[[V]]] : memref<3x128xi32>, vector<16xi32>
// CHECK-COUNT-16: arith.select %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[S]]#0, %[[S]]#1,
// The online softmax: the max tree and the rescale from registers, then
// the scores stored and turned into weights in a loop (one copy of 2^x).
// CHECK: vector.load %[[ST]][%c0, %[[V]]]
// CHECK-COUNT-16: arith.maximumf %{{.*}} : vector<16xf32>
// CHECK: math.roundeven %{{.*}} : vector<16xf32>
// CHECK-COUNT-16: vector.store %{{.*}}, %[[WB]][%c{{[0-9]+}}, %[[V]]] : memref<16x128xf32>, vector<16xf32>
// CHECK: scf.for %[[J:.*]] = %c0 to %c16 step %c1 iter_args(%{{.*}}) -> (vector<16xf32>) {
// CHECK: vector.load %[[WB]][%[[J]], %[[V]]]
// CHECK: math.roundeven %{{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}}, %[[WB]][%[[J]], %[[V]]]
// CHECK: vector.store %{{.*}}, %[[RB]][%[[V]]]
// CHECK: vector.store %{{.*}}, %[[ST]][%c0, %[[V]]]
// CHECK: vector.store %{{.*}}, %[[ST]][%c1, %[[V]]]
// P V: 4 lanes x 4 vectors of 16 head elements, rescaled once per block.
// CHECK: %[[GROUPS:.*]] = arith.ceildivui %[[LANES]], %c4 : index
// CHECK: scf.for %{{.*}} = %c0 to %[[GROUPS]] step %c1 {
// CHECK-COUNT-16: arith.mulf %{{.*}} : vector<16xf32>
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-4: vector.load %[[VB]][%[[K]], %c{{[0-9]+}}] : memref<16x64xf32>, vector<16xf32>
// CHECK: memref.load %[[WB]][%[[K]],
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %[[WB]][%[[K]],
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %[[WB]][%[[K]],
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %[[WB]][%[[K]],
// CHECK-COUNT-4: vector.fma
// CHECK-NEXT: scf.yield
// CHECK-COUNT-16: vector.store %{{.*}}, %[[OB]]
// Out: the lanes of the tile's rows.
// CHECK: scf.for %[[LANE:.*]] = %c0 to %[[LANES]] step %c1 {
// CHECK: vector.load %[[OB]][%[[LANE]], %c0] : memref<128x64xf32>, vector<64xf32>
// CHECK: vector.store %{{.*}}, %arg4[{{.*}}] : memref<?x8x64xf16>, vector<64xf16>
// CHECK-COUNT-8: memref.dealloc
// CHECK: } else {
func.func @gqa4(%q: memref<?x8x64xf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x64xf16>, !c, !c, memref<?xi32>, memref<?x8x64xf16>
  return
}

// A soft cap takes the row-tile kernel too: per block, softcap *
// tanh(score / softcap) on the lanes' vectors before the mask, tanh as
// MLIR's f32 polynomial (no math.tanh on vectors is left, so no libm call
// per lane), then log2(e) once; the per-row loop (decode rows) keeps its
// scalar math.tanh.
// CHECK-LABEL: func.func @softcap(
// CHECK: scf.if %{{.*}} {
// CHECK-NOT: math.tanh {{.*}}vector
// CHECK: arith.divf %{{.*}} : vector<16xf32>
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK: arith.mulf %{{.*}} : vector<16xf32>
// CHECK-NOT: math.tanh {{.*}}vector
// CHECK: } else {
// CHECK: math.tanh %{{.*}} : f32
func.func @softcap(%q: memref<?x8x64xf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32, softcap = 30.0 : f32}
      : memref<?x8x64xf16>, !c, !c, memref<?xi32>, memref<?x8x64xf16>
  return
}
