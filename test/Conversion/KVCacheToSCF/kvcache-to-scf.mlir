// RUN: kvcache-opt %s -convert-kvcache-to-scf=vector-bytes=16 -cse | FileCheck %s

// The kernel ops become loop nests over kvcache access ops (docs/Contract.md,
// section 3.3), the outer loop an scf.parallel (sequences, page pairs: the
// iterations write disjoint rows), the others scf.for: page addressing is left to
// convert-kvcache-to-memref. A token row moves head by head in vectors of the
// largest power-of-two width of at most 16 bytes that divides head_size and
// every stride (and the offset) of the row memref, so each access is aligned
// to its width. The pass creates constants next to the loops that use them and
// does not fold; -cse merges the repeated ones so each is matched once.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>

//===----------------------------------------------------------------------===//
// store_ragged
//===----------------------------------------------------------------------===//

// Row r of sequence b, r in [row_offsets[b], row_offsets[b + 1]), goes to
// token position cache_length(b) + r - row_offsets[b]: one lookup per row,
// outside the head and element loops, then 16-byte vectors (8 x f16).
// batch = max(size(row_offsets) - 1, 0), so an empty offsets memref runs
// no sequence.

// CHECK-LABEL: func.func @store_ragged
// CHECK-SAME: (%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[NEW:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[ROW_OFFSETS:[a-z0-9_]+]]: memref<?xi32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[ROW_OFFSETS]], %[[C0]] : memref<?xi32>
// CHECK: %[[IS_EMPTY:[a-z0-9_]+]] = arith.cmpi eq, %[[SIZE]], %[[C0]] : index
// CHECK: %[[SIZE_MINUS_ONE:[a-z0-9_]+]] = arith.subi %[[SIZE]], %[[C1]] : index
// CHECK: %[[BATCH:[a-z0-9_]+]] = arith.select %[[IS_EMPTY]], %[[C0]], %[[SIZE_MINUS_ONE]] : index
// CHECK: scf.parallel (%[[SEQ:[a-z0-9_]+]]) = (%[[C0]]) to (%[[BATCH]]) step (%[[C1]]) {
// CHECK-NEXT: %[[FIRST_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[SEQ]]] : memref<?xi32>
// CHECK-NEXT: %[[FIRST:[a-z0-9_]+]] = arith.index_castui %[[FIRST_I32]] : i32 to index
// CHECK-NEXT: %[[NEXT_SEQ:[a-z0-9_]+]] = arith.addi %[[SEQ]], %[[C1]] : index
// CHECK-NEXT: %[[END_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[NEXT_SEQ]]] : memref<?xi32>
// CHECK-NEXT: %[[END:[a-z0-9_]+]] = arith.index_castui %[[END_I32]] : i32 to index
// CHECK-NEXT: %[[CACHE_LENGTH:[a-z0-9_]+]] = kvcache.cache_length %[[CACHE]][%[[SEQ]]] {serves_write}
// CHECK-NEXT: scf.for %[[ROW:[a-z0-9_]+]] = %[[FIRST]] to %[[END]] step %[[C1]] {
// CHECK-NEXT: %[[DELTA:[a-z0-9_]+]] = arith.subi %[[ROW]], %[[FIRST]] : index
// CHECK-NEXT: %[[TOKEN:[a-z0-9_]+]] = arith.addi %[[CACHE_LENGTH]], %[[DELTA]] : index
// CHECK-NEXT: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[CACHE]][%[[SEQ]], %[[TOKEN]]]
// CHECK-NOT: kvcache.lookup
// CHECK-DAG: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// CHECK-DAG: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK: scf.for %[[HEAD:[a-z0-9_]+]] = %[[C0]] to %[[C8]] step %[[C1]] {
// CHECK-NEXT: scf.for %[[ELEMENT:[a-z0-9_]+]] = %[[C0]] to %[[C128]] step %[[C8]] {
// CHECK-NEXT: %[[CHUNK:[a-z0-9_]+]] = vector.load %[[NEW]][%[[ROW]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// CHECK-NEXT: kvcache.page_store %[[CHUNK]], %[[CACHE]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : {{.*}}, vector<8xf16>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @store_ragged(%cache: !cache, %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// gather_ragged
//===----------------------------------------------------------------------===//

// Row r of sequence b receives token position r - ctx_offsets[b]: the same
// nest in the other direction, with no cache_length.

