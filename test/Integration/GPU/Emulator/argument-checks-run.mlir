// The argument checks on the emulated GPU (docs/Contract.md, section 5.1):
// kvcache-to-emulated-gpu runs kvcache-generate-argument-checks first, so
// the check routines are host code next to the launches. @main calls the
// routines of @store and @attention (status and message per call), then, in
// capture mode, calls the functions themselves with bad arguments: nothing
// is launched, the cache and the outputs stay as they were; a valid call
// then writes. @bad_store aborts with the message.
//
// As in test/Integration/CPU/argument-checks.mlir, @main calls @check_*,
// which the RUN lines link to the functions the pass defines.

// RUN: kvcache-opt %s -kvcache-to-emulated-gpu | FileCheck %s --check-prefix=ROUTINES
// RUN: kvcache-opt %s -kvcache-to-ptx | FileCheck %s --check-prefix=ROUTINES
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu=checked=true \
// RUN: | sed -e '/llvm.func @check_/d' -e 's/@check_/@kvcache_check_/g' > %t.mlir
// RUN: %emu_run %t.mlir -e main | FileCheck %s
// RUN: not --crash %emu_run %t.mlir -e bad_store 2>&1 | FileCheck %s --check-prefix=ABORT

// Without checked=true the routines are there, host functions, in both GPU
// pipelines.
// ROUTINES-DAG: llvm.func @kvcache_check_store(
// ROUTINES-DAG: llvm.func @kvcache_check_attention(
// ROUTINES-NOT: @kvcache_check_capture

// ABORT: kvcache run-time check failed: store: kvcache.store_ragged at {{.*}}argument-checks-run.mlir:{{[0-9]+}}:{{[0-9]+}}: 'values'{{.*}} has 2 rows, but row_offsets[2] (the end of the batch's rows) is 3{{$}}
// ABORT-NOT: completed

// A paged f32 cache of 4 pages of 4 tokens, 2 layers, one head of 4 (256
// floats); two sequences with cache_lengths [3, 1] in pages [0, 1] and
// [2, 3]; max_seq_length 4, max_cache_length 8.

!blocks = memref<?x2x?x4x1x4xf32>
!coll = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>
!rows = memref<?x1x4xf32>
!i32s = memref<?xi32>
!table = memref<?x?xi32>

func.func @store(%blocks: !blocks, %lengths: !i32s, %table: !table, %max_seq: i32, %max_cache: i32,
                 %new: !rows, %offsets: !i32s) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache : !blocks, !i32s, !table -> !coll
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !coll
  kvcache.store_ragged %k, %new, %offsets : !cache, !rows, !i32s
  return
}

func.func @attention(%q: !rows, %blocks: !blocks, %lengths: !i32s, %table: !table, %max_seq: i32,
                     %max_cache: i32, %offsets: !i32s, %out: !rows) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache : !blocks, !i32s, !table -> !coll
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !coll
  %v = kvcache.get_value_cache %c[%layer] : !coll
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.5 : f32}
      : !rows, !cache, !cache, !i32s, !rows
  return
}

// The routines and the runtime of checked mode, linked by the RUN lines.
func.func private @check_store(!blocks, !i32s, !table, i32, i32, !rows, !i32s, memref<?xi8>) -> i32
func.func private @check_attention(!rows, !blocks, !i32s, !table, i32, i32, !i32s, !rows, memref<?xi8>) -> i32
func.func private @check_capture(i32)
func.func private @check_failure() -> !llvm.ptr

memref.global "private" constant @offsets_023 : memref<3xi32> = dense<[0, 2, 3]>
memref.global "private" constant @lengths_31 : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @lengths_71 : memref<2xi32> = dense<[7, 1]>
memref.global "private" constant @table_good : memref<2x2xi32> = dense<[[0, 1], [2, 3]]>
memref.global "private" constant @table_bad : memref<2x2xi32> = dense<[[0, 4], [2, 3]]>

