// RUN: kvcache-opt %s -kvcache-to-cpu | FileCheck %s

// Address arithmetic of a cache with more than 2^31 elements:
// 70000 pages x 2 x 32 layers x 16 x 8 x 128 f16 = 5.9e11 elements, so the
// page stride (1048576 elements) times a page id overflows 32 bits from page
// 2048 on. Only the token position is narrowed to i32 (it is bounded by the
// i32 cache lengths) to split it into logical page and slot; the physical page
// read from the lookup table is zero-extended and every offset is computed in
// i64.

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: llvm.func @load_value
// CHECK-SAME: %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: i32, %[[LAYER:[a-z0-9]+]]: i64, %[[BATCH:[a-z0-9]+]]: i64, %[[HEAD:[a-z0-9]+]]: i64, %[[TOKEN:[a-z0-9]+]]: i64, %[[ELEMENT:[a-z0-9]+]]: i64)
// The layer view: offset layer * 16384 + 1 * 524288 (V), in i64.
// CHECK-DAG: %[[KV_OFFSET:.*]] = llvm.mlir.constant(524288 : index) : i64
// CHECK-DAG: %[[LAYER_STRIDE:.*]] = llvm.mlir.constant(16384 : index) : i64
// CHECK-NOT: llvm.trunc
// CHECK: %[[LAYER_OFFSET:.*]] = llvm.mul %[[LAYER]], %[[LAYER_STRIDE]] overflow<nsw> : i64
// CHECK: %[[VIEW_OFFSET:.*]] = llvm.add %[[LAYER_OFFSET]], %[[KV_OFFSET]] : i64
// CHECK: llvm.insertvalue %[[VIEW_OFFSET]], %{{.*}}[2] : !llvm.struct<(ptr, ptr, i64, array<4 x i64>, array<4 x i64>)>
// CHECK: llvm.mlir.constant(1048576 : index) : i64
// CHECK-NOT: llvm.trunc
// The lookup: the token alone is narrowed.
// CHECK: %[[TOKEN_I32:.*]] = llvm.trunc %[[TOKEN]] : i64 to i32
// CHECK-NOT: llvm.trunc
// CHECK: %[[COLUMN_I32:.*]] = llvm.lshr %[[TOKEN_I32]], %{{.*}} : i32
// CHECK: %[[SLOT_I32:.*]] = llvm.and %[[TOKEN_I32]], %{{.*}} : i32
// CHECK: %[[COLUMN:.*]] = llvm.zext %[[COLUMN_I32]] : i32 to i64
// CHECK: %[[ROW_START:.*]] = llvm.mul %[[BATCH]], %{{.*}} overflow<nsw, nuw> : i64
// CHECK: %[[ENTRY_INDEX:.*]] = llvm.add %[[ROW_START]], %[[COLUMN]] overflow<nsw, nuw> : i64
// CHECK: %[[ENTRY:.*]] = llvm.getelementptr inbounds|nuw %{{.*}}[%[[ENTRY_INDEX]]] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK: %[[PAGE_I32:.*]] = llvm.load %[[ENTRY]] : !llvm.ptr -> i32
// CHECK: %[[PAGE:.*]] = llvm.zext %[[PAGE_I32]] : i32 to i64
// CHECK: %[[SLOT:.*]] = llvm.zext %[[SLOT_I32]] : i32 to i64
// The element offset: page * 1048576 + slot * 1024 + head * 128 + element.
// CHECK: %[[VIEW_BASE:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f16
// CHECK: %[[PAGE_STRIDE:.*]] = llvm.mlir.constant(1048576 : index) : i64
// CHECK: %[[PAGE_OFFSET:.*]] = llvm.mul %[[PAGE]], %[[PAGE_STRIDE]] : i64
// CHECK: %[[ROW_STRIDE:.*]] = llvm.mlir.constant(1024 : index) : i64
// CHECK: %[[SLOT_OFFSET:.*]] = llvm.mul %[[SLOT]], %[[ROW_STRIDE]] : i64
// CHECK: %[[ROW_OFFSET:.*]] = llvm.add %[[PAGE_OFFSET]], %[[SLOT_OFFSET]] : i64
// CHECK: %[[HEAD_STRIDE:.*]] = llvm.mlir.constant(128 : index) : i64
// CHECK: %[[HEAD_OFFSET:.*]] = llvm.mul %[[HEAD]], %[[HEAD_STRIDE]] : i64
// CHECK: %[[HEAD_ROW_OFFSET:.*]] = llvm.add %[[ROW_OFFSET]], %[[HEAD_OFFSET]] : i64
// CHECK: %[[OFFSET:.*]] = llvm.add %[[HEAD_ROW_OFFSET]], %[[ELEMENT]] : i64
// CHECK: %[[ADDRESS:.*]] = llvm.getelementptr %[[VIEW_BASE]][%[[OFFSET]]] : (!llvm.ptr, i64) -> !llvm.ptr, f16
// CHECK: %[[X:.*]] = llvm.load %[[ADDRESS]] {alignment = 16 : i64} : !llvm.ptr -> vector<8xf16>
// CHECK-NOT: llvm.trunc
// CHECK: llvm.return %[[X]]
func.func @load_value(%blocks: memref<70000x2x32x16x8x128xf16>, %cache_lengths: memref<?xi32>,
                      %lookup_table: memref<?x?xi32>, %max_seq_length: i32, %max_cache_length: i32,
                      %layer: index, %batch: index, %head: index, %token: index, %element: index) -> vector<8xf16> {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<70000x2x32x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !collection
  %value = kvcache.get_value_cache %collection[%layer] : !collection
  %x = kvcache.load %value[%batch, %head, %token, %element] : !cache -> vector<8xf16>
  return %x : vector<8xf16>
}

