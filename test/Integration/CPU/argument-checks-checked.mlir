// Checked mode on the CPU (docs/Contract.md, section 5.1): with
// -kvcache-to-cpu=checked=true a function calls its check routine at entry
// and checks the ops whose operands it computes in place, before the op, so
// that a failing call writes nothing. By default a failure prints the
// message to stderr and aborts; in capture mode (kvcache_check_capture(1))
// it is recorded, the call returns at once, kvcache_check_failure() returns
// it, and every later call returns at once until capture mode is set again.
//
// As in argument-checks.mlir, @main calls @check_capture and @check_failure,
// which the RUN lines link to the functions the pass defines.

// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true \
// RUN: | sed -e '/llvm.func @check_/d' -e 's/@check_/@kvcache_check_/g' > %t.mlir
// RUN: mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// RUN: not --crash mlir-runner %t.mlir -e bad_store -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=STORE
// RUN: not --crash mlir-runner %t.mlir -e bad_computed -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 \
// RUN: | FileCheck %s --check-prefix=COMPUTED

// The entry call's routine fails before @store writes.
// STORE: kvcache run-time check failed: store: kvcache.store_ragged at {{.*}}argument-checks-checked.mlir:{{[0-9]+}}:{{[0-9]+}}: 'values'{{.*}} has 2 rows, but row_offsets[2] (the end of the batch's rows) is 3{{$}}
// STORE-NOT: completed
// The in-place check of an op whose offsets @computed computes.
// COMPUTED: kvcache run-time check failed: computed: kvcache.store_ragged at {{.*}}argument-checks-checked.mlir:{{[0-9]+}}:{{[0-9]+}}: row_offsets[2] is 2, below row_offsets[1] = 3: offsets never decrease{{$}}
// COMPUTED-NOT: completed

// The cache of argument-checks.mlir: 4 pages of 4 tokens, 2 layers, one
// head of 4 (256 floats, zero); two sequences with cache_lengths [3, 1] in
// pages [0, 1] and [2, 3].

!blocks = memref<?x2x?x4x1x4xf32>
!coll = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>
!rows = memref<?x1x4xf32>
!lse = memref<?x1xf32>
!i32s = memref<?xi32>
!table = memref<?x?xi32>
!pairs = memref<?x2xi32>

func.func @store(%blocks: !blocks, %lengths: !i32s, %table: !table, %max_seq: i32, %max_cache: i32,
                 %layer: index, %new: !rows, %offsets: !i32s) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache : !blocks, !i32s, !table -> !coll
  %k = kvcache.get_key_cache %c[%layer] : !coll
  kvcache.store_ragged %k, %new, %offsets : !cache, !rows, !i32s
  return
}

func.func @copy(%blocks: !blocks, %lengths: !i32s, %table: !table, %max_seq: i32, %max_cache: i32,
                %pairs: !pairs) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache : !blocks, !i32s, !table -> !coll
  kvcache.copy_pages %c, %pairs : !coll, !pairs
  return
}

func.func @attention(%q: !rows, %blocks: !blocks, %lengths: !i32s, %table: !table, %max_seq: i32,
                     %max_cache: i32, %offsets: !i32s, %out: !rows, %lse: !lse) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache : !blocks, !i32s, !table -> !coll
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !coll
  %v = kvcache.get_value_cache %c[%layer] : !coll
  kvcache.attention_ragged %q, %k, %v, %offsets, %out lse(%lse) {scale = 0.5 : f32}
      : !rows, !cache, !cache, !i32s, !rows, !lse
  return
}

// The offsets come from a call: not in the routine, checked in place.
func.func private @offsets(%which: index) -> !i32s {
  %good = memref.get_global @offsets_023 : memref<3xi32>
  %bad = memref.get_global @offsets_032 : memref<3xi32>
  %zero = arith.constant 0 : index
  %is_good = arith.cmpi eq, %which, %zero : index
  %chosen = arith.select %is_good, %good, %bad : memref<3xi32>
  %offsets = memref.cast %chosen : memref<3xi32> to !i32s
  return %offsets : !i32s
}