llvm.mlir.global internal constant @status_format("status %d: %s\0A\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @failure_format("failure: '%s'\0A\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @sum_format("sum: %d\0A\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @completed("completed\00") {addr_space = 0 : i32}
llvm.func @printf(!llvm.ptr, ...) -> i32
llvm.func @puts(!llvm.ptr) -> i32

// The arguments of one call: zero blocks over `flat` (256 floats), `n`
// rows of ones, cache_lengths [7, 1] when `long`, the bad table when
// `bad_table`, row_offsets [0, 2, 3].
func.func private @blocks(%flat: memref<?xf32>) -> !blocks {
  %storage = memref.cast %flat : memref<?xf32> to memref<256xf32>
  %blocks = memref.expand_shape %storage [[0, 1, 2, 3, 4, 5]] output_shape [4, 2, 2, 4, 1, 4]
      : memref<256xf32> into memref<4x2x2x4x1x4xf32>
  %dynamic = memref.cast %blocks : memref<4x2x2x4x1x4xf32> to !blocks
  return %dynamic : !blocks
}

func.func private @filled(%n: index, %value: f32) -> memref<?xf32> {
  %values = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%value : f32) outs(%values : memref<?xf32>)
  return %values : memref<?xf32>
}

func.func private @rows(%flat: memref<?xf32>) -> !rows {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %size = memref.dim %flat, %c0 : memref<?xf32>
  %n = arith.divui %size, %c4 : index
  %rows = memref.expand_shape %flat [[0, 1, 2]] output_shape [%n, 1, 4] : memref<?xf32> into !rows
  return %rows : !rows
}

func.func private @lengths(%long: i1) -> !i32s {
  %good = memref.get_global @lengths_31 : memref<2xi32>
  %bad = memref.get_global @lengths_71 : memref<2xi32>
  %chosen = arith.select %long, %bad, %good : memref<2xi32>
  %lengths = memref.cast %chosen : memref<2xi32> to !i32s
  return %lengths : !i32s
}

func.func private @table(%bad_table: i1) -> !table {
  %good = memref.get_global @table_good : memref<2x2xi32>
  %bad = memref.get_global @table_bad : memref<2x2xi32>
  %chosen = arith.select %bad_table, %bad, %good : memref<2x2xi32>
  %table = memref.cast %chosen : memref<2x2xi32> to !table
  return %table : !table
}

func.func private @offsets() -> !i32s {
  %global = memref.get_global @offsets_023 : memref<3xi32>
  %offsets = memref.cast %global : memref<3xi32> to !i32s
  return %offsets : !i32s
}

func.func private @report(%status: i32, %message: memref<?xi8>) {
  %base = memref.extract_aligned_pointer_as_index %message : memref<?xi8> -> index
  %base64 = arith.index_cast %base : index to i64
  %text = llvm.inttoptr %base64 : i64 to !llvm.ptr
  %format = llvm.mlir.addressof @status_format : !llvm.ptr
  %r = llvm.call @printf(%format, %status, %text) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr, i32, !llvm.ptr) -> i32
  return
}

func.func private @message() -> memref<?xi8> {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  %message = memref.alloc(%c1024) : memref<?xi8>
  %nul = arith.constant 0 : i8
  memref.store %nul, %message[%c0] : memref<?xi8>
  return %message : memref<?xi8>
}

// The routine of @store on `n` rows.
func.func private @run_store(%n: index, %long: i1, %bad_table: i1) {
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %flat = call @filled(%c256, %zero) : (index, f32) -> memref<?xf32>
  %blocks = call @blocks(%flat) : (memref<?xf32>) -> !blocks
  %elements = arith.muli %n, %c4 : index
  %new_flat = call @filled(%elements, %one) : (index, f32) -> memref<?xf32>
  %new = call @rows(%new_flat) : (memref<?xf32>) -> !rows
  %lengths = call @lengths(%long) : (i1) -> !i32s
  %table = call @table(%bad_table) : (i1) -> !table
  %offsets = call @offsets() : () -> !i32s
  %message = call @message() : () -> memref<?xi8>
  %status = call @check_store(%blocks, %lengths, %table, %i4, %i8, %new, %offsets, %message)
      : (!blocks, !i32s, !table, i32, i32, !rows, !i32s, memref<?xi8>) -> i32
  call @report(%status, %message) : (i32, memref<?xi8>) -> ()
  return
}

