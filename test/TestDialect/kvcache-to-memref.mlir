// RUN: kvcache-opt %s -convert-kvcache-to-memref -split-input-file | FileCheck %s --implicit-check-not=unrealized_conversion_cast
// RUN: kvcache-opt %s -convert-kvcache-to-memref=checked=true -split-input-file | FileCheck %s --check-prefix=CHECKED

// convert-kvcache-to-memref on the CSR kind of test_kv: every value of its
// types becomes the six values its getLoweredTypes states (blocks or the
// layer's view, kv_indptr, kv_indices, cache_lengths, max_seq_length,
// max_cache_length), and every access asks its hooks where a token lives:
//   page = kv_indices[kv_indptr[b] + t floordiv 4], slot = t mod 4.
// No kvcache lowering names the kind.

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>

// CHECK-LABEL: func.func @lookup
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x4x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>, %[[INDPTR:[a-z0-9_]+]]: memref<?xi32>, %[[INDICES:[a-z0-9_]+]]: memref<?xi32>, %[[LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %{{.*}}: i32, %{{.*}}: i32, %[[B:[a-z0-9_]+]]: index, %[[T:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[FIRST32:.*]] = memref.load %[[INDPTR]][%[[B]]] : memref<?xi32>
// CHECK: %[[FIRST:.*]] = arith.index_castui %[[FIRST32]] : i32 to index
// CHECK: %[[LOGICAL:.*]] = arith.divui %[[T]], %[[C4]] : index
// CHECK: %[[ENTRY:.*]] = arith.addi %[[FIRST]], %[[LOGICAL]] : index
// CHECK: %[[PAGE32:.*]] = memref.load %[[INDICES]][%[[ENTRY]]] : memref<?xi32>
// CHECK: %[[PAGE:.*]] = arith.index_castui %[[PAGE32]] : i32 to index
// CHECK: %[[SLOT:.*]] = arith.remui %[[T]], %[[C4]] : index
// CHECK: return %[[PAGE]], %[[SLOT]] : index, index

// With checks: the batch against kv_indptr, the logical page against the
// sequence's entries, the position in kv_indices, the page against
// num_pages.
// CHECKED-DAG: check failed: kvcache.lookup at {{.*}}: physical page (kv_indices entry) %lld is out of range: num_pages is %lld
// CHECKED-DAG: check failed: kvcache.lookup at {{.*}}: kv_indices position (kv_indptr[b] + token / page_size) %lld is out of range: the size of kv_indices is %lld
// CHECKED-DAG: check failed: kvcache.lookup at {{.*}}: logical page (token / page_size) %lld is out of range: the sequence's pages (kv_indptr[b+1] - kv_indptr[b]) is %lld
// CHECKED-DAG: check failed: kvcache.lookup at {{.*}}: batch index %lld is out of range: the size of kv_indptr - 1 (the batch) is %lld
// CHECKED-LABEL: func.func @lookup
// CHECKED-SAME: (%{{.*}}: memref<?x4x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>, %[[INDPTR:[a-z0-9_]+]]: memref<?xi32>, %[[INDICES:[a-z0-9_]+]]: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: i32, %{{.*}}: i32, %[[B:[a-z0-9_]+]]: index, %[[T:[a-z0-9_]+]]: index)
// CHECKED: %[[SIZE:.*]] = memref.dim %[[INDPTR]], %{{.*}} : memref<?xi32>
// CHECKED: %[[ENTRIES:.*]] = arith.maxui %[[SIZE]], %[[C1:.*]] : index
// CHECKED: %[[BATCH:.*]] = arith.subi %[[ENTRIES]], %[[C1]] : index
// CHECKED: arith.cmpi ult, %[[B]], %[[BATCH]] : index
// CHECKED: scf.if
// CHECKED: llvm.call @abort()
// CHECKED: %[[NEXT:.*]] = arith.addi %[[B]], %[[C1]] : index
// CHECKED: memref.load %[[INDPTR]][%[[NEXT]]] : memref<?xi32>
// CHECKED: scf.if
// CHECKED: memref.dim %[[INDICES]], %{{.*}} : memref<?xi32>
// CHECKED: scf.if
// CHECKED: memref.load %[[INDICES]]
// CHECKED: scf.if
// CHECKED: return
func.func @lookup(%k: !cache, %b: index, %t: index) -> (index, index) {
  %page, %slot = kvcache.lookup %k[%b, %t] : !cache
  return %page, %slot : index, index
}

// -----

// The constructor is replaced by its operands, blocks cast to the lowered
// type; a layer is the subview blocks[*, kv, layer, *, *, *] with the
// collection's page table and lengths.

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>

// CHECK-LABEL: func.func @collection
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x4x2x8xf16>, %[[INDPTR:[a-z0-9_]+]]: memref<?xi32>, %[[INDICES:[a-z0-9_]+]]: memref<?xi32>, %[[LENGTHS:[a-z0-9_]+]]: memref<5xi32>, %[[MAX_SEQ:[a-z0-9_]+]]: i32, %[[MAX_CACHE:[a-z0-9_]+]]: i32, %[[LAYER:[a-z0-9_]+]]: index, %[[B:[a-z0-9_]+]]: index)
// CHECK-SAME: -> (memref<?x4x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>, memref<?xi32>, memref<?xi32>, memref<?xi32>, i32, i32, index, index)
// CHECK: %[[CAST:.*]] = memref.cast %[[BLOCKS]] : memref<?x2x?x4x2x8xf16> to memref<?x2x?x4x2x8xf16, strided<[?, ?, ?, 16, 8, 1], offset: ?>>
// CHECK: %[[LENGTHS_CAST:.*]] = memref.cast %[[LENGTHS]] : memref<5xi32> to memref<?xi32>
// CHECK: %[[VIEW:.*]] = memref.subview %[[CAST]][0, 1, %[[LAYER]], 0, 0, 0] [%{{.*}}, 1, 1, 4, 2, 8] [1, 1, 1, 1, 1, 1]
// CHECK-SAME: to memref<?x4x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>
// CHECK: %[[LENGTH32:.*]] = memref.load %[[LENGTHS_CAST]][%[[B]]] : memref<?xi32>
// CHECK: %[[LENGTH:.*]] = arith.index_castui %[[LENGTH32]] : i32 to index
// CHECK: %[[SEQ:.*]] = arith.index_castui %[[MAX_SEQ]] : i32 to index
// CHECK: return %[[VIEW]], %[[INDPTR]], %[[INDICES]], %[[LENGTHS_CAST]], %[[MAX_SEQ]], %[[MAX_CACHE]], %[[LENGTH]], %[[SEQ]]

// CHECKED-LABEL: func.func @collection
// CHECKED: arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECKED: memref.subview
// CHECKED: arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECKED: memref.load
func.func @collection(%blocks: memref<?x2x?x4x2x8xf16>, %kv_indptr: memref<?xi32>,
                      %kv_indices: memref<?xi32>, %cache_lengths: memref<5xi32>,
                      %max_seq_length: i32, %max_cache_length: i32, %layer: index,
                      %b: index) -> (!cache, index, index) {
  %c = test_kv.csr_collection %blocks, %kv_indptr, %kv_indices, %cache_lengths, %max_seq_length, %max_cache_length
      : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<5xi32> -> !collection
  %v = kvcache.get_value_cache %c[%layer] : !collection
  %n = kvcache.cache_length %v[%b] : !cache
  %m = kvcache.max_seq_length %v : !cache
  return %v, %n, %m : !cache, index, index
}

// -----

// Element accesses address the layer view at the looked-up (page, slot);
// page accesses and tile use it directly.

!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>

// CHECK-LABEL: func.func @access
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x4x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>, %[[INDPTR:[a-z0-9_]+]]: memref<?xi32>, %[[INDICES:[a-z0-9_]+]]: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: i32, %{{.*}}: i32, %[[B:[a-z0-9_]+]]: index, %[[H:[a-z0-9_]+]]: index, %[[T:[a-z0-9_]+]]: index, %[[D:[a-z0-9_]+]]: index, %[[X:[a-z0-9_]+]]: vector<8xf16>)
// CHECK: memref.load %[[INDPTR]][%[[B]]]
// CHECK: %[[PAGE32:.*]] = memref.load %[[INDICES]]
// CHECK: %[[PAGE:.*]] = arith.index_castui %[[PAGE32]]
// CHECK: %[[SLOT:.*]] = arith.remui %[[T]]
// CHECK: %[[Y:.*]] = vector.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[H]], %[[D]]] {alignment = 16 : i64}
// CHECK: memref.load %[[INDPTR]][%[[B]]]
// CHECK: %[[PAGE32_2:.*]] = memref.load %[[INDICES]]
// CHECK: %[[PAGE_2:.*]] = arith.index_castui %[[PAGE32_2]]
// CHECK: %[[SLOT_2:.*]] = arith.remui %[[T]]
// CHECK: vector.store %[[X]], %[[VIEW]][%[[PAGE_2]], %[[SLOT_2]], %[[H]], %[[D]]] {alignment = 16 : i64}
// CHECK: return %[[Y]]
func.func @access(%k: !cache, %b: index, %h: index, %t: index, %d: index, %x: vector<8xf16>) -> vector<8xf16> {
  %y = kvcache.load %k[%b, %h, %t, %d] : !cache -> vector<8xf16>
  kvcache.store %x, %k[%b, %h, %t, %d] : !cache, vector<8xf16>
  return %y : vector<8xf16>
}

// CHECK-LABEL: func.func @page_ops
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x4x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: i32, %{{.*}}: i32, %[[P:[a-z0-9_]+]]: index, %[[S:[a-z0-9_]+]]: index, %[[H:[a-z0-9_]+]]: index, %[[D:[a-z0-9_]+]]: index, %[[X:[a-z0-9_]+]]: f16)
// CHECK-NEXT: %[[Y:.*]] = memref.load %[[VIEW]][%[[P]], %[[S]], %[[H]], %[[D]]]
// CHECK-NEXT: memref.store %[[X]], %[[VIEW]][%[[P]], %[[S]], %[[H]], %[[D]]]
// CHECK-NEXT: return %[[Y]]
func.func @page_ops(%k: !cache, %p: index, %s: index, %h: index, %d: index, %x: f16) -> f16 {
  %y = kvcache.page_load %k[%p, %s, %h, %d] : !cache -> f16
  kvcache.page_store %x, %k[%p, %s, %h, %d] : !cache, f16
  return %y : f16
}

