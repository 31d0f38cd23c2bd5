// RUN: kvcache-opt %s -convert-kvcache-to-memref -split-input-file | FileCheck %s --implicit-check-not=unrealized_conversion_cast

// The access ops lower to memref/vector/arith, and every value of a kvcache
// type becomes its five lowered values (docs/Contract.md, section 7):
//   paged_collection: memref<? x kv x ? x P x H x D x elt, strided<[?, ?, ?, H*D, D, 1], offset: ?>>,
//                     memref<?xi32>, memref<?x?xi32>, i32, i32
//   paged_cache:      memref<? x P x H x D x elt, strided<[?, H*D, D, 1], offset: ?>>,
//                     memref<?xi32>, memref<?x?xi32>, i32, i32
// No unrealized_conversion_cast may remain anywhere in the output.

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

//===----------------------------------------------------------------------===//
// paged_collection
//===----------------------------------------------------------------------===//

// Identity-layout blocks are cast to the fixed lowered type; the metadata
// already has its lowered types and is passed through.

// CHECK-LABEL: func.func @paged_collection
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x16x8x128xf16>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:[a-z0-9_]+]]: i32, %[[MAX_CACHE_LENGTH:[a-z0-9_]+]]: i32)
// CHECK-SAME: -> (memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
// CHECK: %[[CAST:[a-z0-9_]+]] = memref.cast %[[BLOCKS]] : memref<?x2x?x16x8x128xf16> to memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>
// CHECK-NOT: memref.cast
// CHECK: return %[[CAST]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] :
func.func @paged_collection(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>,
                            %lookup_table: memref<?x?xi32>, %max_seq_length: i32,
                            %max_cache_length: i32) -> !collection {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !collection
  return %collection : !collection
}

// Static shapes and a static padded layout: all three memrefs are cast.

// CHECK-LABEL: func.func @paged_collection_static_shapes
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<64x2x4x4x2x64xf32, strided<[8192, 4096, 1024, 128, 64, 1], offset: 256>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<3xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<3x16xi32>, %[[MAX_SEQ_LENGTH:[a-z0-9_]+]]: i32, %[[MAX_CACHE_LENGTH:[a-z0-9_]+]]: i32)
// CHECK-SAME: -> (memref<?x2x?x4x2x64xf32, strided<[?, ?, ?, 128, 64, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
// CHECK: %[[BLOCKS_CAST:[a-z0-9_]+]] = memref.cast %[[BLOCKS]] : memref<64x2x4x4x2x64xf32, strided<[8192, 4096, 1024, 128, 64, 1], offset: 256>> to memref<?x2x?x4x2x64xf32, strided<[?, ?, ?, 128, 64, 1], offset: ?>>
// CHECK: %[[CACHE_LENGTHS_CAST:[a-z0-9_]+]] = memref.cast %[[CACHE_LENGTHS]] : memref<3xi32> to memref<?xi32>
// CHECK: %[[LOOKUP_TABLE_CAST:[a-z0-9_]+]] = memref.cast %[[LOOKUP_TABLE]] : memref<3x16xi32> to memref<?x?xi32>
// CHECK: return %[[BLOCKS_CAST]], %[[CACHE_LENGTHS_CAST]], %[[LOOKUP_TABLE_CAST]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] :
func.func @paged_collection_static_shapes(
    %blocks: memref<64x2x4x4x2x64xf32, strided<[8192, 4096, 1024, 128, 64, 1], offset: 256>>,
    %cache_lengths: memref<3xi32>, %lookup_table: memref<3x16xi32>,
    %max_seq_length: i32, %max_cache_length: i32)
    -> !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4> {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<64x2x4x4x2x64xf32, strided<[8192, 4096, 1024, 128, 64, 1], offset: 256>>, memref<3xi32>, memref<3x16xi32>
      -> !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4>
  return %collection : !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4>
}

// Operands that already have the lowered types are used as they are.

// CHECK-LABEL: func.func @negative_paged_collection_cast
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:[a-z0-9_]+]]: i32, %[[MAX_CACHE_LENGTH:[a-z0-9_]+]]: i32)
// CHECK-NOT: memref.cast
// CHECK: return %[[BLOCKS]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] :
func.func @negative_paged_collection_cast(
    %blocks: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>,
    %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
    %max_seq_length: i32, %max_cache_length: i32) -> !collection {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32> -> !collection
  return %collection : !collection
}

//===----------------------------------------------------------------------===//
// get_key_cache / get_value_cache
//===----------------------------------------------------------------------===//

// The layer view is blocks[*, kv, layer, *, *, *]: kv offset 0 for K, 1 for V;
// the metadata is shared.

// CHECK-LABEL: func.func @get_key_cache
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:[a-z0-9_]+]]: i32, %[[MAX_CACHE_LENGTH:[a-z0-9_]+]]: i32, %[[LAYER:[a-z0-9_]+]]: index)
// CHECK-SAME: -> (memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
// CHECK: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK: %[[NUM_PAGES:[a-z0-9_]+]] = memref.dim %[[BLOCKS]], %[[C0]]
// CHECK: %[[KEY:[a-z0-9_]+]] = memref.subview %[[BLOCKS]][0, 0, %[[LAYER]], 0, 0, 0] [%[[NUM_PAGES]], 1, 1, 16, 8, 128] [1, 1, 1, 1, 1, 1]
// CHECK-SAME: : memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>> to memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>
// CHECK: return %[[KEY]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] :
func.func @get_key_cache(%collection: !collection, %layer: index) -> !cache {
  %key = kvcache.get_key_cache %collection[%layer] : !collection
  return %key : !cache
}

