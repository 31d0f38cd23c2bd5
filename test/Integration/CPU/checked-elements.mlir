// Bad element ranges and misaligned accesses under
// -kvcache-to-cpu=checked=true: a vector read past head_size, a vector<2>
// read at an odd element, a 2-row tile at an odd token. The program stops at
// each (abort, so not --crash) with a message naming the op, its location,
// the value and the bound. Without checks the same program runs to
// completion: every bad read stays inside the allocations.

// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s --check-prefix=UNCHECKED

// UNCHECKED: bad_element completed
// UNCHECKED: misaligned_vector completed
// UNCHECKED: misaligned_tile completed

// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true -o %t.mlir
// RUN: cat %t.mlir | not --crash mlir-runner -e bad_element -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=ELEMENT
// RUN: cat %t.mlir | not --crash mlir-runner -e misaligned_vector -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=ALIGN
// RUN: cat %t.mlir | not --crash mlir-runner -e misaligned_tile -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=TILE

!blocks = memref<?x2x?x2x2x4xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 4, page_size = 2>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 4, page_size = 2>
!tile = memref<2x4xf32, strided<[8, 1], offset: ?>>

// 3 pages, 2 layers, 2 tokens per page, 2 sequences.
memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @lookup_table : memref<2x2xi32> = dense<[[0, 1], [2, 0]]>
// Indices the verifier cannot see: 2 (doubled: head_size) and 1 (an odd
// element or token index).
memref.global "private" constant @two : memref<index> = dense<2>
memref.global "private" constant @one : memref<index> = dense<1>

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

// Elements 4 .. 7 of a head of 4.
func.func @bad_element() {
  %c0 = arith.constant 0 : index
  %two = memref.get_global @two : memref<index>
  %half = call @runtime_index(%two) : (memref<index>) -> index
  %element = arith.addi %half, %half : index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // ELEMENT: kvcache run-time check failed: kvcache.{{.*}} at {{.*}}checked-elements.mlir:[[@LINE+1]]:8: first element index 4 is out of range: head_size - vector width + 1 is 1
  %x = kvcache.load %cache[%c0, %c0, %c0, %element] : !cache -> vector<4xf32>
  vector.print %x : vector<4xf32>
  vector.print str "bad_element completed\n"
  return
}
// ELEMENT-NOT: completed

// A vector<2> read at element 1.
func.func @misaligned_vector() {
  %c0 = arith.constant 0 : index
  %one = memref.get_global @one : memref<index>
  %element = call @runtime_index(%one) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // ALIGN: kvcache run-time check failed: kvcache.{{.*}} at {{.*}}checked-elements.mlir:[[@LINE+1]]:8: first element index 1 is not a multiple of 2
  %x = kvcache.load %cache[%c0, %c0, %c0, %element] : !cache -> vector<2xf32>
  vector.print %x : vector<2xf32>
  vector.print str "misaligned_vector completed\n"
  return
}
// ALIGN-NOT: completed

// A 2-row tile starting at token 1.
func.func @misaligned_tile() {
  %c0 = arith.constant 0 : index
  %one = memref.get_global @one : memref<index>
  %token = call @runtime_index(%one) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // TILE: kvcache run-time check failed: kvcache.tile at {{.*}}checked-elements.mlir:[[@LINE+1]]:11: first token of the tile 1 is not a multiple of 2
  %tile = kvcache.tile %cache[%c0, %token, %c0] : !cache -> !tile
  %x = memref.load %tile[%c0, %c0] : !tile
  vector.print %x : f32
  vector.print str "misaligned_tile completed\n"
  return
}
// TILE-NOT: completed

func.func @main() {
  call @bad_element() : () -> ()
  call @misaligned_vector() : () -> ()
  call @misaligned_tile() : () -> ()
  return
}
