// The out-of-range write matrix (docs/Contract.md, section 5): every
// writing op
// (kvcache.store, kvcache.page_store, kvcache.store_ragged,
// kvcache.copy_pages) with every fault that applies to it, one entry function
// per (op, fault), in two modes:
//   AWM:     the cache has assert_write_mode = 1 (this file with the cache
//            types rewritten by sed), lowered by plain -kvcache-to-cpu;
//   CHECKED: the plain cache lowered by -kvcache-to-cpu=checked=true.
// Each bad program stops (abort, so not --crash) with exactly one message on
// stderr naming the op the user wrote, its location, the value and the
// bound; nothing after the bad write runs. The same functions on the plain
// cache without checked=true contain no checks at all (no dprintf, no abort,
// no message) and run to completion: every bad access stays inside the
// allocations (4 pages of storage under a 3-page `blocks`, a 3-row lookup
// table and 3 cache lengths under 2-row views).
//
//   fault                                 store  page_store  store_ragged  copy_pages
//   lookup_table entry >= num_pages         x                   x
//   token past the lookup_table columns     x                   x
//   batch past the lookup_table rows        x                   x
//   head >= num_heads (run-time index)      x        x
//   element range past head_size            x        x
//   misaligned vector (element % W != 0)    x        x
//   page operand >= num_pages                        x
//   slot >= page_size                                x
//   pair with dst >= num_pages                                               x
//   pair with src >= num_pages                                               x (*)
// (*) Only under CHECKED: on an assert_write_mode = 1 cache the lowering
// reads the source page with a page_load, and reads are not checked there
// (kernel-checked-reads.mlir runs such a copy to completion).
//
// This file holds the functions and the expected messages of the whole
// matrix, and the RUN lines of kvcache.store and of the unchecked code. The
// RUN lines of the other rows are in checked-write-matrix-page-store.test and
// checked-write-matrix-kernel-ops.test, and the reads of an
// assert_write_mode = 1 cache are in checked-write-matrix-reads.mlir
// (separate tests, which lit runs in parallel). Each row is lowered alone
// (symbol-privatize and symbol-dce keep its entry functions), so that each
// mlir-runner compiles a small module.

// DEFINE: %{entries} = store_bad_page,store_past_columns,store_bad_batch,store_bad_head,store_bad_element,store_misaligned
// DEFINE: %{only} = --symbol-privatize=exclude=%{entries} --symbol-dce
// DEFINE: %{run} = mlir-runner -entry-point-result=void -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils
// DEFINE: %{crash} = env LLVM_DISABLE_SYMBOLIZATION=1 not --crash %{run}
// DEFINE: %{check} = FileCheck %s --implicit-check-not=completed --implicit-check-not="check failed"

// RUN: rm -rf %t && mkdir -p %t
// RUN: sed -e 's/page_size = 2>/page_size = 2, assert_write_mode = 1>/' %s > %t/checked-write-matrix.mlir
// RUN: kvcache-opt %t/checked-write-matrix.mlir %{only} -kvcache-to-cpu -o %t/awm.mlir
// RUN: kvcache-opt %s %{only} -kvcache-to-cpu=checked=true -o %t/checked.mlir

// The plain cache without checked=true: no checks anywhere, and every bad
// access of the matrix runs to completion.
// RUN: kvcache-opt %s -kvcache-to-cpu -o %t/plain.mlir
// RUN: FileCheck %s --check-prefix=PLAIN < %t/plain.mlir
// PLAIN-NOT: {{dprintf|abort|check failed}}
// PLAIN: llvm.func @main(
// PLAIN-NOT: {{dprintf|abort|check failed}}
// RUN: %{run} %t/plain.mlir -e main | FileCheck %s --check-prefix=UNCHECKED
// UNCHECKED: store_bad_page completed
// UNCHECKED-NEXT: store_past_columns completed
// UNCHECKED-NEXT: store_bad_batch completed
// UNCHECKED-NEXT: store_bad_head completed
// UNCHECKED-NEXT: store_bad_element completed
// UNCHECKED-NEXT: store_misaligned completed
// UNCHECKED-NEXT: page_store_bad_page completed
// UNCHECKED-NEXT: page_store_bad_slot completed
// UNCHECKED-NEXT: page_store_bad_head completed
// UNCHECKED-NEXT: page_store_bad_element completed
// UNCHECKED-NEXT: page_store_misaligned completed
// UNCHECKED-NEXT: store_ragged_bad_page completed
// UNCHECKED-NEXT: store_ragged_past_columns completed
// UNCHECKED-NEXT: store_ragged_bad_batch completed
// UNCHECKED-NEXT: copy_pages_bad_dst completed
// UNCHECKED-NEXT: copy_pages_bad_src completed

