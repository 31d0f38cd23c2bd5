// RUN: kvcache-opt %s -convert-kvcache-to-gpu="chunks-in-flight=3" -cse | FileCheck %s

// store_ragged's rope clause on float rows (RaggedCopyToGPU.cpp): the
// rotary part in units of a chunk of half pairs and its partner chunk R/2
// on, which one lane reads with the unit's cos and sin (two loads of the
// table, deinterleaved), rotates in f32 (products, then the difference and
// the sum: no fused multiply-add) and writes. Rows of 16 chunks, 3 chunks in
// flight: a tile of 6 rows, 48 units, 2 per lane in one pass (each unit's
// row resolved by its lane, its page, slot and position read by shuffles),
// no loop of passes, which would move every row of the tile with lane 0's.

!c = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>

// CHECK-LABEL: gpu.func @store_store_ragged(
// CHECK-SAME: %[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<{{.*}}>, %[[ROWS:[a-z0-9_]+]]: memref<?x2x64xf16>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[TABLE:[a-z0-9_]+]]: memref<?x64xf32>)
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK-COUNT-3: gpu.shuffle idx
// CHECK: %[[ROTATED:[a-z0-9_]+]]:2 = scf.if
// CHECK: %[[LOW:[a-z0-9_]+]] = vector.load %[[TABLE]]{{.*}} : memref<?x64xf32>, vector<8xf32>
// CHECK: %[[HIGH:[a-z0-9_]+]] = vector.load %[[TABLE]]{{.*}} : memref<?x64xf32>, vector<8xf32>
// CHECK: %[[COS:[a-z0-9_]+]] = vector.shuffle %[[LOW]], %[[HIGH]] [0, 2, 4, 6, 8, 10, 12, 14]
// CHECK: %[[SIN:[a-z0-9_]+]] = vector.shuffle %[[LOW]], %[[HIGH]] [1, 3, 5, 7, 9, 11, 13, 15]
// CHECK: %[[A:[a-z0-9_]+]] = vector.load %[[ROWS]][%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[FIRST:[a-z0-9_]+]]]
// CHECK: %[[X:[a-z0-9_]+]] = arith.extf %[[A]]
// CHECK: %[[B:[a-z0-9_]+]] = vector.load %[[ROWS]][%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[SECOND:[a-z0-9_]+]]]
// CHECK: %[[Y:[a-z0-9_]+]] = arith.extf %[[B]]
// CHECK: %[[XC:[a-z0-9_]+]] = arith.mulf %[[X]], %[[COS]]
// CHECK: %[[YS:[a-z0-9_]+]] = arith.mulf %[[Y]], %[[SIN]]
// CHECK: %[[NEW_X:[a-z0-9_]+]] = arith.subf %[[XC]], %[[YS]]
// CHECK: %[[XS:[a-z0-9_]+]] = arith.mulf %[[X]], %[[SIN]]
// CHECK: %[[YC:[a-z0-9_]+]] = arith.mulf %[[Y]], %[[COS]]
// CHECK: %[[NEW_Y:[a-z0-9_]+]] = arith.addf %[[XS]], %[[YC]]
// CHECK: %[[OUT_X:[a-z0-9_]+]] = arith.truncf %[[NEW_X]]
// CHECK: %[[OUT_Y:[a-z0-9_]+]] = arith.truncf %[[NEW_Y]]
// CHECK: scf.yield %[[OUT_X]], %[[OUT_Y]]
// CHECK-COUNT-3: gpu.shuffle idx
// CHECK: scf.if
// CHECK: kvcache.page_store %[[ROTATED]]#0, %[[CACHE]][%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[FIRST]]]
// CHECK-NEXT: kvcache.page_store %[[ROTATED]]#1, %[[CACHE]][%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[SECOND]]]
// CHECK: gpu.return
func.func @store(%k: !c, %rows: memref<?x2x64xf16>, %offsets: memref<?xi32>, %table: memref<?x64xf32>) {
  kvcache.store_ragged %k, %rows, %offsets rope(%table) {rotary_dims = 64 : i64, style = "half"} : !c, memref<?x2x64xf16>, memref<?xi32>, memref<?x64xf32>
  return
}
