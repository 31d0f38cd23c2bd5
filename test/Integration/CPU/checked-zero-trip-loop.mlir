// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s

// Run-time checks belong to the accesses that run. Each loop below runs zero
// times (sequence 1 is empty) and its body reads or writes a token past the
// lookup table at a loop-invariant position; a lookup hoisted out of the loop
// with its checks would stop a program that makes no bad access. Checked
// both with checked=true (the read) and with assert_write_mode = 1 (the
// write, without checked=true).

// CHECK: ( 1, 2, 3, 4 )
// CHECK-NEXT: ( 1, 2, 3, 4 )
// CHECK-NEXT: completed

!blocks = memref<?x2x?x2x1x4xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 2>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 2>
!asserting_collection = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 2, assert_write_mode = 1>
!asserting_cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 2, assert_write_mode = 1>

memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[2, 0]>
memref.global "private" constant @lookup_table : memref<2x1xi32> = dense<[[0], [1]]>

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %max_seq_length = arith.constant 0 : i32
  %max_cache_length = arith.constant 2 : i32
  %storage = memref.alloc() : memref<2x2x1x2x1x4xf32>
  %blocks = memref.cast %storage : memref<2x2x1x2x1x4xf32> to !blocks
  %lengths_global = memref.get_global @cache_lengths : memref<2xi32>
  %table_global = memref.get_global @lookup_table : memref<2x1xi32>
  %cache_lengths = memref.cast %lengths_global : memref<2xi32> to memref<?xi32>
  %lookup_table = memref.cast %table_global : memref<2x1xi32> to memref<?x?xi32>
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection
  %asserting = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?x?xi32> -> !asserting_collection
  %key_cache = kvcache.get_key_cache %collection[%c0] : !collection
  %asserting_key_cache = kvcache.get_key_cache %asserting[%c0] : !asserting_collection

  %row = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  kvcache.store %row, %asserting_key_cache[%c0, %c0, %c1, %c0] : !asserting_cache, vector<4xf32>

  %empty = kvcache.cache_length %key_cache[%c1] : !cache
  %sum = scf.for %i = %c0 to %empty step %c1 iter_args(%acc = %row) -> (vector<4xf32>) {
    %x = kvcache.load %key_cache[%c1, %c0, %c6, %c0] : !cache -> vector<4xf32>
    %next = arith.addf %acc, %x : vector<4xf32>
    scf.yield %next : vector<4xf32>
  }
  scf.for %i = %c0 to %empty step %c1 {
    kvcache.store %row, %asserting_key_cache[%c1, %c0, %c6, %c0] : !asserting_cache, vector<4xf32>
  }
  vector.print %sum : vector<4xf32>
  %back = kvcache.load %key_cache[%c0, %c0, %c1, %c0] : !cache -> vector<4xf32>
  vector.print %back : vector<4xf32>
  vector.print str "completed\n"
  memref.dealloc %storage : memref<2x2x1x2x1x4xf32>
  return
}
