// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-gpu -cse | FileCheck %s

// The rope clause on q (docs/Contract.md 3.3) where each attention kernel
// loads q: the table and positions are the kernels' last parameters; the
// CUDA-core kernel rotates its slice of each head (interleaved pairs whole
// in a slice: the table's pairs read once for every head of the pass,
// own * cos + partner * -+sin in f32, no fused multiply-add) before the
// scale; the tensor-core decode kernel rotates each chunk of q it copies
// into shared memory, the query-tile kernel each A fragment pair, at the
// row's rotary position (positions[row]).

!c = !kvcache.paged_cache<f32, num_heads = 2, head_size = 16, page_size = 16>

// CHECK-LABEL: gpu.func @interleaved_attention_ragged(
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: memref<?x4x16xf32>, {{.*}}, %[[TABLE:[a-z0-9_]+]]: memref<?x16xf32>)
// CHECK: kvcache.cache_length
// CHECK-NEXT: arith.subi
// CHECK-NEXT: %[[POSITION:[a-z0-9_]+]] = arith.addi
// CHECK: %[[SLICE:[a-z0-9_]+]] = vector.load %[[Q]]{{.*}} : memref<?x4x16xf32>, vector<4xf32>
// CHECK: %[[PAIRS:[a-z0-9_]+]] = vector.load %[[TABLE]][%[[POSITION]], %{{.*}}] {{.*}} : memref<?x16xf32>, vector<4xf32>
// CHECK: %[[NEGATED:[a-z0-9_]+]] = arith.negf %[[PAIRS]]
// CHECK: %[[COS:[a-z0-9_]+]] = vector.shuffle %[[PAIRS]], %[[PAIRS]] [0, 0, 2, 2]
// CHECK: %[[SIN:[a-z0-9_]+]] = vector.shuffle %[[PAIRS]], %[[NEGATED]] [5, 1, 7, 3]
// CHECK: %[[PARTNER:[a-z0-9_]+]] = vector.shuffle %[[SLICE]], %[[SLICE]] [1, 0, 3, 2]
// CHECK: %[[OWN_COS:[a-z0-9_]+]] = arith.mulf %[[SLICE]], %[[COS]]
// CHECK: %[[PARTNER_SIN:[a-z0-9_]+]] = arith.mulf %[[PARTNER]], %[[SIN]]
// CHECK: %[[ROTATED:[a-z0-9_]+]] = arith.addf %[[OWN_COS]], %[[PARTNER_SIN]]
// CHECK: arith.mulf %[[ROTATED]], %{{.*}} : vector<4xf32>
// The second head of the pass: the same cos and sin.
// CHECK: %[[SLICE2:[a-z0-9_]+]] = vector.load %[[Q]]
// CHECK-NOT: vector.load %[[TABLE]]
// CHECK: arith.mulf %[[SLICE2]], %[[COS]]
// CHECK: gpu.return
func.func @interleaved(%q: memref<?x4x16xf32>, %k: !c, %v: !c, %o: memref<?xi32>, %out: memref<?x4x16xf32>, %cs: memref<?x16xf32>) {
  kvcache.attention_ragged %q, %k, %v, %o, %out rope(%cs) {rotary_dims = 16 : i64, scale = 0.125 : f32, style = "interleaved"}
      : memref<?x4x16xf32>, !c, !c, memref<?xi32>, memref<?x4x16xf32>, memref<?x16xf32>
  return
}

// -----

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>

// CHECK-LABEL: gpu.func @half_attention_ragged(
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: memref<?x8x64xf16>, {{.*}}, %[[TABLE:[a-z0-9_]+]]: memref<?x32xf32>, %[[POSITIONS:[a-z0-9_]+]]: memref<?xi32>)
// CHECK-SAME: workgroup({{.*}}, %[[SHARED_Q:[a-z0-9_]+]] : memref<16x72xf16, #gpu.address_space<workgroup>>)
// CHECK: %[[CHUNK:[a-z0-9_]+]] = vector.load %[[Q]]{{.*}} : memref<?x8x64xf16>, vector<8xf16>
// CHECK: memref.load %[[POSITIONS]]
// CHECK: scf.if
// CHECK: vector.load %[[TABLE]]
// CHECK: vector.load %[[TABLE]]
// CHECK: vector.load %[[Q]]{{.*}} : memref<?x8x64xf16>, vector<8xf16>
// CHECK: vector.store %{{.*}}, %[[SHARED_Q]]
// CHECK-LABEL: gpu.func @half_attention_tiles(
// CHECK-SAME: %[[Q:[a-z0-9_]+]]: memref<?x8x64xf16>, {{.*}}, %[[TABLE:[a-z0-9_]+]]: memref<?x32xf32>, %[[POSITIONS:[a-z0-9_]+]]: memref<?xi32>)
// CHECK: memref.load %[[POSITIONS]]
// CHECK: vector.load %[[Q]]{{.*}} : memref<?x8x64xf16>, vector<2xf16>
// CHECK: scf.if
// CHECK: vector.load %[[TABLE]]{{.*}} : memref<?x32xf32>, vector<2xf32>
// CHECK: gpu.return
func.func @half(%q: memref<?x8x64xf16>, %k: !c, %v: !c, %o: memref<?xi32>, %out: memref<?x8x64xf16>, %cs: memref<?x32xf32>, %p: memref<?xi32>) {
  kvcache.attention_ragged %q, %k, %v, %o, %out rope(%cs) positions(%p) {rotary_dims = 32 : i64, scale = 0.125 : f32, style = "half"}
      : memref<?x8x64xf16>, !c, !c, memref<?xi32>, memref<?x8x64xf16>, memref<?x32xf32>, memref<?xi32>
  return
}
