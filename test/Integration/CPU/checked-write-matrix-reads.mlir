// The reads beside the out-of-range write matrix (checked-write-matrix.mlir):
// on an assert_write_mode = 1 cache only writes are checked, so kvcache.load,
// kvcache.page_load, kvcache.gather_ragged and kvcache.attention_ragged
// lower to code with no check at all (no dprintf, no abort, no message).
// With -kvcache-to-cpu=checked=true the same reads are checked, each under
// the name of the op the user wrote, so there are checks to leave out.

// RUN: kvcache-opt %s -kvcache-to-cpu | FileCheck %s --check-prefix=AWM
// AWM-NOT: {{dprintf|abort|check failed}}
// AWM: llvm.func @reads(
// AWM-NOT: {{dprintf|abort|check failed}}

// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true | FileCheck %s --check-prefix=CHECKED

!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 4, page_size = 2, assert_write_mode = 1>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 4, page_size = 2, assert_write_mode = 1>
!rows = memref<?x2x4xf32>

func.func @reads(%collection: !collection, %batch: index, %head: index, %token: index,
                 %element: index, %page: index, %slot: index, %rows: !rows,
                 %offsets: memref<?xi32>, %q: memref<?x2x4xf32>, %out: memref<?x2x4xf32>)
    -> (vector<2xf32>, vector<2xf32>) {
  %c0 = arith.constant 0 : index
  %keys = kvcache.get_key_cache %collection[%c0] : !collection
  %values = kvcache.get_value_cache %collection[%c0] : !collection
  // CHECKED-DAG: "kvcache run-time check failed: kvcache.load (kvcache.lookup) at {{.*}}checked-write-matrix-reads.mlir:[[@LINE+1]]:8: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00"
  %x = kvcache.load %keys[%batch, %head, %token, %element] : !cache -> vector<2xf32>
  // CHECKED-DAG: "kvcache run-time check failed: kvcache.page_load at {{.*}}checked-write-matrix-reads.mlir:[[@LINE+1]]:8: physical page %lld is out of range: num_pages is %lld\0A\00"
  %y = kvcache.page_load %values[%page, %slot, %head, %element] : !cache -> vector<2xf32>
  // CHECKED-DAG: "kvcache run-time check failed: kvcache.gather_ragged (kvcache.lookup) at {{.*}}checked-write-matrix-reads.mlir:[[@LINE+1]]:3: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00"
  kvcache.gather_ragged %keys, %rows, %offsets : !cache, !rows, memref<?xi32>
  // CHECKED-DAG: "kvcache run-time check failed: kvcache.attention_ragged (kvcache.lookup) at {{.*}}checked-write-matrix-reads.mlir:[[@LINE+1]]:3: physical page (lookup_table entry) %lld is out of range: num_pages is %lld\0A\00"
  kvcache.attention_ragged %q, %keys, %values, %offsets, %out {scale = 0.5 : f32}
      : memref<?x2x4xf32>, !cache, !cache, memref<?xi32>, memref<?x2x4xf32>
  return %x, %y : vector<2xf32>, vector<2xf32>
}
// CHECKED-LABEL: llvm.func @reads(
// CHECKED: llvm.call @dprintf
// CHECKED: llvm.call @abort