// CHECK-LABEL: func.func @get_value_cache
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:[a-z0-9_]+]]: i32, %[[MAX_CACHE_LENGTH:[a-z0-9_]+]]: i32, %[[LAYER:[a-z0-9_]+]]: index)
// CHECK: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK: %[[NUM_PAGES:[a-z0-9_]+]] = memref.dim %[[BLOCKS]], %[[C0]]
// CHECK: %[[VALUE:[a-z0-9_]+]] = memref.subview %[[BLOCKS]][0, 1, %[[LAYER]], 0, 0, 0] [%[[NUM_PAGES]], 1, 1, 16, 8, 128] [1, 1, 1, 1, 1, 1]
// CHECK-SAME: : memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>> to memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>
// CHECK: return %[[VALUE]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]] :
func.func @get_value_cache(%collection: !collection, %layer: index) -> !cache {
  %value = kvcache.get_value_cache %collection[%layer] : !collection
  return %value : !cache
}

// From a constructor: the subview takes the cast blocks.

// CHECK-LABEL: func.func @get_key_cache_of_constructed
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x16x8x128xf16>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[LAYER:[a-z0-9_]+]]: index)
// CHECK: %[[CAST:[a-z0-9_]+]] = memref.cast %[[BLOCKS]]
// CHECK: %[[NUM_PAGES:[a-z0-9_]+]] = memref.dim %[[CAST]], %{{.*}}
// CHECK: memref.subview %[[CAST]][0, 0, %[[LAYER]], 0, 0, 0] [%[[NUM_PAGES]], 1, 1, 16, 8, 128] [1, 1, 1, 1, 1, 1]
// CHECK-SAME: to memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>
func.func @get_key_cache_of_constructed(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>,
                                        %lookup_table: memref<?x?xi32>, %max_seq_length: i32,
                                        %max_cache_length: i32, %layer: index) -> !cache {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !collection
  %key = kvcache.get_key_cache %collection[%layer] : !collection
  return %key : !cache
}

// MLA: kv_dim 1, one head of 576 bf16 elements.

// CHECK-LABEL: func.func @get_key_cache_mla
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x1x?x64x1x576xbf16, strided<[?, ?, ?, 576, 576, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[LAYER:[a-z0-9_]+]]: index)
// CHECK-SAME: -> (memref<?x64x1x576xbf16, strided<[?, 576, 576, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
// CHECK: %[[NUM_PAGES:[a-z0-9_]+]] = memref.dim %[[BLOCKS]], %{{.*}}
// CHECK: memref.subview %[[BLOCKS]][0, 0, %[[LAYER]], 0, 0, 0] [%[[NUM_PAGES]], 1, 1, 64, 1, 576] [1, 1, 1, 1, 1, 1]
// CHECK-SAME: : memref<?x1x?x64x1x576xbf16, strided<[?, ?, ?, 576, 576, 1], offset: ?>> to memref<?x64x1x576xbf16, strided<[?, 576, 576, 1], offset: ?>>
func.func @get_key_cache_mla(
    %collection: !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
    %layer: index) -> !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true> {
  %key = kvcache.get_key_cache %collection[%layer] : !kvcache.paged_collection<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
  return %key : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>
}

// CHECK-LABEL: func.func @get_value_cache_f32
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x4x2x64xf32, strided<[?, ?, ?, 128, 64, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[LAYER:[a-z0-9_]+]]: index)
// CHECK: memref.subview %[[BLOCKS]][0, 1, %[[LAYER]], 0, 0, 0] [%{{.*}}, 1, 1, 4, 2, 64] [1, 1, 1, 1, 1, 1]
// CHECK-SAME: to memref<?x4x2x64xf32, strided<[?, 128, 64, 1], offset: ?>>
func.func @get_value_cache_f32(
    %collection: !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>,
    %layer: index) -> !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1> {
  %value = kvcache.get_value_cache %collection[%layer] : !kvcache.paged_collection<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>
  return %value : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4, assert_write_mode = 1>
}

//===----------------------------------------------------------------------===//
// cache_length, max_seq_length, max_cache_length
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @cache_length
// CHECK-SAME: (%{{[a-z0-9_]+}}: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, %[[COLLECTION_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32,
// CHECK-SAME: %{{[a-z0-9_]+}}: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index)
// CHECK: %[[LENGTH_I32:[a-z0-9_]+]] = memref.load %[[COLLECTION_LENGTHS]][%[[BATCH]]] : memref<?xi32>
// CHECK: %[[LENGTH:[a-z0-9_]+]] = arith.index_castui %[[LENGTH_I32]] : i32 to index
// CHECK: %[[KEY_LENGTH_I32:[a-z0-9_]+]] = memref.load %[[CACHE_LENGTHS]][%[[BATCH]]] : memref<?xi32>
// CHECK: %[[KEY_LENGTH:[a-z0-9_]+]] = arith.index_castui %[[KEY_LENGTH_I32]] : i32 to index
// CHECK: return %[[LENGTH]], %[[KEY_LENGTH]] : index, index
func.func @cache_length(%collection: !collection, %key: !cache, %batch: index) -> (index, index) {
  %length = kvcache.cache_length %collection[%batch] : !collection
  %key_length = kvcache.cache_length %key[%batch] : !cache
  return %length, %key_length : index, index
}

// The two scalars are zero-extended to index; no memory is read.

// CHECK-LABEL: func.func @max_lengths
// CHECK-SAME: (%{{[a-z0-9_]+}}: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:[a-z0-9_]+]]: i32, %[[MAX_CACHE_LENGTH:[a-z0-9_]+]]: i32,
// CHECK-SAME: %{{[a-z0-9_]+}}: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %[[KEY_MAX_SEQ_LENGTH:[a-z0-9_]+]]: i32, %[[KEY_MAX_CACHE_LENGTH:[a-z0-9_]+]]: i32)
// CHECK-NOT: memref.load
// CHECK: %[[SEQ:[a-z0-9_]+]] = arith.index_castui %[[MAX_SEQ_LENGTH]] : i32 to index
// CHECK: %[[CACHE:[a-z0-9_]+]] = arith.index_castui %[[MAX_CACHE_LENGTH]] : i32 to index
// CHECK: %[[KEY_SEQ:[a-z0-9_]+]] = arith.index_castui %[[KEY_MAX_SEQ_LENGTH]] : i32 to index
// CHECK: %[[KEY_CACHE:[a-z0-9_]+]] = arith.index_castui %[[KEY_MAX_CACHE_LENGTH]] : i32 to index
// CHECK: return %[[SEQ]], %[[CACHE]], %[[KEY_SEQ]], %[[KEY_CACHE]]
func.func @max_lengths(%collection: !collection, %key: !cache) -> (index, index, index, index) {
  %seq = kvcache.max_seq_length %collection : !collection
  %cache = kvcache.max_cache_length %collection : !collection
  %key_seq = kvcache.max_seq_length %key : !cache
  %key_cache = kvcache.max_cache_length %key : !cache
  return %seq, %cache, %key_seq, %key_cache : index, index, index, index
}