func.func @computed(%k: !cache, %new: !rows, %which: index) {
  %offsets = func.call @offsets(%which) : (index) -> !i32s
  kvcache.store_ragged %k, %new, %offsets : !cache, !rows, !i32s
  return
}

memref.global "private" constant @offsets_023 : memref<3xi32> = dense<[0, 2, 3]>
memref.global "private" constant @offsets_032 : memref<3xi32> = dense<[0, 3, 2]>
memref.global "private" constant @lengths_31 : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @lengths_71 : memref<2xi32> = dense<[7, 1]>
memref.global "private" constant @table_23 : memref<2x2xi32> = dense<[[0, 1], [2, 3]]>
memref.global "private" constant @pairs_overlap : memref<2x2xi32> = dense<[[0, 2], [2, 3]]>

// The runtime of checked mode, linked by the RUN lines.
func.func private @check_capture(i32)
func.func private @check_failure() -> !llvm.ptr

llvm.mlir.global internal constant @failure_format("failure: '%s'\0A\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @sum_format("%s: %d\0A\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @blocks_name("sum of blocks\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @out_name("sum of out\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @lse_name("sum of lse\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @completed("completed\00") {addr_space = 0 : i32}
llvm.func @printf(!llvm.ptr, ...) -> i32
llvm.func @puts(!llvm.ptr) -> i32

func.func private @print_failure() {
  %message = call @check_failure() : () -> !llvm.ptr
  %format = llvm.mlir.addressof @failure_format : !llvm.ptr
  %r = llvm.call @printf(%format, %message) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr, !llvm.ptr) -> i32
  return
}

// Prints "<name>: <the sum of `values`, truncated>".
func.func private @print_sum(%name: !llvm.ptr, %values: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %values, %c0 : memref<?xf32>
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %x = memref.load %values[%i] : memref<?xf32>
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %whole = arith.fptosi %sum : f32 to i32
  %format = llvm.mlir.addressof @sum_format : !llvm.ptr
  %r = llvm.call @printf(%format, %name, %whole) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr, !llvm.ptr, i32) -> i32
  return
}

func.func private @print_completed() {
  %text = llvm.mlir.addressof @completed : !llvm.ptr
  %r = llvm.call @puts(%text) : (!llvm.ptr) -> i32
  return
}

// `n` values of `value`.
func.func private @filled(%n: index, %value: f32) -> memref<?xf32> {
  %values = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%value : f32) outs(%values : memref<?xf32>)
  return %values : memref<?xf32>
}

func.func private @as_blocks(%flat: memref<?xf32>) -> !blocks {
  %storage = memref.cast %flat : memref<?xf32> to memref<256xf32>
  %blocks = memref.expand_shape %storage [[0, 1, 2, 3, 4, 5]] output_shape [4, 2, 2, 4, 1, 4]
      : memref<256xf32> into memref<4x2x2x4x1x4xf32>
  %dynamic = memref.cast %blocks : memref<4x2x2x4x1x4xf32> to !blocks
  return %dynamic : !blocks
}

// The 4n values of `flat` as n rows.
func.func private @as_rows(%flat: memref<?xf32>, %n: index) -> !rows {
  %rows = memref.expand_shape %flat [[0, 1, 2]] output_shape [%n, 1, 4]
      : memref<?xf32> into !rows
  return %rows : !rows
}

func.func private @lengths(%long: i1) -> !i32s {
  %good = memref.get_global @lengths_31 : memref<2xi32>
  %bad = memref.get_global @lengths_71 : memref<2xi32>
  %chosen = arith.select %long, %bad, %good : memref<2xi32>
  %lengths = memref.cast %chosen : memref<2xi32> to !i32s
  return %lengths : !i32s
}

func.func private @table() -> !table {
  %table = memref.get_global @table_23 : memref<2x2xi32>
  %dynamic = memref.cast %table : memref<2x2xi32> to !table
  return %dynamic : !table
}

