// RUN: kvcache-opt %s -split-input-file -kvcache-bufferize -verify-diagnostics

// kvcache-bufferize never copies a cache (docs/Contract.md section 3.5): a
// program whose bufferization would copy the blocks or scales of a
// collection built from tensors is an error that says why.

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// The old blocks tensor is returned after the cache is written.
func.func @read_after_write(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                            %rows: tensor<?x8x128xf16>, %o: tensor<?xi32>)
    -> (tensor<?x2x?x16x8x128xf16>, tensor<?x2x?x16x8x128xf16>) {
  %l0 = arith.constant 0 : index
  // expected-error @below {{'kvcache.paged_collection' op would have bufferization copy its 'blocks' (a whole cache): the tensor is used after the cache built from it is written; use the updated collection (or its kvcache.collection_tensors) instead of the tensor}}
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %k = kvcache.get_key_cache %c[%l0] : !c
  %c1 = kvcache.store_ragged %k, %rows, %o : !k, tensor<?x8x128xf16>, tensor<?xi32> -> !c
  %b = kvcache.collection_tensors %c1 : !c -> tensor<?x2x?x16x8x128xf16>
  return %b, %blocks : tensor<?x2x?x16x8x128xf16>, tensor<?x2x?x16x8x128xf16>
}

// -----

!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @read_only_argument(%blocks: tensor<?x2x?x16x8x128xf16> {bufferization.writable = false},
                              %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                              %pairs: tensor<?x2xi32>) -> tensor<?x2x?x16x8x128xf16> {
  // expected-error @below {{'kvcache.paged_collection' op would have bufferization copy its 'blocks' (a whole cache): the tensor is not writable (a constant, or an argument marked bufferization.writable = false); build the collection from a writable tensor, such as a function argument}}
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %c1 = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  %b = kvcache.collection_tensors %c1 : !c -> tensor<?x2x?x16x8x128xf16>
  return %b : tensor<?x2x?x16x8x128xf16>
}

// -----

!q = !kvcache.paged_collection<i8, num_heads = 8, head_size = 128, page_size = 16, scales = tensor>
func.func @constant_scales(%blocks: tensor<?x2x?x16x8x128xi8>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                           %pairs: tensor<?x2xi32>) -> tensor<?x2x?x16x8x128xi8> {
  %scales = arith.constant dense<1.0> : tensor<1x2xf32>
  // expected-error @below {{would have bufferization copy its 'scales' (a whole cache): the tensor is not writable}}
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n, %scales
      : tensor<?x2x?x16x8x128xi8>, tensor<?xi32>, tensor<?x?xi32>, tensor<1x2xf32> -> !q
  %c1 = kvcache.copy_pages %c, %pairs : !q, tensor<?x2xi32> -> !q
  %b, %s = kvcache.collection_tensors %c1 : !q -> tensor<?x2x?x16x8x128xi8>, tensor<1x2xf32>
  return %b : tensor<?x2x?x16x8x128xi8>
}

// -----

// A caller that reads its tensor after passing it to a function that writes
// a cache built from it.
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func private @copy(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                        %pairs: tensor<?x2xi32>) -> tensor<?x2x?x16x8x128xf16> {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %c1 = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  %b = kvcache.collection_tensors %c1 : !c -> tensor<?x2x?x16x8x128xf16>
  return %b : tensor<?x2x?x16x8x128xf16>
}
func.func @caller(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                  %pairs: tensor<?x2xi32>) -> (tensor<?x2x?x16x8x128xf16>, tensor<?x2x?x16x8x128xf16>) {
  // expected-error @below {{'func.call' op would have bufferization copy argument #0, which the callee builds a collection from (a whole cache): the tensor is used after the cache built from it is written}}
  %b = func.call @copy(%blocks, %lengths, %table, %n, %pairs)
      : (tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32>, i32, tensor<?x2xi32>) -> tensor<?x2x?x16x8x128xf16>
  return %b, %blocks : tensor<?x2x?x16x8x128xf16>, tensor<?x2x?x16x8x128xf16>
}

// -----