//===----------------------------------------------------------------------===//
// lookup
//===----------------------------------------------------------------------===//

// Power-of-two page size: the logical page and the slot are a shift and a
// mask in i32.

// CHECK-LABEL: func.func @lookup
// CHECK-SAME: (%{{[a-z0-9_]+}}: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[TOKEN_I32:[a-z0-9_]+]] = arith.index_castui %[[TOKEN]] : index to i32
// CHECK-DAG: %[[C4:[a-z0-9_]+]] = arith.constant 4 : i32
// CHECK-DAG: %[[C15:[a-z0-9_]+]] = arith.constant 15 : i32
// CHECK: %[[COLUMN_I32:[a-z0-9_]+]] = arith.shrui %[[TOKEN_I32]], %[[C4]] : i32
// CHECK: %[[SLOT_I32:[a-z0-9_]+]] = arith.andi %[[TOKEN_I32]], %[[C15]] : i32
// CHECK: %[[COLUMN:[a-z0-9_]+]] = arith.index_castui %[[COLUMN_I32]] : i32 to index
// CHECK: %[[PAGE_I32:[a-z0-9_]+]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %[[COLUMN]]] : memref<?x?xi32>
// CHECK: %[[PAGE:[a-z0-9_]+]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECK: %[[SLOT:[a-z0-9_]+]] = arith.index_castui %[[SLOT_I32]] : i32 to index
// CHECK: return %[[PAGE]], %[[SLOT]] : index, index
func.func @lookup(%key: !cache, %batch: index, %token: index) -> (index, index) {
  %page, %slot = kvcache.lookup %key[%batch, %token] : !cache
  return %page, %slot : index, index
}

// Other page sizes divide in i32.

// CHECK-LABEL: func.func @lookup_page_size_3
// CHECK-SAME: (%{{[a-z0-9_]+}}: memref<?x3x2x64xf32, strided<[?, 128, 64, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[TOKEN_I32:[a-z0-9_]+]] = arith.index_castui %[[TOKEN]] : index to i32
// CHECK-DAG: %[[C3:[a-z0-9_]+]] = arith.constant 3 : i32
// CHECK: %[[COLUMN_I32:[a-z0-9_]+]] = arith.divui %[[TOKEN_I32]], %[[C3]] : i32
// CHECK: %[[SLOT_I32:[a-z0-9_]+]] = arith.remui %[[TOKEN_I32]], %[[C3]] : i32
// CHECK: %[[COLUMN:[a-z0-9_]+]] = arith.index_castui %[[COLUMN_I32]] : i32 to index
// CHECK: %[[PAGE_I32:[a-z0-9_]+]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %[[COLUMN]]] : memref<?x?xi32>
// CHECK: %[[PAGE:[a-z0-9_]+]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECK: %[[SLOT:[a-z0-9_]+]] = arith.index_castui %[[SLOT_I32]] : i32 to index
// CHECK: return %[[PAGE]], %[[SLOT]] : index, index
func.func @lookup_page_size_3(%key: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 3>,
                              %batch: index, %token: index) -> (index, index) {
  %page, %slot = kvcache.lookup %key[%batch, %token] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 3>
  return %page, %slot : index, index
}

// CHECK-LABEL: func.func @lookup_page_size_5
// CHECK-SAME: (%{{[a-z0-9_]+}}: memref<?x5x1x576xbf16, strided<[?, 576, 576, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[TOKEN_I32:[a-z0-9_]+]] = arith.index_castui %[[TOKEN]] : index to i32
// CHECK-DAG: %[[C5:[a-z0-9_]+]] = arith.constant 5 : i32
// CHECK: %[[COLUMN_I32:[a-z0-9_]+]] = arith.divui %[[TOKEN_I32]], %[[C5]] : i32
// CHECK: %[[SLOT_I32:[a-z0-9_]+]] = arith.remui %[[TOKEN_I32]], %[[C5]] : i32
// CHECK: %[[COLUMN:[a-z0-9_]+]] = arith.index_castui %[[COLUMN_I32]] : i32 to index
// CHECK: memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %[[COLUMN]]] : memref<?x?xi32>
func.func @lookup_page_size_5(%key: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 5, mla = true>,
                              %batch: index, %token: index) -> (index, index) {
  %page, %slot = kvcache.lookup %key[%batch, %token] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 5, mla = true>
  return %page, %slot : index, index
}

// A non-power-of-two page size is never lowered to shifts.

// CHECK-LABEL: func.func @negative_lookup_shift
// CHECK-NOT: arith.shrui
// CHECK-NOT: arith.andi
// CHECK: arith.divui
// CHECK-NOT: arith.shrui
// CHECK-NOT: arith.andi
// CHECK: return
func.func @negative_lookup_shift(%key: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 24>,
                                 %batch: index, %token: index) -> (index, index) {
  %page, %slot = kvcache.lookup %key[%batch, %token] : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 24>
  return %page, %slot : index, index
}

//===----------------------------------------------------------------------===//
// load / store
//===----------------------------------------------------------------------===//

// A load is a lookup and an access of the layer view at
// [page, slot, head, element]; a vector access is aligned to its width in
// bytes, at most 16.