// CHECK-LABEL: func.func @tile
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x4x2x8xf16, strided<[?, 16, 8, 1], offset: ?>>, %{{.*}}: memref<?xi32>, %[[INDICES:[a-z0-9_]+]]: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: index, %[[T:[a-z0-9_]+]]: index, %[[H:[a-z0-9_]+]]: index)
// CHECK: %[[PAGE32:.*]] = memref.load %[[INDICES]]
// CHECK: %[[PAGE:.*]] = arith.index_castui %[[PAGE32]]
// CHECK: %[[SLOT:.*]] = arith.remui %[[T]]
// CHECK: %[[TILE:.*]] = memref.subview %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[H]], 0] [1, 2, 1, 8] [1, 1, 1, 1]
// CHECK-SAME: to memref<2x8xf16, strided<[16, 1], offset: ?>>
// CHECK: return %[[TILE]]
func.func @tile(%k: !cache, %b: index, %t: index, %h: index) -> memref<2x8xf16, strided<[16, 1], offset: ?>> {
  %tile = kvcache.tile %k[%b, %t, %h] : !cache -> memref<2x8xf16, strided<[16, 1], offset: ?>>
  return %tile : memref<2x8xf16, strided<[16, 1], offset: ?>>
}

// -----

// Metadata of a collection: the i32 scalars, dims 0 and 2 of blocks.

