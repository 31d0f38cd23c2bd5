// RUN: kvcache-opt %s -canonicalize -cse -split-input-file | FileCheck %s

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// Metadata queries on a layer cache read the collection's metadata: they fold
// through get_key_cache/get_value_cache to the collection.

// CHECK-LABEL: func.func @cache_length_through_layer_cache
// CHECK-SAME: (%[[COLLECTION:.*]]: !kvcache.paged_collection<{{.*}}>, %[[LAYER:.*]]: index, %[[BATCH:.*]]: index)
// CHECK-NOT: kvcache.get_key_cache
// CHECK-NOT: kvcache.get_value_cache
// CHECK: %[[K_LEN:.*]] = kvcache.cache_length %[[COLLECTION]][%[[BATCH]]] : !kvcache.paged_collection
// CHECK-NOT: kvcache.cache_length
// CHECK: return %[[K_LEN]], %[[K_LEN]]
func.func @cache_length_through_layer_cache(%collection: !collection, %layer: index, %batch: index) -> (index, index) {
  %key = kvcache.get_key_cache %collection[%layer] : !collection
  %value = kvcache.get_value_cache %collection[%layer] : !collection
  %key_length = kvcache.cache_length %key[%batch] : !cache
  %value_length = kvcache.cache_length %value[%batch] : !cache
  return %key_length, %value_length : index, index
}

// -----

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// CHECK-LABEL: func.func @max_lengths_through_layer_cache
// CHECK-SAME: (%[[COLLECTION:.*]]: !kvcache.paged_collection<{{.*}}>, %[[LAYER:.*]]: index)
// CHECK-DAG: %[[SEQ:.*]] = kvcache.max_seq_length %[[COLLECTION]] : !kvcache.paged_collection
// CHECK-DAG: %[[CTX:.*]] = kvcache.max_cache_length %[[COLLECTION]] : !kvcache.paged_collection
// CHECK: return %[[SEQ]], %[[CTX]]
func.func @max_lengths_through_layer_cache(%collection: !collection, %layer: index) -> (index, index) {
  %key = kvcache.get_key_cache %collection[%layer] : !collection
  %max_seq = kvcache.max_seq_length %key : !cache
  %max_ctx = kvcache.max_cache_length %key : !cache
  return %max_seq, %max_ctx : index, index
}

// -----

// With the collection's constructor in sight, max_* are its i32 operands,
// zero-extended (they are unsigned).

// CHECK-LABEL: func.func @max_lengths_of_visible_collection
// CHECK-SAME: %[[MAX_SEQ:[^:]*]]: i32, %[[MAX_CTX:[^:]*]]: i32
// CHECK-DAG: %[[SEQ:.*]] = arith.index_castui %[[MAX_SEQ]] : i32 to index
// CHECK-DAG: %[[CTX:.*]] = arith.index_castui %[[MAX_CTX]] : i32 to index
// CHECK-NOT: kvcache.
// CHECK: return %[[SEQ]], %[[CTX]]
func.func @max_lengths_of_visible_collection(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>, %max_seq_length: i32, %max_cache_length: i32, %layer: index) -> (index, index) {
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %value = kvcache.get_value_cache %collection[%layer] : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %max_seq = kvcache.max_seq_length %value : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
  %max_ctx = kvcache.max_cache_length %collection : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return %max_seq, %max_ctx : index, index
}

// -----

// Constant lengths fold to constants.

// CHECK-LABEL: func.func @constant_max_seq_length
// CHECK: %[[C7:.*]] = arith.constant 7 : index
// CHECK: return %[[C7]]
func.func @constant_max_seq_length(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>, %max_cache_length: i32) -> index {
  %c7 = arith.constant 7 : i32
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %c7, %max_cache_length
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  %max_seq = kvcache.max_seq_length %collection : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
  return %max_seq : index
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// negative_: a cache that does not come from get_*_cache (a function
// argument) keeps its query; lookups are pure and CSE'd, loads are not
// removed while their results are used.

// CHECK-LABEL: func.func @negative_cache_argument
// CHECK-SAME: (%[[CACHE:.*]]: !kvcache.paged_cache<{{.*}}>, %[[BATCH:.*]]: index, %[[TOKEN:.*]]: index)
// CHECK: kvcache.cache_length %[[CACHE]][%[[BATCH]]] : !kvcache.paged_cache
// CHECK: kvcache.max_seq_length %[[CACHE]] : !kvcache.paged_cache
// CHECK-COUNT-1: kvcache.lookup
// CHECK-NOT: kvcache.lookup
func.func @negative_cache_argument(%cache: !cache, %batch: index, %token: index) -> (index, index, index, index, index, index) {
  %length = kvcache.cache_length %cache[%batch] : !cache
  %max_seq = kvcache.max_seq_length %cache : !cache
  %page, %slot = kvcache.lookup %cache[%batch, %token] : !cache
  %page2, %slot2 = kvcache.lookup %cache[%batch, %token] : !cache
  return %length, %max_seq, %page, %slot, %page2, %slot2 : index, index, index, index, index, index
}

// -----

!collection = !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>
!cache = !kvcache.continuous_cache<f16, num_heads = 8, head_size = 128>

// num_sequences and capacity of a layer cache fold to the collection's, as
// the other metadata queries do (every layer shares the metadata).

// CHECK-LABEL: func.func @sequence_queries_through_layer_cache
// CHECK-SAME: (%[[COLLECTION:.*]]: !kvcache.continuous_collection<{{.*}}>, %[[LAYER:.*]]: index, %[[BATCH:.*]]: index)
// CHECK-NOT: kvcache.get_key_cache
// CHECK-NOT: kvcache.get_value_cache
// CHECK-DAG: %[[N:.*]] = kvcache.num_sequences %[[COLLECTION]] : !kvcache.continuous_collection
// CHECK-DAG: %[[T:.*]] = kvcache.capacity %[[COLLECTION]][%[[BATCH]]] : !kvcache.continuous_collection
// CHECK: return %[[N]], %[[T]]
func.func @sequence_queries_through_layer_cache(%collection: !collection, %layer: index, %batch: index) -> (index, index) {
  %key = kvcache.get_key_cache %collection[%layer] : !collection
  %value = kvcache.get_value_cache %collection[%layer] : !collection
  %n = kvcache.num_sequences %key : !cache
  %t = kvcache.capacity %value[%batch] : !cache
  return %n, %t : index, index
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// negative_: on a cache that does not come from get_*_cache they stay.

// CHECK-LABEL: func.func @negative_sequence_queries_of_argument
// CHECK-SAME: (%[[CACHE:.*]]: !kvcache.paged_cache<{{.*}}>, %[[BATCH:.*]]: index)
// CHECK-DAG: kvcache.num_sequences %[[CACHE]] : !kvcache.paged_cache
// CHECK-DAG: kvcache.capacity %[[CACHE]][%[[BATCH]]] : !kvcache.paged_cache
func.func @negative_sequence_queries_of_argument(%cache: !cache, %batch: index) -> (index, index) {
  %n = kvcache.num_sequences %cache : !cache
  %t = kvcache.capacity %cache[%batch] : !cache
  return %n, %t : index, index
}
