// RUN: kvcache-opt %s -convert-kvcache-to-gpu -cse | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-gpu="threads-per-block=64 max-blocks=1024" -cse \
// RUN:   | FileCheck %s --check-prefix=OPTIONS

// The kernel ops become gpu.launch kernels written with kvcache access ops
// (docs/Contract.md, section 3.3; page addressing is left to
// convert-kvcache-to-memref).
// Each launch is guarded by an scf.if (a zero-sized grid is a launch error);
// the grid is min(work items, max-blocks) blocks visiting the work items in a
// grid-stride loop; a block has min(chunks per item, threads-per-block)
// threads, each moving 16-byte chunks from its thread id on, stepping by the
// block size. The pass creates constants next to their uses and does not
// fold; -cse merges the repeated ones (also across the launch boundary) so
// each is matched once.

// CHECK: module attributes {gpu.container_module}
// OPTIONS: module attributes {gpu.container_module}

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>

//===----------------------------------------------------------------------===//
// store_ragged
//===----------------------------------------------------------------------===//

// A block per row (grid-stride past max-blocks). A row outside
// [row_offsets[0], row_offsets[batch]) is skipped; otherwise its sequence b
// is found by a binary search over the offsets on the device (the largest b
// with row_offsets[b] <= row, so empty sequences are stepped over), then one
// lookup of token cache_length(b) + row - row_offsets[b]. 8 heads x 128 f16
// are 128 chunks of 8 x f16: 128 threads.

