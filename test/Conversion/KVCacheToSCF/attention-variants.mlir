// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf -canonicalize | FileCheck %s

// attention_ragged's clauses on the CPU (docs/Contract.md 3.3). With a
// window of 64 the key loop of the row at position p runs over
// [max(p + 1, 64) - 64, p + 1) only (keys no row sees are never read); a
// sink starts the softmax state at its logit (log2 domain, weight 1); each
// score is (scale * q).k in natural units, soft-capped c * tanh(s / c), plus
// slope * (key - p) (one fused multiply-add), then moved to the log2 domain;
// lse receives
// ln(2) * (max + log2(sum)).

// CHECK-LABEL: func.func @every_clause(
// The per-row loop, which a tile of fewer than 16 lanes takes (the row-tile
// kernel, attention-tiles.mlir, frees its 8 buffers at the end of each of
// the task's KV heads, before the else).
// CHECK-COUNT-8: memref.dealloc
// CHECK-NEXT: }
// CHECK-NEXT: } else {
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1 {
// CHECK: %[[P:.*]] = arith.addi %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK-NEXT: %[[END:.*]] = arith.addi %[[P]], %c1 : index
// CHECK-NEXT: %[[MAX:.*]] = arith.maxui %[[END]], %c64 : index
// CHECK-NEXT: %[[BEGIN:.*]] = arith.subi %[[MAX]], %c64 : index
// CHECK: %[[SLOPE:.*]] = memref.load %arg5[
// CHECK: %[[SINK:.*]] = memref.load %arg4[
// CHECK: %[[SINK2:.*]] = arith.mulf %[[SINK]], %[[LOG2E:.*]] : f32
// The keys in blocks of 8 from the window's start, then one at a time.
// CHECK: scf.for %[[FIRST:.*]] = %[[BEGIN]] to %[[BLOCKED:.*]] step %c8 iter_args(%{{.*}} = %[[SINK2]], %{{.*}} = %[[ONE:.*]], %{{.*}} = %{{.*}}
// The block's 8 dot products (one vector), then each score transformed.
// CHECK-NOT: vector.reduction <add>
// CHECK: %[[S:.*]] = vector.extract %{{.*}}[0] : f32 from vector<8xf32>
// CHECK: %[[X:.*]] = arith.divf %[[S]], %[[CAP:.*]] : f32
// CHECK: %[[T:.*]] = math.tanh %[[X]] : f32
// CHECK: %[[CAPPED:.*]] = arith.mulf %[[T]], %[[CAP]] : f32
// CHECK: %[[D:.*]] = arith.subi %[[FIRST]], %[[P]] : index
// CHECK: %[[DI:.*]] = arith.index_cast %[[D]] : index to i32
// CHECK: %[[DF:.*]] = arith.sitofp %[[DI]] : i32 to f32
// CHECK: %[[B:.*]] = llvm.intr.fmuladd(%[[SLOPE]], %[[DF]], %[[CAPPED]])
// CHECK: arith.mulf %[[B]], %[[LOG2E]] : f32
// CHECK: scf.yield
// CHECK: %[[LOG:.*]] = math.log2 %{{.*}}#1 : f32
// CHECK: %[[LSE:.*]] = arith.addf %{{.*}}#0, %[[LOG]] : f32
// CHECK: %[[LN:.*]] = arith.mulf %[[LSE]], %{{.*}} : f32
// CHECK: memref.store %[[LN]], %arg6[
!c = !kvcache.paged_cache<f32, num_heads = 2, head_size = 8, page_size = 16>
func.func @every_clause(%q: memref<?x4x8xf32>, %k: !c, %o: memref<?xi32>, %out: memref<?x4x8xf32>, %sinks: memref<4xf32>, %slopes: memref<4xf32>, %lse: memref<?x4xf32>) {
  kvcache.attention_ragged %q, %k, %k, %o, %out sinks(%sinks) alibi(%slopes) lse(%lse) {scale = 0.5 : f32, softcap = 30.0 : f32, window = 64 : i64}
      : memref<?x4x8xf32>, !c, !c, memref<?xi32>, memref<?x4x8xf32>, memref<4xf32>, memref<4xf32>, memref<?x4xf32>
  return
}

// -----

// chunk = 32: keys [p / 32 * 32, p + 1). noncausal: keys [0, cache_length),
// and a row without keys (nor sink) writes 0, not 0 / 0.
// CHECK-LABEL: func.func @chunk_and_noncausal(
// (The per-row loop, after the row-tile kernel.)
// CHECK: memref.dealloc
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1 {
// CHECK: %[[P:.*]] = arith.addi %{{[0-9]+}}, %{{[0-9]+}} : index
// CHECK-NEXT: %[[END:.*]] = arith.addi %[[P]], %c1 : index
// CHECK-NEXT: %[[C:.*]] = arith.divui %[[P]], %c32 : index
// CHECK-NEXT: %[[BEGIN:.*]] = arith.muli %[[C]], %c32 : index
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %{{.*}} step %c8 iter_args
// CHECK: %[[LENGTH:.*]] = kvcache.cache_length
// CHECK: memref.dealloc
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c8 iter_args
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[LENGTH]] step %c1 iter_args
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %{{.*}}#1, %{{.*}} : f32
// CHECK: arith.select %[[EMPTY]], %{{.*}}, %{{.*}} : vector<8xf32>
!c = !kvcache.paged_cache<f32, num_heads = 2, head_size = 8, page_size = 16>
func.func @chunk_and_noncausal(%q: memref<?x4x8xf32>, %k: !c, %o: memref<?xi32>, %out: memref<?x4x8xf32>) {
  kvcache.attention_ragged %q, %k, %k, %o, %out {scale = 0.5 : f32, chunk = 32 : i64}
      : memref<?x4x8xf32>, !c, !c, memref<?xi32>, memref<?x4x8xf32>
  kvcache.attention_ragged %q, %k, %k, %o, %out {scale = 0.5 : f32, noncausal}
      : memref<?x4x8xf32>, !c, !c, memref<?xi32>, memref<?x4x8xf32>
  return
}

// -----

// merge_states: rows in parallel (scf.parallel); per row and head, the
// merged lse and the two weights, then a loop over the head in chunks (here
// one chunk of 8, the loop folded away), rounded once to f16; out_a read
// before out (the same memref) is written.
// CHECK-LABEL: func.func @merge(
// CHECK: scf.parallel (%[[ROW:.*]]) = (%c0) to (%{{.*}}) step (%c1) {
// CHECK: scf.for %[[HEAD:.*]] = %c0 to %c4 step %c1 {
// CHECK: %[[LA:.*]] = memref.load %arg1[%[[ROW]], %[[HEAD]]]
// CHECK: %[[LB:.*]] = memref.load %arg3[%[[ROW]], %[[HEAD]]]
// CHECK: %[[MAX:.*]] = arith.maximumf %[[LA]], %[[LB]] : f32
// CHECK: math.exp
// CHECK: %[[LOG:.*]] = math.log
// CHECK: %[[A:.*]] = vector.load %arg0[%[[ROW]], %[[HEAD]], %c0] : memref<?x4x8xf16>, vector<8xf16>
// CHECK: %[[B:.*]] = vector.load %arg2[%[[ROW]], %[[HEAD]], %c0]
// CHECK: %[[OUT:.*]] = arith.truncf %{{.*}} : vector<8xf32> to vector<8xf16>
// CHECK: vector.store %[[OUT]], %arg0[%[[ROW]], %[[HEAD]], %c0]
// CHECK: memref.store %{{.*}}, %arg1[%[[ROW]], %[[HEAD]]]
func.func @merge(%a: memref<?x4x8xf16>, %la: memref<?x4xf32>, %b: memref<?x4x8xf16>, %lb: memref<?x4xf32>) {
  kvcache.merge_states %a, %la, %b, %lb, %a, %la : memref<?x4x8xf16>, memref<?x4xf32>, memref<?x4x8xf16>, memref<?x4xf32>, memref<?x4x8xf16>, memref<?x4xf32>
  return
}

// -----

// A head of 200: chunks of 8 (the largest power of two dividing it, at most
// 64), the weights broadcast once per head, outside the chunk loop.
// CHECK-LABEL: func.func @merge200(
// CHECK: scf.for %[[HEAD:.*]] = %c0 to %c2 step %c1 {
// CHECK: %[[WA:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK: %[[WB:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK: scf.for %[[D:.*]] = %c0 to %c200 step %c8 {
// CHECK: %[[A:.*]] = vector.load %arg0[%{{.*}}, %[[HEAD]], %[[D]]] : memref<?x2x200xf32>, vector<8xf32>
// CHECK: %[[B:.*]] = vector.load %arg2[%{{.*}}, %[[HEAD]], %[[D]]] : memref<?x2x200xf32>, vector<8xf32>
// CHECK: %[[XA:.*]] = arith.mulf %[[A]], %[[WA]] : vector<8xf32>
// CHECK: %[[XB:.*]] = arith.mulf %[[B]], %[[WB]] : vector<8xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[XA]], %[[XB]] : vector<8xf32>
// CHECK: vector.store %[[SUM]], %arg4[%{{.*}}, %[[HEAD]], %[[D]]]
func.func @merge200(%a: memref<?x2x200xf32>, %la: memref<?x2xf32>, %b: memref<?x2x200xf32>, %lb: memref<?x2xf32>, %out: memref<?x2x200xf32>) {
  kvcache.merge_states %a, %la, %b, %lb, %out : memref<?x2x200xf32>, memref<?x2xf32>, memref<?x2x200xf32>, memref<?x2xf32>, memref<?x2x200xf32>
  return
}
