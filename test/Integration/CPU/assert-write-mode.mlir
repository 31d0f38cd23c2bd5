// A cache with assert_write_mode = 1 checks its writes at run time without
// -kvcache-to-cpu=checked=true: in-range stores at the edges (last page slot,
// last head, last elements, the null page) pass and read back; an
// out-of-range kvcache.store or kvcache.page_store stops the program with a
// message (abort, so not --crash). The same program with
// assert_write_mode = 0 runs to completion (the bad writes still land inside
// the allocation).

// RUN: kvcache-opt %s -kvcache-to-cpu -o %t.mlir
// RUN: mlir-runner %t.mlir -e in_range_stores -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s --check-prefix=IN-RANGE
// RUN: cat %t.mlir | not --crash mlir-runner -e past_columns -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=COLUMNS
// RUN: cat %t.mlir | not --crash mlir-runner -e bad_page_store -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=PAGE-STORE
// RUN: sed -e 's/assert_write_mode = 1/assert_write_mode = 0/' %s \
// RUN: | kvcache-opt -kvcache-to-cpu \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s --check-prefix=NO-ASSERT

// IN-RANGE: ( 1, 2, 3, 4 )
// IN-RANGE-NEXT: ( 5, 6 )
// IN-RANGE-NEXT: 7
// IN-RANGE-NEXT: in_range_stores completed

// NO-ASSERT: in_range_stores completed
// NO-ASSERT-NEXT: past_columns completed
// NO-ASSERT-NEXT: bad_page_store completed

!blocks = memref<?x2x?x2x2x4xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 4, page_size = 2, assert_write_mode = 1>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 4, page_size = 2, assert_write_mode = 1>

// 3 pages (page 2 is the null page), 2 layers, 2 tokens per page.
memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[3, 0]>
memref.global "private" constant @lookup_table : memref<2x2xi32> = dense<[[0, 1], [2, 2]]>

// The collection over a buffer one page larger than `blocks`, so that the
// unchecked bad writes stay inside the allocation.
func.func @make_collection() -> !collection {
  %max_seq_length = arith.constant 1 : i32
  %max_cache_length = arith.constant 4 : i32
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

func.func @in_range_stores() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %collection = call @make_collection() : () -> !collection
  %key_cache = kvcache.get_key_cache %collection[%c1] : !collection
  %value_cache = kvcache.get_value_cache %collection[%c1] : !collection
  // The append position of sequence 0 (token 3: last slot of its last page).
  %quad = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  kvcache.store %quad, %key_cache[%c0, %c1, %c3, %c0] : !cache, vector<4xf32>
  // The last two elements of the last head, in the null page (the empty
  // sequence 1's token 0).
  %pair = arith.constant dense<[5.0, 6.0]> : vector<2xf32>
  kvcache.store %pair, %value_cache[%c1, %c1, %c0, %c2] : !cache, vector<2xf32>
  %scalar = arith.constant 7.0 : f32
  kvcache.page_store %scalar, %value_cache[%c2, %c1, %c1, %c3] : !cache, f32
  %quad_back = kvcache.load %key_cache[%c0, %c1, %c3, %c0] : !cache -> vector<4xf32>
  vector.print %quad_back : vector<4xf32>
  %pair_back = kvcache.page_load %value_cache[%c2, %c0, %c1, %c2] : !cache -> vector<2xf32>
  vector.print %pair_back : vector<2xf32>
  %scalar_back = kvcache.load %value_cache[%c1, %c1, %c1, %c3] : !cache -> f32
  vector.print %scalar_back : f32
  vector.print str "in_range_stores completed\n"
  return
}

// Token 4 of sequence 0 is in logical page 2; the table has 2 columns.
func.func @past_columns() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %x = arith.constant 1.0 : f32
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_value_cache %collection[%c0] : !collection
  // COLUMNS: kvcache run-time check failed: kvcache.store (kvcache.lookup) at {{.*}}assert-write-mode.mlir:[[@LINE+1]]:3: logical page (token / page_size) 2 is out of range: the number of lookup_table columns is 2
  kvcache.store %x, %cache[%c0, %c0, %c4, %c0] : !cache, f32
  vector.print str "past_columns completed\n"
  return
}
// COLUMNS-NOT: completed

// Page 3 of 3.
func.func @bad_page_store() {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %x = arith.constant dense<1.0> : vector<4xf32>
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // PAGE-STORE: kvcache run-time check failed: kvcache.page_store at {{.*}}assert-write-mode.mlir:[[@LINE+1]]:3: physical page 3 is out of range: num_pages is 3
  kvcache.page_store %x, %cache[%c3, %c0, %c0, %c0] : !cache, vector<4xf32>
  vector.print str "bad_page_store completed\n"
  return
}
// PAGE-STORE-NOT: completed

func.func @main() {
  call @in_range_stores() : () -> ()
  call @past_columns() : () -> ()
  call @bad_page_store() : () -> ()
  return
}
