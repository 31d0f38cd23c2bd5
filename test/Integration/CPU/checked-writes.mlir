// Out-of-range writes under -kvcache-to-cpu=checked=true: each entry point
// makes one bad kvcache.store, and the program stops there (abort, so
// not --crash) with a message naming the op, its location, the value and the
// bound. Without checks the same program runs to completion: every bad write
// still lands inside the allocations, so the unchecked run is well defined.

// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s --check-prefix=UNCHECKED

// UNCHECKED: bad_page completed
// UNCHECKED-NEXT: past_columns completed
// UNCHECKED-NEXT: bad_head completed

// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true -o %t.mlir
// RUN: cat %t.mlir | not --crash mlir-runner -e bad_page -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=PAGE
// RUN: cat %t.mlir | not --crash mlir-runner -e past_columns -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=COLUMNS
// RUN: cat %t.mlir | not --crash mlir-runner -e bad_head -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=HEAD
// RUN: cat %t.mlir | not --crash mlir-runner -e unsigned_page -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=UNSIGNED

!blocks = memref<?x2x?x2x2x4xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 4, page_size = 2>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 4, page_size = 2>

// 3 pages, 2 layers, 2 tokens per page. Row 1 of the lookup table holds the
// bad physical pages 3 (= num_pages) and 2^31 (unsigned; -2^31 as signed).
memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @lookup_table : memref<2x2xi32> = dense<[[0, 1], [3, -2147483648]]>
// A head index the verifier cannot see: 2 = num_heads.
memref.global "private" constant @two : memref<index> = dense<2>

// The collection over a buffer one page larger than `blocks`, so that the
// unchecked bad writes stay inside the allocation.
func.func @make_collection() -> !collection {
  %max_seq_length = arith.constant 1 : i32
  %max_cache_length = arith.constant 3 : i32
  %storage = memref.alloc() : memref<4x2x2x2x2x4xf32>
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

// A store to sequence 1, whose logical page 0 is the bad entry 3.
func.func @bad_page() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant dense<1.0> : vector<4xf32>
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c1] : !collection
  // PAGE: kvcache run-time check failed: kvcache.store (kvcache.lookup) at {{.*}}checked-writes.mlir:[[@LINE+1]]:3: physical page (lookup_table entry) 3 is out of range: num_pages is 3
  kvcache.store %x, %cache[%c1, %c0, %c1, %c0] : !cache, vector<4xf32>
  vector.print str "bad_page completed\n"
  return
}
// PAGE-NOT: completed

// Token 4 of sequence 0 is in logical page 2; the table has 2 columns.
func.func @past_columns() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %x = arith.constant 1.0 : f32
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_value_cache %collection[%c0] : !collection
  // COLUMNS: kvcache run-time check failed: kvcache.store (kvcache.lookup) at {{.*}}checked-writes.mlir:[[@LINE+1]]:3: logical page (token / page_size) 2 is out of range: the number of lookup_table columns is 2
  kvcache.store %x, %cache[%c0, %c0, %c4, %c0] : !cache, f32
  vector.print str "past_columns completed\n"
  return
}
// COLUMNS-NOT: completed

// Head 2 of 2, through an index known only at run time.
func.func @bad_head() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant dense<1.0> : vector<2xf32>
  %two = memref.get_global @two : memref<index>
  %head = memref.load %two[] : memref<index>
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // HEAD: kvcache run-time check failed: kvcache.{{.*}} at {{.*}}checked-writes.mlir:[[@LINE+1]]:3: head index 2 is out of range: num_heads is 2
  kvcache.store %x, %cache[%c0, %head, %c1, %c0] : !cache, vector<2xf32>
  vector.print str "bad_head completed\n"
  return
}
// HEAD-NOT: completed

// Token 2 of sequence 1 is in page 2^31, which a signed comparison would
// accept. Not called by @main: unchecked, this write would leave the buffer.
func.func @unsigned_page() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %x = arith.constant 1.0 : f32
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_value_cache %collection[%c1] : !collection
  // UNSIGNED: kvcache run-time check failed: kvcache.store (kvcache.lookup) at {{.*}}checked-writes.mlir:[[@LINE+1]]:3: physical page (lookup_table entry) 2147483648 is out of range: num_pages is 3
  kvcache.store %x, %cache[%c1, %c1, %c2, %c1] : !cache, f32
  vector.print str "unsigned_page completed\n"
  return
}
// UNSIGNED-NOT: completed

func.func @main() {
  call @bad_page() : () -> ()
  call @past_columns() : () -> ()
  call @bad_head() : () -> ()
  return
}