// CHECK-LABEL: func.func @load_vector
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[TOKEN_I32:[a-z0-9_]+]] = arith.index_castui %[[TOKEN]] : index to i32
// CHECK-DAG: %[[C4:[a-z0-9_]+]] = arith.constant 4 : i32
// CHECK-DAG: %[[C15:[a-z0-9_]+]] = arith.constant 15 : i32
// CHECK: %[[COLUMN_I32:[a-z0-9_]+]] = arith.shrui %[[TOKEN_I32]], %[[C4]] : i32
// CHECK: %[[SLOT_I32:[a-z0-9_]+]] = arith.andi %[[TOKEN_I32]], %[[C15]] : i32
// CHECK: %[[COLUMN:[a-z0-9_]+]] = arith.index_castui %[[COLUMN_I32]] : i32 to index
// CHECK: %[[PAGE_I32:[a-z0-9_]+]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %[[COLUMN]]]
// CHECK: %[[PAGE:[a-z0-9_]+]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECK: %[[SLOT:[a-z0-9_]+]] = arith.index_castui %[[SLOT_I32]] : i32 to index
// CHECK: %[[X:[a-z0-9_]+]] = vector.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<8xf16>
// CHECK: return %[[X]] : vector<8xf16>
func.func @load_vector(%key: !cache, %batch: index, %head: index, %token: index, %element: index) -> vector<8xf16> {
  %x = kvcache.load %key[%batch, %head, %token, %element] : !cache -> vector<8xf16>
  return %x : vector<8xf16>
}

// CHECK-LABEL: func.func @load_scalar
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK: %[[PAGE_I32:[a-z0-9_]+]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}]
// CHECK: %[[PAGE:[a-z0-9_]+]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECK: %[[SLOT:[a-z0-9_]+]] = arith.index_castui %{{.*}} : i32 to index
// CHECK: %[[X:[a-z0-9_]+]] = memref.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>
// CHECK: return %[[X]] : f16
func.func @load_scalar(%key: !cache, %batch: index, %head: index, %token: index, %element: index) -> f16 {
  %x = kvcache.load %key[%batch, %head, %token, %element] : !cache -> f16
  return %x : f16
}

// CHECK-LABEL: func.func @store_vector
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[X:[a-z0-9_]+]]: vector<8xf16>, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK: arith.index_castui %[[TOKEN]] : index to i32
// CHECK: %[[PAGE_I32:[a-z0-9_]+]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}]
// CHECK: %[[PAGE:[a-z0-9_]+]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECK: %[[SLOT:[a-z0-9_]+]] = arith.index_castui %{{.*}} : i32 to index
// CHECK: vector.store %[[X]], %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<8xf16>
// CHECK-NEXT: return
func.func @store_vector(%key: !cache, %x: vector<8xf16>, %batch: index, %head: index, %token: index, %element: index) {
  kvcache.store %x, %key[%batch, %head, %token, %element] : !cache, vector<8xf16>
  return
}

// CHECK-LABEL: func.func @store_scalar
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[X:[a-z0-9_]+]]: f16, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK: %[[PAGE_I32:[a-z0-9_]+]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}]
// CHECK: %[[PAGE:[a-z0-9_]+]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECK: %[[SLOT:[a-z0-9_]+]] = arith.index_castui %{{.*}} : i32 to index
// CHECK: memref.store %[[X]], %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>
// CHECK-NEXT: return
func.func @store_scalar(%key: !cache, %x: f16, %batch: index, %head: index, %token: index, %element: index) {
  kvcache.store %x, %key[%batch, %head, %token, %element] : !cache, f16
  return
}

// Alignment = the access width in bytes, limited by the row pitch
// (head_size * element size) and by 16.

// CHECK-LABEL: func.func @vector_alignments
// CHECK: vector.load %{{.*}} {alignment = 4 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<2xf16>
// CHECK: vector.load %{{.*}} {alignment = 8 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<4xf16>
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<16xf16>
// CHECK: vector.store %{{.*}} {alignment = 4 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<2xf16>
func.func @vector_alignments(%key: !cache, %pair: vector<2xf16>, %batch: index, %head: index, %token: index, %element: index)
    -> (vector<2xf16>, vector<4xf16>, vector<16xf16>) {
  %x2 = kvcache.load %key[%batch, %head, %token, %element] : !cache -> vector<2xf16>
  %x4 = kvcache.load %key[%batch, %head, %token, %element] : !cache -> vector<4xf16>
  %x16 = kvcache.load %key[%batch, %head, %token, %element] : !cache -> vector<16xf16>
  kvcache.store %pair, %key[%batch, %head, %token, %element] : !cache, vector<2xf16>
  return %x2, %x4, %x16 : vector<2xf16>, vector<4xf16>, vector<16xf16>
}

// Rows of 100 f16 elements are 200 bytes apart: at most 8-byte alignment.
// A width that is not a power of two gets its largest power-of-two divisor.

// CHECK-LABEL: func.func @vector_alignments_odd_row_pitch
// CHECK: vector.load %{{.*}} {alignment = 2 : i64} : memref<?x8x2x100xf16, strided<[?, 200, 100, 1], offset: ?>>, vector<3xf16>
// CHECK: vector.load %{{.*}} {alignment = 8 : i64} : memref<?x8x2x100xf16, strided<[?, 200, 100, 1], offset: ?>>, vector<8xf16>
// CHECK: vector.load %{{.*}} {alignment = 8 : i64} : memref<?x8x2x100xf16, strided<[?, 200, 100, 1], offset: ?>>, vector<100xf16>
func.func @vector_alignments_odd_row_pitch(%key: !kvcache.paged_cache<f16, num_heads = 2, head_size = 100, page_size = 8>,
                                           %page: index, %slot: index, %head: index, %element: index)
    -> (vector<3xf16>, vector<8xf16>, vector<100xf16>) {
  %x3 = kvcache.page_load %key[%page, %slot, %head, %element] : !kvcache.paged_cache<f16, num_heads = 2, head_size = 100, page_size = 8> -> vector<3xf16>
  %x8 = kvcache.page_load %key[%page, %slot, %head, %element] : !kvcache.paged_cache<f16, num_heads = 2, head_size = 100, page_size = 8> -> vector<8xf16>
  %row = kvcache.page_load %key[%page, %slot, %head, %element] : !kvcache.paged_cache<f16, num_heads = 2, head_size = 100, page_size = 8> -> vector<100xf16>
  return %x3, %x8, %row : vector<3xf16>, vector<8xf16>, vector<100xf16>
}

