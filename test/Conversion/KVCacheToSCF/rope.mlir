// RUN: kvcache-opt %s -convert-kvcache-to-scf=vector-bytes=8 -cse | FileCheck %s
// RUN: kvcache-opt %s "-convert-kvcache-to-scf=vector-bytes=8 checked=true" -cse | FileCheck %s --check-prefix=CHECKED

// rope_ragged (docs/Contract.md 3.3) on the CPU: sequences in parallel, one
// lookup per row at its storage position cache_length + r - row_offsets[b],
// the table row at that position or at positions[r]; then, for each chunk
// of W pairs (W = 4: the largest power of two dividing the rotary offset
// and R/2 within vector-bytes), the chunk's cos and sin read from the table
// once and applied to every query head and every key head: x cos - y sin
// and x sin + y cos in f32 (no fused multiply-add, as PyTorch computes it),
// rounded once. Interleaved pairs go in chunks of W elements (W/2 whole
// pairs) in place: each lane times its cos, plus its partner (the lanes
// swapped within each pair) times its sin, negated in the pairs' first
// lanes: x cos + y (-sin) = x cos - y sin and y cos + x sin, the same
// products and sums, so no deinterleaving.

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 16, page_size = 16>

// CHECK-LABEL: func.func @interleaved_in_place
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<?x4x16xf16>, %[[K:[a-z0-9_]+]]: {{.*}}, %[[OFFSETS:[a-z0-9_]+]]: memref<?xi32>, %[[TABLE:[a-z0-9_]+]]: memref<?x8xf32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK: scf.parallel (%[[SEQ:[a-z0-9_]+]]) =
// CHECK: %[[FIRST:[a-z0-9_]+]] = arith.index_castui
// CHECK: %[[LENGTH:[a-z0-9_]+]] = kvcache.cache_length %[[K]][%[[SEQ]]] {serves_write}
// CHECK-NEXT: scf.for %[[ROW:[a-z0-9_]+]] = %[[FIRST]] to %{{.*}} step %[[C1]] {
// CHECK-NEXT: %[[DELTA:[a-z0-9_]+]] = arith.subi %[[ROW]], %[[FIRST]]
// CHECK-NEXT: %[[TOKEN:[a-z0-9_]+]] = arith.addi %[[LENGTH]], %[[DELTA]]
// CHECK-NEXT: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[K]][%[[SEQ]], %[[TOKEN]]]
// CHECK-NOT: kvcache.lookup
// In place: nothing to copy.
// CHECK-NOT: vector.store
// CHECK: %[[C4:[a-z0-9_]+]] = arith.constant 4 : index
// CHECK-NEXT: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// CHECK-NEXT: scf.for %[[J:[a-z0-9_]+]] = %[[C0]] to %[[C8]] step %[[C4]] {
// CHECK-NEXT: %[[T:[a-z0-9_]+]] = vector.load %[[TABLE]][%[[TOKEN]], %[[J]]] {alignment = 16 : i64} : memref<?x8xf32>, vector<4xf32>
// CHECK-NEXT: %[[NEG:[a-z0-9_]+]] = arith.negf %[[T]] : vector<4xf32>
// CHECK-NEXT: %[[COS:[a-z0-9_]+]] = vector.shuffle %[[T]], %[[T]] [0, 0, 2, 2]
// CHECK-NEXT: %[[SIN:[a-z0-9_]+]] = vector.shuffle %[[T]], %[[NEG]] [5, 1, 7, 3]
// Query heads: pairs (8 + 2i, 8 + 2i + 1), the chunk at 8 + j.
// CHECK-NEXT: %[[AT:[a-z0-9_]+]] = arith.addi %[[C8]], %[[J]]
// CHECK-NEXT: scf.for %[[HEAD:[a-z0-9_]+]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT: %[[A:[a-z0-9_]+]] = vector.load %[[Q]][%[[ROW]], %[[HEAD]], %[[AT]]] {alignment = 8 : i64} : memref<?x4x16xf16>, vector<4xf16>
// CHECK-NEXT: %[[AF:[a-z0-9_]+]] = arith.extf %[[A]] : vector<4xf16> to vector<4xf32>
// CHECK-NEXT: %[[PARTNER:[a-z0-9_]+]] = vector.shuffle %[[AF]], %[[AF]] [1, 0, 3, 2]
// CHECK-NEXT: %[[OWN_COS:[a-z0-9_]+]] = arith.mulf %[[AF]], %[[COS]] : vector<4xf32>
// CHECK-NEXT: %[[PARTNER_SIN:[a-z0-9_]+]] = arith.mulf %[[PARTNER]], %[[SIN]] : vector<4xf32>
// CHECK-NEXT: %[[R:[a-z0-9_]+]] = arith.addf %[[OWN_COS]], %[[PARTNER_SIN]] : vector<4xf32>
// CHECK-NEXT: %[[R16:[a-z0-9_]+]] = arith.truncf %[[R]] : vector<4xf32> to vector<4xf16>
// CHECK-NEXT: vector.store %[[R16]], %[[Q]][%[[ROW]], %[[HEAD]], %[[AT]]] {alignment = 8 : i64}
// CHECK-NEXT: }
// Key heads of the cached row, in place, with the same cos and sin.
// CHECK: scf.for %[[KHEAD:[a-z0-9_]+]] = %[[C0]] to %{{.*}} step %[[C1]] {
// CHECK: kvcache.page_load %[[K]][%[[PAGE]], %[[SLOT]], %[[KHEAD]], %[[AT]]] {serves_write} : {{.*}} -> vector<4xf16>
// CHECK: arith.mulf %{{.*}}, %[[COS]]
// CHECK: kvcache.page_store %{{.*}}, %[[K]][%[[PAGE]], %[[SLOT]], %[[KHEAD]], %[[AT]]] : {{.*}}, vector<4xf16>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: scf.reduce
// With checked=true, each row's table row is checked against the table's
// rows before it is read (section 5.3).
// CHECKED: rotary position %lld is out of range: max_positions (the rows of cos_sin) is %lld
// CHECKED-LABEL: func.func @interleaved_in_place
// CHECKED: kvcache.cache_length
// CHECKED: %[[TOKEN:[a-z0-9_]+]] = arith.addi
// CHECKED-NEXT: %[[ROWS:[a-z0-9_]+]] = memref.dim %{{.*}}, %{{.*}} : memref<?x8xf32>
// CHECKED-NEXT: arith.cmpi ult, %[[TOKEN]], %[[ROWS]] : index
// CHECKED: vector.load %{{.*}}[%[[TOKEN]], %{{.*}}] {alignment = 16 : i64} : memref<?x8xf32>
func.func @interleaved_in_place(%q: memref<?x4x16xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x8xf32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 8 : i64, style = "interleaved"}
      : memref<?x4x16xf16>, !c, memref<?xi32>, memref<?x8xf32>, memref<?x4x16xf16>
  return
}