// kvcache.store, both modes.
// RUN: %{crash} %t/awm.mlir -e store_bad_page 2>&1 | %{check} --check-prefix=S-PAGE
// RUN: %{crash} %t/checked.mlir -e store_bad_page 2>&1 | %{check} --check-prefix=S-PAGE
// RUN: %{crash} %t/awm.mlir -e store_past_columns 2>&1 | %{check} --check-prefix=S-COLUMNS
// RUN: %{crash} %t/checked.mlir -e store_past_columns 2>&1 | %{check} --check-prefix=S-COLUMNS
// RUN: %{crash} %t/awm.mlir -e store_bad_batch 2>&1 | %{check} --check-prefix=S-BATCH
// RUN: %{crash} %t/checked.mlir -e store_bad_batch 2>&1 | %{check} --check-prefix=S-BATCH
// RUN: %{crash} %t/awm.mlir -e store_bad_head 2>&1 | %{check} --check-prefix=S-HEAD
// RUN: %{crash} %t/checked.mlir -e store_bad_head 2>&1 | %{check} --check-prefix=S-HEAD
// RUN: %{crash} %t/awm.mlir -e store_bad_element 2>&1 | %{check} --check-prefix=S-ELEMENT
// RUN: %{crash} %t/checked.mlir -e store_bad_element 2>&1 | %{check} --check-prefix=S-ELEMENT
// RUN: %{crash} %t/awm.mlir -e store_misaligned 2>&1 | %{check} --check-prefix=S-ALIGN
// RUN: %{crash} %t/checked.mlir -e store_misaligned 2>&1 | %{check} --check-prefix=S-ALIGN

!storage = memref<4x2x2x2x2x4xf32>
!blocks = memref<?x2x?x2x2x4xf32>
!collection = !kvcache.paged_collection<f32, num_heads = 2, head_size = 4, page_size = 2>
!cache = !kvcache.paged_cache<f32, num_heads = 2, head_size = 4, page_size = 2>
!rows = memref<?x2x4xf32>

// 3 pages (of a storage of 4), 2 layers, 2 tokens per page, 2 heads of 4.
// The collection sees the first 2 rows of each metadata global: sequence 0
// (3 tokens) in pages 0, 1; sequence 1 (1 token) with the bad entry 3
// (= num_pages) in its logical page 0.
memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[3, 1, 0]>
memref.global "private" constant @lookup_table : memref<3x2xi32> = dense<[[0, 1], [3, 2], [0, 0]]>
// Indices the verifier cannot see.
memref.global "private" constant @one : memref<index> = dense<1>
memref.global "private" constant @two : memref<index> = dense<2>
memref.global "private" constant @four : memref<index> = dense<4>
// Ragged row offsets and copy pairs.
memref.global "private" constant @offsets_sequence_1 : memref<3xi32> = dense<[0, 0, 1]>
memref.global "private" constant @offsets_sequence_0 : memref<3xi32> = dense<[0, 2, 2]>
memref.global "private" constant @offsets_sequence_2 : memref<4xi32> = dense<[0, 0, 0, 1]>
memref.global "private" constant @bad_dst : memref<2x2xi32> = dense<[[0, 2], [1, 3]]>
memref.global "private" constant @bad_src : memref<2x2xi32> = dense<[[0, 2], [3, 1]]>

func.func @make_collection() -> !collection {
  %max_seq_length = arith.constant 2 : i32
  %max_cache_length = arith.constant 4 : i32
  %storage = memref.alloc() : !storage
  %pages = memref.subview %storage[0, 0, 0, 0, 0, 0] [3, 2, 2, 2, 2, 4] [1, 1, 1, 1, 1, 1]
      : !storage to memref<3x2x2x2x2x4xf32, strided<[64, 32, 16, 8, 4, 1]>>
  %blocks = memref.cast %pages : memref<3x2x2x2x2x4xf32, strided<[64, 32, 16, 8, 4, 1]>> to !blocks
  %lengths_global = memref.get_global @cache_lengths : memref<3xi32>
  %lengths_view = memref.subview %lengths_global[0] [2] [1] : memref<3xi32> to memref<2xi32, strided<[1]>>
  %cache_lengths = memref.cast %lengths_view : memref<2xi32, strided<[1]>> to memref<?xi32>
  %table_global = memref.get_global @lookup_table : memref<3x2xi32>
  %table_view = memref.subview %table_global[0, 0] [2, 2] [1, 1] : memref<3x2xi32> to memref<2x2xi32, strided<[2, 1]>>
  %lookup_table = memref.cast %table_view : memref<2x2xi32, strided<[2, 1]>> to memref<?x?xi32>
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection
  return %collection : !collection
}

