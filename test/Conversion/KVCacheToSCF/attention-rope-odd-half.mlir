// RUN: kvcache-opt %s -convert-kvcache-to-scf | FileCheck %s

// The rope clause on q with a head of 18 elements, all rotary: 9 pairs, an
// odd number. Interleaved pairs cannot go in pieces of 9 elements (a piece
// would cut a pair): the pieces are the largest power of two that divides
// the head's parts, here single elements. Found by the fuzzer: pieces of 9
// had built a vector.shuffle with a lane past its operands.

!c = !kvcache.paged_cache<f32, num_heads = 2, head_size = 18, page_size = 18>

// CHECK-LABEL: func.func @interleaved(
// CHECK-NOT: vector<9xf32>
// CHECK: scf.parallel
// CHECK-NOT: vector<9xf32>
// CHECK: return
func.func @interleaved(%q: memref<?x4x18xf32>, %k: !c, %v: !c, %o: memref<?xi32>, %out: memref<?x4x18xf32>, %cs: memref<?x18xf32>) {
  kvcache.attention_ragged %q, %k, %v, %o, %out rope(%cs) {rotary_dims = 18 : i64, scale = 0.125 : f32, style = "interleaved"}
      : memref<?x4x18xf32>, !c, !c, memref<?xi32>, memref<?x4x18xf32>, memref<?x18xf32>
  return
}