!collection = !test_kv.csr_collection<bf16, num_heads = 1, head_size = 16, page_size = 2, mla = true>

// CHECK-LABEL: func.func @metadata
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x1x?x2x1x16xbf16, strided<[?, ?, ?, 16, 16, 1], offset: ?>>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %[[MAX_SEQ:[a-z0-9_]+]]: i32, %[[MAX_CACHE:[a-z0-9_]+]]: i32)
// CHECK-DAG: %[[CACHE:.*]] = arith.index_castui %[[MAX_CACHE]] : i32 to index
// CHECK-DAG: %[[PAGES:.*]] = memref.dim %[[BLOCKS]], %{{.*}}
// CHECK-DAG: %[[LAYERS:.*]] = memref.dim %[[BLOCKS]], %{{.*}}
// CHECK-DAG: %[[SEQ:.*]] = arith.index_castui %[[MAX_SEQ]] : i32 to index
// CHECK: return %[[CACHE]], %[[PAGES]], %[[LAYERS]], %[[SEQ]]
func.func @metadata(%c: !collection) -> (index, index, index, index) {
  %a = kvcache.max_cache_length %c : !collection
  %p = kvcache.num_pages %c : !collection
  %l = kvcache.num_layers %c : !collection
  %s = kvcache.max_seq_length %c : !collection
  return %a, %p, %l, %s : index, index, index, index
}
