// RUN: kvcache-opt %s -kvcache-generate-argument-checks | FileCheck %s
// RUN: kvcache-opt %s -kvcache-generate-argument-checks=checked=true | FileCheck %s

// Code of the module may call a check routine: it declares it (with the
// routine's type), and the pass turns the declaration into the routine,
// public, once; the caller is not instrumented as a function with checks.

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// CHECK-LABEL: func.func @store(
func.func @store(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}

// CHECK: func.func @kvcache_check_store(%{{.*}}: !kvcache.paged_cache<{{.*}}>, %{{.*}}: memref<?x1x4xf32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi8>) -> i32 {
// CHECK: kvcache.num_sequences
// CHECK-NOT: func.func @kvcache_check_store(
// CHECK-NOT: func.func private @kvcache_check_store(
func.func private @kvcache_check_store(!cache, memref<?x1x4xf32>, memref<?xi32>, memref<?xi8>) -> i32

// CHECK-LABEL: func.func @try_store(
// CHECK-NEXT: %[[STATUS:.*]] = call @kvcache_check_store(
// CHECK-NEXT: return %[[STATUS]]
func.func @try_store(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>, %message: memref<?xi8>) -> i32 {
  %status = call @kvcache_check_store(%k, %new, %offsets, %message) : (!cache, memref<?x1x4xf32>, memref<?xi32>, memref<?xi8>) -> i32
  return %status : i32
}