// The routine of @attention on `n` rows of q, max_cache_length `max_cache`.
func.func private @run_attention(%n: index, %max_cache: i32, %bad_table: i1) {
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c12 = arith.constant 12 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %i4 = arith.constant 4 : i32
  %false = arith.constant false
  %flat = call @filled(%c256, %zero) : (index, f32) -> memref<?xf32>
  %blocks = call @blocks(%flat) : (memref<?xf32>) -> !blocks
  %elements = arith.muli %n, %c4 : index
  %q_flat = call @filled(%elements, %one) : (index, f32) -> memref<?xf32>
  %q = call @rows(%q_flat) : (memref<?xf32>) -> !rows
  %out_flat = call @filled(%c12, %one) : (index, f32) -> memref<?xf32>
  %out = call @rows(%out_flat) : (memref<?xf32>) -> !rows
  %lengths = call @lengths(%false) : (i1) -> !i32s
  %table = call @table(%bad_table) : (i1) -> !table
  %offsets = call @offsets() : () -> !i32s
  %message = call @message() : () -> memref<?xi8>
  %status = call @check_attention(%q, %blocks, %lengths, %table, %i4, %max_cache, %offsets, %out, %message)
      : (!rows, !blocks, !i32s, !table, i32, i32, !i32s, !rows, memref<?xi8>) -> i32
  call @report(%status, %message) : (i32, memref<?xi8>) -> ()
  return
}

func.func private @print_failure() {
  %message = call @check_failure() : () -> !llvm.ptr
  %format = llvm.mlir.addressof @failure_format : !llvm.ptr
  %r = llvm.call @printf(%format, %message) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr, !llvm.ptr) -> i32
  return
}

func.func private @print_sum(%values: memref<?xf32>) {
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
  %r = llvm.call @printf(%format, %whole) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr, i32) -> i32
  return
}

func.func private @print_completed() {
  %text = llvm.mlir.addressof @completed : !llvm.ptr
  %r = llvm.call @puts(%text) : (!llvm.ptr) -> i32
  return
}

// @store of `n` rows of ones into `flat`.
func.func private @call_store(%flat: memref<?xf32>, %n: index, %long: i1) {
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %false = arith.constant false
  %blocks = call @blocks(%flat) : (memref<?xf32>) -> !blocks
  %elements = arith.muli %n, %c4 : index
  %new_flat = call @filled(%elements, %one) : (index, f32) -> memref<?xf32>
  %new = call @rows(%new_flat) : (memref<?xf32>) -> !rows
  %lengths = call @lengths(%long) : (i1) -> !i32s
  %table = call @table(%false) : (i1) -> !table
  %offsets = call @offsets() : () -> !i32s
  call @store(%blocks, %lengths, %table, %i4, %i8, %new, %offsets)
      : (!blocks, !i32s, !table, i32, i32, !rows, !i32s) -> ()
  return
}

func.func @bad_store() {
  %c2 = arith.constant 2 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %false = arith.constant false
  %flat = call @filled(%c256, %zero) : (index, f32) -> memref<?xf32>
  call @call_store(%flat, %c2, %false) : (memref<?xf32>, index, i1) -> ()
  call @print_completed() : () -> ()
  return
}