// CHECK-LABEL: func.func @store_ragged
// CHECK-SAME: (%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[NEW:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[ROW_OFFSETS:[a-z0-9_]+]]: memref<?xi32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %[[NEW]], %[[C0]] : memref<?x8x128xf16>
// CHECK-DAG: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[ROW_OFFSETS]], %[[C0]] : memref<?xi32>
// CHECK: %[[IS_EMPTY:[a-z0-9_]+]] = arith.cmpi eq, %[[SIZE]], %[[C0]] : index
// CHECK: %[[SIZE_MINUS_ONE:[a-z0-9_]+]] = arith.subi %[[SIZE]], %[[C1]] : index
// CHECK: %[[BATCH:[a-z0-9_]+]] = arith.select %[[IS_EMPTY]], %[[C0]], %[[SIZE_MINUS_ONE]] : index
// CHECK: %[[C65535:[a-z0-9_]+]] = arith.constant 65535 : index
// CHECK: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_ROWS]], %[[C65535]] : index
// CHECK: %[[HAS_ROWS:[a-z0-9_]+]] = arith.cmpi ugt, %[[NUM_ROWS]], %[[C0]] : index
// CHECK: %[[HAS_SEQUENCES:[a-z0-9_]+]] = arith.cmpi ugt, %[[BATCH]], %[[C0]] : index
// CHECK: %[[HAS_WORK:[a-z0-9_]+]] = arith.andi %[[HAS_ROWS]], %[[HAS_SEQUENCES]] : i1
// CHECK: scf.if %[[HAS_WORK]] {
// CHECK: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%[[GRID_X:[a-z0-9_]+]] = %[[GRID]], %{{[a-z0-9_]+}} = %[[C1]], %{{[a-z0-9_]+}} = %[[C1]])
// CHECK-SAME: threads(%[[TX:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%[[BLOCK_X:[a-z0-9_]+]] = %[[C128]], %{{[a-z0-9_]+}} = %[[C1]], %{{[a-z0-9_]+}} = %[[C1]])
// CHECK: %[[FIRST_ROW_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[C0]]] : memref<?xi32>
// CHECK: %[[FIRST_ROW:[a-z0-9_]+]] = arith.index_castui %[[FIRST_ROW_I32]] : i32 to index
// CHECK: %[[END_ROW_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[BATCH]]] : memref<?xi32>
// CHECK: %[[END_ROW:[a-z0-9_]+]] = arith.index_castui %[[END_ROW_I32]] : i32 to index
// CHECK: scf.for %[[ROW:[a-z0-9_]+]] = %[[BX]] to %[[NUM_ROWS]] step %[[GRID_X]] {
// CHECK-NEXT: %[[AFTER_FIRST:[a-z0-9_]+]] = arith.cmpi uge, %[[ROW]], %[[FIRST_ROW]] : index
// CHECK-NEXT: %[[BEFORE_END:[a-z0-9_]+]] = arith.cmpi ult, %[[ROW]], %[[END_ROW]] : index
// CHECK-NEXT: %[[IN_BATCH:[a-z0-9_]+]] = arith.andi %[[AFTER_FIRST]], %[[BEFORE_END]] : i1
// CHECK-NEXT: scf.if %[[IN_BATCH]] {
// CHECK-NEXT: %[[SEARCH:[a-z0-9_]+]]:2 = scf.while (%[[LOW:[a-z0-9_]+]] = %[[C0]], %[[HIGH:[a-z0-9_]+]] = %[[BATCH]]) : (index, index) -> (index, index) {
// CHECK-NEXT: %[[SPAN:[a-z0-9_]+]] = arith.subi %[[HIGH]], %[[LOW]] : index
// CHECK-NEXT: %[[MORE:[a-z0-9_]+]] = arith.cmpi ugt, %[[SPAN]], %[[C1]] : index
// CHECK-NEXT: scf.condition(%[[MORE]]) %[[LOW]], %[[HIGH]] : index, index
// CHECK-NEXT: } do {
// CHECK-NEXT: ^bb0(%[[LOW2:[a-z0-9_]+]]: index, %[[HIGH2:[a-z0-9_]+]]: index):
// CHECK-NEXT: %[[SUM:[a-z0-9_]+]] = arith.addi %[[LOW2]], %[[HIGH2]] : index
// CHECK-NEXT: %[[MID:[a-z0-9_]+]] = arith.shrui %[[SUM]], %[[C1]] : index
// CHECK-NEXT: %[[MID_START_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[MID]]] : memref<?xi32>
// CHECK-NEXT: %[[MID_START:[a-z0-9_]+]] = arith.index_castui %[[MID_START_I32]] : i32 to index
// CHECK-NEXT: %[[GO_RIGHT:[a-z0-9_]+]] = arith.cmpi ule, %[[MID_START]], %[[ROW]] : index
// CHECK-NEXT: %[[NEW_LOW:[a-z0-9_]+]] = arith.select %[[GO_RIGHT]], %[[MID]], %[[LOW2]] : index
// CHECK-NEXT: %[[NEW_HIGH:[a-z0-9_]+]] = arith.select %[[GO_RIGHT]], %[[HIGH2]], %[[MID]] : index
// CHECK-NEXT: scf.yield %[[NEW_LOW]], %[[NEW_HIGH]] : index, index
// CHECK-NEXT: }
// CHECK-NEXT: %[[START_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[SEARCH]]#0] : memref<?xi32>
// CHECK-NEXT: %[[START:[a-z0-9_]+]] = arith.index_castui %[[START_I32]] : i32 to index
// CHECK-NEXT: %[[DELTA:[a-z0-9_]+]] = arith.subi %[[ROW]], %[[START]] : index
// CHECK-NEXT: %[[CACHE_LENGTH:[a-z0-9_]+]] = kvcache.cache_length %[[CACHE]][%[[SEARCH]]#0]{{.*}}{serves_write}
// CHECK-NEXT: %[[TOKEN:[a-z0-9_]+]] = arith.addi %[[CACHE_LENGTH]], %[[DELTA]] : index
// CHECK-NEXT: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[CACHE]][%[[SEARCH]]#0, %[[TOKEN]]]
// CHECK-NOT: kvcache.lookup
// CHECK: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// CHECK-NEXT: scf.for %[[CHUNK:[a-z0-9_]+]] = %[[TX]] to %[[C128]] step %[[BLOCK_X]] {
// CHECK-NEXT: %[[FIRST:[a-z0-9_]+]] = arith.muli %[[CHUNK]], %[[C8]] : index
// CHECK-NEXT: %[[HEAD:[a-z0-9_]+]] = arith.divui %[[FIRST]], %[[C128]] : index
// CHECK-NEXT: %[[ELEMENT:[a-z0-9_]+]] = arith.remui %[[FIRST]], %[[C128]] : index
// CHECK-NEXT: %[[X:[a-z0-9_]+]] = vector.load %[[NEW]][%[[ROW]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// CHECK-NEXT: kvcache.page_store %[[X]], %[[CACHE]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : {{.*}}, vector<8xf16>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return

// threads-per-block=64: 64 threads, two chunks each; max-blocks=1024 caps
// the grid.

