// RUN: kvcache-opt %s -convert-kvcache-to-memref -cse -split-input-file | FileCheck %s --implicit-check-not=unrealized_conversion_cast
// RUN: kvcache-opt %s -convert-kvcache-to-memref=checked=true -split-input-file | FileCheck %s --check-prefix=CHECKED

// The queries of the argument checks (docs/Contract.md, section 3.1) through
// the kinds' hooks: kvcache.num_sequences is the smaller of the sizes of
// cache_lengths and lookup_table (its rows), kvcache.capacity the columns of
// lookup_table times page_size (paged) or block_tokens, the slot dim of
// blocks (continuous). A lookup {unchecked} is never checked, not even with
// checked=true.

!coll = !kvcache.paged_collection<f16, num_heads = 2, head_size = 8, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 2, head_size = 8, page_size = 16>

// CHECK-LABEL: func.func @paged_collection
// CHECK-SAME: (%{{[^:]*}}: memref<{{.*}}>, %[[LENGTHS:[^:]*]]: memref<?xi32>, %[[TABLE:[^:]*]]: memref<?x?xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: index)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[SIXTEEN:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[NUM_LENGTHS:.*]] = memref.dim %[[LENGTHS]], %[[C0]] : memref<?xi32>
// CHECK-DAG: %[[ROWS:.*]] = memref.dim %[[TABLE]], %[[C0]] : memref<?x?xi32>
// CHECK-DAG: %[[N:.*]] = arith.minui %[[NUM_LENGTHS]], %[[ROWS]] : index
// CHECK-DAG: %[[COLUMNS:.*]] = memref.dim %[[TABLE]], %[[C1]] : memref<?x?xi32>
// CHECK-DAG: %[[T:.*]] = arith.muli %[[COLUMNS]], %[[SIXTEEN]] : index
// CHECK: return %[[N]], %[[T]] : index, index
func.func @paged_collection(%c: !coll, %b: index) -> (index, index) {
  %n = kvcache.num_sequences %c : !coll
  %t = kvcache.capacity %c[%b] : !coll
  return %n, %t : index, index
}

// The same on a layer cache (its lowered values: the layer's blocks view and
// the same metadata).
// CHECK-LABEL: func.func @paged_cache
// CHECK-SAME: (%{{[^:]*}}: memref<{{.*}}>, %[[LENGTHS:[^:]*]]: memref<?xi32>, %[[TABLE:[^:]*]]: memref<?x?xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: index)
// CHECK-DAG: %[[NUM_LENGTHS:.*]] = memref.dim %[[LENGTHS]], %{{.*}} : memref<?xi32>
// CHECK-DAG: %[[ROWS:.*]] = memref.dim %[[TABLE]], %[[C0:.*]] : memref<?x?xi32>
// CHECK-DAG: %[[N:.*]] = arith.minui %[[NUM_LENGTHS]], %[[ROWS]] : index
// CHECK-DAG: %[[COLUMNS:.*]] = memref.dim %[[TABLE]], %[[C1:.*]] : memref<?x?xi32>
// CHECK-DAG: %[[T:.*]] = arith.muli %[[COLUMNS]], %{{.*}} : index
// CHECK: return %[[N]], %[[T]] : index, index
func.func @paged_cache(%k: !cache, %b: index) -> (index, index) {
  %n = kvcache.num_sequences %k : !cache
  %t = kvcache.capacity %k[%b] : !cache
  return %n, %t : index, index
}

// -----

!coll = !kvcache.continuous_collection<f16, num_heads = 2, head_size = 8>
!cache = !kvcache.continuous_cache<f16, num_heads = 2, head_size = 8>

