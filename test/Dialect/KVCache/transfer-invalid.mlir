// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// The operand rules of kvcache.send_pages and kvcache.recv_pages
// (docs/Contract.md section 4.8.1).

// A continuous collection has no pages to send.
func.func @send_continuous(%c: !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>, %s: memref<?xi32>, %rank: i32) {
  // expected-error @below {{operand #0 must be}}
  kvcache.send_pages %c, %s, %rank : !kvcache.continuous_collection<f16, num_heads = 8, head_size = 128>, memref<?xi32>
  return
}

// -----

func.func @recv_ids_i64(%c: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %d: memref<?xi64>, %rank: i32) {
  // expected-error @below {{operand #1 must be 1-D memref of i32 in the default memory space}}
  kvcache.recv_pages %c, %d, %rank : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi64>
  return
}

// -----

func.func @recv_ids_2d(%c: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %d: memref<?x2xi32>, %rank: i32) {
  // expected-error @below {{operand #1 must be 1-D memref of i32 in the default memory space}}
  kvcache.recv_pages %c, %d, %rank : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x2xi32>
  return
}

// -----

func.func @send_ids_memory_space(%c: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %s: memref<?xi32, 1>, %rank: i32) {
  // expected-error @below {{operand #1 must be 1-D memref of i32 in the default memory space}}
  kvcache.send_pages %c, %s, %rank : !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32, 1>
  return
}

// -----

func.func @send_rank_index(%c: !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, %s: memref<?xi32>, %rank: index) {
  // expected-error @below {{operand #2 must be 32-bit signless integer, but got 'index'}}
  "kvcache.send_pages"(%c, %s, %rank) : (!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?xi32>, index) -> ()
  return
}