// CHECK-LABEL: func.func @gather_ragged
// CHECK-SAME: (%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[OUT:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[CTX_OFFSETS:[a-z0-9_]+]]: memref<?xi32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-NOT: kvcache.cache_length
// CHECK: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[CTX_OFFSETS]], %[[C0]] : memref<?xi32>
// CHECK: %[[IS_EMPTY:[a-z0-9_]+]] = arith.cmpi eq, %[[SIZE]], %[[C0]] : index
// CHECK: %[[SIZE_MINUS_ONE:[a-z0-9_]+]] = arith.subi %[[SIZE]], %[[C1]] : index
// CHECK: %[[BATCH:[a-z0-9_]+]] = arith.select %[[IS_EMPTY]], %[[C0]], %[[SIZE_MINUS_ONE]] : index
// CHECK: scf.parallel (%[[SEQ:[a-z0-9_]+]]) = (%[[C0]]) to (%[[BATCH]]) step (%[[C1]]) {
// CHECK-NEXT: %[[FIRST_I32:[a-z0-9_]+]] = memref.load %[[CTX_OFFSETS]][%[[SEQ]]] : memref<?xi32>
// CHECK-NEXT: %[[FIRST:[a-z0-9_]+]] = arith.index_castui %[[FIRST_I32]] : i32 to index
// CHECK-NEXT: %[[NEXT_SEQ:[a-z0-9_]+]] = arith.addi %[[SEQ]], %[[C1]] : index
// CHECK-NEXT: %[[END_I32:[a-z0-9_]+]] = memref.load %[[CTX_OFFSETS]][%[[NEXT_SEQ]]] : memref<?xi32>
// CHECK-NEXT: %[[END:[a-z0-9_]+]] = arith.index_castui %[[END_I32]] : i32 to index
// CHECK-NEXT: scf.for %[[ROW:[a-z0-9_]+]] = %[[FIRST]] to %[[END]] step %[[C1]] {
// CHECK-NEXT: %[[DELTA:[a-z0-9_]+]] = arith.subi %[[ROW]], %[[FIRST]] : index
// CHECK-NEXT: %[[TOKEN:[a-z0-9_]+]] = arith.addi %[[C0]], %[[DELTA]] : index
// CHECK-NEXT: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[CACHE]][%[[SEQ]], %[[TOKEN]]]
// CHECK-NOT: kvcache.lookup
// CHECK-DAG: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// CHECK-DAG: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK: scf.for %[[HEAD:[a-z0-9_]+]] = %[[C0]] to %[[C8]] step %[[C1]] {
// CHECK-NEXT: scf.for %[[ELEMENT:[a-z0-9_]+]] = %[[C0]] to %[[C128]] step %[[C8]] {
// CHECK-NEXT: %[[CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[CACHE]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : {{.*}} -> vector<8xf16>
// CHECK-NEXT: vector.store %[[CHUNK]], %[[OUT]][%[[ROW]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @gather_ragged(%cache: !cache, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// copy_pages
//===----------------------------------------------------------------------===//

// For each pair (src, dst) and each layer (kvcache.num_layers: dim 2 of
// blocks, possibly dynamic), page src is copied to page dst in K and then in
// V: every slot, head and 16-byte chunk, read with page_load from src and
// written with page_store to dst.

