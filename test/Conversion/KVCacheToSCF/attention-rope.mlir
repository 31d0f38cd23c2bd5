// RUN: kvcache-opt %s -convert-kvcache-to-scf -cse | FileCheck %s

// The rope clause on q (docs/Contract.md 3.3) on the CPU, where the kernels
// load q: the row-tile kernel rotates each lane's chunk as it packs q^T,
// the per-row loop each head's row before the scale; interleaved pairs in
// pieces of 8 (R / 2: whole pairs, one table load each, own * cos +
// partner * -+sin in f32, no fused multiply-add), at the row's storage
// position (cache_length + its index in the sequence).

!c = !kvcache.paged_cache<f32, num_heads = 2, head_size = 16, page_size = 16>

// CHECK-LABEL: func.func @interleaved(
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: memref<?x4x16xf32>, {{.*}}, %[[TABLE:[a-z0-9_]+]]: memref<?x16xf32>)
// The row-tile kernel's packing.
// CHECK: %[[CHUNK:[a-z0-9_]+]] = vector.load %[[Q]]{{.*}} : memref<?x4x16xf32>, vector<16xf32>
// CHECK: vector.extract_strided_slice %[[CHUNK]] {offsets = [0], sizes = [8], strides = [1]}
// CHECK: vector.load %[[TABLE]]{{.*}} : memref<?x16xf32>, vector<8xf32>
// The per-row loop.
// CHECK: %[[ROW:[a-z0-9_]+]] = vector.load %[[Q]][%{{.*}}, %{{.*}}, %c0] : memref<?x4x16xf32>, vector<16xf32>
// CHECK: %[[LOW:[a-z0-9_]+]] = vector.extract_strided_slice %[[ROW]] {offsets = [0], sizes = [8], strides = [1]}
// CHECK: %[[PAIRS:[a-z0-9_]+]] = vector.load %[[TABLE]][%[[POSITION:[a-z0-9_]+]], %c0] {{.*}} : memref<?x16xf32>, vector<8xf32>
// CHECK: %[[NEGATED:[a-z0-9_]+]] = arith.negf %[[PAIRS]]
// CHECK: %[[COS:[a-z0-9_]+]] = vector.shuffle %[[PAIRS]], %[[PAIRS]] [0, 0, 2, 2, 4, 4, 6, 6]
// CHECK: %[[SIN:[a-z0-9_]+]] = vector.shuffle %[[PAIRS]], %[[NEGATED]] [9, 1, 11, 3, 13, 5, 15, 7]
// CHECK: %[[PARTNER:[a-z0-9_]+]] = vector.shuffle %[[LOW]], %[[LOW]] [1, 0, 3, 2, 5, 4, 7, 6]
// CHECK: %[[OWN_COS:[a-z0-9_]+]] = arith.mulf %[[LOW]], %[[COS]]
// CHECK: %[[PARTNER_SIN:[a-z0-9_]+]] = arith.mulf %[[PARTNER]], %[[SIN]]
// CHECK: %[[ROTATED_LOW:[a-z0-9_]+]] = arith.addf %[[OWN_COS]], %[[PARTNER_SIN]]
// CHECK: %[[WITH_LOW:[a-z0-9_]+]] = vector.insert_strided_slice %[[ROTATED_LOW]], %[[ROW]] {offsets = [0], strides = [1]}
// CHECK: vector.load %[[TABLE]][%[[POSITION]], %c8]
// CHECK: %[[ROTATED:[a-z0-9_]+]] = vector.insert_strided_slice %{{.*}}, %[[WITH_LOW]] {offsets = [8], strides = [1]}
// CHECK: arith.mulf %[[ROTATED]], %{{.*}} : vector<16xf32>
func.func @interleaved(%q: memref<?x4x16xf32>, %k: !c, %v: !c, %o: memref<?xi32>, %out: memref<?x4x16xf32>, %cs: memref<?x16xf32>) {
  kvcache.attention_ragged %q, %k, %v, %o, %out rope(%cs) {rotary_dims = 16 : i64, scale = 0.125 : f32, style = "interleaved"}
      : memref<?x4x16xf32>, !c, !c, memref<?xi32>, memref<?x4x16xf32>, memref<?x16xf32>
  return
}