func.func @runtime_index(%which: memref<index>) -> index {
  %value = memref.load %which[] : memref<index>
  return %value : index
}

//===----------------------------------------------------------------------===//
// kvcache.store
//===----------------------------------------------------------------------===//

// Sequence 1, token 0: logical page 0 holds the bad entry 3.
func.func @store_bad_page() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %x = arith.constant dense<1.0> : vector<2xf32>
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c1] : !collection
  // S-PAGE: kvcache run-time check failed: kvcache.store (kvcache.lookup) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: physical page (lookup_table entry) 3 is out of range: num_pages is 3{{$}}
  kvcache.store %x, %cache[%c1, %c1, %c0, %c2] : !cache, vector<2xf32>
  vector.print str "store_bad_page completed\n"
  return
}

// Sequence 0, token 4: logical page 2 of 2 columns.
func.func @store_past_columns() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %x = arith.constant 1.0 : f32
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_value_cache %collection[%c0] : !collection
  // S-COLUMNS: kvcache run-time check failed: kvcache.store (kvcache.lookup) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: logical page (token / page_size) 2 is out of range: the number of lookup_table columns is 2{{$}}
  kvcache.store %x, %cache[%c0, %c0, %c4, %c0] : !cache, f32
  vector.print str "store_past_columns completed\n"
  return
}

// Sequence 2 of a lookup table of 2 rows.
func.func @store_bad_batch() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %x = arith.constant dense<1.0> : vector<4xf32>
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // S-BATCH: kvcache run-time check failed: kvcache.store (kvcache.lookup) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: batch index 2 is out of range: the number of lookup_table rows is 2{{$}}
  kvcache.store %x, %cache[%c2, %c0, %c0, %c0] : !cache, vector<4xf32>
  vector.print str "store_bad_batch completed\n"
  return
}

// Head 2 of 2.
func.func @store_bad_head() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant dense<1.0> : vector<2xf32>
  %two = memref.get_global @two : memref<index>
  %head = call @runtime_index(%two) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c1] : !collection
  // S-HEAD: kvcache run-time check failed: kvcache.store (kvcache.page_store) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: head index 2 is out of range: num_heads is 2{{$}}
  kvcache.store %x, %cache[%c0, %head, %c1, %c0] : !cache, vector<2xf32>
  vector.print str "store_bad_head completed\n"
  return
}

// Elements 4 .. 5 of a head of 4.
func.func @store_bad_element() {
  %c0 = arith.constant 0 : index
  %x = arith.constant dense<1.0> : vector<2xf32>
  %four = memref.get_global @four : memref<index>
  %element = call @runtime_index(%four) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_value_cache %collection[%c0] : !collection
  // S-ELEMENT: kvcache run-time check failed: kvcache.store (kvcache.page_store) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: first element index 4 is out of range: head_size - vector width + 1 is 3{{$}}
  kvcache.store %x, %cache[%c0, %c0, %c0, %element] : !cache, vector<2xf32>
  vector.print str "store_bad_element completed\n"
  return
}

// A vector<2> at element 1.
func.func @store_misaligned() {
  %c0 = arith.constant 0 : index
  %x = arith.constant dense<1.0> : vector<2xf32>
  %one = memref.get_global @one : memref<index>
  %element = call @runtime_index(%one) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // S-ALIGN: kvcache run-time check failed: kvcache.store (kvcache.page_store) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: first element index 1 is not a multiple of 2{{$}}
  kvcache.store %x, %cache[%c0, %c0, %c0, %element] : !cache, vector<2xf32>
  vector.print str "store_misaligned completed\n"
  return
}

//===----------------------------------------------------------------------===//
// kvcache.page_store (RUN lines in checked-write-matrix-page-store.test)
//===----------------------------------------------------------------------===//

// Page 3 of 3.
func.func @page_store_bad_page() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %x = arith.constant dense<1.0> : vector<4xf32>
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_value_cache %collection[%c1] : !collection
  // PS-PAGE: kvcache run-time check failed: kvcache.page_store at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: physical page 3 is out of range: num_pages is 3{{$}}
  kvcache.page_store %x, %cache[%c3, %c1, %c1, %c0] : !cache, vector<4xf32>
  vector.print str "page_store_bad_page completed\n"
  return
}

