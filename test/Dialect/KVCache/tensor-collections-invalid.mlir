// RUN: kvcache-opt %s -split-input-file -verify-diagnostics

// The verifier rules of collections built from tensors (docs/Contract.md
// sections 3.5 and 4.7.1).

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @mixed_forms(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: memref<?xi32>, %table: tensor<?x?xi32>, %n: i32) {
  // expected-error @below {{'kvcache.paged_collection' op expects its data operands in one form, all memrefs or all tensors, got 'tensor<?x2x?x16x8x128xf16>' and 'memref<?xi32>'}}
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, memref<?xi32>, tensor<?x?xi32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @blocks_dims(%blocks: tensor<?x2x?x16x4x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32) {
  // expected-error @below {{expects 'blocks' dim 4 (num_heads) to be 8 as the cache type says, got 4}}
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x4x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @table_rank(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?xi32>, %n: i32) {
  // expected-error @below {{expects 'lookup_table' to be a 2-D tensor of 'i32' [batch, max_pages], got 'tensor<?xi32>'}}
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?xi32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @store_without_result(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32, %rows: tensor<?x8x128xf16>, %o: tensor<?xi32>, %l: index) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %k = kvcache.get_key_cache %c[%l] : !c
  // expected-error @below {{'kvcache.store_ragged' op writes a collection built from tensors: it must be in the tensor form and return the updated collection (`-> '!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>'`), which later ops use}}
  kvcache.store_ragged %k, %rows, %o : !k, tensor<?x8x128xf16>, tensor<?xi32>
  return
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @copy_memref_built(%blocks: memref<?x2x?x16x8x128xf16>, %lengths: memref<?xi32>, %table: memref<?x?xi32>, %n: i32, %pairs: tensor<?x2xi32>) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !c
  // expected-error @below {{'kvcache.copy_pages' op returns an updated collection only when the collection is built from tensors; this one is built from memrefs and written in place}}
  %p = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @result_in_memref_form(%k: !k, %rows: memref<?x8x128xf16>, %o: memref<?xi32>) {
  // expected-error @below {{'kvcache.store_ragged' op has results only in the tensor form (the memref form writes its operands in place), got 1}}
  %s = kvcache.store_ragged %k, %rows, %o : !k, memref<?x8x128xf16>, memref<?xi32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 4, head_size = 128, page_size = 16>
func.func @result_type(%k: !k, %rows: tensor<?x4x128xf16>, %o: tensor<?xi32>) {
  // expected-error @below {{'kvcache.store_ragged' op returns the updated collection, whose layer caches must be the written cache's type '!kvcache.paged_cache<f16, num_heads = 4, head_size = 128, page_size = 16>', got '!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>'}}
  %s = kvcache.store_ragged %k, %rows, %o : !k, tensor<?x4x128xf16>, tensor<?xi32> -> !c
  return
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @tensors_of_memref_built(%blocks: memref<?x2x?x16x8x128xf16>, %lengths: memref<?xi32>, %table: memref<?x?xi32>, %n: i32) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !c
  // expected-error @below {{'kvcache.collection_tensors' op needs a collection built from tensors; this one is built from memrefs, which are its buffers}}
  %b = kvcache.collection_tensors %c : !c -> tensor<?x2x?x16x8x128xf16>
  return
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @tensors_type(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  // expected-error @below {{'kvcache.collection_tensors' op result 0 must have the type of the 'blocks' the collection is built from, 'tensor<?x2x?x16x8x128xf16>', got 'tensor<4x2x1x16x8x128xf16>'}}
  %b = kvcache.collection_tensors %c : !c -> tensor<4x2x1x16x8x128xf16>
  return
}

// -----

!c = !kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>
func.func @tensors_count(%c: !c) {
  // expected-error @below {{'kvcache.collection_tensors' op returns 'blocks' and 'scales' of '!kvcache.paged_collection<f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>', 2 tensors, got 1}}
  %b = kvcache.collection_tensors %c : !c -> tensor<?x2x?x16x8x128xf8E4M3FN>
  return
}

// -----

// rope_ragged rotates the keys of a collection built from tensors: it
// returns the updated collection too, like store_ragged.
!c = !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rope_without_collection(%blocks: tensor<?x2x?x16x8x128xbf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                                   %q: tensor<?x32x128xbf16>, %offsets: tensor<3xi32>, %cs: tensor<?x64xf32>) -> tensor<?x32x128xbf16> {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xbf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %l = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%l] : !c
  // expected-error @below {{'kvcache.rope_ragged' op writes a collection built from tensors: it must be in the tensor form and return the updated collection (`-> '!kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>'`), which later ops use}}
  %r = kvcache.rope_ragged %q, %k, %offsets, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : tensor<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, tensor<3xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16> -> tensor<?x32x128xbf16>
  return %r : tensor<?x32x128xbf16>
}

// -----

// The memref form writes the collection through its buffers: no result.
!c = !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rope_memref_form(%blocks: tensor<?x2x?x16x8x128xbf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                            %q: memref<?x32x128xbf16>, %offsets: memref<3xi32>, %cs: memref<?x64xf32>) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xbf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %l = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%l] : !c
  // expected-error @below {{'kvcache.rope_ragged' op writes a collection built from tensors: it must be in the tensor form and return the updated collection}}
  kvcache.rope_ragged %q, %k, %offsets, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : memref<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, memref<3xi32>, memref<?x64xf32>, memref<?x32x128xbf16>
  return
}

// -----

!c = !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rope_memref_built(%blocks: memref<?x2x?x16x8x128xbf16>, %lengths: memref<?xi32>, %table: memref<?x?xi32>, %n: i32,
                             %q: tensor<?x32x128xbf16>, %offsets: tensor<3xi32>, %cs: tensor<?x64xf32>) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : memref<?x2x?x16x8x128xbf16>, memref<?xi32>, memref<?x?xi32> -> !c
  %l = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%l] : !c
  // expected-error @below {{'kvcache.rope_ragged' op returns an updated collection only when the collection is built from tensors; this one is built from memrefs and written in place}}
  %r, %c2 = kvcache.rope_ragged %q, %k, %offsets, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : tensor<?x32x128xbf16>, !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>, tensor<3xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16> -> tensor<?x32x128xbf16>, !c
  return
}

