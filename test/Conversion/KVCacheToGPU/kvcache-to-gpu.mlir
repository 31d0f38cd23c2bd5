// RUN: kvcache-opt %s -convert-kvcache-to-gpu -cse | FileCheck %s
// RUN: kvcache-opt %s -convert-kvcache-to-gpu -cse | FileCheck %s --check-prefix=KERNEL
// RUN: kvcache-opt %s -convert-kvcache-to-gpu="threads-per-block=64 max-blocks=1024" -cse \
// RUN:   | FileCheck %s --check-prefix=OPTIONS
// RUN: kvcache-opt %s -convert-kvcache-to-gpu="threads-per-block=64 max-blocks=1024" -cse \
// RUN:   | FileCheck %s --check-prefix=OPTIONS-KERNEL

// The kernel ops become kernels written with kvcache access ops
// (docs/Contract.md, section 3.3; page addressing is left to
// convert-kvcache-to-memref): a gpu.func @<function>_<op> in
// gpu.module @kvcache_kernels, created after every function of the module,
// whose parameters are exactly the op's operands in order, launched from the
// host by a gpu.launch_func with those operands.
// Each launch is guarded by an scf.if (a zero-sized grid is a launch error).
// store_ragged and gather_ragged: warps move tiles of consecutive rows in a
// grid-stride loop, the grid covering every row (at most max-blocks blocks),
// threads-per-block threads (a multiple of 32) per block. copy_pages: the
// grid is min(pairs, max-blocks) blocks visiting the pairs in a grid-stride
// loop; a block has min(chunks per page, threads-per-block) threads (the
// kernel's known_block_size), each moving 16-byte chunks from its thread id
// on, stepping by the block size. The pass creates constants next to their
// uses and does not fold; -cse merges the repeated ones of a function (host
// or kernel) where one dominates the others, so each is matched once per
// region.
//
// CHECK lines check the host functions; KERNEL lines check the kernels, next
// to the function that launches each, in the order of the functions (which is
// the order of the kernels in the gpu.module).

// CHECK: module attributes {gpu.container_module}
// OPTIONS: module attributes {gpu.container_module}
// KERNEL: module attributes {gpu.container_module}
// The gpu.module comes after every host function.
// KERNEL: func.func @negative_access_ops
// KERNEL-LABEL: gpu.module @kvcache_kernels {
// OPTIONS-KERNEL-LABEL: gpu.module @kvcache_kernels {

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>

//===----------------------------------------------------------------------===//
// store_ragged
//===----------------------------------------------------------------------===//

// Warp tiles of consecutive rows: 8 heads x 128 f16 are 128 chunks of
// 8 x f16, so with 8 chunks in flight per lane (chunks-in-flight) a warp's
// tile is 2 rows; 256 threads are 8 warps, 16 rows per block. Tiles start at
// row_offsets[0]; rows at or past min(row_offsets[batch], rows) are left
// alone. Lane l < 2 resolves row l of the tile: its sequence b by a binary
// search over the offsets on the device (the largest b with row_offsets[b]
// <= row, so empty sequences are stepped over), then one lookup of token
// cache_length(b) + row - row_offsets[b]. Every lane then reads each row's
// page and slot from the lane that resolved it (idx shuffles, i32), loads its
// 4 chunks of each row (lane, lane + 32, ...: the head and element of each
// are computed once, before the loop), and only then stores them.

// CHECK-LABEL: func.func @store_ragged
// CHECK-SAME: (%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[NEW:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[ROW_OFFSETS:[a-z0-9_]+]]: memref<?xi32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %[[NEW]], %[[C0]] : memref<?x8x128xf16>
// CHECK-DAG: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[ROW_OFFSETS]], %[[C0]] : memref<?xi32>
// CHECK-DAG: %[[HAS_ROWS:[a-z0-9_]+]] = arith.cmpi ult, %[[C0]], %[[NUM_ROWS]] : index
// CHECK: %[[IS_EMPTY:[a-z0-9_]+]] = arith.cmpi eq, %[[SIZE]], %[[C0]] : index
// CHECK: %[[SIZE_MINUS_ONE:[a-z0-9_]+]] = arith.subi %[[SIZE]], %[[C1]] : index
// CHECK: %[[BATCH:[a-z0-9_]+]] = arith.select %[[IS_EMPTY]], %[[C0]], %[[SIZE_MINUS_ONE]] : index
// CHECK: %[[HAS_SEQUENCES:[a-z0-9_]+]] = arith.cmpi ult, %[[C0]], %[[BATCH]] : index
// CHECK: %[[HAS_WORK:[a-z0-9_]+]] = arith.andi %[[HAS_ROWS]], %[[HAS_SEQUENCES]] : i1
// CHECK: %[[C16:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK: %[[BLOCKS:[a-z0-9_]+]] = arith.ceildivui %[[NUM_ROWS]], %[[C16]] : index
// CHECK: %[[C65535:[a-z0-9_]+]] = arith.constant 65535 : index
// CHECK: %[[GRID:[a-z0-9_]+]] = arith.minui %[[BLOCKS]], %[[C65535]] : index
// CHECK: scf.if %[[HAS_WORK]] {
// CHECK-NEXT: %[[C256:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@store_ragged_store_ragged blocks in (%[[GRID]], %[[C1]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) args(%[[CACHE]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[NEW]] : memref<?x8x128xf16>, %[[ROW_OFFSETS]] : memref<?xi32>){{$}}
// CHECK-NEXT: }
// CHECK-NEXT: return

