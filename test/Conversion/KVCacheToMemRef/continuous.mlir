// RUN: kvcache-opt %s -convert-kvcache-to-memref -canonicalize -split-input-file | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-memref=checked=true -split-input-file | FileCheck %s --check-prefix=CHECKED

// convert-kvcache-to-memref on the continuous-batching kind: five lowered
// values with a 1-D lookup table and a dynamic block_tokens (docs/Contract.md,
// section 7.1), lookups through the type's hook: (lookup_table[b], t).

!coll = !kvcache.continuous_collection<f16, num_heads = 2, head_size = 8>
!cache = !kvcache.continuous_cache<f16, num_heads = 2, head_size = 8>

// The constructor's operands are the lowered values (blocks cast to the one
// lowered type).
// CHECK-LABEL: func.func @build
// CHECK-SAME: (%[[BLOCKS:.*]]: memref<5x2x3x7x2x8xf16>, %[[LENGTHS:.*]]: memref<?xi32>, %[[TABLE:.*]]: memref<4xi32>, %[[S:.*]]: i32, %[[M:.*]]: i32)
// CHECK-SAME: -> (memref<?x2x?x?x2x8xf16, strided<[?, ?, ?, 16, 8, 1], offset: ?>>, memref<?xi32>, memref<?xi32>, i32, i32)
// CHECK-DAG: %[[B:.*]] = memref.cast %[[BLOCKS]] : memref<5x2x3x7x2x8xf16> to memref<?x2x?x?x2x8xf16, strided<[?, ?, ?, 16, 8, 1], offset: ?>>
// CHECK-DAG: %[[T:.*]] = memref.cast %[[TABLE]] : memref<4xi32> to memref<?xi32>
// CHECK: return %[[B]], %[[LENGTHS]], %[[T]], %[[S]], %[[M]]
func.func @build(%blocks: memref<5x2x3x7x2x8xf16>, %lengths: memref<?xi32>, %table: memref<4xi32>,
                 %s: i32, %m: i32) -> !coll {
  %c = kvcache.continuous_collection %blocks, %lengths, %table, %s, %m
      : memref<5x2x3x7x2x8xf16>, memref<?xi32>, memref<4xi32> -> !coll
  return %c : !coll
}

// A layer: blocks[*, kv, layer, *, *, *], with the run-time block_tokens.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[BLOCKS:.*]]: memref<?x2x?x?x2x8xf16, strided<[?, ?, ?, 16, 8, 1], offset: ?>>, %[[LENGTHS:.*]]: memref<?xi32>, %[[TABLE:.*]]: memref<?xi32>, %[[S:.*]]: i32, %[[M:.*]]: i32, %[[LAYER:.*]]: index)
// CHECK-SAME: -> (memref<?x?x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>, memref<?xi32>, memref<?xi32>, i32, i32)
// CHECK-DAG: %[[SLOTS:.*]] = memref.dim %[[BLOCKS]], %c3
// CHECK-DAG: %[[NUM:.*]] = memref.dim %[[BLOCKS]], %c0
// CHECK: %[[VIEW:.*]] = memref.subview %[[BLOCKS]][0, 1, %[[LAYER]], 0, 0, 0] [%[[NUM]], 1, 1, %[[SLOTS]], 2, 8] [1, 1, 1, 1, 1, 1]
// CHECK: return %[[VIEW]], %[[LENGTHS]], %[[TABLE]], %[[S]], %[[M]]
func.func @layer(%c: !coll, %layer: index) -> !cache {
  %v = kvcache.get_value_cache %c[%layer] : !coll
  return %v : !cache
}

// lookup: the sequence's block, the token as the slot; no division.
// CHECK-LABEL: func.func @lookup
// CHECK-SAME: %[[TABLE:[^:]*]]: memref<?xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %[[B:[^:]*]]: index, %[[T:[^:]*]]: index)
// CHECK: %[[ENTRY:.*]] = memref.load %[[TABLE]][%[[B]]] : memref<?xi32>
// CHECK: %[[BLOCK:.*]] = arith.index_castui %[[ENTRY]] : i32 to index
// CHECK-NOT: divui
// CHECK: return %[[BLOCK]], %[[T]]
func.func @lookup(%k: !cache, %b: index, %t: index) -> (index, index) {
  %page, %slot = kvcache.lookup %k[%b, %t] : !cache
  return %page, %slot : index, index
}

