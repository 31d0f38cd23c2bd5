// RUN: kvcache-opt %s -convert-kvcache-to-memref -split-input-file -verify-diagnostics -allow-unregistered-dialect

// What convert-kvcache-to-memref cannot lower on the CSR kind of test_kv is
// reported as it is for the kvcache kinds, never crashed on or left behind
// as unrealized casts.

!cache = !test_kv.csr_cache<f16, num_heads = 2, head_size = 8, page_size = 4>

func.func @kernel_op(%k: !cache, %rows: memref<?x2x8xf16>, %offsets: memref<?xi32>) {
  // expected-error @below {{'kvcache.store_ragged' op is a kernel op: lower it with convert-kvcache-to-scf (CPU) or convert-kvcache-to-gpu (GPU) before convert-kvcache-to-memref}}
  kvcache.store_ragged %k, %rows, %offsets : !cache, memref<?x2x8xf16>, memref<?xi32>
  return
}

// -----

!collection = !test_kv.csr_collection<f16, num_heads = 2, head_size = 8, page_size = 4>

// An op that does not know the type's six lowered values.
func.func @unknown_user(%c: !collection) {
  // expected-error @below {{failed to legalize operation 'test.consume'}}
  "test.consume"(%c) : (!collection) -> ()
  return
}