// Linearity: a collection value written twice.
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @written_twice(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                         %pairs: tensor<?x2xi32>) -> tensor<?x2x?x16x8x128xf16> {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  // expected-note @below {{the earlier op}}
  %c1 = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  // expected-error @below {{'kvcache.copy_pages' op writes a collection value that an earlier op already wrote (or gave back): bufferizing would copy the cache; use the updated collection that op returns}}
  %c2 = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  %b = kvcache.collection_tensors %c2 : !c -> tensor<?x2x?x16x8x128xf16>
  return %b : tensor<?x2x?x16x8x128xf16>
}

// -----

// Linearity: a layer cache of the old collection read after the write.
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @read_after_superseded(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                                 %rows: tensor<?x8x128xf16>, %o: tensor<?xi32>, %out: tensor<?x8x128xf16>)
    -> (tensor<?x2x?x16x8x128xf16>, tensor<?x8x128xf16>) {
  %l0 = arith.constant 0 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %k = kvcache.get_key_cache %c[%l0] : !c
  // expected-note @below {{the write}}
  %c1 = kvcache.store_ragged %k, %rows, %o : !k, tensor<?x8x128xf16>, tensor<?xi32> -> !c
  // expected-error @below {{'kvcache.gather_ragged' op uses a collection value after a write superseded it: bufferizing would copy the cache; use the updated collection the write returns}}
  %g = kvcache.gather_ragged %k, %out, %o : !k, tensor<?x8x128xf16>, tensor<?xi32> -> tensor<?x8x128xf16>
  %b = kvcache.collection_tensors %c1 : !c -> tensor<?x2x?x16x8x128xf16>
  return %b, %g : tensor<?x2x?x16x8x128xf16>, tensor<?x8x128xf16>
}

// -----

// Linearity: rope_ragged rotates keys of the collection a store superseded.
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!k = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @rope_superseded(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32,
                           %rows: tensor<?x8x128xf16>, %o: tensor<?xi32>, %q: tensor<?x8x128xf16>, %cs: tensor<?x64xf32>)
    -> (tensor<?x2x?x16x8x128xf16>, tensor<?x8x128xf16>) {
  %l0 = arith.constant 0 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  %k = kvcache.get_key_cache %c[%l0] : !c
  // expected-note @below {{the earlier op}}
  %c1 = kvcache.store_ragged %k, %rows, %o : !k, tensor<?x8x128xf16>, tensor<?xi32> -> !c
  // expected-error @below {{'kvcache.rope_ragged' op writes a collection value that an earlier op already wrote (or gave back): bufferizing would copy the cache; use the updated collection that op returns}}
  %r, %c2 = kvcache.rope_ragged %q, %k, %o, %cs, %q {rotary_dims = 64 : i64, style = "half"}
      : tensor<?x8x128xf16>, !k, tensor<?xi32>, tensor<?x64xf32>, tensor<?x8x128xf16> -> tensor<?x8x128xf16>, !c
  %b = kvcache.collection_tensors %c2 : !c -> tensor<?x2x?x16x8x128xf16>
  return %b, %r : tensor<?x2x?x16x8x128xf16>, tensor<?x8x128xf16>
}

// -----

// A collection built from tensors passed to a call.
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func private @use(!c)
func.func @escapes(%blocks: tensor<?x2x?x16x8x128xf16>, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>, %n: i32) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %n, %n
      : tensor<?x2x?x16x8x128xf16>, tensor<?xi32>, tensor<?x?xi32> -> !c
  // expected-error @below {{'func.call' op uses a collection built from tensors (or a layer cache of one), which only kvcache ops of its function may use: bufferization would not see the writes through it}}
  func.call @use(%c) : (!c) -> ()
  return
}

// -----

// An updated collection of a collection whose constructor is not visible.
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @not_built_here(%c: !c, %pairs: tensor<?x2xi32>) -> !c {
  // expected-error @below {{'kvcache.copy_pages' op returns an updated collection, but writes a cache that is not of a collection built from tensors in its function}}
  %c1 = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  return %c1 : !c
}

// -----

// The tensors of a collection whose constructor is not visible (an argument).
!c = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
func.func @tensors_of_argument(%c: !c) -> tensor<?x2x?x16x8x128xf16> {
  // expected-error @below {{'kvcache.collection_tensors' op needs the constructor of its collection in the same function (kvcache.paged_collection or kvcache.continuous_collection on tensors)}}
  // expected-error @below {{failed to bufferize op}}
  %b = kvcache.collection_tensors %c : !c -> tensor<?x2x?x16x8x128xf16>
  return %b : tensor<?x2x?x16x8x128xf16>
}