// CHECK-LABEL: func.func @load_store
// CHECK-SAME: (%[[VIEW:[^:]*]]: memref<?x?x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>, %{{[^:]*}}: memref<?xi32>, %[[TABLE:[^:]*]]: memref<?xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %[[B:[^:]*]]: index, %[[T:[^:]*]]: index, %[[H:[^:]*]]: index, %[[D:[^:]*]]: index)
// CHECK: %[[ENTRY:.*]] = memref.load %[[TABLE]][%[[B]]]
// CHECK: %[[BLOCK:.*]] = arith.index_castui %[[ENTRY]]
// CHECK: %[[X:.*]] = vector.load %[[VIEW]][%[[BLOCK]], %[[T]], %[[H]], %[[D]]] {alignment = 8 : i64}
// The store looks its block up again (a load of the table next to stores
// into blocks is not shared once lowered; kvcache-expand-accesses and cse
// share lookups before).
// CHECK: %[[ENTRY2:.*]] = memref.load %[[TABLE]][%[[B]]]
// CHECK: %[[BLOCK2:.*]] = arith.index_castui %[[ENTRY2]]
// CHECK: vector.store %[[X]], %[[VIEW]][%[[BLOCK2]], %[[T]], %[[H]], %[[D]]] {alignment = 8 : i64}
func.func @load_store(%k: !cache, %b: index, %t: index, %h: index, %d: index) {
  %x = kvcache.load %k[%b, %h, %t, %d] : !cache -> vector<4xf16>
  kvcache.store %x, %k[%b, %h, %t, %d] : !cache, vector<4xf16>
  return
}

// CHECK-LABEL: func.func @metadata
// CHECK-SAME: (%[[VIEW:[^:]*]]: memref<?x?x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>, %[[LENGTHS:[^:]*]]: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %[[S:[^:]*]]: i32, %[[M:[^:]*]]: i32, %[[B:[^:]*]]: index)
// CHECK-DAG: %[[LEN:.*]] = memref.load %[[LENGTHS]][%[[B]]]
// CHECK-DAG: %[[N:.*]] = arith.index_castui %[[LEN]]
// CHECK-DAG: %[[SEQ:.*]] = arith.index_castui %[[S]]
// CHECK-DAG: %[[MAX:.*]] = arith.index_castui %[[M]]
// CHECK-DAG: %[[BLOCKS:.*]] = memref.dim %[[VIEW]], %c0
// CHECK: return %[[N]], %[[SEQ]], %[[MAX]], %[[BLOCKS]]
func.func @metadata(%k: !cache, %b: index) -> (index, index, index, index) {
  %n = kvcache.cache_length %k[%b] : !cache
  %s = kvcache.max_seq_length %k : !cache
  %m = kvcache.max_cache_length %k : !cache
  %p = kvcache.num_pages %k : !cache
  return %n, %s, %m, %p : index, index, index, index
}

// CHECK-LABEL: func.func @tile
// CHECK: %[[BLOCK:.*]] = arith.index_castui
// CHECK: memref.subview %{{.*}}[%[[BLOCK]], %{{.*}}, %{{.*}}, 0] [1, 3, 1, 8] [1, 1, 1, 1]
func.func @tile(%k: !cache, %b: index, %t: index, %h: index) -> memref<3x8xf16, strided<[16, 1], offset: ?>> {
  %x = kvcache.tile %k[%b, %t, %h] : !cache -> memref<3x8xf16, strided<[16, 1], offset: ?>>
  return %x : memref<3x8xf16, strided<[16, 1], offset: ?>>
}

// Checked: the lookup checks the batch against the table, the token against
// block_tokens and the block read against num_blocks; a tile also its last
// row against block_tokens.
// CHECKED-DAG: "kvcache run-time check failed: kvcache.lookup at {{.*}}: batch index %lld is out of range: the size of lookup_table is %lld
// CHECKED-DAG: "kvcache run-time check failed: kvcache.lookup at {{.*}}: token position %lld is out of range: block_tokens is %lld
// CHECKED-DAG: "kvcache run-time check failed: kvcache.lookup at {{.*}}: block (lookup_table entry) %lld is out of range: num_blocks is %lld
// CHECKED-DAG: "kvcache run-time check failed: kvcache.tile at {{.*}}: last token of the tile %lld is out of range: the block's token slots is %lld
// CHECKED-DAG: "kvcache run-time check failed: kvcache.get_value_cache at {{.*}}: layer index %lld is out of range: num_layers is %lld
// CHECKED-LABEL: func.func @lookup
// CHECKED-SAME: %[[TABLE:[^:]*]]: memref<?xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %[[B:[^:]*]]: index, %[[T:[^:]*]]: index)
// CHECKED: %[[ROWS:.*]] = memref.dim %[[TABLE]], %c0{{.*}} : memref<?xi32>
// CHECKED: arith.cmpi ult, %[[B]], %[[ROWS]] : index
// CHECKED: %[[SLOTS:.*]] = memref.dim %{{.*}}, %c1{{.*}} : memref<?x?x2x8xf16
// CHECKED: arith.cmpi ult, %[[T]], %[[SLOTS]] : index
// CHECKED: %[[ENTRY:.*]] = memref.load %[[TABLE]][%[[B]]]
// CHECKED: %[[BLOCK:.*]] = arith.index_castui %[[ENTRY]]
// CHECKED: %[[NUM:.*]] = memref.dim %{{.*}}, %c0{{.*}} : memref<?x?x2x8xf16
// CHECKED: arith.cmpi ult, %[[BLOCK]], %[[NUM]] : index
// CHECKED-LABEL: func.func @load_store