// Slot 2 of a page of 2.
func.func @page_store_bad_slot() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant 1.0 : f32
  %two = memref.get_global @two : memref<index>
  %slot = call @runtime_index(%two) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // PS-SLOT: kvcache run-time check failed: kvcache.page_store at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: slot 2 is out of range: page_size is 2{{$}}
  kvcache.page_store %x, %cache[%c1, %slot, %c0, %c0] : !cache, f32
  vector.print str "page_store_bad_slot completed\n"
  return
}

// Head 2 of 2.
func.func @page_store_bad_head() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %x = arith.constant dense<1.0> : vector<4xf32>
  %two = memref.get_global @two : memref<index>
  %head = call @runtime_index(%two) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // PS-HEAD: kvcache run-time check failed: kvcache.page_store at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: head index 2 is out of range: num_heads is 2{{$}}
  kvcache.page_store %x, %cache[%c2, %c0, %head, %c0] : !cache, vector<4xf32>
  vector.print str "page_store_bad_head completed\n"
  return
}

// Elements 4 .. 5 of a head of 4.
func.func @page_store_bad_element() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant dense<1.0> : vector<2xf32>
  %four = memref.get_global @four : memref<index>
  %element = call @runtime_index(%four) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_value_cache %collection[%c1] : !collection
  // PS-ELEMENT: kvcache run-time check failed: kvcache.page_store at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: first element index 4 is out of range: head_size - vector width + 1 is 3{{$}}
  kvcache.page_store %x, %cache[%c0, %c1, %c0, %element] : !cache, vector<2xf32>
  vector.print str "page_store_bad_element completed\n"
  return
}

// A vector<2> at element 1.
func.func @page_store_misaligned() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant dense<1.0> : vector<2xf32>
  %one = memref.get_global @one : memref<index>
  %element = call @runtime_index(%one) : (memref<index>) -> index
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c1] : !collection
  // PS-ALIGN: kvcache run-time check failed: kvcache.page_store at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: first element index 1 is not a multiple of 2{{$}}
  kvcache.page_store %x, %cache[%c1, %c0, %c1, %element] : !cache, vector<2xf32>
  vector.print str "page_store_misaligned completed\n"
  return
}

//===----------------------------------------------------------------------===//
// kvcache.store_ragged and kvcache.copy_pages (RUN lines in
// checked-write-matrix-kernel-ops.test)
//===----------------------------------------------------------------------===//

func.func @rows(%n: index) -> !rows {
  %new = memref.alloc(%n) : !rows
  return %new : !rows
}

// One new row for sequence 1, at token 1: logical page 0 holds the bad
// entry 3.
func.func @store_ragged_bad_page() {
  %c1 = arith.constant 1 : index
  %global = memref.get_global @offsets_sequence_1 : memref<3xi32>
  %offsets = memref.cast %global : memref<3xi32> to memref<?xi32>
  %rows = call @rows(%c1) : (index) -> !rows
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c1] : !collection
  // SR-PAGE-ARGS: kvcache run-time check failed: store_ragged_bad_page: kvcache.store_ragged at {{.*}}/checked-write-matrix.mlir:[[@LINE+2]]:3: token 1 of sequence 1 is on page 3 (lookup_table of 'cache'), but num_pages is 3{{$}}
  // SR-PAGE: kvcache run-time check failed: kvcache.store_ragged (kvcache.lookup) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: physical page (lookup_table entry) 3 is out of range: num_pages is 3{{$}}
  kvcache.store_ragged %cache, %rows, %offsets : !cache, !rows, memref<?xi32>
  vector.print str "store_ragged_bad_page completed\n"
  return
}

// Two new rows for sequence 0, at tokens 3 and 4: token 4 is in logical
// page 2 of 2 columns.
func.func @store_ragged_past_columns() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %global = memref.get_global @offsets_sequence_0 : memref<3xi32>
  %offsets = memref.cast %global : memref<3xi32> to memref<?xi32>
  %rows = call @rows(%c2) : (index) -> !rows
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_value_cache %collection[%c0] : !collection
  // SR-COLUMNS-ARGS: kvcache run-time check failed: store_ragged_past_columns: kvcache.store_ragged at {{.*}}/checked-write-matrix.mlir:[[@LINE+2]]:3: sequence 0 needs 5 token positions (cache_lengths[0] = 3 + 2 rows), but 'cache' holds 4 (lookup_table columns x page_size: kvcache.capacity){{$}}
  // SR-COLUMNS: kvcache run-time check failed: kvcache.store_ragged (kvcache.lookup) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: logical page (token / page_size) 2 is out of range: the number of lookup_table columns is 2{{$}}
  kvcache.store_ragged %cache, %rows, %offsets : !cache, !rows, memref<?xi32>
  vector.print str "store_ragged_past_columns completed\n"
  return
}

