// RUN: kvcache-opt %s -kvcache-generate-argument-checks=checked=true -split-input-file | FileCheck %s

// Checked mode leaves a function early when a check fails in capture mode,
// returning poison: it cannot for a function that returns a cache value
// (its lowered values cannot be poison). Such a function's failed checks
// call __kvcache_check_abort, which prints and aborts in capture mode too,
// and it has no early exit.

!coll = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// CHECK-LABEL: func.func @layer(
// CHECK-NOT: cf.cond_br
// CHECK-NOT: ub.poison
// CHECK: scf.if
// CHECK: call @__kvcache_check_abort(
// CHECK-NOT: call @__kvcache_check_fail(
// CHECK: kvcache.get_key_cache
// CHECK-NEXT: return
// CHECK: func.func private @__kvcache_check_abort(
// CHECK: llvm.call @abort()
func.func @layer(%c: !coll, %layer: index) -> !cache {
  %k = kvcache.get_key_cache %c[%layer] : !coll
  return %k : !cache
}

// -----

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// A function with kernel ops that returns its cache: its routine, called at
// entry, stops it through the aborting handler.
// CHECK-LABEL: func.func @store_and_return(
// CHECK: %[[STATUS:.*]] = call @kvcache_check_store_and_return(
// CHECK: call @__kvcache_check_abort(
// CHECK-NOT: ub.poison
// CHECK: kvcache.store_ragged
// CHECK-NEXT: return
// CHECK-LABEL: func.func @kvcache_check_store_and_return(
func.func @store_and_return(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>) -> !cache {
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return %k : !cache
}
