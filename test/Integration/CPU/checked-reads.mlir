// Out-of-range reads under -kvcache-to-cpu=checked=true, which checks reads
// too: each entry point reads through a bad batch, layer or page index, and
// the program stops there (abort, so not --crash) with a message naming the
// op, its location, the value and the bound. Without checks the same program
// runs to completion: every bad read stays inside the allocations.

// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s --check-prefix=UNCHECKED

// UNCHECKED: bad_batch completed
// UNCHECKED: bad_layer completed
// UNCHECKED: bad_page_load completed

// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true -o %t.mlir
// RUN: cat %t.mlir | not --crash mlir-runner -e bad_batch -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=BATCH
// RUN: cat %t.mlir | not --crash mlir-runner -e bad_layer -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=LAYER
// RUN: cat %t.mlir | not --crash mlir-runner -e bad_page_load -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=PAGE-LOAD

!blocks = memref<?x2x?x2x2x4xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 4, page_size = 2>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 4, page_size = 2>

// 3 pages, 2 layers, 2 tokens per page, 2 sequences.
memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @lookup_table : memref<2x2xi32> = dense<[[0, 1], [2, 0]]>
// An index the verifier cannot see: 2 = batch size = num_layers.
memref.global "private" constant @two : memref<index> = dense<2>

// The collection over a buffer one page larger than `blocks`, so that the
// unchecked bad reads stay inside the allocation.
func.func @make_collection() -> !collection {
  %max_seq_length = arith.constant 1 : i32
  %max_cache_length = arith.constant 3 : i32
  %storage = memref.alloc() : memref<4x2x2x2x2x4xf32>
  %zero = arith.constant 0.0 : f32
  %flat = memref.collapse_shape %storage [[0, 1, 2, 3, 4, 5]] : memref<4x2x2x2x2x4xf32> into memref<256xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c1 {
    memref.store %zero, %flat[%i] : memref<256xf32>
  }
  %pages = memref.subview %storage[0, 0, 0, 0, 0, 0] [3, 2, 2, 2, 2, 4] [1, 1, 1, 1, 1, 1]
      : memref<4x2x2x2x2x4xf32> to memref<3x2x2x2x2x4xf32, strided<[64, 32, 16, 8, 4, 1]>>
  %blocks = memref.cast %pages : memref<3x2x2x2x2x4xf32, strided<[64, 32, 16, 8, 4, 1]>> to !blocks
  %lengths_global = memref.get_global @cache_lengths : memref<2xi32>
  %table_global = memref.get_global @lookup_table : memref<2x2xi32>
  %cache_lengths = memref.cast %lengths_global : memref<2xi32> to memref<?xi32>
  %lookup_table = memref.cast %table_global : memref<2x2xi32> to memref<?x?xi32>
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection
  return %collection : !collection
}

func.func @runtime_index(%which: memref<index>) -> index {
  %value = memref.load %which[] : memref<index>
  return %value : index
}

// Sequence 2 of 2 (cache_lengths has 2 entries).
func.func @bad_batch() {
  %two = memref.get_global @two : memref<index>
  %batch = call @runtime_index(%two) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  // BATCH: kvcache run-time check failed: kvcache.cache_length at {{.*}}checked-reads.mlir:[[@LINE+1]]:13: batch index 2 is out of range: the size of cache_lengths is 2
  %length = kvcache.cache_length %collection[%batch] : !collection
  vector.print %length : index
  vector.print str "bad_batch completed\n"
  return
}
// BATCH-NOT: completed

// Layer 2 of 2.
func.func @bad_layer() {
  %c0 = arith.constant 0 : index
  %two = memref.get_global @two : memref<index>
  %layer = call @runtime_index(%two) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  // LAYER: kvcache run-time check failed: bad_layer: kvcache.get_value_cache at {{.*}}checked-reads.mlir:[[@LINE+1]]:12: 'layer' is 2, out of range: 'collection' has 2 layers (num_layers)
  %cache = kvcache.get_value_cache %collection[%layer] : !collection
  %x = kvcache.load %cache[%c0, %c0, %c0, %c0] : !cache -> f32
  vector.print %x : f32
  vector.print str "bad_layer completed\n"
  return
}
// LAYER-NOT: completed

// A page_load of page 3 (= num_pages).
func.func @bad_page_load() {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // PAGE-LOAD: kvcache run-time check failed: kvcache.page_load at {{.*}}checked-reads.mlir:[[@LINE+1]]:8: physical page 3 is out of range: num_pages is 3
  %x = kvcache.page_load %cache[%c3, %c0, %c0, %c0] : !cache -> f32
  vector.print %x : f32
  vector.print str "bad_page_load completed\n"
  return
}
// PAGE-LOAD-NOT: completed

func.func @main() {
  call @bad_batch() : () -> ()
  call @bad_layer() : () -> ()
  call @bad_page_load() : () -> ()
  return
}
