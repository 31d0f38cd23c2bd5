// RUN: kvcache-opt %s -convert-kvcache-to-scf -canonicalize -cse | FileCheck %s

// The CPU's row-tile kernel of attention_ragged
// (lib/Conversion/KVCacheToSCF/AttentionTilesToSCF.cpp): a task's tile of up
// to 16 rows of one sequence, times the 4 query heads of KV head's group,
// is 64 lanes of f32 vectors (4 x 16). Its buffers: q^T (scaled, packed
// once), the block's K and V rows as f32, the block's scores, the lanes'
// rescale factors, output rows and softmax states. Per block of 16 keys
// from the first row's first key to the last row's end: the rows loaded
// once (the next block's prefetched), converted to f32, rows past the end
// zero; the scores 4 keys at a time, per head element 4 vectors of q^T and
// one broadcast K element per key (16 fused multiply-adds on accumulators
// in registers); -inf only in blocks some row does not see whole; the
// online softmax per vector of lanes; P V per 4 lanes and 64 head elements
// (16 accumulators), each V vector loaded once for 4 broadcast weights.
// Then out and the buffers freed; smaller tiles take the per-row loop.

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @gqa4(
// CHECK: scf.parallel
// CHECK: %[[ROWS:.*]] = arith.minui %{{.*}}, %c16 : index
// CHECK: %[[LANES:.*]] = arith.muli %[[ROWS]], %c4 : index
// CHECK: %[[WORTH:.*]] = arith.cmpi uge, %[[LANES]], %c16 : index
// CHECK: scf.if %[[WORTH]] {
// CHECK: %[[QT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: %[[KB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x64xf32>
// CHECK: %[[VB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x64xf32>
// CHECK: %[[SB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x64xf32>
// CHECK: %[[RB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
// CHECK: %[[OB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: %[[ST:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x64xf32>
// q^T: lane l holds row min(l / 4, rows - 1), head 4 * kv + l % 4.
// CHECK: scf.for %[[LANE:.*]] = %c0 to %c64 step %c1 {
// CHECK: arith.divui %[[LANE]], %c4 : index
// CHECK: arith.remui %[[LANE]], %c4 : index
// CHECK: vector.load %arg0[{{.*}}] : memref<?x8x64xf16>, vector<64xf16>
// CHECK: memref.store %{{.*}}, %[[QT]][%c0, %[[LANE]]] : memref<64x64xf32>
// CHECK: memref.store %{{.*}}, %[[QT]][%c63, %[[LANE]]] : memref<64x64xf32>
// CHECK: scf.for %[[FIRST:.*]] = %c0 to %[[END:.*]] step %c16 {
// CHECK: %[[LEFT:.*]] = arith.subi %[[END]], %[[FIRST]] : index
// CHECK: %[[COUNT:.*]] = arith.minui %[[LEFT]], %c16 : index
// CHECK: scf.for %[[J:.*]] = %c0 to %[[COUNT]] step %c1 {
// CHECK: memref.prefetch
// CHECK: kvcache.lookup %arg1
// CHECK: kvcache.page_load %arg1{{.*}} -> vector<64xf16>
// CHECK: vector.store %{{.*}}, %[[KB]][%[[J]], %c0] : memref<16x64xf32>, vector<64xf32>
// CHECK: kvcache.lookup %arg2
// CHECK: vector.store %{{.*}}, %[[VB]][%[[J]], %c0] : memref<16x64xf32>, vector<64xf32>
// CHECK: scf.for %[[J:.*]] = %[[COUNT]] to %c16 step %c1 {
// CHECK: vector.store %{{.*}}, %[[KB]][%[[J]], %c0]
// CHECK: vector.store %{{.*}}, %[[VB]][%[[J]], %c0]
// CHECK: scf.for %[[KEY:.*]] = %c0 to %c16 step %c4 {
// CHECK: scf.for %[[D:.*]] = %c0 to %c64 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-4: vector.load %[[QT]][%[[D]], %c{{[0-9]+}}] : memref<64x64xf32>, vector<16xf32>
// CHECK: memref.load %[[KB]][%[[KEY]], %[[D]]]
// CHECK: vector.broadcast
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %[[KB]]
// CHECK: vector.broadcast
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %[[KB]]
// CHECK: vector.broadcast
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %[[KB]]
// CHECK: vector.broadcast
// CHECK-COUNT-4: vector.fma
// CHECK-NEXT: scf.yield
// CHECK-COUNT-16: vector.store %{{.*}}, %[[SB]]
// The mask: only where a row sees part of the block.
// CHECK: %[[BEFORE:.*]] = arith.cmpi ult, %[[FIRST]], %{{.*}} : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[FIRST]], %c16 : index
// CHECK: %[[AFTER:.*]] = arith.cmpi ult, %{{.*}}, %[[NEXT]] : index
// CHECK: %[[CROSSES:.*]] = arith.ori %[[BEFORE]], %[[AFTER]] : i1
// CHECK: scf.if %[[CROSSES]] {
// CHECK: scf.for
// CHECK-COUNT-4: arith.select %{{.*}} : vector<16xi1>, vector<16xf32>
// The online softmax, per vector of 16 lanes.
// CHECK: scf.for %[[V:.*]] = %c0 to %c64 step %c16 {
// CHECK: scf.for {{.*}} -> (vector<16xf32>) {
// CHECK: arith.maximumf
// CHECK: math.roundeven %{{.*}} : vector<16xf32>
// CHECK: scf.for {{.*}} -> (vector<16xf32>) {
// CHECK: math.roundeven %{{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}}, %[[SB]]
// CHECK: vector.store %{{.*}}, %[[RB]][%[[V]]]
// P V: 4 lanes x 4 vectors of 16 head elements, rescaled once per block.
// CHECK: %[[GROUPS:.*]] = arith.ceildivui %[[LANES]], %c4 : index
// CHECK: scf.for %{{.*}} = %c0 to %[[GROUPS]] step %c1 {
// CHECK-COUNT-16: arith.mulf %{{.*}} : vector<16xf32>
// CHECK: scf.for %[[K:.*]] = %c0 to %c16 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-4: vector.load %[[VB]][%[[K]], %c{{[0-9]+}}] : memref<16x64xf32>, vector<16xf32>
// CHECK: memref.load %[[SB]][%[[K]],
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %[[SB]][%[[K]],
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %[[SB]][%[[K]],
// CHECK-COUNT-4: vector.fma
// CHECK: memref.load %[[SB]][%[[K]],
// CHECK-COUNT-4: vector.fma
// CHECK-NEXT: scf.yield
// CHECK-COUNT-16: vector.store %{{.*}}, %[[OB]]
// Out: the lanes of the tile's rows.
// CHECK: scf.for %[[LANE:.*]] = %c0 to %[[LANES]] step %c1 {
// CHECK: vector.load %[[OB]][%[[LANE]], %c0] : memref<64x64xf32>, vector<64xf32>
// CHECK: vector.store %{{.*}}, %arg4[{{.*}}] : memref<?x8x64xf16>, vector<64xf16>
// CHECK-COUNT-7: memref.dealloc
// CHECK: } else {
func.func @gqa4(%q: memref<?x8x64xf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x64xf16>, !c, !c, memref<?xi32>, memref<?x8x64xf16>
  return
}
