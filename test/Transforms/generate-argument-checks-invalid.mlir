// RUN: kvcache-opt %s -kvcache-generate-argument-checks -split-input-file -verify-diagnostics
// RUN: kvcache-opt %s -kvcache-generate-argument-checks=checked=true -split-input-file -verify-diagnostics

// The errors of kvcache-generate-argument-checks (docs/Contract.md, section
// 4.9).

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// The routine's name is taken by a declaration of another type (a
// declaration of the routine's own type becomes the routine:
// generate-argument-checks-declared.mlir).
func.func private @kvcache_check_store(!cache, memref<?x1x4xf32>, memref<?xi32>) -> i32

// expected-error @below {{kvcache-generate-argument-checks: cannot add the check routine @kvcache_check_store of @store: the module has a symbol of that name (only a declaration of type}}
func.func @store(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}

// -----

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// Also when it is a function of its own.
func.func @kvcache_check_gather(%x: i32) -> i32 {
  return %x : i32
}

// expected-error @below {{kvcache-generate-argument-checks: cannot add the check routine @kvcache_check_gather of @gather: the module has a symbol of that name (only a declaration of type}}
func.func @gather(%k: !cache, %out: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %out, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}
