// RUN: kvcache-opt %s -convert-kvcache-to-scf="vector-bytes=16" | FileCheck %s

// A quantizing store whose scale group has more than 16 chunks (a head of
// 128 f32 values in 4-element chunks) is not kept in registers: one loop
// takes the amax, a second reads the rows again and writes the codes.
!t = !kvcache.paged_cache<f8E5M2, num_heads = 1, head_size = 128, page_size = 8, scales = token_head>
// CHECK-LABEL: func.func @store_long_group(
// CHECK: scf.for %[[G:.*]] = %{{.*}} to %{{.*}} step %c128
// CHECK: %[[AMAX:.*]] = scf.for %{{.*}} = %[[G]] to %{{.*}} step %c4{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<4xf32>)
// CHECK: %[[ROW:.*]] = vector.load %{{.*}} : memref<?x1x128xf32>, vector<4xf32>
// CHECK: %[[ABS:.*]] = math.absf %[[ROW]]
// CHECK: %[[NEXT:.*]] = arith.maxnumf %[[ACC]], %[[ABS]]
// CHECK: scf.yield %[[NEXT]]
// CHECK: vector.reduction <maxnumf>, %[[AMAX]] fastmath<nnan>
// CHECK: kvcache.page_store_scale
// CHECK: scf.for %[[E:.*]] = %[[G]] to %{{.*}} step %c4
// CHECK: vector.load %{{.*}} : memref<?x1x128xf32>, vector<4xf32>
// CHECK: arith.divf
// CHECK: kvcache.page_store %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[E]]] : !kvcache.paged_cache<{{.*}}>, vector<4xf8E5M2>
func.func @store_long_group(%k: !t, %new: memref<?x1x128xf32>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !t, memref<?x1x128xf32>, memref<?xi32>
  return
}