// -----

!k = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rope_result_type(%k: !k, %q: tensor<?x32x128xbf16>, %offsets: tensor<3xi32>, %cs: tensor<?x64xf32>) {
  // expected-error @below {{'kvcache.rope_ragged' op returns the updated collection, whose layer caches must be the written cache's type '!kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>', got '!kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 32>'}}
  %r, %c2 = kvcache.rope_ragged %q, %k, %offsets, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : tensor<?x32x128xbf16>, !k, tensor<3xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16> -> tensor<?x32x128xbf16>, !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 32>
  return
}

// -----

// The collection comes after the new q_out, which the tensor form returns.
!k = !kvcache.paged_cache<bf16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rope_collection_only(%k: !k, %q: tensor<?x32x128xbf16>, %offsets: tensor<3xi32>, %cs: tensor<?x64xf32>) {
  // expected-error @below {{'kvcache.rope_ragged' op expected the number of tensor results (0) to be equal to the number of output tensors (1)}}
  %c2 = "kvcache.rope_ragged"(%q, %k, %offsets, %cs, %q) <{resultSegmentSizes = array<i32: 0, 1>, rotary_dims = 64 : i64, style = "half"}>
      : (tensor<?x32x128xbf16>, !k, tensor<3xi32>, tensor<?x64xf32>, tensor<?x32x128xbf16>) -> !kvcache.paged_collection<bf16, num_heads = 8, head_size = 128, page_size = 16>
  return
}
