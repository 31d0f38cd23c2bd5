// RUN: kvcache-opt %s -convert-kvcache-to-memref -split-input-file -verify-diagnostics -allow-unregistered-dialect

// What convert-kvcache-to-memref cannot lower is reported, never crashed on
// or left behind as unrealized casts.

//===----------------------------------------------------------------------===//
// Kernel ops: lowered by convert-kvcache-to-scf / -gpu first
//===----------------------------------------------------------------------===//

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @store_ragged(%key: !cache, %new_rows: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
  // expected-error @below {{'kvcache.store_ragged' op is a kernel op: lower it with convert-kvcache-to-scf (CPU) or convert-kvcache-to-gpu (GPU) before convert-kvcache-to-memref}}
  kvcache.store_ragged %key, %new_rows, %row_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @gather_ragged(%key: !cache, %out: memref<?x8x128xf16>, %ctx_offsets: memref<?xi32>) {
  // expected-error @below {{'kvcache.gather_ragged' op is a kernel op}}
  kvcache.gather_ragged %key, %out, %ctx_offsets : !cache, memref<?x8x128xf16>, memref<?xi32>
  return
}

// -----

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @copy_pages(%collection: !collection, %pairs: memref<?x2xi32>) {
  // expected-error @below {{'kvcache.copy_pages' op is a kernel op}}
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  return
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @attention_ragged(%q: memref<?x32x128xf16>, %key: !cache, %value: !cache,
                            %row_offsets: memref<?xi32>, %out: memref<?x32x128xf16>) {
  // expected-error @below {{'kvcache.attention_ragged' op is a kernel op}}
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.0883883 : f32}
      : memref<?x32x128xf16>, !cache, !cache, memref<?xi32>, memref<?x32x128xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Leftovers: cache values reaching ops the conversion does not know
//===----------------------------------------------------------------------===//

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @unknown_user(%key: !cache) {
  // expected-error @below {{failed to legalize operation 'test.consume'}}
  "test.consume"(%key) : (!cache) -> ()
  return
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @unknown_producer() -> index {
  // expected-error @below {{failed to legalize operation 'test.produce'}}
  %key = "test.produce"() : () -> !cache
  %length = kvcache.max_seq_length %key : !cache
  return %length : index
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @execute_region(%key: !cache, %batch: index) -> index {
  // expected-error @below {{failed to legalize operation 'scf.execute_region'}}
  %result = scf.execute_region -> !cache {
    scf.yield %key : !cache
  }
  %length = kvcache.cache_length %result[%batch] : !cache
  return %length : index
}

// -----

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

func.func @call_indirect(%callee: (!cache) -> (), %key: !cache) {
  // expected-error @below {{failed to legalize operation 'func.call_indirect'}}
  func.call_indirect %callee(%key) : (!cache) -> ()
  return
}

// -----

// A user's own cast of a cache value keeps the original value alive.

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

// expected-error @below {{failed to legalize unresolved materialization}}
func.func @user_cast(%key: !cache) -> i64 {
  // expected-note @below {{see existing live user here}}
  %handle = builtin.unrealized_conversion_cast %key : !cache to i64
  return %handle : i64
}
