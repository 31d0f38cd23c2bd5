// RUN: kvcache-opt %s -loop-invariant-code-motion -split-input-file | FileCheck %s

// kvcache.lookup has no memory effects. On a normal cache it is also
// speculatable, so loop-invariant code motion hoists an invariant lookup out
// of a loop. On an assert_write_mode = 1 cache a lookup carries the run-time
// checks of the write it serves: it is not speculatable and stays in the loop
// (hoisted out of a loop that does not run, it would report an access that
// never happens).

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @hoist_lookup
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[N:[a-z0-9_]+]]: index, %[[OUT:[a-z0-9_]+]]: memref<?xindex>)
// CHECK: %[[PAGE:page]], %[[SLOT:slot]] = kvcache.lookup %[[KEY]][%[[BATCH]], %[[TOKEN]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-NEXT: scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT: memref.store %[[PAGE]], %[[OUT]][%[[I]]] : memref<?xindex>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @hoist_lookup(%key: !cache, %batch: index, %token: index, %n: index, %out: memref<?xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %page, %slot = kvcache.lookup %key[%batch, %token] : !cache
    memref.store %page, %out[%i] : memref<?xindex>
  }
  return
}

// -----

// negative_: on an assert_write_mode = 1 cache the same invariant lookup
// stays in the loop.

!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

// CHECK-LABEL: func.func @negative_hoist_write_checked_lookup
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[N:[a-z0-9_]+]]: index, %[[OUT:[a-z0-9_]+]]: memref<?xindex>)
// CHECK-NOT: kvcache.lookup
// CHECK: scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT: %[[PAGE:page]], %{{.*}} = kvcache.lookup %[[KEY]][%[[BATCH]], %[[TOKEN]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>
// CHECK-NEXT: memref.store %[[PAGE]], %[[OUT]][%[[I]]] : memref<?xindex>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @negative_hoist_write_checked_lookup(%key: !write_checked, %batch: index, %token: index, %n: index, %out: memref<?xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %page, %slot = kvcache.lookup %key[%batch, %token] : !write_checked
    memref.store %page, %out[%i] : memref<?xindex>
  }
  return
}

// -----

// A lookup that serves only reads (`read_only`, as
// kvcache-expand-accesses marks the lookup of a load) is not checked on an
// assert_write_mode = 1 cache, so it is hoisted again.

!write_checked = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>

// CHECK-LABEL: func.func @hoist_read_only_lookup
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[N:[a-z0-9_]+]]: index, %[[OUT:[a-z0-9_]+]]: memref<?xindex>)
// CHECK: %[[PAGE:page]], %{{.*}} = kvcache.lookup %[[KEY]][%[[BATCH]], %[[TOKEN]]] {read_only} : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>
// CHECK-NEXT: scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT: memref.store %[[PAGE]], %[[OUT]][%[[I]]] : memref<?xindex>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @hoist_read_only_lookup(%key: !write_checked, %batch: index, %token: index, %n: index, %out: memref<?xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %page, %slot = kvcache.lookup %key[%batch, %token] {read_only} : !write_checked
    memref.store %page, %out[%i] : memref<?xindex>
  }
  return
}

// -----

// negative_: a lookup of the loop's induction variable is not invariant and
// stays in the loop on a normal cache too.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @negative_hoist_variant_lookup
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[BATCH:[a-z0-9_]+]]: index, %[[N:[a-z0-9_]+]]: index, %[[OUT:[a-z0-9_]+]]: memref<?xindex>)
// CHECK-NOT: kvcache.lookup
// CHECK: scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT: %[[PAGE:page]], %{{.*}} = kvcache.lookup %[[KEY]][%[[BATCH]], %[[I]]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
// CHECK-NEXT: memref.store %[[PAGE]], %[[OUT]][%[[I]]] : memref<?xindex>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @negative_hoist_variant_lookup(%key: !cache, %batch: index, %n: index, %out: memref<?xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %page, %slot = kvcache.lookup %key[%batch, %i] : !cache
    memref.store %page, %out[%i] : memref<?xindex>
  }
  return
}