// CHECK-LABEL: llvm.func @store_key
// CHECK-SAME: %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: i32, %[[LAYER:[a-z0-9]+]]: i64, %[[X:[a-z0-9]+]]: f16, %[[BATCH:[a-z0-9]+]]: i64, %[[HEAD:[a-z0-9]+]]: i64, %[[TOKEN:[a-z0-9]+]]: i64, %[[ELEMENT:[a-z0-9]+]]: i64)
// CHECK-NOT: llvm.trunc
// CHECK: llvm.mul %[[LAYER]], %{{.*}} : i64
// CHECK-NOT: llvm.trunc
// CHECK: llvm.trunc %[[TOKEN]] : i64 to i32
// CHECK-NOT: llvm.trunc
// CHECK: %[[PAGE_I32:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK: %[[PAGE:.*]] = llvm.zext %[[PAGE_I32]] : i32 to i64
// CHECK: %[[PAGE_STRIDE:.*]] = llvm.mlir.constant(1048576 : index) : i64
// CHECK: llvm.mul %[[PAGE]], %[[PAGE_STRIDE]] overflow<nsw, nuw> : i64
// CHECK-NOT: llvm.trunc
// CHECK: %[[ADDRESS:.*]] = llvm.getelementptr inbounds|nuw %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f16
// CHECK: llvm.store %[[X]], %[[ADDRESS]] : f16, !llvm.ptr
// CHECK-NOT: llvm.trunc
// CHECK: llvm.return
func.func @store_key(%blocks: memref<70000x2x32x16x8x128xf16>, %cache_lengths: memref<?xi32>,
                     %lookup_table: memref<?x?xi32>, %max_seq_length: i32, %max_cache_length: i32,
                     %layer: index, %x: f16, %batch: index, %head: index, %token: index, %element: index) {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<70000x2x32x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !collection
  %key = kvcache.get_key_cache %collection[%layer] : !collection
  kvcache.store %x, %key[%batch, %head, %token, %element] : !cache, f16
  return
}

// The tile's offset: layer * 16384 + page * 1048576 + slot * 1024 + head * 128.

// CHECK-LABEL: llvm.func @tile
// CHECK-SAME: %{{[a-z0-9]+}}: i32, %{{[a-z0-9]+}}: i32, %[[LAYER:[a-z0-9]+]]: i64, %[[BATCH:[a-z0-9]+]]: i64, %[[TOKEN:[a-z0-9]+]]: i64, %[[HEAD:[a-z0-9]+]]: i64)
// CHECK-DAG: %[[HEAD_STRIDE:.*]] = llvm.mlir.constant(128 : index) : i64
// CHECK-DAG: %[[ROW_STRIDE:.*]] = llvm.mlir.constant(1024 : index) : i64
// CHECK-DAG: %[[PAGE_STRIDE:.*]] = llvm.mlir.constant(1048576 : index) : i64
// CHECK-DAG: %[[LAYER_STRIDE:.*]] = llvm.mlir.constant(16384 : index) : i64
// CHECK-NOT: llvm.trunc
// CHECK: llvm.trunc %[[TOKEN]] : i64 to i32
// CHECK-NOT: llvm.trunc
// CHECK: %[[PAGE_I32:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK: %[[PAGE:.*]] = llvm.zext %[[PAGE_I32]] : i32 to i64
// CHECK: %[[SLOT:.*]] = llvm.zext %{{.*}} : i32 to i64
// CHECK: %[[LAYER_OFFSET:.*]] = llvm.mul %[[LAYER]], %[[LAYER_STRIDE]] overflow<nsw> : i64
// CHECK: %[[PAGE_OFFSET:.*]] = llvm.mul %[[PAGE]], %[[PAGE_STRIDE]] overflow<nsw> : i64
// CHECK: %[[OFFSET0:.*]] = llvm.add %[[LAYER_OFFSET]], %[[PAGE_OFFSET]] : i64
// CHECK: %[[SLOT_OFFSET:.*]] = llvm.mul %[[SLOT]], %[[ROW_STRIDE]] overflow<nsw> : i64
// CHECK: %[[OFFSET1:.*]] = llvm.add %[[OFFSET0]], %[[SLOT_OFFSET]] : i64
// CHECK: %[[HEAD_OFFSET:.*]] = llvm.mul %[[HEAD]], %[[HEAD_STRIDE]] overflow<nsw> : i64
// CHECK: %[[TILE_OFFSET:.*]] = llvm.add %[[OFFSET1]], %[[HEAD_OFFSET]] : i64
// CHECK: llvm.insertvalue %[[TILE_OFFSET]], %{{.*}}[2] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK-NOT: llvm.trunc
// CHECK: llvm.return
func.func @tile(%blocks: memref<70000x2x32x16x8x128xf16>, %cache_lengths: memref<?xi32>,
                %lookup_table: memref<?x?xi32>, %max_seq_length: i32, %max_cache_length: i32,
                %layer: index, %batch: index, %token: index, %head: index)
    -> memref<16x128xf16, strided<[1024, 1], offset: ?>> {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<70000x2x32x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !collection
  %key = kvcache.get_key_cache %collection[%layer] : !collection
  %tile = kvcache.tile %key[%batch, %token, %head] : !cache -> memref<16x128xf16, strided<[1024, 1], offset: ?>>
  return %tile : memref<16x128xf16, strided<[1024, 1], offset: ?>>
}