// @store of `n` rows of ones at row_offsets [0, 2, 3] into layer 0, with
// cache_lengths [7, 1] (past the capacity) when `long`.
func.func private @call_store(%flat: memref<?xf32>, %n: index, %long: i1) {
  %blocks = call @as_blocks(%flat) : (memref<?xf32>) -> !blocks
  %lengths = call @lengths(%long) : (i1) -> !i32s
  %table = call @table() : () -> !table
  %offsets_global = memref.get_global @offsets_023 : memref<3xi32>
  %offsets = memref.cast %offsets_global : memref<3xi32> to !i32s
  %one = arith.constant 1.0 : f32
  %c4 = arith.constant 4 : index
  %elements = arith.muli %n, %c4 : index
  %rows_flat = call @filled(%elements, %one) : (index, f32) -> memref<?xf32>
  %new = call @as_rows(%rows_flat, %n) : (memref<?xf32>, index) -> !rows
  %c0 = arith.constant 0 : index
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  call @store(%blocks, %lengths, %table, %i4, %i8, %c0, %new, %offsets)
      : (!blocks, !i32s, !table, i32, i32, index, !rows, !i32s) -> ()
  return
}

func.func @bad_store() {
  %c256 = arith.constant 256 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %false = arith.constant false
  %flat = call @filled(%c256, %zero) : (index, f32) -> memref<?xf32>
  call @call_store(%flat, %c2, %false) : (memref<?xf32>, index, i1) -> ()
  call @print_completed() : () -> ()
  return
}

// @computed of 3 rows of twos into layer 0 with the offsets @offsets
// chooses (0: valid).
func.func private @call_computed(%flat: memref<?xf32>, %which: index) {
  %blocks = call @as_blocks(%flat) : (memref<?xf32>) -> !blocks
  %false = arith.constant false
  %lengths = call @lengths(%false) : (i1) -> !i32s
  %table = call @table() : () -> !table
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %c = kvcache.paged_collection %blocks, %lengths, %table, %i4, %i8 : !blocks, !i32s, !table -> !coll
  %c0 = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%c0] : !coll
  %c3 = arith.constant 3 : index
  %c12 = arith.constant 12 : index
  %two = arith.constant 2.0 : f32
  %rows_flat = call @filled(%c12, %two) : (index, f32) -> memref<?xf32>
  %new = call @as_rows(%rows_flat, %c3) : (memref<?xf32>, index) -> !rows
  call @computed(%k, %new, %which) : (!cache, !rows, index) -> ()
  return
}

func.func @bad_computed() {
  %c256 = arith.constant 256 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %flat = call @filled(%c256, %zero) : (index, f32) -> memref<?xf32>
  call @call_computed(%flat, %c1) : (memref<?xf32>, index) -> ()
  call @print_completed() : () -> ()
  return
}