// One new row for sequence 2 of 2. assert_write_mode checks the lookup of
// the write; checked=true stops earlier, at the read of cache_lengths[2].
func.func @store_ragged_bad_batch() {
  %c1 = arith.constant 1 : index
  %global = memref.get_global @offsets_sequence_2 : memref<4xi32>
  %offsets = memref.cast %global : memref<4xi32> to memref<?xi32>
  %rows = call @rows(%c1) : (index) -> !rows
  %collection = call @make_collection() : () -> !collection
  %cache = kvcache.get_key_cache %collection[%c1] : !collection
  // SR-BATCH-ARGS: kvcache run-time check failed: store_ragged_bad_batch: kvcache.store_ragged at {{.*}}/checked-write-matrix.mlir:[[@LINE+2]]:3: 'row_offsets' describes 3 sequences, but 'cache' has 2 (the rows of cache_lengths and lookup_table: kvcache.num_sequences){{$}}
  // SR-BATCH: kvcache run-time check failed: kvcache.store_ragged (kvcache.cache_length) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: batch index 2 is out of range: the size of cache_lengths is 2{{$}}
  kvcache.store_ragged %cache, %rows, %offsets : !cache, !rows, memref<?xi32>
  vector.print str "store_ragged_bad_batch completed\n"
  return
}

// Pairs (0, 2), (1, 3): the second destination is page 3 of 3.
func.func @copy_pages_bad_dst() {
  %global = memref.get_global @bad_dst : memref<2x2xi32>
  %pairs = memref.cast %global : memref<2x2xi32> to memref<?x2xi32>
  %collection = call @make_collection() : () -> !collection
  // CP-DST-ARGS: kvcache run-time check failed: copy_pages_bad_dst: kvcache.copy_pages at {{.*}}/checked-write-matrix.mlir:[[@LINE+2]]:3: 'pairs': pair 1 copies to page 3, but 'collection' has 3 pages (num_pages){{$}}
  // CP-DST: kvcache run-time check failed: kvcache.copy_pages (kvcache.page_store) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: physical page 3 is out of range: num_pages is 3{{$}}
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  vector.print str "copy_pages_bad_dst completed\n"
  return
}

// Pairs (0, 2), (3, 1): the second source is page 3 of 3.
func.func @copy_pages_bad_src() {
  %global = memref.get_global @bad_src : memref<2x2xi32>
  %pairs = memref.cast %global : memref<2x2xi32> to memref<?x2xi32>
  %collection = call @make_collection() : () -> !collection
  // CP-SRC-ARGS: kvcache run-time check failed: copy_pages_bad_src: kvcache.copy_pages at {{.*}}/checked-write-matrix.mlir:[[@LINE+2]]:3: 'pairs': pair 1 copies from page 3, but 'collection' has 3 pages (num_pages){{$}}
  // CP-SRC: kvcache run-time check failed: kvcache.copy_pages (kvcache.page_load) at {{.*}}/checked-write-matrix.mlir:[[@LINE+1]]:3: physical page 3 is out of range: num_pages is 3{{$}}
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  vector.print str "copy_pages_bad_src completed\n"
  return
}

func.func @main() {
  call @store_bad_page() : () -> ()
  call @store_past_columns() : () -> ()
  call @store_bad_batch() : () -> ()
  call @store_bad_head() : () -> ()
  call @store_bad_element() : () -> ()
  call @store_misaligned() : () -> ()
  call @page_store_bad_page() : () -> ()
  call @page_store_bad_slot() : () -> ()
  call @page_store_bad_head() : () -> ()
  call @page_store_bad_element() : () -> ()
  call @page_store_misaligned() : () -> ()
  call @store_ragged_bad_page() : () -> ()
  call @store_ragged_past_columns() : () -> ()
  call @store_ragged_bad_batch() : () -> ()
  call @copy_pages_bad_dst() : () -> ()
  call @copy_pages_bad_src() : () -> ()
  return
}