// The kernel: its parameters are the op's operands, in order; it recomputes
// the number of rows and the batch size from them.

// KERNEL-LABEL: gpu.func @store_ragged_store_ragged(
// KERNEL-SAME: {{^}}%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[NEW:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[ROW_OFFSETS:[a-z0-9_]+]]: memref<?xi32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {{[{]$}}
// KERNEL-NEXT: %[[BX:[a-z0-9_]+]] = gpu.block_id x
// KERNEL-NEXT: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// KERNEL-NEXT: %[[GRID_X:[a-z0-9_]+]] = gpu.grid_dim x
// KERNEL-NOT: kvcache.num_pages
// KERNEL: %[[C32:[a-z0-9_]+]] = arith.constant 32 : index
// KERNEL-NEXT: %[[LANE:[a-z0-9_]+]] = arith.remui %[[TX]], %[[C32]] : index
// KERNEL-NEXT: %[[WARP:[a-z0-9_]+]] = arith.divui %[[TX]], %[[C32]] : index
// KERNEL-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// KERNEL-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// KERNEL-DAG: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[ROW_OFFSETS]], %[[C0]] : memref<?xi32>
// KERNEL: %[[IS_EMPTY:[a-z0-9_]+]] = arith.cmpi eq, %[[SIZE]], %[[C0]] : index
// KERNEL-NEXT: %[[SIZE_MINUS_ONE:[a-z0-9_]+]] = arith.subi %[[SIZE]], %[[C1]] : index
// KERNEL-NEXT: %[[BATCH:[a-z0-9_]+]] = arith.select %[[IS_EMPTY]], %[[C0]], %[[SIZE_MINUS_ONE]] : index
// KERNEL-NEXT: %[[FIRST_ROW_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[C0]]] : memref<?xi32>
// KERNEL-NEXT: %[[FIRST_ROW:[a-z0-9_]+]] = arith.index_castui %[[FIRST_ROW_I32]] : i32 to index
// KERNEL-NEXT: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %[[NEW]], %[[C0]] : memref<?x8x128xf16>
// KERNEL-NEXT: %[[END_ROW_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[BATCH]]] : memref<?xi32>
// KERNEL-NEXT: %[[OFFSETS_END:[a-z0-9_]+]] = arith.index_castui %[[END_ROW_I32]] : i32 to index
// KERNEL-NEXT: %[[END_ROW:[a-z0-9_]+]] = arith.minui %[[OFFSETS_END]], %[[NUM_ROWS]] : index
// KERNEL-NEXT: %[[LAST:[a-z0-9_]+]] = arith.maxui %[[END_ROW]], %[[FIRST_ROW]] : index
// KERNEL-NEXT: %[[BATCH_ROWS:[a-z0-9_]+]] = arith.subi %[[LAST]], %[[FIRST_ROW]] : index
// KERNEL-NEXT: %[[C2:[a-z0-9_]+]] = arith.constant 2 : index
// KERNEL-NEXT: %[[NUM_TILES:[a-z0-9_]+]] = arith.ceildivui %[[BATCH_ROWS]], %[[C2]] : index
// KERNEL-NEXT: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// KERNEL-NEXT: %[[BLOCK_WARPS:[a-z0-9_]+]] = arith.muli %[[BX]], %[[C8]] : index
// KERNEL-NEXT: %[[FIRST_TILE:[a-z0-9_]+]] = arith.addi %[[BLOCK_WARPS]], %[[WARP]] : index
// KERNEL-NEXT: %[[TILE_STEP:[a-z0-9_]+]] = arith.muli %[[GRID_X]], %[[C8]] : index
// Chunk 0 of the lane: row 0 of the tile, element 8 * lane of the row.
// KERNEL-NEXT: %[[C0_I32:[a-z0-9_]+]] = arith.constant 0 : i32
// KERNEL-NEXT: %[[FIRST0:[a-z0-9_]+]] = arith.muli %[[LANE]], %[[C8]] : index
// KERNEL-NEXT: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// KERNEL-NEXT: %[[HEAD0:[a-z0-9_]+]] = arith.divui %[[FIRST0]], %[[C128]] : index
// KERNEL-NEXT: %[[ELEMENT0:[a-z0-9_]+]] = arith.remui %[[FIRST0]], %[[C128]] : index
// KERNEL-COUNT-3: arith.remui %{{[a-z0-9_]+}}, %[[C128]] : index
// Chunk 4: row 1 of the tile, chunk lane of it.
// KERNEL: %[[CHUNK4:[a-z0-9_]+]] = arith.addi %[[LANE]], %[[C128]] : index
// KERNEL-NEXT: %[[C1_I32:[a-z0-9_]+]] = arith.constant 1 : i32
// KERNEL-NEXT: %[[IN_ROW4:[a-z0-9_]+]] = arith.subi %[[CHUNK4]], %[[C128]] : index
// KERNEL-NEXT: %[[FIRST4:[a-z0-9_]+]] = arith.muli %[[IN_ROW4]], %[[C8]] : index
// KERNEL-NEXT: %[[HEAD4:[a-z0-9_]+]] = arith.divui %[[FIRST4]], %[[C128]] : index
// KERNEL-NEXT: %[[ELEMENT4:[a-z0-9_]+]] = arith.remui %[[FIRST4]], %[[C128]] : index
// KERNEL: scf.for %[[TILE:[a-z0-9_]+]] = %[[FIRST_TILE]] to %[[NUM_TILES]] step %[[TILE_STEP]] {
// KERNEL-NEXT: %[[TILE_OFFSET:[a-z0-9_]+]] = arith.muli %[[TILE]], %[[C2]] : index
// KERNEL-NEXT: %[[TILE_START:[a-z0-9_]+]] = arith.addi %[[FIRST_ROW]], %[[TILE_OFFSET]] : index
// KERNEL-NEXT: %[[LANE_ROW:[a-z0-9_]+]] = arith.addi %[[TILE_START]], %[[LANE]] : index
// KERNEL-NEXT: %[[IN_BATCH:[a-z0-9_]+]] = arith.cmpi ult, %[[LANE_ROW]], %[[END_ROW]] : index
// KERNEL-NEXT: %[[RESOLVES:[a-z0-9_]+]] = arith.cmpi ult, %[[LANE]], %[[C2]] : index
// KERNEL-NEXT: %[[OWNS:[a-z0-9_]+]] = arith.andi %[[RESOLVES]], %[[IN_BATCH]] : i1
// KERNEL-NEXT: %[[RESOLVED:[a-z0-9_]+]]:2 = scf.if %[[OWNS]] -> (index, index) {
// KERNEL-NEXT: %[[SEARCH:[a-z0-9_]+]]:2 = scf.while (%[[LOW:[a-z0-9_]+]] = %[[C0]], %[[HIGH:[a-z0-9_]+]] = %[[BATCH]]) : (index, index) -> (index, index) {
// KERNEL-NEXT: %[[SPAN:[a-z0-9_]+]] = arith.subi %[[HIGH]], %[[LOW]] : index
// KERNEL-NEXT: %[[MORE:[a-z0-9_]+]] = arith.cmpi ugt, %[[SPAN]], %[[C1]] : index
// KERNEL-NEXT: scf.condition(%[[MORE]]) %[[LOW]], %[[HIGH]] : index, index
// KERNEL-NEXT: } do {
// KERNEL-NEXT: ^bb0(%[[LOW2:[a-z0-9_]+]]: index, %[[HIGH2:[a-z0-9_]+]]: index):
// KERNEL-NEXT: %[[SUM:[a-z0-9_]+]] = arith.addi %[[LOW2]], %[[HIGH2]] : index
// KERNEL-NEXT: %[[MID:[a-z0-9_]+]] = arith.shrui %[[SUM]], %[[C1]] : index
// KERNEL-NEXT: %[[MID_START_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[MID]]] : memref<?xi32>
// KERNEL-NEXT: %[[MID_START:[a-z0-9_]+]] = arith.index_castui %[[MID_START_I32]] : i32 to index
// KERNEL-NEXT: %[[GO_RIGHT:[a-z0-9_]+]] = arith.cmpi ule, %[[MID_START]], %[[LANE_ROW]] : index
// KERNEL-NEXT: %[[NEW_LOW:[a-z0-9_]+]] = arith.select %[[GO_RIGHT]], %[[MID]], %[[LOW2]] : index
// KERNEL-NEXT: %[[NEW_HIGH:[a-z0-9_]+]] = arith.select %[[GO_RIGHT]], %[[HIGH2]], %[[MID]] : index
// KERNEL-NEXT: scf.yield %[[NEW_LOW]], %[[NEW_HIGH]] : index, index
// KERNEL-NEXT: }
// KERNEL-NEXT: %[[START_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[SEARCH]]#0] : memref<?xi32>
// KERNEL-NEXT: %[[START:[a-z0-9_]+]] = arith.index_castui %[[START_I32]] : i32 to index
// KERNEL-NEXT: %[[CACHE_LENGTH:[a-z0-9_]+]] = kvcache.cache_length %[[CACHE]][%[[SEARCH]]#0]{{.*}}{serves_write}
// KERNEL-NEXT: %[[DELTA:[a-z0-9_]+]] = arith.subi %[[LANE_ROW]], %[[START]] : index
// KERNEL-NEXT: %[[TOKEN:[a-z0-9_]+]] = arith.addi %[[CACHE_LENGTH]], %[[DELTA]] : index
// KERNEL-NEXT: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[CACHE]][%[[SEARCH]]#0, %[[TOKEN]]]
// KERNEL-NEXT: scf.yield %[[PAGE]], %[[SLOT]] : index, index
// KERNEL-NEXT: } else {
// KERNEL-NEXT: scf.yield %[[C0]], %[[C0]] : index, index
// KERNEL-NEXT: }
// Row 0 of the tile: page and slot from lane 0, then the 4 loads.
// KERNEL-NEXT: %[[ROW0_IN_BATCH:[a-z0-9_]+]] = arith.cmpi ult, %[[TILE_START]], %[[END_ROW]] : index
// KERNEL-NEXT: %[[PAGE_I32:[a-z0-9_]+]] = arith.index_castui %[[RESOLVED]]#0 : index to i32
// KERNEL-NEXT: %[[C32_I32:[a-z0-9_]+]] = arith.constant 32 : i32
// KERNEL-NEXT: %[[PAGE0_I32:[a-zA-Z0-9_]+]], %{{[a-z0-9_]+}} = gpu.shuffle idx %[[PAGE_I32]], %[[C0_I32]], %[[C32_I32]] : i32
// KERNEL-NEXT: %[[PAGE0:[a-z0-9_]+]] = arith.index_castui %[[PAGE0_I32]] : i32 to index
// KERNEL-NEXT: %[[SLOT_I32:[a-z0-9_]+]] = arith.index_castui %[[RESOLVED]]#1 : index to i32
// KERNEL-NEXT: %[[SLOT0_I32:[a-zA-Z0-9_]+]], %{{[a-z0-9_]+}} = gpu.shuffle idx %[[SLOT_I32]], %[[C0_I32]], %[[C32_I32]] : i32
// KERNEL-NEXT: %[[SLOT0:[a-z0-9_]+]] = arith.index_castui %[[SLOT0_I32]] : i32 to index
// KERNEL-NEXT: %[[ROW0:[a-z0-9_]+]]:4 = scf.if %[[ROW0_IN_BATCH]] -> (vector<8xf16>, vector<8xf16>, vector<8xf16>, vector<8xf16>) {
// KERNEL-NEXT: %[[X0:[a-z0-9_]+]] = vector.load %[[NEW]][%[[TILE_START]], %[[HEAD0]], %[[ELEMENT0]]] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// KERNEL-COUNT-3: vector.load %[[NEW]][%[[TILE_START]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}] {alignment = 16 : i64}
// KERNEL-NEXT: scf.yield %[[X0]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : vector<8xf16>, vector<8xf16>, vector<8xf16>, vector<8xf16>
// KERNEL-NEXT: } else {
// KERNEL-NEXT: %[[POISON:[a-z0-9_]+]] = ub.poison : vector<8xf16>
// KERNEL-NEXT: scf.yield %[[POISON]], %[[POISON]], %[[POISON]], %[[POISON]] : vector<8xf16>, vector<8xf16>, vector<8xf16>, vector<8xf16>
// KERNEL-NEXT: }
// Row 1: page and slot from lane 1, then its 4 loads.
// KERNEL-NEXT: %[[ROW1:[a-z0-9_]+]] = arith.addi %[[TILE_START]], %[[C1]] : index
// KERNEL-NEXT: %[[ROW1_IN_BATCH:[a-z0-9_]+]] = arith.cmpi ult, %[[ROW1]], %[[END_ROW]] : index
// KERNEL-NEXT: %[[PAGE1_I32:[a-zA-Z0-9_]+]], %{{[a-z0-9_]+}} = gpu.shuffle idx %[[PAGE_I32]], %[[C1_I32]], %[[C32_I32]] : i32
// KERNEL-NEXT: %[[PAGE1:[a-z0-9_]+]] = arith.index_castui %[[PAGE1_I32]] : i32 to index
// KERNEL-NEXT: %[[SLOT1_I32:[a-zA-Z0-9_]+]], %{{[a-z0-9_]+}} = gpu.shuffle idx %[[SLOT_I32]], %[[C1_I32]], %[[C32_I32]] : i32
// KERNEL-NEXT: %[[SLOT1:[a-z0-9_]+]] = arith.index_castui %[[SLOT1_I32]] : i32 to index
// KERNEL-NEXT: %[[ROW1_CHUNKS:[a-z0-9_]+]]:4 = scf.if %[[ROW1_IN_BATCH]] -> (vector<8xf16>, vector<8xf16>, vector<8xf16>, vector<8xf16>) {
// KERNEL-NEXT: %[[X4:[a-z0-9_]+]] = vector.load %[[NEW]][%[[ROW1]], %[[HEAD4]], %[[ELEMENT4]]] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// KERNEL-COUNT-3: vector.load %[[NEW]][%[[ROW1]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}] {alignment = 16 : i64}
// KERNEL-NEXT: scf.yield
// KERNEL-NEXT: } else {
// KERNEL-NEXT: ub.poison
// KERNEL-NEXT: scf.yield
// KERNEL-NEXT: }
// The stores, after every load.
// KERNEL-NEXT: scf.if %[[ROW0_IN_BATCH]] {
// KERNEL-NEXT: kvcache.page_store %[[ROW0]]#0, %[[CACHE]][%[[PAGE0]], %[[SLOT0]], %[[HEAD0]], %[[ELEMENT0]]] : {{.*}}, vector<8xf16>
// KERNEL-COUNT-3: kvcache.page_store %[[ROW0]]#{{[1-3]}}, %[[CACHE]][%[[PAGE0]], %[[SLOT0]],
// KERNEL-NEXT: }
// KERNEL-NEXT: scf.if %[[ROW1_IN_BATCH]] {
// KERNEL-NEXT: kvcache.page_store %[[ROW1_CHUNKS]]#0, %[[CACHE]][%[[PAGE1]], %[[SLOT1]], %[[HEAD4]], %[[ELEMENT4]]] : {{.*}}, vector<8xf16>
// KERNEL-COUNT-3: kvcache.page_store %[[ROW1_CHUNKS]]#{{[1-3]}}, %[[CACHE]][%[[PAGE1]], %[[SLOT1]],
// KERNEL-NEXT: }
// KERNEL-NEXT: }
// KERNEL-NEXT: gpu.return
// KERNEL-NEXT: }

