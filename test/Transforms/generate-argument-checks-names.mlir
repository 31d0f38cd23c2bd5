// RUN: kvcache-opt %s -split-input-file -verify-diagnostics -kvcache-generate-argument-checks=checked=true

// Checked mode defines kvcache_check_capture, kvcache_check_failure, its
// handlers and globals: a module that has one of them is an error, not a
// redefinition.
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>
func.func @store(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}
// expected-error @below {{kvcache-generate-argument-checks: checked mode defines @kvcache_check_failure, which the module has already: rename it}}
func.func private @kvcache_check_failure() -> i32

// -----

// The check routine of @capture would take the name of checked mode's
// kvcache_check_capture.
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>
// expected-error @below {{kvcache-generate-argument-checks: the check routine of @capture would be @kvcache_check_capture, a name checked mode reserves: rename the function}}
func.func @capture(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}