// bf16 and f32.

// CHECK-LABEL: func.func @load_mla_bf16
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x64x1x576xbf16, strided<[?, 576, 576, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK-DAG: %[[C6:[a-z0-9_]+]] = arith.constant 6 : i32
// CHECK-DAG: %[[C63:[a-z0-9_]+]] = arith.constant 63 : i32
// CHECK: arith.shrui %{{.*}}, %[[C6]] : i32
// CHECK: arith.andi %{{.*}}, %[[C63]] : i32
// CHECK: %[[PAGE_I32:[a-z0-9_]+]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}]
// CHECK: %[[PAGE:[a-z0-9_]+]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECK: %[[SLOT:[a-z0-9_]+]] = arith.index_castui %{{.*}} : i32 to index
// CHECK: vector.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %{{.*}}, %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x64x1x576xbf16, strided<[?, 576, 576, 1], offset: ?>>, vector<8xbf16>
func.func @load_mla_bf16(%key: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
                         %batch: index, %token: index, %element: index) -> vector<8xbf16> {
  %c0 = arith.constant 0 : index
  %x = kvcache.load %key[%batch, %c0, %token, %element] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true> -> vector<8xbf16>
  return %x : vector<8xbf16>
}

// CHECK-LABEL: func.func @store_f32
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x4x2x64xf32, strided<[?, 128, 64, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[VECTOR:[a-z0-9_]+]]: vector<4xf32>, %[[SCALAR:[a-z0-9_]+]]: f32, %[[BATCH:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK: vector.store %[[VECTOR]], %[[VIEW]][%{{.*}}, %{{.*}}, %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x4x2x64xf32, strided<[?, 128, 64, 1], offset: ?>>, vector<4xf32>
// CHECK: memref.store %[[SCALAR]], %[[VIEW]][%{{.*}}, %{{.*}}, %[[HEAD]], %[[ELEMENT]]] : memref<?x4x2x64xf32, strided<[?, 128, 64, 1], offset: ?>>
func.func @store_f32(%key: !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4>,
                     %vector: vector<4xf32>, %scalar: f32,
                     %batch: index, %head: index, %token: index, %element: index) {
  kvcache.store %vector, %key[%batch, %head, %token, %element] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4>, vector<4xf32>
  kvcache.store %scalar, %key[%batch, %head, %token, %element] : !kvcache.paged_cache<f32, num_heads = 2, head_size = 64, page_size = 4>, f32
  return
}

//===----------------------------------------------------------------------===//
// page_load / page_store
//===----------------------------------------------------------------------===//

// The page is already resolved: no lookup-table access.

// CHECK-LABEL: func.func @page_load_store
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[PAGE:[a-z0-9_]+]]: index, %[[SLOT:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index, %[[ELEMENT:[a-z0-9_]+]]: index)
// CHECK-NOT: memref.load {{.*}}xi32>
// CHECK: %[[X:[a-z0-9_]+]] = vector.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<8xf16>
// CHECK: vector.store %[[X]], %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] {alignment = 16 : i64} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, vector<8xf16>
// CHECK: %[[S:[a-z0-9_]+]] = memref.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>
// CHECK: memref.store %[[S]], %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], %[[ELEMENT]]] : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>
// CHECK-NEXT: return
func.func @page_load_store(%key: !cache, %page: index, %slot: index, %head: index, %element: index) {
  %x = kvcache.page_load %key[%page, %slot, %head, %element] : !cache -> vector<8xf16>
  kvcache.page_store %x, %key[%page, %slot, %head, %element] : !cache, vector<8xf16>
  %s = kvcache.page_load %key[%page, %slot, %head, %element] : !cache -> f16
  kvcache.page_store %s, %key[%page, %slot, %head, %element] : !cache, f16
  return
}

//===----------------------------------------------------------------------===//
// tile
//===----------------------------------------------------------------------===//

// A view of T rows of one head: [page, slot .. slot+T-1, head, 0 .. D-1].

// CHECK-LABEL: func.func @tile
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[HEAD:[a-z0-9_]+]]: index)
// CHECK: arith.index_castui %[[TOKEN]] : index to i32
// CHECK: %[[PAGE_I32:[a-z0-9_]+]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}]
// CHECK: %[[PAGE:[a-z0-9_]+]] = arith.index_castui %[[PAGE_I32]] : i32 to index
// CHECK: %[[SLOT:[a-z0-9_]+]] = arith.index_castui %{{.*}} : i32 to index
// CHECK: %[[TILE:[a-z0-9_]+]] = memref.subview %[[VIEW]][%[[PAGE]], %[[SLOT]], %[[HEAD]], 0] [1, 16, 1, 128] [1, 1, 1, 1]
// CHECK-SAME: : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>> to memref<16x128xf16, strided<[1024, 1], offset: ?>>
// CHECK: %[[HALF:[a-z0-9_]+]] = memref.subview %[[VIEW]][%{{.*}}, %{{.*}}, %[[HEAD]], 0] [1, 8, 1, 128] [1, 1, 1, 1]
// CHECK-SAME: : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>> to memref<8x128xf16, strided<[1024, 1], offset: ?>>
// CHECK: return %[[TILE]], %[[HALF]]
func.func @tile(%key: !cache, %batch: index, %token: index, %head: index)
    -> (memref<16x128xf16, strided<[1024, 1], offset: ?>>, memref<8x128xf16, strided<[1024, 1], offset: ?>>) {
  %tile = kvcache.tile %key[%batch, %token, %head] : !cache -> memref<16x128xf16, strided<[1024, 1], offset: ?>>
  %half = kvcache.tile %key[%batch, %token, %head] : !cache -> memref<8x128xf16, strided<[1024, 1], offset: ?>>
  return %tile, %half : memref<16x128xf16, strided<[1024, 1], offset: ?>>, memref<8x128xf16, strided<[1024, 1], offset: ?>>
}

// CHECK-LABEL: func.func @tile_mla
// CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x64x1x576xbf16, strided<[?, 576, 576, 1], offset: ?>>,
// CHECK: memref.subview %[[VIEW]][%{{.*}}, %{{.*}}, %{{.*}}, 0] [1, 64, 1, 576] [1, 1, 1, 1]
// CHECK-SAME: : memref<?x64x1x576xbf16, strided<[?, 576, 576, 1], offset: ?>> to memref<64x576xbf16, strided<[576, 1], offset: ?>>
func.func @tile_mla(%key: !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true>,
                    %batch: index, %token: index, %head: index) -> memref<64x576xbf16, strided<[576, 1], offset: ?>> {
  %tile = kvcache.tile %key[%batch, %token, %head] : !kvcache.paged_cache<bf16, num_heads = 1, head_size = 576, page_size = 64, mla = true> -> memref<64x576xbf16, strided<[576, 1], offset: ?>>
  return %tile : memref<64x576xbf16, strided<[576, 1], offset: ?>>
}

//===----------------------------------------------------------------------===//
// 1:N decomposition across func, scf and cf boundaries
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func private @external
// CHECK-SAME: (memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32, index)
// CHECK-SAME: -> (memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
func.func private @external(!collection, index) -> !cache

// CHECK-LABEL: func.func @call
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:[a-z0-9_]+]]: i32, %[[MAX_CACHE_LENGTH:[a-z0-9_]+]]: i32, %[[LAYER:[a-z0-9_]+]]: index)
// CHECK-SAME: -> (memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
// CHECK: %[[KEY:[a-z0-9_]+]]:5 = call @external(%[[BLOCKS]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ_LENGTH]], %[[MAX_CACHE_LENGTH]], %[[LAYER]])
// CHECK-SAME: : (memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32, index)
// CHECK-SAME: -> (memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
// CHECK: return %[[KEY]]#0, %[[KEY]]#1, %[[KEY]]#2, %[[KEY]]#3, %[[KEY]]#4 :
func.func @call(%collection: !collection, %layer: index) -> !cache {
  %key = func.call @external(%collection, %layer) : (!collection, index) -> !cache
  return %key : !cache
}

