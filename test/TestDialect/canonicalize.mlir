// RUN: kvcache-opt %s -canonicalize | FileCheck %s

// The kvcache folds and canonicalizations reach the CSR constructor through
// CollectionOpInterface: max_* lengths become its i32 operands, queries on
// a layer cache fold to the collection.

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>
!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>

// CHECK-LABEL: func.func @max_lengths
// CHECK-SAME: %[[MAX_SEQ:[a-z0-9_]+]]: i32, %[[MAX_CACHE:[a-z0-9_]+]]: i32
// CHECK-DAG: %[[SEQ:.*]] = arith.index_castui %[[MAX_SEQ]] : i32 to index
// CHECK-DAG: %[[CACHE:.*]] = arith.index_castui %[[MAX_CACHE]] : i32 to index
// CHECK-NOT: kvcache.max
// CHECK: return %[[SEQ]], %[[CACHE]]
func.func @max_lengths(%blocks: memref<?x2x?x4x2x8xf16>, %kv_indptr: memref<?xi32>,
                       %kv_indices: memref<?xi32>, %cache_lengths: memref<?xi32>,
                       %max_seq_length: i32, %max_cache_length: i32, %layer: index) -> (index, index) {
  %c = test_kv.csr_collection %blocks, %kv_indptr, %kv_indices, %cache_lengths, %max_seq_length, %max_cache_length
      : memref<?x2x?x4x2x8xf16>, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  %k = kvcache.get_key_cache %c[%layer] : !collection
  %s = kvcache.max_seq_length %k : !cache
  %m = kvcache.max_cache_length %c : !collection
  return %s, %m : index, index
}

// CHECK-LABEL: func.func @layer_queries
// CHECK-SAME: (%[[C:[a-z0-9_]+]]: !test_kv.csr_collection
// CHECK: kvcache.cache_length %[[C]][%{{.*}}] : !test_kv.csr_collection
// CHECK: kvcache.num_pages %[[C]] : !test_kv.csr_collection
func.func @layer_queries(%c: !collection, %layer: index, %b: index) -> (index, index) {
  %v = kvcache.get_value_cache %c[%layer] : !collection
  %n = kvcache.cache_length %v[%b] : !cache
  %p = kvcache.num_pages %v : !cache
  return %n, %p : index, index
}