// OPTIONS-LABEL: func.func @store_ragged
// OPTIONS-DAG: %[[C1024:[a-z0-9_]+]] = arith.constant 1024 : index
// OPTIONS-DAG: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : memref<?x8x128xf16>
// OPTIONS: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_ROWS]], %[[C1024]] : index
// OPTIONS: scf.if
// OPTIONS: %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
// OPTIONS: gpu.launch blocks(%[[BX:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%[[GRID_X:[a-z0-9_]+]] = %[[GRID]], %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}})
// OPTIONS-SAME: threads(%[[TX:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%[[BLOCK_X:[a-z0-9_]+]] = %[[C64]],
// OPTIONS: scf.for %{{[a-z0-9_]+}} = %[[BX]] to %[[NUM_ROWS]] step %[[GRID_X]] {
// OPTIONS: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// OPTIONS: scf.for %{{[a-z0-9_]+}} = %[[TX]] to %[[C128]] step %[[BLOCK_X]] {
// OPTIONS: vector.load {{.*}} vector<8xf16>
func.func @store_ragged(%cache: !cache, %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// gather_ragged
//===----------------------------------------------------------------------===//

// The same kernel in the other direction; token position row -
// ctx_offsets[b], no cache_length. The grid counts rows of `out`.

// CHECK-LABEL: func.func @gather_ragged
// CHECK-SAME: (%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[OUT:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[CTX_OFFSETS:[a-z0-9_]+]]: memref<?xi32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C65535:[a-z0-9_]+]] = arith.constant 65535 : index
// CHECK-DAG: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %[[OUT]], %[[C0]] : memref<?x8x128xf16>
// CHECK-DAG: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[CTX_OFFSETS]], %[[C0]] : memref<?xi32>
// CHECK: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_ROWS]], %[[C65535]] : index
// CHECK: scf.if
// CHECK: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%[[GRID_X:[a-z0-9_]+]] = %[[GRID]],
// CHECK-SAME: threads(%[[TX:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%[[BLOCK_X:[a-z0-9_]+]] = %[[C128]],
// CHECK: scf.for %[[ROW:[a-z0-9_]+]] = %[[BX]] to %[[NUM_ROWS]] step %[[GRID_X]] {
// CHECK: %[[SEARCH:[a-z0-9_]+]]:2 = scf.while
// CHECK: %[[START_I32:[a-z0-9_]+]] = memref.load %[[CTX_OFFSETS]][%[[SEARCH]]#0] : memref<?xi32>
// CHECK-NEXT: %[[START:[a-z0-9_]+]] = arith.index_castui %[[START_I32]] : i32 to index
// CHECK-NEXT: %[[TOKEN:[a-z0-9_]+]] = arith.subi %[[ROW]], %[[START]] : index
// CHECK-NEXT: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[CACHE]][%[[SEARCH]]#0, %[[TOKEN]]]
// CHECK-NOT: kvcache.lookup
// CHECK: scf.for %[[CHUNK:[a-z0-9_]+]] = %[[TX]] to %[[C128]] step %[[BLOCK_X]] {
// CHECK: %[[X:[a-z0-9_]+]] = kvcache.page_load %[[CACHE]][%[[PAGE]], %[[SLOT]], %[[HEAD:[a-z0-9_]+]], %[[ELEMENT:[a-z0-9_]+]]] : {{.*}} -> vector<8xf16>
// CHECK-NEXT: vector.store %[[X]], %[[OUT]][%[[ROW]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// CHECK-NOT: kvcache.cache_length
// CHECK: return
func.func @gather_ragged(%cache: !cache, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// copy_pages
//===----------------------------------------------------------------------===//

// One launch for every pair, layer, K and V: block (x, y) copies pair x
// (grid-stride) of layer y (grid y = num_layers), K then V. A page of a layer
// is 16 x 8 x 128 f16 = 2048 chunks of 8 elements: 256 threads (the default
// threads-per-block), each chunk split into slot, head and element.

// CHECK-LABEL: func.func @copy_pages
// CHECK-SAME: (%[[COLLECTION:[a-z0-9_]+]]: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[PAIRS:[a-z0-9_]+]]: memref<?x2xi32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C65535:[a-z0-9_]+]] = arith.constant 65535 : index
// CHECK-DAG: %[[NUM_PAIRS:[a-z0-9_]+]] = memref.dim %[[PAIRS]], %[[C0]] : memref<?x2xi32>
// CHECK-DAG: %[[NUM_LAYERS:[a-z0-9_]+]] = kvcache.num_layers %[[COLLECTION]]
// CHECK: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_PAIRS]], %[[C65535]] : index
// CHECK: %[[HAS_PAIRS:[a-z0-9_]+]] = arith.cmpi ugt, %[[NUM_PAIRS]], %[[C0]] : index
// CHECK: %[[HAS_LAYERS:[a-z0-9_]+]] = arith.cmpi ugt, %[[NUM_LAYERS]], %[[C0]] : index
// CHECK: %[[HAS_WORK:[a-z0-9_]+]] = arith.andi %[[HAS_PAIRS]], %[[HAS_LAYERS]] : i1
// CHECK: scf.if %[[HAS_WORK]] {
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[C256:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[BX:[a-z0-9_]+]], %[[BY:[a-z0-9_]+]], %{{[a-z0-9_]+}}) in (%[[GRID_X:[a-z0-9_]+]] = %[[GRID]], %{{[a-z0-9_]+}} = %[[NUM_LAYERS]], %{{[a-z0-9_]+}} = %[[C1]])
// CHECK-SAME: threads(%[[TX:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%[[BLOCK_X:[a-z0-9_]+]] = %[[C256]], %{{[a-z0-9_]+}} = %[[C1]], %{{[a-z0-9_]+}} = %[[C1]])
// CHECK: %[[KEY:[a-z0-9_]+]] = kvcache.get_key_cache %[[COLLECTION]][%[[BY]]]
// CHECK-NEXT: %[[VALUE:[a-z0-9_]+]] = kvcache.get_value_cache %[[COLLECTION]][%[[BY]]]
// CHECK-NEXT: scf.for %[[PAIR:[a-z0-9_]+]] = %[[BX]] to %[[NUM_PAIRS]] step %[[GRID_X]] {
// CHECK-NEXT: %[[SRC_I32:[a-z0-9_]+]] = memref.load %[[PAIRS]][%[[PAIR]], %[[C0]]] : memref<?x2xi32>
// CHECK-NEXT: %[[SRC:[a-z0-9_]+]] = arith.index_castui %[[SRC_I32]] : i32 to index
// CHECK-NEXT: %[[DST_I32:[a-z0-9_]+]] = memref.load %[[PAIRS]][%[[PAIR]], %[[C1]]] : memref<?x2xi32>
// CHECK-NEXT: %[[DST:[a-z0-9_]+]] = arith.index_castui %[[DST_I32]] : i32 to index
// CHECK-DAG: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// CHECK-DAG: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK-DAG: %[[C1024:[a-z0-9_]+]] = arith.constant 1024 : index
// CHECK-DAG: %[[C2048:[a-z0-9_]+]] = arith.constant 2048 : index
// CHECK: scf.for %[[CHUNK:[a-z0-9_]+]] = %[[TX]] to %[[C2048]] step %[[BLOCK_X]] {
// CHECK-NEXT: %[[FIRST:[a-z0-9_]+]] = arith.muli %[[CHUNK]], %[[C8]] : index
// CHECK-NEXT: %[[SLOT:[a-z0-9_]+]] = arith.divui %[[FIRST]], %[[C1024]] : index
// CHECK-NEXT: %[[IN_ROW:[a-z0-9_]+]] = arith.remui %[[FIRST]], %[[C1024]] : index
// CHECK-NEXT: %[[HEAD:[a-z0-9_]+]] = arith.divui %[[IN_ROW]], %[[C128]] : index
// CHECK-NEXT: %[[ELEMENT:[a-z0-9_]+]] = arith.remui %[[IN_ROW]], %[[C128]] : index
// CHECK-NEXT: %[[K_CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[KEY]][%[[SRC]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {serves_write} : {{.*}} -> vector<8xf16>
// CHECK-NEXT: kvcache.page_store %[[K_CHUNK]], %[[KEY]][%[[DST]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : {{.*}}, vector<8xf16>
// CHECK-NEXT: }
// CHECK-NEXT: scf.for %[[V_CHUNK_ID:[a-z0-9_]+]] = %[[TX]] to %[[C2048]] step %[[BLOCK_X]] {
// CHECK-NEXT: %[[V_FIRST:[a-z0-9_]+]] = arith.muli %[[V_CHUNK_ID]], %[[C8]] : index
// CHECK-NEXT: %[[V_SLOT:[a-z0-9_]+]] = arith.divui %[[V_FIRST]], %[[C1024]] : index
// CHECK-NEXT: %[[V_IN_ROW:[a-z0-9_]+]] = arith.remui %[[V_FIRST]], %[[C1024]] : index
// CHECK-NEXT: %[[V_HEAD:[a-z0-9_]+]] = arith.divui %[[V_IN_ROW]], %[[C128]] : index
// CHECK-NEXT: %[[V_ELEMENT:[a-z0-9_]+]] = arith.remui %[[V_IN_ROW]], %[[C128]] : index
// CHECK-NEXT: %[[V_CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[VALUE]][%[[SRC]], %[[V_SLOT]], %[[V_HEAD]], %[[V_ELEMENT]]] {serves_write} : {{.*}} -> vector<8xf16>
// CHECK-NEXT: kvcache.page_store %[[V_CHUNK]], %[[VALUE]][%[[DST]], %[[V_SLOT]], %[[V_HEAD]], %[[V_ELEMENT]]] : {{.*}}, vector<8xf16>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return

// OPTIONS-LABEL: func.func @copy_pages
// OPTIONS-DAG: %[[C1024:[a-z0-9_]+]] = arith.constant 1024 : index
// OPTIONS-DAG: %[[NUM_PAIRS:[a-z0-9_]+]] = memref.dim %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : memref<?x2xi32>
// OPTIONS: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_PAIRS]], %[[C1024]] : index
// OPTIONS: %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
// OPTIONS: gpu.launch blocks({{.*}}) in (%{{[a-z0-9_]+}} = %[[GRID]],
// OPTIONS-SAME: threads(%[[TX:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%[[BLOCK_X:[a-z0-9_]+]] = %[[C64]],
// OPTIONS: scf.for %{{[a-z0-9_]+}} = %[[TX]] to %{{[a-z0-9_]+}} step %[[BLOCK_X]] {
func.func @copy_pages(%collection: !collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  return
}

// An MLA collection: K only. 64 x 576 bf16 = 4608 chunks.

// CHECK-LABEL: func.func @copy_pages_mla
// CHECK: gpu.launch
// CHECK: %[[KEY:[a-z0-9_]+]] = kvcache.get_key_cache
// CHECK-NOT: kvcache.get_value_cache
// CHECK: %[[C4608:[a-z0-9_]+]] = arith.constant 4608 : index
// CHECK: scf.for %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}} to %[[C4608]] step
// CHECK: %[[CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[KEY]]{{.*}} -> vector<8xbf16>
// CHECK-NEXT: kvcache.page_store %[[CHUNK]], %[[KEY]]{{.*}}, vector<8xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
!mla_collection = !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
func.func @copy_pages_mla(%collection: !mla_collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !mla_collection, memref<?x2xi32>
  return
}

//===----------------------------------------------------------------------===//
// Narrower rows
//===----------------------------------------------------------------------===//

// head_size 5 f16: scalar chunks, 2 heads x 5 = 10 of them, so a block of 10
// threads (fewer than threads-per-block).

// CHECK-LABEL: func.func @store_ragged_head_size_5
// CHECK: %[[C10:[a-z0-9_]+]] = arith.constant 10 : index
// CHECK: gpu.launch blocks({{.*}}) threads(%[[TX:[a-z0-9_]+]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) in (%[[BLOCK_X:[a-z0-9_]+]] = %[[C10]],
// CHECK-NOT: vector.
// CHECK: scf.for %{{[a-z0-9_]+}} = %[[TX]] to %[[C10]] step %[[BLOCK_X]] {
// CHECK: %[[X:[a-z0-9_]+]] = memref.load %{{.*}} : memref<?x2x5xf16>
// CHECK-NEXT: kvcache.page_store %[[X]], {{.*}}, f16
// CHECK-NOT: vector.
// CHECK: return
!cache_h5 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 5, page_size = 4>
func.func @store_ragged_head_size_5(%cache: !cache_h5, %new: memref<?x2x5xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache_h5, memref<?x2x5xf16>, memref<?xi32>
  return
}

// f32, 2 heads x 64: 32 chunks of 4 x f32, 32 threads.

// CHECK-LABEL: func.func @gather_ragged_f32
// CHECK: %[[C32:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK: gpu.launch blocks({{.*}}) threads({{.*}}) in (%{{[a-z0-9_]+}} = %[[C32]],
// CHECK: kvcache.page_load {{.*}} -> vector<4xf32>
// CHECK-NEXT: vector.store {{.*}} {alignment = 16 : i64} : memref<?x2x64xf32>, vector<4xf32>
!cache_f32 = !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4>
func.func @gather_ragged_f32(%cache: !cache_f32, %out: memref<?x2x64xf32>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache_f32, memref<?x2x64xf32>, memref<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// Access ops are left alone
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @negative_access_ops
// CHECK-NOT: gpu.launch
// CHECK: kvcache.load
// CHECK-NEXT: kvcache.store
// CHECK-NEXT: return
func.func @negative_access_ops(%cache: !cache, %batch: index, %head: index, %token: index, %element: index) {
  %x = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
  kvcache.store %x, %cache[%batch, %head, %token, %element] : !cache, vector<8xf16>
  return
}
