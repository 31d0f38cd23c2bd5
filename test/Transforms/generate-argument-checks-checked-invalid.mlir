// RUN: kvcache-opt %s -kvcache-generate-argument-checks=checked=true -split-input-file -verify-diagnostics
// RUN: kvcache-opt %s -kvcache-generate-argument-checks -split-input-file | FileCheck %s

// Checked mode leaves a function early when a check fails in capture mode,
// returning poison: it cannot for a function that returns a cache value
// (its lowered values cannot be poison). Without checked=true such a
// function is fine.

!coll = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// CHECK-LABEL: func.func @layer(
// CHECK-NEXT: kvcache.get_key_cache
// CHECK-NEXT: return
// expected-error @below {{kvcache-generate-argument-checks: checked mode cannot return early from @layer, which returns a value of '!kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>'}}
func.func @layer(%c: !coll, %layer: index) -> !cache {
  %k = kvcache.get_key_cache %c[%layer] : !coll
  return %k : !cache
}

// -----

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// A function with kernel ops that returns its cache.
// CHECK-LABEL: func.func @kvcache_check_store_and_return(
// expected-error @below {{kvcache-generate-argument-checks: checked mode cannot return early from @store_and_return, which returns a value of '!kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>'}}
func.func @store_and_return(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>) -> !cache {
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return %k : !cache
}