// Continuous: the capacity is block_tokens, dim 3 of a collection's blocks
// [num_blocks, kv_dim, num_layers, block_tokens, ...].
// CHECK-LABEL: func.func @continuous_collection
// CHECK-SAME: (%[[BLOCKS:[^:]*]]: memref<?x2x?x?x2x8xf16{{.*}}>, %[[LENGTHS:[^:]*]]: memref<?xi32>, %[[TABLE:[^:]*]]: memref<?xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: index)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[NUM_LENGTHS:.*]] = memref.dim %[[LENGTHS]], %[[C0]] : memref<?xi32>
// CHECK-DAG: %[[SIZE:.*]] = memref.dim %[[TABLE]], %[[C0]] : memref<?xi32>
// CHECK-DAG: %[[N:.*]] = arith.minui %[[NUM_LENGTHS]], %[[SIZE]] : index
// CHECK-DAG: %[[T:.*]] = memref.dim %[[BLOCKS]], %[[C3]]
// CHECK: return %[[N]], %[[T]] : index, index
func.func @continuous_collection(%c: !coll, %b: index) -> (index, index) {
  %n = kvcache.num_sequences %c : !coll
  %t = kvcache.capacity %c[%b] : !coll
  return %n, %t : index, index
}

// A layer's blocks are [num_blocks, block_tokens, num_heads, head_size].
// CHECK-LABEL: func.func @continuous_cache
// CHECK-SAME: (%[[BLOCKS:[^:]*]]: memref<?x?x2x8xf16{{.*}}>, %[[LENGTHS:[^:]*]]: memref<?xi32>, %[[TABLE:[^:]*]]: memref<?xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: index)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[NUM_LENGTHS:.*]] = memref.dim %[[LENGTHS]], %[[C0]] : memref<?xi32>
// CHECK-DAG: %[[SIZE:.*]] = memref.dim %[[TABLE]], %[[C0]] : memref<?xi32>
// CHECK-DAG: %[[N:.*]] = arith.minui %[[NUM_LENGTHS]], %[[SIZE]] : index
// CHECK-DAG: %[[T:.*]] = memref.dim %[[BLOCKS]], %[[C1]]
// CHECK: return %[[N]], %[[T]] : index, index
func.func @continuous_cache(%k: !cache, %b: index) -> (index, index) {
  %n = kvcache.num_sequences %k : !cache
  %t = kvcache.capacity %k[%b] : !cache
  return %n, %t : index, index
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 2, head_size = 8, page_size = 16>

// With checked=true a plain lookup checks the token, the batch, the column
// and the page it reads; the same lookup {unchecked} checks nothing: it is
// the page table read of the argument checks, which compare the page with
// num_pages themselves.
// CHECKED-LABEL: func.func @checked_lookup
// CHECKED: llvm.call @dprintf
// CHECKED: llvm.call @abort
// CHECKED: return
// CHECKED-LABEL: func.func @unchecked_lookup
// CHECKED-SAME: %[[TABLE:[^:]*]]: memref<?x?xi32>
// CHECKED-NOT: llvm.call
// CHECKED-NOT: scf.if
// CHECKED: memref.load %[[TABLE]]
// CHECKED-NOT: llvm.call
// CHECKED-NOT: scf.if
// CHECKED: return
func.func @checked_lookup(%k: !cache, %b: index, %t: index) -> (index, index) {
  %page, %slot = kvcache.lookup %k[%b, %t] : !cache
  return %page, %slot : index, index
}

func.func @unchecked_lookup(%k: !cache, %b: index, %t: index) -> (index, index) {
  %page, %slot = kvcache.lookup %k[%b, %t] {unchecked} : !cache
  return %page, %slot : index, index
}

// -----

!cache = !kvcache.continuous_cache<f16, num_heads = 2, head_size = 8, assert_write_mode = 1>

// Also on a cache with assert_write_mode = 1, which checks every lookup that
// serves a write (one without read_only).
// CHECKED-LABEL: func.func @unchecked_write_mode_lookup
// CHECKED-NOT: llvm.call
// CHECKED-NOT: scf.if
// CHECKED: return
// CHECK-LABEL: func.func @unchecked_write_mode_lookup
// CHECK-NOT: llvm.call
// CHECK: return
func.func @unchecked_write_mode_lookup(%k: !cache, %b: index, %t: index) -> (index, index) {
  %page, %slot = kvcache.lookup %k[%b, %t] {unchecked} : !cache
  return %page, %slot : index, index
}
