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
// Each launch is guarded by an scf.if (a zero-sized grid is a launch error);
// the grid is min(work items, max-blocks) blocks visiting the work items in a
// grid-stride loop; a block has min(chunks per item, threads-per-block)
// threads (the kernel's known_block_size), each moving 16-byte chunks from
// its thread id on, stepping by the block size. The pass creates constants
// next to their uses and does not fold; -cse merges the repeated ones of a
// function (host or kernel) where one dominates the others, so each is
// matched once per region.
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
// CHECK-DAG: %[[HAS_ROWS:[a-z0-9_]+]] = arith.cmpi ult, %[[C0]], %[[NUM_ROWS]] : index
// CHECK: %[[IS_EMPTY:[a-z0-9_]+]] = arith.cmpi eq, %[[SIZE]], %[[C0]] : index
// CHECK: %[[SIZE_MINUS_ONE:[a-z0-9_]+]] = arith.subi %[[SIZE]], %[[C1]] : index
// CHECK: %[[BATCH:[a-z0-9_]+]] = arith.select %[[IS_EMPTY]], %[[C0]], %[[SIZE_MINUS_ONE]] : index
// CHECK: %[[HAS_SEQUENCES:[a-z0-9_]+]] = arith.cmpi ult, %[[C0]], %[[BATCH]] : index
// CHECK: %[[HAS_WORK:[a-z0-9_]+]] = arith.andi %[[HAS_ROWS]], %[[HAS_SEQUENCES]] : i1
// CHECK: %[[C65535:[a-z0-9_]+]] = arith.constant 65535 : index
// CHECK: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_ROWS]], %[[C65535]] : index
// CHECK: scf.if %[[HAS_WORK]] {
// CHECK-NEXT: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@store_ragged_store_ragged blocks in (%[[GRID]], %[[C1]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]]) args(%[[CACHE]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[NEW]] : memref<?x8x128xf16>, %[[ROW_OFFSETS]] : memref<?xi32>){{$}}
// CHECK-NEXT: }
// CHECK-NEXT: return

// The kernel: its parameters are the op's operands, in order; it recomputes
// the number of rows and the batch size from them.