// The routines: valid, short values, past the capacity, a page at
// num_pages; valid, short q, max_cache_length too small, a page at
// num_pages.
// CHECK: status 0: {{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}argument-checks-run.mlir:{{[0-9]+}}:{{[0-9]+}}: 'values'{{.*}} has 2 rows, but row_offsets[2] (the end of the batch's rows) is 3{{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: sequence 0 needs 9 token positions ({{.*}}7 + 2 rows), but 'cache'{{.*}} holds 8 ({{.*}}kvcache.capacity){{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: token 4 of sequence 0 is on page 4 {{.*}}'cache'{{.*}}, but num_pages is 4{{$}}
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}argument-checks-run.mlir:{{[0-9]+}}:{{[0-9]+}}: 'q'{{.*}} has 2 rows, but row_offsets[2] (the end of the batch's rows) is 3{{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: max_cache_length of 'key_cache'{{.*}} is 4, but a sequence needs 5 token positions{{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: token 4 of sequence 0 is on page 4 {{.*}}'key_cache'{{.*}}, but num_pages is 4{{$}}
// Capture mode: a bad @store launches nothing; a bad @attention leaves out
// (12 ones) as it was; after kvcache_check_capture(1) a valid @store writes
// its 3 rows.
// CHECK-NEXT: failure: 'store: kvcache.store_ragged at {{.*}}: sequence 0 needs 9 token positions {{.*}}'
// CHECK-NEXT: sum: 0
// CHECK-NEXT: failure: 'attention: kvcache.attention_ragged at {{.*}}: max_cache_length of 'key_cache'{{.*}} is 4, but a sequence needs 5 token positions'
// CHECK-NEXT: sum: 12
// CHECK-NEXT: failure: ''
// CHECK-NEXT: sum: 12
// CHECK-NEXT: completed
func.func @main() {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c12 = arith.constant 12 : index
  %c256 = arith.constant 256 : index
  %true = arith.constant true
  %false = arith.constant false
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %on = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  call @run_store(%c3, %false, %false) : (index, i1, i1) -> ()
  call @run_store(%c2, %false, %false) : (index, i1, i1) -> ()
  call @run_store(%c3, %true, %false) : (index, i1, i1) -> ()
  call @run_store(%c3, %false, %true) : (index, i1, i1) -> ()
  call @run_attention(%c3, %i8, %false) : (index, i32, i1) -> ()
  call @run_attention(%c2, %i8, %false) : (index, i32, i1) -> ()
  call @run_attention(%c3, %i4, %false) : (index, i32, i1) -> ()
  call @run_attention(%c3, %i8, %true) : (index, i32, i1) -> ()

  %flat = call @filled(%c256, %zero) : (index, f32) -> memref<?xf32>
  call @check_capture(%on) : (i32) -> ()
  call @call_store(%flat, %c3, %true) : (memref<?xf32>, index, i1) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%flat) : (memref<?xf32>) -> ()

  call @check_capture(%on) : (i32) -> ()
  %blocks = call @blocks(%flat) : (memref<?xf32>) -> !blocks
  %q_flat = call @filled(%c12, %one) : (index, f32) -> memref<?xf32>
  %q = call @rows(%q_flat) : (memref<?xf32>) -> !rows
  %out_flat = call @filled(%c12, %one) : (index, f32) -> memref<?xf32>
  %out = call @rows(%out_flat) : (memref<?xf32>) -> !rows
  %lengths = call @lengths(%false) : (i1) -> !i32s
  %table = call @table(%false) : (i1) -> !table
  %offsets = call @offsets() : () -> !i32s
  call @attention(%q, %blocks, %lengths, %table, %i4, %i4, %offsets, %out)
      : (!rows, !blocks, !i32s, !table, i32, i32, !i32s, !rows) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%out_flat) : (memref<?xf32>) -> ()

  call @check_capture(%on) : (i32) -> ()
  call @call_store(%flat, %c3, %false) : (memref<?xf32>, index, i1) -> ()
  call @print_failure() : () -> ()
  call @print_sum(%flat) : (memref<?xf32>) -> ()
  call @print_completed() : () -> ()
  return
}