// An argument that the body does not use still becomes five arguments.

// CHECK-LABEL: func.func @unused_argument
// CHECK-SAME: (%{{[a-z0-9_]+}}: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[X:[a-z0-9_]+]]: index)
// CHECK-NEXT: return %[[X]] : index
func.func @unused_argument(%key: !cache, %x: index) -> index {
  return %x : index
}

// CHECK-LABEL: func.func @scf_for_iter_args
// CHECK-SAME: (%[[BLOCKS:[a-z0-9_]+]]: memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ_LENGTH:[a-z0-9_]+]]: i32, %[[MAX_CACHE_LENGTH:[a-z0-9_]+]]: i32, %[[NUM_LAYERS:[a-z0-9_]+]]: index, %[[BATCH:[a-z0-9_]+]]: index)
// CHECK: %[[RESULT:[a-z0-9_]+]]:5 = scf.for %[[LAYER:[a-z0-9_]+]] = %{{.*}} to %[[NUM_LAYERS]] step %{{.*}} iter_args(%[[ACC_BLOCKS:[a-z0-9_]+]] = %[[BLOCKS]], %[[ACC_CACHE_LENGTHS:[a-z0-9_]+]] = %[[CACHE_LENGTHS]], %[[ACC_LOOKUP_TABLE:[a-z0-9_]+]] = %[[LOOKUP_TABLE]], %[[ACC_MAX_SEQ:[a-z0-9_]+]] = %[[MAX_SEQ_LENGTH]], %[[ACC_MAX_CACHE:[a-z0-9_]+]] = %[[MAX_CACHE_LENGTH]])
// CHECK-SAME: -> (memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
// CHECK: memref.subview %[[ACC_BLOCKS]][0, 0, %[[LAYER]], 0, 0, 0]
// CHECK: memref.load %[[ACC_CACHE_LENGTHS]][%[[BATCH]]]
// CHECK: scf.yield %[[ACC_BLOCKS]], %[[ACC_CACHE_LENGTHS]], %[[ACC_LOOKUP_TABLE]], %[[ACC_MAX_SEQ]], %[[ACC_MAX_CACHE]] :
// CHECK: return %[[RESULT]]#0, %[[RESULT]]#1, %[[RESULT]]#2, %[[RESULT]]#3, %[[RESULT]]#4 :
func.func @scf_for_iter_args(%collection: !collection, %num_layers: index, %batch: index) -> !collection {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %result = scf.for %layer = %c0 to %num_layers step %c1 iter_args(%acc = %collection) -> (!collection) {
    %key = kvcache.get_key_cache %acc[%layer] : !collection
    %length = kvcache.cache_length %key[%batch] : !cache
    scf.yield %acc : !collection
  }
  return %result : !collection
}