// KERNEL-LABEL: gpu.func @store_ragged_store_ragged(
// KERNEL-SAME: {{^}}%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[NEW:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[ROW_OFFSETS:[a-z0-9_]+]]: memref<?xi32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
// KERNEL-NEXT: %[[BX:[a-z0-9_]+]] = gpu.block_id x
// KERNEL-NEXT: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// KERNEL-NEXT: %[[GRID_X:[a-z0-9_]+]] = gpu.grid_dim x
// KERNEL-NEXT: %[[BLOCK_X:[a-z0-9_]+]] = gpu.block_dim x
// KERNEL-NOT: kvcache.num_pages
// KERNEL-DAG: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// KERNEL-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// KERNEL-DAG: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %[[NEW]], %[[C0]] : memref<?x8x128xf16>
// KERNEL-DAG: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[ROW_OFFSETS]], %[[C0]] : memref<?xi32>
// KERNEL: %[[IS_EMPTY:[a-z0-9_]+]] = arith.cmpi eq, %[[SIZE]], %[[C0]] : index
// KERNEL-NEXT: %[[SIZE_MINUS_ONE:[a-z0-9_]+]] = arith.subi %[[SIZE]], %[[C1]] : index
// KERNEL-NEXT: %[[BATCH:[a-z0-9_]+]] = arith.select %[[IS_EMPTY]], %[[C0]], %[[SIZE_MINUS_ONE]] : index
// KERNEL-NEXT: %[[FIRST_ROW_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[C0]]] : memref<?xi32>
// KERNEL-NEXT: %[[FIRST_ROW:[a-z0-9_]+]] = arith.index_castui %[[FIRST_ROW_I32]] : i32 to index
// KERNEL-NEXT: %[[END_ROW_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[BATCH]]] : memref<?xi32>
// KERNEL-NEXT: %[[END_ROW:[a-z0-9_]+]] = arith.index_castui %[[END_ROW_I32]] : i32 to index
// KERNEL-NEXT: scf.for %[[ROW:[a-z0-9_]+]] = %[[BX]] to %[[NUM_ROWS]] step %[[GRID_X]] {
// KERNEL-NEXT: %[[AFTER_FIRST:[a-z0-9_]+]] = arith.cmpi uge, %[[ROW]], %[[FIRST_ROW]] : index
// KERNEL-NEXT: %[[BEFORE_END:[a-z0-9_]+]] = arith.cmpi ult, %[[ROW]], %[[END_ROW]] : index
// KERNEL-NEXT: %[[IN_BATCH:[a-z0-9_]+]] = arith.andi %[[AFTER_FIRST]], %[[BEFORE_END]] : i1
// KERNEL-NEXT: scf.if %[[IN_BATCH]] {
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
// KERNEL-NEXT: %[[GO_RIGHT:[a-z0-9_]+]] = arith.cmpi ule, %[[MID_START]], %[[ROW]] : index
// KERNEL-NEXT: %[[NEW_LOW:[a-z0-9_]+]] = arith.select %[[GO_RIGHT]], %[[MID]], %[[LOW2]] : index
// KERNEL-NEXT: %[[NEW_HIGH:[a-z0-9_]+]] = arith.select %[[GO_RIGHT]], %[[HIGH2]], %[[MID]] : index
// KERNEL-NEXT: scf.yield %[[NEW_LOW]], %[[NEW_HIGH]] : index, index
// KERNEL-NEXT: }
// KERNEL-NEXT: %[[START_I32:[a-z0-9_]+]] = memref.load %[[ROW_OFFSETS]][%[[SEARCH]]#0] : memref<?xi32>
// KERNEL-NEXT: %[[START:[a-z0-9_]+]] = arith.index_castui %[[START_I32]] : i32 to index
// KERNEL-NEXT: %[[CACHE_LENGTH:[a-z0-9_]+]] = kvcache.cache_length %[[CACHE]][%[[SEARCH]]#0]{{.*}}{serves_write}
// KERNEL-NEXT: %[[DELTA:[a-z0-9_]+]] = arith.subi %[[ROW]], %[[START]] : index
// KERNEL-NEXT: %[[TOKEN:[a-z0-9_]+]] = arith.addi %[[CACHE_LENGTH]], %[[DELTA]] : index
// KERNEL-NEXT: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[CACHE]][%[[SEARCH]]#0, %[[TOKEN]]]
// KERNEL-NOT: kvcache.lookup
// KERNEL: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// KERNEL-NEXT: scf.for %[[CHUNK:[a-z0-9_]+]] = %[[TX]] to %[[C128]] step %[[BLOCK_X]] {
// KERNEL-NEXT: %[[C8:[a-z0-9_]+]] = arith.constant 8 : index
// KERNEL-NEXT: %[[FIRST:[a-z0-9_]+]] = arith.muli %[[CHUNK]], %[[C8]] : index
// KERNEL-NEXT: %[[HEAD:[a-z0-9_]+]] = arith.divui %[[FIRST]], %[[C128]] : index
// KERNEL-NEXT: %[[ELEMENT:[a-z0-9_]+]] = arith.remui %[[FIRST]], %[[C128]] : index
// KERNEL-NEXT: %[[X:[a-z0-9_]+]] = vector.load %[[NEW]][%[[ROW]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
// KERNEL-NEXT: kvcache.page_store %[[X]], %[[CACHE]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : {{.*}}, vector<8xf16>
// KERNEL-NEXT: }
// KERNEL-NEXT: }
// KERNEL-NEXT: }
// KERNEL-NEXT: gpu.return
// KERNEL-NEXT: }

// threads-per-block=64: 64 threads, two chunks each; max-blocks=1024 caps
// the grid.

// OPTIONS-LABEL: func.func @store_ragged
// OPTIONS-DAG: %[[C1024:[a-z0-9_]+]] = arith.constant 1024 : index
// OPTIONS-DAG: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : memref<?x8x128xf16>
// OPTIONS: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_ROWS]], %[[C1024]] : index
// OPTIONS: scf.if
// OPTIONS: %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
// OPTIONS: gpu.launch_func @kvcache_kernels::@store_ragged_store_ragged blocks in (%[[GRID]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) threads in (%[[C64]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}})

