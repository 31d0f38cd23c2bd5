// RUN: kvcache-opt %s -convert-kvcache-to-gpu -cse | FileCheck %s

// rope_ragged's kernel (docs/KernelABI.md): one launch of min(rows,
// max-blocks) blocks of at least one warp; block x takes the batch's rows
// x, x + gridDim.x, ...; every thread resolves the row (the sequence by a
// binary search over the offsets, the storage position, positions[r], one
// lookup), then thread t takes chunks t, t + blockDim.x, ... of q's
// unrotated elements (into q_out), of the query heads' pairs and of the key
// heads' pairs, each with its cos and sin (the CPU's chunks:
// test/Conversion/KVCacheToSCF/rope.mlir).

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 16, page_size = 16>

// CHECK-LABEL: func.func @rope(
// CHECK: %[[ROWS:[a-z0-9_]+]] = memref.dim %{{.*}}, %{{.*}} : memref<?x4x16xf16>
// CHECK: %[[GRID:[a-z0-9_]+]] = arith.minui %[[ROWS]], %{{.*}} : index
// CHECK: scf.if
// CHECK: gpu.launch_func @kvcache_kernels::@rope_rope_ragged blocks in (%[[GRID]], %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%{{.*}} : memref<?x4x16xf16>, %{{.*}} : !kvcache.paged_cache<f16, num_heads = 2, head_size = 16, page_size = 16>, %{{.*}} : memref<?xi32>, %{{.*}} : memref<?x8xf32>, %{{.*}} : memref<?x4x16xf16>, %{{.*}} : memref<?xi32>)
// CHECK: gpu.func @rope_rope_ragged(%[[Q:[a-z0-9_]+]]: memref<?x4x16xf16>, %[[K:[a-z0-9_]+]]: {{.*}}, %[[OFFSETS:[a-z0-9_]+]]: memref<?xi32>, %[[TABLE:[a-z0-9_]+]]: memref<?x8xf32>, %[[OUT:[a-z0-9_]+]]: memref<?x4x16xf16>, %[[POS:[a-z0-9_]+]]: memref<?xi32>) kernel
// CHECK-DAG: %[[BLOCK:[a-z0-9_]+]] = gpu.block_id x
// CHECK-DAG: %[[THREAD:[a-z0-9_]+]] = gpu.thread_id x
// CHECK-DAG: %[[THREADS:[a-z0-9_]+]] = gpu.block_dim x
// CHECK: scf.for %[[ROW:[a-z0-9_]+]] = %[[BLOCK]] to
// CHECK: scf.while
// CHECK: kvcache.cache_length %[[K]][%{{.*}}] {serves_write}
// CHECK: %[[P32:[a-z0-9_]+]] = memref.load %[[POS]][%[[ROW]]]
// CHECK: %[[P:[a-z0-9_]+]] = arith.index_castui %[[P32]]
// CHECK: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[K]]
// The unrotated elements: 4 heads x 2 chunks of 4.
// CHECK: scf.for %{{.*}} = %[[THREAD]] to %{{.*}} step %[[THREADS]] {
// CHECK: %[[RAW:[a-z0-9_]+]] = vector.load %[[Q]][%[[ROW]], %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<?x4x16xf16>, vector<4xf16>
// CHECK-NEXT: vector.store %[[RAW]], %[[OUT]][%[[ROW]], %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<?x4x16xf16>, vector<4xf16>
// The query heads' pairs (8 + i, 12 + i).
// CHECK: scf.for %{{.*}} = %[[THREAD]] to %{{.*}} step %[[THREADS]] {
// CHECK: vector.load %[[TABLE]][%[[P]], %{{.*}}] {alignment = 16 : i64} : memref<?x8xf32>, vector<4xf32>
// CHECK: vector.load %[[TABLE]][%[[P]], %{{.*}}] {alignment = 16 : i64} : memref<?x8xf32>, vector<4xf32>
// CHECK: %[[COS:[a-z0-9_]+]] = vector.shuffle {{.*}} [0, 2, 4, 6]
// CHECK: %[[SIN:[a-z0-9_]+]] = vector.shuffle {{.*}} [1, 3, 5, 7]
// CHECK: %[[X:[a-z0-9_]+]] = arith.extf
// CHECK: %[[Y:[a-z0-9_]+]] = arith.extf
// CHECK-NEXT: %[[XC:[a-z0-9_]+]] = arith.mulf %[[X]], %[[COS]]
// CHECK-NEXT: %[[YS:[a-z0-9_]+]] = arith.mulf %[[Y]], %[[SIN]]
// CHECK-NEXT: arith.subf %[[XC]], %[[YS]]
// CHECK: vector.store %{{.*}}, %[[OUT]]
// CHECK: vector.store %{{.*}}, %[[OUT]]
// The key heads' pairs, in place.
// CHECK: scf.for %{{.*}} = %[[THREAD]] to %{{.*}} step %[[THREADS]] {
// CHECK: kvcache.page_load %[[K]][%[[PAGE]], %[[SLOT]], %{{.*}}] {serves_write}
// CHECK: kvcache.page_store %{{.*}}, %[[K]][%[[PAGE]], %[[SLOT]],
// CHECK: kvcache.page_store %{{.*}}, %[[K]][%[[PAGE]], %[[SLOT]],
// CHECK: gpu.return
func.func @rope(%q: memref<?x4x16xf16>, %k: !c, %o: memref<?xi32>, %cs: memref<?x8xf32>,
                %out: memref<?x4x16xf16>, %p: memref<?xi32>) {
  kvcache.rope_ragged %q, %k, %o, %cs, %out positions(%p) {rotary_dims = 8 : i64, style = "half"}
      : memref<?x4x16xf16>, !c, memref<?xi32>, memref<?x8xf32>, memref<?x4x16xf16>, memref<?xi32>
  return
}