// CHECK-LABEL: func.func @scf_if_yield
// CHECK-SAME: (%[[COND:[a-z0-9_]+]]: i1, %[[KEY:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[KEY_CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[KEY_LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[KEY_MAX_SEQ:[a-z0-9_]+]]: i32, %[[KEY_MAX_CACHE:[a-z0-9_]+]]: i32,
// CHECK-SAME: %[[VALUE:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[VALUE_CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[VALUE_LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[VALUE_MAX_SEQ:[a-z0-9_]+]]: i32, %[[VALUE_MAX_CACHE:[a-z0-9_]+]]: i32)
// CHECK: %[[RESULT:[a-z0-9_]+]]:5 = scf.if %[[COND]] -> (memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32) {
// CHECK: scf.yield %[[KEY]], %[[KEY_CACHE_LENGTHS]], %[[KEY_LOOKUP_TABLE]], %[[KEY_MAX_SEQ]], %[[KEY_MAX_CACHE]] :
// CHECK: } else {
// CHECK: scf.yield %[[VALUE]], %[[VALUE_CACHE_LENGTHS]], %[[VALUE_LOOKUP_TABLE]], %[[VALUE_MAX_SEQ]], %[[VALUE_MAX_CACHE]] :
// CHECK: return %[[RESULT]]#0, %[[RESULT]]#1, %[[RESULT]]#2, %[[RESULT]]#3, %[[RESULT]]#4 :
func.func @scf_if_yield(%cond: i1, %key: !cache, %value: !cache) -> !cache {
  %result = scf.if %cond -> (!cache) {
    scf.yield %key : !cache
  } else {
    scf.yield %value : !cache
  }
  return %result : !cache
}

// CHECK-LABEL: func.func @scf_while
// CHECK-SAME: (%[[KEY:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ:[a-z0-9_]+]]: i32, %[[MAX_CACHE:[a-z0-9_]+]]: i32, %[[BATCH:[a-z0-9_]+]]: index)
// CHECK: %[[RESULT:[a-z0-9_]+]]:5 = scf.while (%[[BEFORE_KEY:[a-z0-9_]+]] = %[[KEY]], %[[BEFORE_CACHE_LENGTHS:[a-z0-9_]+]] = %[[CACHE_LENGTHS]], %[[BEFORE_LOOKUP_TABLE:[a-z0-9_]+]] = %[[LOOKUP_TABLE]], %[[BEFORE_MAX_SEQ:[a-z0-9_]+]] = %[[MAX_SEQ]], %[[BEFORE_MAX_CACHE:[a-z0-9_]+]] = %[[MAX_CACHE]])
// CHECK-SAME: : (memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32) -> (memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
// CHECK: memref.load %[[BEFORE_CACHE_LENGTHS]][%[[BATCH]]]
// CHECK: scf.condition(%{{.*}}) %[[BEFORE_KEY]], %[[BEFORE_CACHE_LENGTHS]], %[[BEFORE_LOOKUP_TABLE]], %[[BEFORE_MAX_SEQ]], %[[BEFORE_MAX_CACHE]] :
// CHECK: } do {
// CHECK: ^bb0(%[[AFTER_KEY:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[AFTER_CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[AFTER_LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[AFTER_MAX_SEQ:[a-z0-9_]+]]: i32, %[[AFTER_MAX_CACHE:[a-z0-9_]+]]: i32):
// CHECK: scf.yield %[[AFTER_KEY]], %[[AFTER_CACHE_LENGTHS]], %[[AFTER_LOOKUP_TABLE]], %[[AFTER_MAX_SEQ]], %[[AFTER_MAX_CACHE]] :
// CHECK: return %[[RESULT]]#0, %[[RESULT]]#1, %[[RESULT]]#2, %[[RESULT]]#3, %[[RESULT]]#4 :
func.func @scf_while(%key: !cache, %batch: index) -> !cache {
  %result = scf.while (%before = %key) : (!cache) -> (!cache) {
    %length = kvcache.cache_length %before[%batch] : !cache
    %cond = arith.cmpi eq, %length, %batch : index
    scf.condition(%cond) %before : !cache
  } do {
  ^bb0(%after: !cache):
    scf.yield %after : !cache
  }
  return %result : !cache
}

// CHECK-LABEL: func.func @cf_block_arguments
// CHECK-SAME: (%[[COND:[a-z0-9_]+]]: i1, %[[KEY:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[KEY_CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[KEY_LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[KEY_MAX_SEQ:[a-z0-9_]+]]: i32, %[[KEY_MAX_CACHE:[a-z0-9_]+]]: i32,
// CHECK-SAME: %[[VALUE:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[VALUE_CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[VALUE_LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[VALUE_MAX_SEQ:[a-z0-9_]+]]: i32, %[[VALUE_MAX_CACHE:[a-z0-9_]+]]: i32, %[[BATCH:[a-z0-9_]+]]: index)
// CHECK: cf.cond_br %[[COND]], ^[[MERGE:bb[0-9]+]](%[[KEY]], %[[KEY_CACHE_LENGTHS]], %[[KEY_LOOKUP_TABLE]], %[[KEY_MAX_SEQ]], %[[KEY_MAX_CACHE]] : {{.*}}), ^[[MERGE]](%[[VALUE]], %[[VALUE_CACHE_LENGTHS]], %[[VALUE_LOOKUP_TABLE]], %[[VALUE_MAX_SEQ]], %[[VALUE_MAX_CACHE]] :
// CHECK: ^[[MERGE]](%[[CACHE:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ:[a-z0-9_]+]]: i32, %[[MAX_CACHE:[a-z0-9_]+]]: i32):
// CHECK: memref.load %[[CACHE_LENGTHS]][%[[BATCH]]]
// CHECK: cf.br ^[[EXIT:bb[0-9]+]](%[[CACHE]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ]], %[[MAX_CACHE]], %{{[a-z0-9_]+}} :
// CHECK: ^[[EXIT]](%[[EXIT_CACHE:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[EXIT_CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[EXIT_LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[EXIT_MAX_SEQ:[a-z0-9_]+]]: i32, %[[EXIT_MAX_CACHE:[a-z0-9_]+]]: i32, %[[EXIT_LENGTH:[a-z0-9_]+]]: index):
// CHECK: return %[[EXIT_CACHE]], %[[EXIT_CACHE_LENGTHS]], %[[EXIT_LOOKUP_TABLE]], %[[EXIT_MAX_SEQ]], %[[EXIT_MAX_CACHE]], %[[EXIT_LENGTH]] :
func.func @cf_block_arguments(%cond: i1, %key: !cache, %value: !cache, %batch: index) -> (!cache, index) {
  cf.cond_br %cond, ^merge(%key : !cache), ^merge(%value : !cache)
^merge(%cache: !cache):
  %length = kvcache.cache_length %cache[%batch] : !cache
  cf.br ^exit(%cache, %length : !cache, index)
^exit(%exit_cache: !cache, %exit_length: index):
  return %exit_cache, %exit_length : !cache, index
}