// OPTIONS-KERNEL-LABEL: gpu.func @store_ragged_store_ragged(
// OPTIONS-KERNEL-SAME: kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// OPTIONS-KERNEL-NEXT: %[[BX:[a-z0-9_]+]] = gpu.block_id x
// OPTIONS-KERNEL-NEXT: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// OPTIONS-KERNEL-NEXT: %[[GRID_X:[a-z0-9_]+]] = gpu.grid_dim x
// OPTIONS-KERNEL-NEXT: %[[BLOCK_X:[a-z0-9_]+]] = gpu.block_dim x
// OPTIONS-KERNEL: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : memref<?x8x128xf16>
// OPTIONS-KERNEL: scf.for %{{[a-z0-9_]+}} = %[[BX]] to %[[NUM_ROWS]] step %[[GRID_X]] {
// OPTIONS-KERNEL: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// OPTIONS-KERNEL: scf.for %{{[a-z0-9_]+}} = %[[TX]] to %[[C128]] step %[[BLOCK_X]] {
// OPTIONS-KERNEL: vector.load {{.*}} vector<8xf16>
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
// CHECK-DAG: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
// CHECK-DAG: %[[C65535:[a-z0-9_]+]] = arith.constant 65535 : index
// CHECK-DAG: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %[[OUT]], %[[C0]] : memref<?x8x128xf16>
// CHECK-DAG: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[CTX_OFFSETS]], %[[C0]] : memref<?xi32>
// CHECK: %[[GRID:[a-z0-9_]+]] = arith.minui %[[NUM_ROWS]], %[[C65535]] : index
// CHECK: scf.if
// CHECK: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@gather_ragged_gather_ragged blocks in (%[[GRID]], %[[C1]], %[[C1]]) threads in (%[[C128]], %[[C1]], %[[C1]]) args(%[[CACHE]] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[OUT]] : memref<?x8x128xf16>, %[[CTX_OFFSETS]] : memref<?xi32>){{$}}
// CHECK-NEXT: }
// CHECK-NEXT: return

// KERNEL-LABEL: gpu.func @gather_ragged_gather_ragged(
// KERNEL-SAME: {{^}}%[[CACHE:[a-z0-9_]+]]: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, %[[OUT:[a-z0-9_]+]]: memref<?x8x128xf16>, %[[CTX_OFFSETS:[a-z0-9_]+]]: memref<?xi32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {{[{]$}}
// KERNEL-NEXT: %[[BX:[a-z0-9_]+]] = gpu.block_id x
// KERNEL-NEXT: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// KERNEL-NEXT: %[[GRID_X:[a-z0-9_]+]] = gpu.grid_dim x
// KERNEL-NEXT: %[[BLOCK_X:[a-z0-9_]+]] = gpu.block_dim x
// KERNEL-NOT: kvcache.num_pages
// KERNEL: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// KERNEL-NEXT: %[[NUM_ROWS:[a-z0-9_]+]] = memref.dim %[[OUT]], %[[C0]] : memref<?x8x128xf16>
// KERNEL-NEXT: %[[SIZE:[a-z0-9_]+]] = memref.dim %[[CTX_OFFSETS]], %[[C0]] : memref<?xi32>
// KERNEL: scf.for %[[ROW:[a-z0-9_]+]] = %[[BX]] to %[[NUM_ROWS]] step %[[GRID_X]] {
// KERNEL: %[[SEARCH:[a-z0-9_]+]]:2 = scf.while
// KERNEL: %[[START_I32:[a-z0-9_]+]] = memref.load %[[CTX_OFFSETS]][%[[SEARCH]]#0] : memref<?xi32>
// KERNEL-NEXT: %[[START:[a-z0-9_]+]] = arith.index_castui %[[START_I32]] : i32 to index
// KERNEL-NEXT: %[[TOKEN:[a-z0-9_]+]] = arith.subi %[[ROW]], %[[START]] : index
// KERNEL-NEXT: %[[PAGE:[a-z0-9_]+]], %[[SLOT:[a-z0-9_]+]] = kvcache.lookup %[[CACHE]][%[[SEARCH]]#0, %[[TOKEN]]]
// KERNEL-NOT: kvcache.lookup
// KERNEL: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
// KERNEL-NEXT: scf.for %[[CHUNK:[a-z0-9_]+]] = %[[TX]] to %[[C128]] step %[[BLOCK_X]] {
// KERNEL: %[[X:[a-z0-9_]+]] = kvcache.page_load %[[CACHE]][%[[PAGE]], %[[SLOT]], %[[HEAD:[a-z0-9_]+]], %[[ELEMENT:[a-z0-9_]+]]] : {{.*}} -> vector<8xf16>
// KERNEL-NEXT: vector.store %[[X]], %[[OUT]][%[[ROW]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x8x128xf16>, vector<8xf16>
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