// CHECK: failure: 'store: kvcache.store_ragged at {{.*}}: sequence 0 needs 9 token positions ({{.*}}7 + 2 rows), but 'cache'{{.*}} holds 8 ({{.*}}kvcache.capacity)'
// CHECK-NEXT: sum of blocks: 0
// While a failure is recorded a valid call does nothing either.
// CHECK-NEXT: failure: 'store: kvcache.store_ragged at {{.*}}: sequence 0 needs 9 token positions
// CHECK-NEXT: sum of blocks: 0
// kvcache_check_capture(1) clears it: the valid call writes its 3 rows.
// CHECK-NEXT: failure: ''
// CHECK-NEXT: sum of blocks: 12
// copy_pages with overlapping pairs copies nothing (page 0 holds ones now).
// CHECK-NEXT: failure: 'copy: kvcache.copy_pages at {{.*}}: {{.*}}page 2 is copied to by pair{{.*}}0{{.*}} and from by pair{{.*}}1{{.*}}: pairs must not overlap'
// CHECK-NEXT: sum of blocks: 12
// attention_ragged with max_cache_length 4 leaves out and lse as they were.
// CHECK-NEXT: failure: 'attention: kvcache.attention_ragged at {{.*}}: max_cache_length of 'key_cache'{{.*}} is 4, but a sequence needs 5 token positions'
// CHECK-NEXT: sum of out: 84
// CHECK-NEXT: sum of lse: 21
// The in-place check of @computed: nothing written.
// CHECK-NEXT: failure: 'computed: kvcache.store_ragged at {{.*}}: row_offsets[2] is 2, below row_offsets[1] = 3: offsets never decrease'
// CHECK-NEXT: sum of blocks: 12
// And the valid @computed writes (twos where @store wrote ones).
// CHECK-NEXT: failure: ''
// CHECK-NEXT: sum of blocks: 24
// CHECK-NEXT: completed
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c12 = arith.constant 12 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %seven = arith.constant 7.0 : f32
  %on = arith.constant 1 : i32
  %true = arith.constant true
  %false = arith.constant false
  %blocks_name = llvm.mlir.addressof @blocks_name : !llvm.ptr
  %out_name = llvm.mlir.addressof @out_name : !llvm.ptr
  %lse_name = llvm.mlir.addressof @lse_name : !llvm.ptr
  %flat = call @filled(%c256, %zero) : (index, f32) -> memref<?xf32>

  call @check_capture(%on) : (i32) -> ()
  call @call_store(%flat, %c3, %true) : (memref<?xf32>, index, i1) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%blocks_name, %flat) : (!llvm.ptr, memref<?xf32>) -> ()
  call @call_store(%flat, %c3, %false) : (memref<?xf32>, index, i1) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%blocks_name, %flat) : (!llvm.ptr, memref<?xf32>) -> ()

  call @check_capture(%on) : (i32) -> ()
  call @call_store(%flat, %c3, %false) : (memref<?xf32>, index, i1) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%blocks_name, %flat) : (!llvm.ptr, memref<?xf32>) -> ()

  call @check_capture(%on) : (i32) -> ()
  %blocks = call @as_blocks(%flat) : (memref<?xf32>) -> !blocks
  %lengths = call @lengths(%false) : (i1) -> !i32s
  %table = call @table() : () -> !table
  %pairs_global = memref.get_global @pairs_overlap : memref<2x2xi32>
  %pairs = memref.cast %pairs_global : memref<2x2xi32> to !pairs
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  call @copy(%blocks, %lengths, %table, %i4, %i8, %pairs) : (!blocks, !i32s, !table, i32, i32, !pairs) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%blocks_name, %flat) : (!llvm.ptr, memref<?xf32>) -> ()

  call @check_capture(%on) : (i32) -> ()
  %q_flat = call @filled(%c12, %one) : (index, f32) -> memref<?xf32>
  %q = call @as_rows(%q_flat, %c3) : (memref<?xf32>, index) -> !rows
  %out_flat = call @filled(%c12, %seven) : (index, f32) -> memref<?xf32>
  %out = call @as_rows(%out_flat, %c3) : (memref<?xf32>, index) -> !rows
  %lse_flat = call @filled(%c3, %seven) : (index, f32) -> memref<?xf32>
  %lse = memref.expand_shape %lse_flat [[0, 1]] output_shape [%c3, 1] : memref<?xf32> into !lse
  %offsets_global = memref.get_global @offsets_023 : memref<3xi32>
  %offsets = memref.cast %offsets_global : memref<3xi32> to !i32s
  call @attention(%q, %blocks, %lengths, %table, %i4, %i4, %offsets, %out, %lse)
      : (!rows, !blocks, !i32s, !table, i32, i32, !i32s, !rows, !lse) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%out_name, %out_flat) : (!llvm.ptr, memref<?xf32>) -> ()
  call @print_sum(%lse_name, %lse_flat) : (!llvm.ptr, memref<?xf32>) -> ()

  call @check_capture(%on) : (i32) -> ()
  call @call_computed(%flat, %c1) : (memref<?xf32>, index) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%blocks_name, %flat) : (!llvm.ptr, memref<?xf32>) -> ()
  call @check_capture(%on) : (i32) -> ()
  call @call_computed(%flat, %c0) : (memref<?xf32>, index) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%blocks_name, %flat) : (!llvm.ptr, memref<?xf32>) -> ()
  call @print_completed() : () -> ()
  return
}