// CHECK-LABEL: func.func @copy_pages
// CHECK-SAME: (%[[COLLECTION:[a-z0-9_]+]]: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[PAIRS:[a-z0-9_]+]]: memref<?x2xi32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[C16:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK-DAG: %[[NUM_PAIRS:[a-z0-9_]+]] = memref.dim %[[PAIRS]], %[[C0]] : memref<?x2xi32>
// CHECK-DAG: %[[NUM_LAYERS:[a-z0-9_]+]] = kvcache.num_layers %[[COLLECTION]]
// CHECK: scf.parallel (%[[PAIR:[a-z0-9_]+]]) = (%[[C0]]) to (%[[NUM_PAIRS]]) step (%[[C1]]) {
// CHECK-NEXT: %[[SRC_I32:[a-z0-9_]+]] = memref.load %[[PAIRS]][%[[PAIR]], %[[C0]]] : memref<?x2xi32>
// CHECK-NEXT: %[[SRC:[a-z0-9_]+]] = arith.index_castui %[[SRC_I32]] : i32 to index
// CHECK-NEXT: %[[DST_I32:[a-z0-9_]+]] = memref.load %[[PAIRS]][%[[PAIR]], %[[C1]]] : memref<?x2xi32>
// CHECK-NEXT: %[[DST:[a-z0-9_]+]] = arith.index_castui %[[DST_I32]] : i32 to index
// CHECK-NEXT: scf.for %[[LAYER:[a-z0-9_]+]] = %[[C0]] to %[[NUM_LAYERS]] step %[[C1]] {
// CHECK-NEXT: %[[KEY:[a-z0-9_]+]] = kvcache.get_key_cache %[[COLLECTION]][%[[LAYER]]]
// CHECK-NEXT: %[[VALUE:[a-z0-9_]+]] = kvcache.get_value_cache %[[COLLECTION]][%[[LAYER]]]
// CHECK-NEXT: scf.for %[[SLOT:[a-z0-9_]+]] = %[[C0]] to %[[C16]] step %[[C1]] {
// CHECK-DAG: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// CHECK-DAG: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK: scf.for %[[HEAD:[a-z0-9_]+]] = %[[C0]] to %[[C8]] step %[[C1]] {
// CHECK-NEXT: scf.for %[[ELEMENT:[a-z0-9_]+]] = %[[C0]] to %[[C128]] step %[[C8]] {
// CHECK-NEXT: %[[K_CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[KEY]][%[[SRC]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {serves_write} : {{.*}} -> vector<8xf16>
// CHECK-NEXT: kvcache.page_store %[[K_CHUNK]], %[[KEY]][%[[DST]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : {{.*}}, vector<8xf16>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %[[V_SLOT:[a-z0-9_]+]] = %[[C0]] to %[[C16]] step %[[C1]] {
// CHECK-DAG: %[[V_C8:[a-z0-9_]+]] = arith.constant 8 : index
// CHECK-DAG: %[[V_C128:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK: scf.for %[[V_HEAD:[a-z0-9_]+]] = %[[C0]] to %[[V_C8]] step %[[C1]] {
// CHECK-NEXT: scf.for %[[V_ELEMENT:[a-z0-9_]+]] = %[[C0]] to %[[V_C128]] step %[[V_C8]] {
// CHECK-NEXT: %[[V_CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[VALUE]][%[[SRC]], %[[V_SLOT]], %[[V_HEAD]], %[[V_ELEMENT]]] {serves_write} : {{.*}} -> vector<8xf16>
// CHECK-NEXT: kvcache.page_store %[[V_CHUNK]], %[[VALUE]][%[[DST]], %[[V_SLOT]], %[[V_HEAD]], %[[V_ELEMENT]]] : {{.*}}, vector<8xf16>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @copy_pages(%collection: !collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  return
}

// An MLA collection has only K (kv_dim 1): one copy per layer, no value
// cache. Here 576 bf16 elements in one head: 72 chunks of 8 x bf16.

// CHECK-LABEL: func.func @copy_pages_mla
// CHECK-SAME: (%[[COLLECTION:[a-z0-9_]+]]: !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %[[PAIRS:[a-z0-9_]+]]: memref<?x2xi32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
// CHECK-DAG: %[[NUM_LAYERS:[a-z0-9_]+]] = kvcache.num_layers %[[COLLECTION]]
// CHECK: scf.parallel (%[[PAIR:[a-z0-9_]+]]) = (%[[C0]]) to (%{{[a-z0-9_]+}}) step (%[[C1]]) {
// CHECK: %[[SRC:[a-z0-9_]+]] = arith.index_castui
// CHECK: %[[DST:[a-z0-9_]+]] = arith.index_castui
// CHECK-NEXT: scf.for %[[LAYER:[a-z0-9_]+]] = %[[C0]] to %[[NUM_LAYERS]] step %[[C1]] {
// CHECK-NEXT: %[[KEY:[a-z0-9_]+]] = kvcache.get_key_cache %[[COLLECTION]][%[[LAYER]]]
// CHECK-NEXT: scf.for %[[SLOT:[a-z0-9_]+]] = %[[C0]] to %[[C64]] step %[[C1]] {
// CHECK-DAG: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// CHECK-DAG: %[[C576:[a-z0-9_]+]] = arith.constant 576 : index
// CHECK: scf.for %[[HEAD:[a-z0-9_]+]] = %[[C0]] to %[[C1]] step %[[C1]] {
// CHECK-NEXT: scf.for %[[ELEMENT:[a-z0-9_]+]] = %[[C0]] to %[[C576]] step %[[C8]] {
// CHECK-NEXT: %[[CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[KEY]][%[[SRC]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {serves_write} : {{.*}} -> vector<8xbf16>
// CHECK-NEXT: kvcache.page_store %[[CHUNK]], %[[KEY]][%[[DST]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : {{.*}}, vector<8xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: return
!mla_collection = !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
func.func @copy_pages_mla(%collection: !mla_collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !mla_collection, memref<?x2xi32>
  return
}