// Half pairs (8 + i, 12 + i) need no shuffle of the rows; q_out receives
// the 8 elements of each head that do not rotate, as they are; the table
// row is positions[r].

// CHECK-LABEL: func.func @half_positions
// CHECK-SAME: (%[[Q:[a-z0-9_]+]]: memref<?x4x16xf16>, %[[K:[a-z0-9_]+]]: {{.*}}, %[[OFFSETS:[a-z0-9_]+]]: memref<?xi32>, %[[TABLE:[a-z0-9_]+]]: memref<?x8xf32>, %[[OUT:[a-z0-9_]+]]: memref<?x4x16xf16>, %[[POS:[a-z0-9_]+]]: memref<?xi32>)
// CHECK: scf.for %[[ROW:[a-z0-9_]+]] =
// CHECK: %[[P32:[a-z0-9_]+]] = memref.load %[[POS]][%[[ROW]]] : memref<?xi32>
// CHECK-NEXT: %[[P:[a-z0-9_]+]] = arith.index_castui %[[P32]] : i32 to index
// CHECK-NEXT: kvcache.lookup
// CHECK: scf.for %[[HEAD:[a-z0-9_]+]] =
// CHECK: scf.for %[[E:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: %[[RAW:[a-z0-9_]+]] = vector.load %[[Q]][%[[ROW]], %[[HEAD]], %[[E]]] {alignment = 8 : i64} : memref<?x4x16xf16>, vector<4xf16>
// CHECK-NEXT: vector.store %[[RAW]], %[[OUT]][%[[ROW]], %[[HEAD]], %[[E]]] {alignment = 8 : i64} : memref<?x4x16xf16>, vector<4xf16>
// CHECK: vector.load %[[TABLE]][%[[P]], %{{.*}}]
// CHECK: vector.load %[[TABLE]][%[[P]], %{{.*}}]
// CHECK: vector.load %[[Q]]
// CHECK-NEXT: arith.extf
// CHECK-NEXT: vector.load %[[Q]]
// CHECK-NEXT: arith.extf
// CHECK-NEXT: arith.mulf
// CHECK-NOT: vector.shuffle
// CHECK: vector.store %{{.*}}, %[[OUT]]
// CHECK: vector.store %{{.*}}, %[[OUT]]
func.func @half_positions(%q: memref<?x4x16xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x8xf32>,
                          %out: memref<?x4x16xf16>, %p: memref<?xi32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %out positions(%p) {rotary_dims = 8 : i64, style = "half"}
      : memref<?x4x16xf16>, !c, memref<?xi32>, memref<?x8xf32>, memref<?x4x16xf16>, memref<?xi32>
  return
}