// head_size 5 f16: scalar chunks, 2 heads x 5 = 10 of them, so a block of 10
// threads (fewer than threads-per-block).

// CHECK-LABEL: func.func @store_ragged_head_size_5
// CHECK: %[[C10:[a-z0-9_]+]] = arith.constant 10 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@store_ragged_head_size_5_store_ragged blocks in ({{.*}}) threads in (%[[C10]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) args(

// KERNEL-LABEL: gpu.func @store_ragged_head_size_5_store_ragged(
// KERNEL-SAME: {{^}}%{{[a-z0-9_]+}}: !kvcache.paged_cache<f16, num_heads = 2, head_size = 5, page_size = 4>, %{{[a-z0-9_]+}}: memref<?x2x5xf16>, %{{[a-z0-9_]+}}: memref<?xi32>) kernel attributes {known_block_size = array<i32: 10, 1, 1>} {{[{]$}}
// KERNEL: %[[TX:[a-z0-9_]+]] = gpu.thread_id x
// KERNEL: %[[BLOCK_X:[a-z0-9_]+]] = gpu.block_dim x
// KERNEL-NOT: vector.
// KERNEL: %[[C10:[a-z0-9_]+]] = arith.constant 10 : index
// KERNEL-NEXT: scf.for %{{[a-z0-9_]+}} = %[[TX]] to %[[C10]] step %[[BLOCK_X]] {
// KERNEL: %[[X:[a-z0-9_]+]] = memref.load %{{.*}} : memref<?x2x5xf16>
// KERNEL-NEXT: kvcache.page_store %[[X]], {{.*}}, f16
// KERNEL-NOT: vector.
// KERNEL: gpu.return
!cache_h5 = !kvcache.paged_cache<f16, num_heads = 2, head_size = 5, page_size = 4>
func.func @store_ragged_head_size_5(%cache: !cache_h5, %new: memref<?x2x5xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache_h5, memref<?x2x5xf16>, memref<?xi32>
  return
}

// f32, 2 heads x 64: 32 chunks of 4 x f32, 32 threads.

// CHECK-LABEL: func.func @gather_ragged_f32
// CHECK: %[[C32:[a-z0-9_]+]] = arith.constant 32 : index
// CHECK-NEXT: gpu.launch_func @kvcache_kernels::@gather_ragged_f32_gather_ragged blocks in ({{.*}}) threads in (%[[C32]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) args(

// KERNEL-LABEL: gpu.func @gather_ragged_f32_gather_ragged(
// KERNEL-SAME: {{^}}%{{[a-z0-9_]+}}: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4>, %{{[a-z0-9_]+}}: memref<?x2x64xf32>, %{{[a-z0-9_]+}}: memref<?xi32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {{[{]$}}
// KERNEL: kvcache.page_load {{.*}} -> vector<4xf32>
// KERNEL-NEXT: vector.store {{.*}} {alignment = 16 : i64} : memref<?x2x64xf32>, vector<4xf32>
// The last kernel ends the gpu.module, which ends the module.
// KERNEL: gpu.return
// KERNEL-NEXT: }
// KERNEL-NEXT: }
// KERNEL-NEXT: }
// KERNEL-NOT: {{.}}
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