//===----------------------------------------------------------------------===//
// Vector widths
//===----------------------------------------------------------------------===//

// f32: 16 bytes are 4 elements.

// CHECK-LABEL: func.func @width_f32
// CHECK-DAG: %[[C4:[a-z0-9_]+]] = arith.constant 4 : index
// CHECK-DAG: %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
// CHECK: scf.for %[[ELEMENT:[a-z0-9_]+]] = %{{[a-z0-9_]+}} to %[[C64]] step %[[C4]] {
// CHECK-NEXT: vector.load %{{.*}}[%{{.*}}, %{{.*}}, %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x2x64xf32>, vector<4xf32>
// CHECK-NEXT: kvcache.page_store {{.*}}, vector<4xf32>
!cache_f32 = !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4>
func.func @width_f32(%cache: !cache_f32, %new: memref<?x2x64xf32>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache_f32, memref<?x2x64xf32>, memref<?xi32>
  return
}

// bf16: 8 elements, as f16.

// CHECK-LABEL: func.func @width_bf16
// CHECK: kvcache.page_load {{.*}} -> vector<8xbf16>
// CHECK-NEXT: vector.store {{.*}} {alignment = 16 : i64} : memref<?x2x64xbf16>, vector<8xbf16>
!cache_bf16 = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 4>
func.func @width_bf16(%cache: !cache_bf16, %out: memref<?x2x64xbf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache_bf16, memref<?x2x64xbf16>, memref<?xi32>
  return
}

// head_size 12 is not a multiple of 8: 4 x f16 (8 bytes), step 4.

// CHECK-LABEL: func.func @width_head_size_12
// CHECK-DAG: %[[C4:[a-z0-9_]+]] = arith.constant 4 : index
// CHECK-DAG: %[[C12:[a-z0-9_]+]] = arith.constant 12 : index
// CHECK: scf.for %[[ELEMENT:[a-z0-9_]+]] = %{{[a-z0-9_]+}} to %[[C12]] step %[[C4]] {
// CHECK-NEXT: vector.load %{{.*}}[%{{.*}}, %{{.*}}, %[[ELEMENT]]] {alignment = 8 : i64} : memref<?x2x12xf16>, vector<4xf16>
// CHECK-NEXT: kvcache.page_store {{.*}}, vector<4xf16>
!cache_h12 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 12, page_size = 4>
func.func @width_head_size_12(%cache: !cache_h12, %new: memref<?x2x12xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache_h12, memref<?x2x12xf16>, memref<?xi32>
  return
}

// head_size 6: 2 x f16 (4 bytes), step 2.

// CHECK-LABEL: func.func @width_head_size_6
// CHECK-DAG: %[[C2:[a-z0-9_]+]] = arith.constant 2 : index
// CHECK-DAG: %[[C6:[a-z0-9_]+]] = arith.constant 6 : index
// CHECK: scf.for %[[ELEMENT:[a-z0-9_]+]] = %{{[a-z0-9_]+}} to %[[C6]] step %[[C2]] {
// CHECK-NEXT: vector.load %{{.*}}[%{{.*}}, %{{.*}}, %[[ELEMENT]]] {alignment = 4 : i64} : memref<?x2x6xf16>, vector<2xf16>
// CHECK-NEXT: kvcache.page_store {{.*}}, vector<2xf16>
!cache_h6 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 6, page_size = 4>
func.func @width_head_size_6(%cache: !cache_h6, %new: memref<?x2x6xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache_h6, memref<?x2x6xf16>, memref<?xi32>
  return
}

// head_size 5 is odd: scalar f16 accesses, step 1, for rows and for pages.

// CHECK-LABEL: func.func @negative_vector_head_size_5
// CHECK-NOT: vector.
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[C5:[a-z0-9_]+]] = arith.constant 5 : index
// CHECK: scf.for %[[ELEMENT:[a-z0-9_]+]] = %{{[a-z0-9_]+}} to %[[C5]] step %[[C1]] {
// CHECK-NEXT: %[[X:[a-z0-9_]+]] = kvcache.page_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[ELEMENT]]] : {{.*}} -> f16
// CHECK-NEXT: memref.store %[[X]], %{{.*}}[%{{.*}}, %{{.*}}, %[[ELEMENT]]] : memref<?x2x5xf16>
// CHECK-NOT: vector.
// CHECK: return
!cache_h5 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 5, page_size = 4>
func.func @negative_vector_head_size_5(%cache: !cache_h5, %out: memref<?x2x5xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache_h5, memref<?x2x5xf16>, memref<?xi32>
  return
}