// A per-layer scale: the keys are read dequantized (a float page_load),
// rotated, and quantized again with the layer's scale (one division).

// CHECK-LABEL: func.func @tensor_scale
// CHECK: %[[SCALE:[a-z0-9_]+]] = kvcache.page_load_scale
// CHECK: kvcache.page_load {{.*}} -> vector<4xf32>
// CHECK: %[[DIVISOR:[a-z0-9_]+]] = vector.broadcast %[[SCALE]] : f32 to vector<4xf32>
// CHECK: arith.divf %{{.*}}, %[[DIVISOR]] : vector<4xf32>
// CHECK: kvcache.page_store {{.*}} vector<4xf8E4M3FN>
func.func @tensor_scale(%q: memref<?x4x16xf16>, %k: !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 16, page_size = 16, scales = tensor>,
                        %o: memref<?xi32>, %cs: memref<?x8xf32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 8 : i64, style = "half"}
      : memref<?x4x16xf16>, !kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 16, page_size = 16, scales = tensor>, memref<?xi32>, memref<?x8xf32>, memref<?x4x16xf16>
  return
}

// Chunks claim their 8 bytes of alignment only where the strides and the
// offset keep them at multiples of their width; here q's are dynamic: an
// element's.

// CHECK-LABEL: func.func @dynamic_strides
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<?x8xf32>, vector<4xf32>
// CHECK: vector.load %{{.*}} {alignment = 2 : i64} : memref<?x4x16xf16, strided<[?, ?, 1], offset: ?>>, vector<4xf16>
func.func @dynamic_strides(%q: memref<?x4x16xf16, strided<[?, ?, 1], offset: ?>>, %k: !c, %o: memref<?xi32>,
                           %cs: memref<?x8xf32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 8 : i64, style = "half"}
      : memref<?x4x16xf16, strided<[?, ?, 1], offset: ?>>, !c, memref<?xi32>, memref<?x8xf32>, memref<?x4x16xf16, strided<[?, ?, 1], offset: ?>>
  return
}