// -----

// GPU: kernels and device functions take and return the five values; the
// launch passes five operands per cache; workgroup attributions are kept.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: gpu.module @kernels
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @forward_cache
    // CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ:[a-z0-9_]+]]: i32, %[[MAX_CACHE:[a-z0-9_]+]]: i32)
    // CHECK-SAME: -> (memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32)
    // CHECK-NOT: kernel
    // CHECK: gpu.return %[[VIEW]], %[[CACHE_LENGTHS]], %[[LOOKUP_TABLE]], %[[MAX_SEQ]], %[[MAX_CACHE]] : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, memref<?xi32>, memref<?x?xi32>, i32, i32
    gpu.func @forward_cache(%key: !cache) -> !cache {
      gpu.return %key : !cache
    }

    // CHECK-LABEL: gpu.func @read_key
    // CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %{{[a-z0-9_]+}}: memref<?xf16>)
    // CHECK-SAME: workgroup(%[[SCRATCH:[a-z0-9_]+]] : memref<128xf16, #gpu.address_space<workgroup>>) kernel
    // CHECK: %[[THREAD:[a-z0-9_]+]] = gpu.thread_id x
    // CHECK: %[[PAGE_I32:[a-z0-9_]+]] = memref.load %[[LOOKUP_TABLE]][%[[BATCH]], %{{.*}}] : memref<?x?xi32>
    // CHECK: %[[PAGE:[a-z0-9_]+]] = arith.index_castui %[[PAGE_I32]] : i32 to index
    // CHECK: %[[SLOT:[a-z0-9_]+]] = arith.index_castui %{{.*}} : i32 to index
    // CHECK: %[[X:[a-z0-9_]+]] = memref.load %[[VIEW]][%[[PAGE]], %[[SLOT]], %{{.*}}, %[[THREAD]]]
    // CHECK: memref.store %[[X]], %[[SCRATCH]][%[[THREAD]]] : memref<128xf16, #gpu.address_space<workgroup>>
    // CHECK: gpu.return
    gpu.func @read_key(%key: !cache, %batch: index, %token: index, %out: memref<?xf16>)
        workgroup(%scratch: memref<128xf16, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %thread = gpu.thread_id x
      %x = kvcache.load %key[%batch, %c0, %token, %thread] : !cache -> f16
      memref.store %x, %scratch[%thread] : memref<128xf16, #gpu.address_space<workgroup>>
      gpu.return
    }

    // Attributes stay on the arguments they belong to; the pieces of a cache
    // get none. Private attributions are kept too.

    // CHECK-LABEL: gpu.func @attributed_arguments
    // CHECK-SAME: (%[[BATCH:[a-z0-9_]+]]: index {test.batch}, %{{[a-z0-9_]+}}: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %{{[a-z0-9_]+}}: memref<?xi32>, %{{[a-z0-9_]+}}: memref<?x?xi32>, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: i32, %{{[a-z0-9_]+}}: memref<?xf16> {llvm.noalias})
    // CHECK-SAME: workgroup(%{{[a-z0-9_]+}} : memref<128xf16, #gpu.address_space<workgroup>>)
    // CHECK-SAME: private(%[[PRIVATE:[a-z0-9_]+]] : memref<4xf16, #gpu.address_space<private>>) kernel
    // CHECK: %[[X:.*]] = memref.load %{{.*}} : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>
    // CHECK: memref.store %[[X]], %[[PRIVATE]]
    gpu.func @attributed_arguments(%batch: index {test.batch}, %key: !cache, %out: memref<?xf16> {llvm.noalias})
        workgroup(%scratch: memref<128xf16, #gpu.address_space<workgroup>>)
        private(%registers: memref<4xf16, #gpu.address_space<private>>) kernel {
      %c0 = arith.constant 0 : index
      %x = kvcache.load %key[%batch, %c0, %batch, %c0] : !cache -> f16
      memref.store %x, %registers[%c0] : memref<4xf16, #gpu.address_space<private>>
      gpu.return
    }
  }

  // CHECK-LABEL: func.func @launch
  // CHECK-SAME: (%[[VIEW:[a-z0-9_]+]]: memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS:[a-z0-9_]+]]: memref<?xi32>, %[[LOOKUP_TABLE:[a-z0-9_]+]]: memref<?x?xi32>, %[[MAX_SEQ:[a-z0-9_]+]]: i32, %[[MAX_CACHE:[a-z0-9_]+]]: i32, %[[BATCH:[a-z0-9_]+]]: index, %[[TOKEN:[a-z0-9_]+]]: index, %[[OUT:[a-z0-9_]+]]: memref<?xf16>)
  // CHECK: gpu.launch_func @kernels::@read_key
  // CHECK-SAME: args(%[[VIEW]] : memref<?x16x8x128xf16, strided<[?, 1024, 128, 1], offset: ?>>, %[[CACHE_LENGTHS]] : memref<?xi32>, %[[LOOKUP_TABLE]] : memref<?x?xi32>, %[[MAX_SEQ]] : i32, %[[MAX_CACHE]] : i32, %[[BATCH]] : index, %[[TOKEN]] : index, %[[OUT]] : memref<?xf16>)
  func.func @launch(%key: !cache, %batch: index, %token: index, %out: memref<?xf16>) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch_func @kernels::@read_key blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%key : !cache, %batch : index, %token : index, %out : memref<?xf16>)
    return
  }
}