// CHECK-LABEL: func.func @negative_vector_copy_pages_head_size_5
// CHECK-NOT: vector.
// CHECK: %[[X:[a-z0-9_]+]] = kvcache.page_load {{.*}} -> f16
// CHECK-NEXT: kvcache.page_store %[[X]], {{.*}}, f16
// CHECK: %[[Y:[a-z0-9_]+]] = kvcache.page_load {{.*}} -> f16
// CHECK-NEXT: kvcache.page_store %[[Y]], {{.*}}, f16
// CHECK-NOT: vector.
// CHECK: return
!collection_h5 = !kvcache.paged_collection<f16, num_heads = 2, head_size = 5, page_size = 4>
func.func @negative_vector_copy_pages_head_size_5(%collection: !collection_h5, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !collection_h5, memref<?x2xi32>
  return
}

// head_size 12 in copy_pages (no row memref): 4 x f16.

// CHECK-LABEL: func.func @width_copy_pages_head_size_12
// CHECK: kvcache.page_load {{.*}} -> vector<4xf16>
// CHECK: kvcache.page_load {{.*}} -> vector<4xf16>
!collection_h12 = !kvcache.paged_collection<f16, num_heads = 2, head_size = 12, page_size = 4>
func.func @width_copy_pages_head_size_12(%collection: !collection_h12, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !collection_h12, memref<?x2xi32>
  return
}

// A padded row memref whose strides are multiples of 4 but not of 8
// elements: 4 x f16, 8-byte aligned.

// CHECK-LABEL: func.func @width_row_stride_68
// CHECK: vector.load {{.*}} {alignment = 8 : i64} : memref<?x2x64xf16, strided<[136, 68, 1]>>, vector<4xf16>
// CHECK-NEXT: kvcache.page_store {{.*}}, vector<4xf16>
!cache_h64 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 4>
func.func @width_row_stride_68(%cache: !cache_h64, %new: memref<?x2x64xf16, strided<[136, 68, 1]>>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache_h64, memref<?x2x64xf16, strided<[136, 68, 1]>>, memref<?xi32>
  return
}

// A static offset of 4 elements (8 bytes) limits the width the same way.

// CHECK-LABEL: func.func @width_row_offset_4
// CHECK: vector.load {{.*}} {alignment = 8 : i64} : memref<?x2x64xf16, strided<[128, 64, 1], offset: 4>>, vector<4xf16>
!row_offset_4 = memref<?x2x64xf16, strided<[128, 64, 1], offset: 4>>
func.func @width_row_offset_4(%cache: !cache_h64, %new: !row_offset_4, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache_h64, !row_offset_4, memref<?xi32>
  return
}

// A dynamic row stride or an odd offset proves no alignment: scalars.

// CHECK-LABEL: func.func @negative_vector_dynamic_row_stride
// CHECK-NOT: vector.
// CHECK: %[[X:[a-z0-9_]+]] = memref.load {{.*}} : memref<?x2x64xf16, strided<[?, 64, 1]>>
// CHECK-NEXT: kvcache.page_store %[[X]], {{.*}}, f16
// CHECK-NOT: vector.
// CHECK: return
!row_dynamic_stride = memref<?x2x64xf16, strided<[?, 64, 1]>>
func.func @negative_vector_dynamic_row_stride(%cache: !cache_h64, %new: !row_dynamic_stride, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache_h64, !row_dynamic_stride, memref<?xi32>
  return
}

// CHECK-LABEL: func.func @negative_vector_odd_row_offset
// CHECK-NOT: vector.
// CHECK: %[[X:[a-z0-9_]+]] = kvcache.page_load {{.*}} -> f16
// CHECK-NEXT: memref.store %[[X]], {{.*}} : memref<?x2x64xf16, strided<[128, 64, 1], offset: 3>>
// CHECK-NOT: vector.
// CHECK: return
!row_offset_3 = memref<?x2x64xf16, strided<[128, 64, 1], offset: 3>>
func.func @negative_vector_odd_row_offset(%cache: !cache_h64, %out: !row_offset_3, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache_h64, !row_offset_3, memref<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// Access ops are left alone
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @negative_access_ops
// CHECK-NOT: scf.for
// CHECK: kvcache.load
// CHECK-NEXT: kvcache.store
// CHECK-NEXT: return
func.func @negative_access_ops(%cache: !cache, %batch: index, %head: index, %token: index, %element: index) {
  %x = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
  kvcache.store %x, %cache[%batch, %head, %token, %element] : !cache, vector<8xf16>
  return
}