// threads-per-block=64: 2 warps, 4 rows per block; max-blocks=1024 caps the
// grid.

// OPTIONS-LABEL: func.func @store_ragged
// OPTIONS: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : memref<?x8x128xf16>
// OPTIONS: %[[C4:[a-z0-9_]+]] = arith.constant 4 : index
// OPTIONS-NEXT: %[[BLOCKS:[a-z0-9_]+]] = arith.ceildivui %[[NUM_ROWS]], %[[C4]] : index
// OPTIONS-NEXT: %[[C1024:[a-z0-9_]+]] = arith.constant 1024 : index
// OPTIONS-NEXT: %[[GRID:[a-z0-9_]+]] = arith.minui %[[BLOCKS]], %[[C1024]] : index
// OPTIONS: scf.if
// OPTIONS: %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
// OPTIONS: gpu.launch_func @kvcache_kernels::@store_ragged_store_ragged blocks in (%[[GRID]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) threads in (%[[C64]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}})

// OPTIONS-KERNEL-LABEL: gpu.func @store_ragged_store_ragged(
// OPTIONS-KERNEL-SAME: kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// OPTIONS-KERNEL-NEXT: %[[BX:[a-z0-9_]+]] = gpu.block_id x
// OPTIONS-KERNEL-NEXT: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// OPTIONS-KERNEL-NEXT: %[[GRID_X:[a-z0-9_]+]] = gpu.grid_dim x
// OPTIONS-KERNEL: %[[C2:[a-z0-9_]+]] = arith.constant 2 : index
// OPTIONS-KERNEL: %[[BLOCK_WARPS:[a-z0-9_]+]] = arith.muli %[[BX]], %[[C2]] : index
// OPTIONS-KERNEL-NEXT: %[[FIRST_TILE:[a-z0-9_]+]] = arith.addi %[[BLOCK_WARPS]], %{{[a-z0-9_]+}} : index
// OPTIONS-KERNEL-NEXT: %[[TILE_STEP:[a-z0-9_]+]] = arith.muli %[[GRID_X]], %[[C2]] : index
// OPTIONS-KERNEL: scf.for %{{[a-z0-9_]+}} = %[[FIRST_TILE]] to %{{[a-z0-9_]+}} step %[[TILE_STEP]] {
// OPTIONS-KERNEL: vector.load {{.*}} vector<8xf16>
func.func @store_ragged(%cache: !cache, %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// gather_ragged
//===----------------------------------------------------------------------===//

// The same kernel in the other direction: a read-only lookup of token
// position row - ctx_offsets[b] (no cache_length), page_load of every chunk
// before any vector.store to `out`. The grid counts rows of `out`.

// CHECK-LABEL: func.func @gather_ragged
// CHECK-SAME: (%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[OUT:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[CTX_OFFSETS:[a-z0-9_]+]]: memref<?xi32>)
// CHECK-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %[[OUT]], %[[C0]] : memref<?x8x128xf16>
// CHECK-DAG: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[CTX_OFFSETS]], %[[C0]] : memref<?xi32>
// CHECK: %[[C16:[a-z0-9_]+]] = arith.constant 16 : index
// CHECK-NEXT: %[[BLOCKS:[a-z0-9_]+]] = arith.ceildivui %[[NUM_ROWS]], %[[C16]] : index
// CHECK-NEXT: %[[C65535:[a-z0-9_]+]] = arith.constant 65535 : index
// CHECK-NEXT: %[[GRID:[a-z0-9_]+]] = arith.minui %[[BLOCKS]], %[[C65535]] : index
// CHECK: scf.if
// CHECK: %[[C256:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@gather_ragged_gather_ragged blocks in (%[[GRID]], %[[C1]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) args(%[[CACHE]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[OUT]] : memref<?x8x128xf16>, %[[CTX_OFFSETS]] : memref<?xi32>){{$}}
// CHECK-NEXT: }
// CHECK-NEXT: return

// KERNEL-LABEL: gpu.func @gather_ragged_gather_ragged(
// KERNEL-SAME: {{^}}%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[OUT:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[CTX_OFFSETS:[a-z0-9_]+]]: memref<?xi32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {{[{]$}}
// KERNEL-NEXT: %[[BX:[a-z0-9_]+]] = gpu.block_id x
// KERNEL-NEXT: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// KERNEL-NEXT: %[[GRID_X:[a-z0-9_]+]] = gpu.grid_dim x
// KERNEL-NOT: kvcache.num_pages
// KERNEL: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %[[OUT]], %{{[a-z0-9_]+}} : memref<?x8x128xf16>
// KERNEL: scf.for %[[TILE:[a-z0-9_]+]] = %{{[a-z0-9_]+}} to %{{[a-z0-9_]+}} step %{{[a-z0-9_]+}} {
// KERNEL: %[[SEARCH:[a-z0-9_]+]]:2 = scf.while
// KERNEL: %[[START_I32:[a-z0-9_]+]] = memref.load %[[CTX_OFFSETS]][%[[SEARCH]]#0] : memref<?xi32>
// KERNEL-NEXT: %[[START:[a-z0-9_]+]] = arith.index_castui %[[START_I32]] : i32 to index
// KERNEL-NEXT: %[[TOKEN:[a-z0-9_]+]] = arith.subi %[[ROW:[a-z0-9_]+]], %[[START]] : index
// KERNEL-NEXT: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[CACHE]][%[[SEARCH]]#0, %[[TOKEN]]] {read_only}
// KERNEL-NOT: kvcache.lookup
// KERNEL: gpu.shuffle idx
// KERNEL: gpu.shuffle idx
// KERNEL: %[[ROW0:[a-z0-9_]+]]:4 = scf.if %[[ROW0_IN_BATCH:[a-z0-9_]+]] -> (vector<8xf16>, vector<8xf16>, vector<8xf16>, vector<8xf16>) {
// KERNEL-NEXT: %[[X:[a-z0-9_]+]] = kvcache.page_load %[[CACHE]][%[[PAGE0:[a-z0-9_]+]], %[[SLOT0:[a-z0-9_]+]], %[[HEAD:[a-z0-9_]+]], %[[ELEMENT:[a-z0-9_]+]]] : {{.*}} -> vector<8xf16>
// KERNEL-COUNT-3: kvcache.page_load %[[CACHE]][%[[PAGE0]], %[[SLOT0]],
// KERNEL: gpu.shuffle idx
// KERNEL: gpu.shuffle idx
// KERNEL-COUNT-4: kvcache.page_load
// KERNEL-NOT: vector.store
// KERNEL: scf.if %[[ROW0_IN_BATCH]] {
// KERNEL-NEXT: vector.store %[[ROW0]]#0, %[[OUT]][%[[TILE_START:[a-z0-9_]+]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// KERNEL-COUNT-3: vector.store %[[ROW0]]#{{[1-3]}}, %[[OUT]][%[[TILE_START]],
// KERNEL: scf.if
// KERNEL-COUNT-4: vector.store
// KERNEL-NOT: kvcache.cache_length
// KERNEL: gpu.return
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
// CHECK-DAG: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_PAIRS]], %[[C65535]] : index
// CHECK-DAG: %[[HAS_PAIRS:[a-z0-9_]+]] = arith.cmpi ult, %[[C0]], %[[NUM_PAIRS]] : index
// CHECK-DAG: %[[HAS_LAYERS:[a-z0-9_]+]] = arith.cmpi ult, %[[C0]], %[[NUM_LAYERS]] : index
// CHECK-DAG: %[[HAS_WORK:[a-z0-9_]+]] = arith.andi %[[HAS_PAIRS]], %[[HAS_LAYERS]] : i1
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK: scf.if %[[HAS_WORK]] {
// CHECK-NEXT: %[[C256:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@copy_pages_copy_pages blocks in (%[[GRID]], %[[NUM_LAYERS]], %[[C1]]) threads in (%[[C256]], %[[C1]], %[[C1]]) args(%[[COLLECTION]] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[PAIRS]] : memref<?x2xi32>){{$}}
// CHECK-NEXT: }
// CHECK-NEXT: return

// KERNEL-LABEL: gpu.func @copy_pages_copy_pages(
// KERNEL-SAME: {{^}}%[[COLLECTION:[a-z0-9_]+]]: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[PAIRS:[a-z0-9_]+]]: memref<?x2xi32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {{[{]$}}
// KERNEL-NEXT: %[[BX:[a-z0-9_]+]] = gpu.block_id x
// KERNEL-NEXT: %[[BY:[a-z0-9_]+]] = gpu.block_id y
// KERNEL-NEXT: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// KERNEL-NEXT: %[[GRID_X:[a-z0-9_]+]] = gpu.grid_dim x
// KERNEL-NEXT: %[[BLOCK_X:[a-z0-9_]+]] = gpu.block_dim x
// KERNEL-NEXT: %[[KEY:[a-z0-9_]+]] = kvcache.get_key_cache %[[COLLECTION]][%[[BY]]]
// KERNEL-NEXT: %[[VALUE:[a-z0-9_]+]] = kvcache.get_value_cache %[[COLLECTION]][%[[BY]]]
// KERNEL-NEXT: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// KERNEL-NEXT: %[[NUM_PAIRS:[a-z0-9_]+]] = memref.dim %[[PAIRS]], %[[C0]] : memref<?x2xi32>
// KERNEL-NEXT: scf.for %[[PAIR:[a-z0-9_]+]] = %[[BX]] to %[[NUM_PAIRS]] step %[[GRID_X]] {
// KERNEL-NEXT: %[[SRC_I32:[a-z0-9_]+]] = memref.load %[[PAIRS]][%[[PAIR]], %[[C0]]] : memref<?x2xi32>
// KERNEL-NEXT: %[[SRC:[a-z0-9_]+]] = arith.index_castui %[[SRC_I32]] : i32 to index
// KERNEL-NEXT: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// KERNEL-NEXT: %[[DST_I32:[a-z0-9_]+]] = memref.load %[[PAIRS]][%[[PAIR]], %[[C1]]] : memref<?x2xi32>
// KERNEL-NEXT: %[[DST:[a-z0-9_]+]] = arith.index_castui %[[DST_I32]] : i32 to index
// KERNEL-NEXT: %[[C2048:[a-z0-9_]+]] = arith.constant 2048 : index
// KERNEL-NEXT: scf.for %[[CHUNK:[a-z0-9_]+]] = %[[TX]] to %[[C2048]] step %[[BLOCK_X]] {
// KERNEL-NEXT: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// KERNEL-NEXT: %[[FIRST:[a-z0-9_]+]] = arith.muli %[[CHUNK]], %[[C8]] : index
// KERNEL-NEXT: %[[C1024:[a-z0-9_]+]] = arith.constant 1024 : index
// KERNEL-NEXT: %[[SLOT:[a-z0-9_]+]] = arith.divui %[[FIRST]], %[[C1024]] : index
// KERNEL-NEXT: %[[IN_ROW:[a-z0-9_]+]] = arith.remui %[[FIRST]], %[[C1024]] : index
// KERNEL-NEXT: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// KERNEL-NEXT: %[[HEAD:[a-z0-9_]+]] = arith.divui %[[IN_ROW]], %[[C128]] : index
// KERNEL-NEXT: %[[ELEMENT:[a-z0-9_]+]] = arith.remui %[[IN_ROW]], %[[C128]] : index
// KERNEL-NEXT: %[[K_CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[KEY]][%[[SRC]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {serves_write} : {{.*}} -> vector<8xf16>
// KERNEL-NEXT: kvcache.page_store %[[K_CHUNK]], %[[KEY]][%[[DST]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : {{.*}}, vector<8xf16>
// KERNEL-NEXT: }
// KERNEL-NEXT: scf.for %[[V_CHUNK_ID:[a-z0-9_]+]] = %[[TX]] to %[[C2048]] step %[[BLOCK_X]] {
// KERNEL-NEXT: %[[V_C8:[a-z0-9_]+]] = arith.constant 8 : index
// KERNEL-NEXT: %[[V_FIRST:[a-z0-9_]+]] = arith.muli %[[V_CHUNK_ID]], %[[V_C8]] : index
// KERNEL-NEXT: %[[V_C1024:[a-z0-9_]+]] = arith.constant 1024 : index
// KERNEL-NEXT: %[[V_SLOT:[a-z0-9_]+]] = arith.divui %[[V_FIRST]], %[[V_C1024]] : index
// KERNEL-NEXT: %[[V_IN_ROW:[a-z0-9_]+]] = arith.remui %[[V_FIRST]], %[[V_C1024]] : index
// KERNEL-NEXT: %[[V_C128:[a-z0-9_]+]] = arith.constant 128 : index
// KERNEL-NEXT: %[[V_HEAD:[a-z0-9_]+]] = arith.divui %[[V_IN_ROW]], %[[V_C128]] : index
// KERNEL-NEXT: %[[V_ELEMENT:[a-z0-9_]+]] = arith.remui %[[V_IN_ROW]], %[[V_C128]] : index
// KERNEL-NEXT: %[[V_CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[VALUE]][%[[SRC]], %[[V_SLOT]], %[[V_HEAD]], %[[V_ELEMENT]]] {serves_write} : {{.*}} -> vector<8xf16>
// KERNEL-NEXT: kvcache.page_store %[[V_CHUNK]], %[[VALUE]][%[[DST]], %[[V_SLOT]], %[[V_HEAD]], %[[V_ELEMENT]]] : {{.*}}, vector<8xf16>
// KERNEL-NEXT: }
// KERNEL-NEXT: }
// KERNEL-NEXT: gpu.return
// KERNEL-NEXT: }

// OPTIONS-LABEL: func.func @copy_pages
// OPTIONS-DAG: %[[C1024:[a-z0-9_]+]] = arith.constant 1024 : index
// OPTIONS-DAG: %[[NUM_PAIRS:[a-z0-9_]+]] = memref.dim %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : memref<?x2xi32>
// OPTIONS: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_PAIRS]], %[[C1024]] : index
// OPTIONS: %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
// OPTIONS: gpu.launch_func @kvcache_kernels::@copy_pages_copy_pages blocks in (%[[GRID]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) threads in (%[[C64]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}})

// OPTIONS-KERNEL-LABEL: gpu.func @copy_pages_copy_pages(
// OPTIONS-KERNEL-SAME: kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// OPTIONS-KERNEL: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// OPTIONS-KERNEL: %[[BLOCK_X:[a-z0-9_]+]] = gpu.block_dim x
// OPTIONS-KERNEL: scf.for %{{[a-z0-9_]+}} = %[[TX]] to %{{[a-z0-9_]+}} step %[[BLOCK_X]] {
func.func @copy_pages(%collection: !collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  return
}

// An MLA collection: K only. 64 x 576 bf16 = 4608 chunks.

// CHECK-LABEL: func.func @copy_pages_mla
// CHECK-SAME: (%[[COLLECTION:[a-z0-9_]+]]: !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %[[PAIRS:[a-z0-9_]+]]: memref<?x2xi32>)
// CHECK: %[[C256:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@copy_pages_mla_copy_pages blocks in (%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) threads in (%[[C256]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) args(%[[COLLECTION]] : !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %[[PAIRS]] : memref<?x2xi32>){{$}}

// KERNEL-LABEL: gpu.func @copy_pages_mla_copy_pages(
// KERNEL-SAME: {{^}}%{{[a-z0-9_]+}}: !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>, %{{[a-z0-9_]+}}: memref<?x2xi32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {{[{]$}}
// KERNEL: %[[KEY:[a-z0-9_]+]] = kvcache.get_key_cache
// KERNEL-NOT: kvcache.get_value_cache
// KERNEL: %[[C4608:[a-z0-9_]+]] = arith.constant 4608 : index
// KERNEL: scf.for %{{[a-z0-9_]+}} = %{{[a-z0-9_]+}} to %[[C4608]] step
// KERNEL: %[[CHUNK:[a-z0-9_]+]] = kvcache.page_load %[[KEY]]{{.*}} -> vector<8xbf16>
// KERNEL-NEXT: kvcache.page_store %[[CHUNK]], %[[KEY]]{{.*}}, vector<8xbf16>
// KERNEL-NEXT: }
// KERNEL-NEXT: }
// KERNEL-NEXT: gpu.return
!mla_collection = !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
func.func @copy_pages_mla(%collection: !mla_collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !mla_collection, memref<?x2xi32>
  return
}

//===----------------------------------------------------------------------===//
// Narrower rows
//===----------------------------------------------------------------------===//

// head_size 5 f16: scalar chunks, 2 heads x 5 = 10 of them; a tile is 25
// rows (250 chunks), so lane l moves chunks l, l + 32, ..., l + 224, of rows
// (l + 32 i) / 10, each reading its row's page and slot from that lane; the
// last chunk only where l + 224 < 250. 256 threads.

// CHECK-LABEL: func.func @store_ragged_head_size_5
// CHECK: %[[C256:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@store_ragged_head_size_5_store_ragged blocks in ({{.*}}) threads in (%[[C256]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) args(

// KERNEL-LABEL: gpu.func @store_ragged_head_size_5_store_ragged(
// KERNEL-SAME: {{^}}%{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 2, head_size = 5, page_size = 4>, %{{[a-z0-9_]+}}: memref<?x2x5xf16>, %{{[a-z0-9_]+}}: memref<?xi32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {{[{]$}}
// KERNEL: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// KERNEL-NOT: vector.
// KERNEL: %[[LANE:[a-z0-9_]+]] = arith.remui %[[TX]], %{{[a-z0-9_]+}} : index
// KERNEL: %[[C10:[a-z0-9_]+]] = arith.constant 10 : index
// KERNEL-NEXT: %[[ROW0:[a-z0-9_]+]] = arith.divui %[[LANE]], %[[C10]] : index
// KERNEL-NEXT: %{{[a-z0-9_]+}} = arith.remui %[[LANE]], %[[C10]] : index
// KERNEL-NEXT: %[[SOURCE0:[a-z0-9_]+]] = arith.index_castui %[[ROW0]] : index to i32
// KERNEL: %[[C224:[a-z0-9_]+]] = arith.constant 224 : index
// KERNEL-NEXT: %[[CHUNK7:[a-z0-9_]+]] = arith.addi %[[LANE]], %[[C224]] : index
// KERNEL-NEXT: %[[ROW7:[a-z0-9_]+]] = arith.divui %[[CHUNK7]], %[[C10]] : index
// KERNEL-NEXT: %{{[a-z0-9_]+}} = arith.remui %[[CHUNK7]], %[[C10]] : index
// KERNEL-NEXT: %[[C250:[a-z0-9_]+]] = arith.constant 250 : index
// KERNEL-NEXT: %[[IN_TILE7:[a-z0-9_]+]] = arith.cmpi ult, %[[CHUNK7]], %[[C250]] : index
// KERNEL-NEXT: %[[C24:[a-z0-9_]+]] = arith.constant 24 : index
// KERNEL-NEXT: %[[CLAMPED7:[a-z0-9_]+]] = arith.minui %[[ROW7]], %[[C24]] : index
// KERNEL-NEXT: %[[SOURCE7:[a-z0-9_]+]] = arith.index_castui %[[CLAMPED7]] : index to i32
// KERNEL: scf.for
// KERNEL: gpu.shuffle idx %{{[a-z0-9_]+}}, %[[SOURCE0]],
// KERNEL: %[[X:[a-z0-9_]+]] = scf.if %{{[a-z0-9_]+}} -> (f16) {
// KERNEL-NEXT: memref.load %{{.*}} : memref<?x2x5xf16>
// KERNEL: %[[VALID7:[a-z0-9_]+]] = arith.andi %[[IN_TILE7]], %{{[a-z0-9_]+}} : i1
// KERNEL-NEXT: gpu.shuffle idx %{{[a-z0-9_]+}}, %[[SOURCE7]],
// KERNEL: kvcache.page_store %[[X]], {{.*}}, f16
// KERNEL-NOT: vector.
// KERNEL: gpu.return
!cache_h5 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 5, page_size = 4>
func.func @store_ragged_head_size_5(%cache: !cache_h5, %new: memref<?x2x5xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache_h5, memref<?x2x5xf16>, memref<?xi32>
  return
}

// f32, 2 heads x 64: 32 chunks of 4 x f32, a tile of 8 rows, one chunk of
// each per lane; 256 threads.

// CHECK-LABEL: func.func @gather_ragged_f32
// CHECK: %[[C256:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@gather_ragged_f32_gather_ragged blocks in ({{.*}}) threads in (%[[C256]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) args(

// KERNEL-LABEL: gpu.func @gather_ragged_f32_gather_ragged(
// KERNEL-SAME: {{^}}%{{[a-z0-9_]+}}: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4>, %{{[a-z0-9_]+}}: memref<?x2x64xf32>, %{{[a-z0-9_]+}}: memref<?xi32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {{[{]$}}
// KERNEL-COUNT-8: kvcache.page_load {{.*}} -> vector<4xf32>
// KERNEL-NOT: kvcache.page_load
// KERNEL: vector.store {{.*}} {alignment = 16 : i64} : memref<?x2x64xf32>, vector<4xf32>
!cache_f32 = !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4>
func.func @gather_ragged_f32(%cache: !cache_f32, %out: memref<?x2x64xf32>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache_f32, memref<?x2x64xf32>, memref<?xi32>
  return
}

//===----------------------------------------------------------------------===//
// Access ops are left alone
//===----------------------------------------------------------------------===//

// No kernel: the gpu.module holds the six kernels above and no other.

// CHECK-LABEL: func.func @negative_access_ops
// CHECK-NOT: gpu.launch
// CHECK: kvcache.load
// CHECK-NEXT: kvcache.store
// CHECK-NEXT: return
// CHECK-NEXT: }
// CHECK-NEXT: gpu.module @kvcache_kernels {
func.func @negative_access_ops(%cache: !cache, %batch: index, %head: index, %token: index, %element: index) {
  %x = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
  kvcache.store %x, %cache[%batch, %head, %token, %element] : !cache, vector<8xf16>
  return
}
