// The check routines of kvcache-generate-argument-checks on the CPU
// (docs/Contract.md, section 5.1): @main calls the routine of each public
// function with a kernel op once with valid arguments (status 0) and once
// per rule with ONE argument made inconsistent (status 1 and the message:
// the function, the op and its location, the argument, both numbers). The
// routines are the same with and without checked=true.
//
// A module cannot declare @kvcache_check_F itself (the pass refuses a symbol
// of that name), so @main calls @check_F, and the RUN lines link the calls
// to the routines in the lowered module: they drop the declarations of
// @check_* and rename the calls.

// RUN: kvcache-opt %s -kvcache-to-cpu \
// RUN: | sed -e '/llvm.func @check_/d' -e 's/@check_/@kvcache_check_/g' > %t.mlir
// RUN: mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true \
// RUN: | sed -e '/llvm.func @check_/d' -e 's/@check_/@kvcache_check_/g' > %t.checked.mlir
// RUN: mlir-runner %t.checked.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s

// A paged f32 cache of 4 pages of 4 tokens, 2 layers, one head of 4; two
// sequences with cache_lengths [3, 1] in pages [0, 1] and [2, 3] (8
// positions each); max_seq_length 4, max_cache_length 8. Each line is one
// call; the valid calls print "status 0:".

!blocks = memref<?x2x?x4x1x4xf32>
!coll = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>
!rows = memref<?x1x4xf32>
!lse = memref<?x1xf32>
!i32s = memref<?xi32>
!table = memref<?x?xi32>
!pairs = memref<?x2xi32>
!message = memref<?xi8>
!qblocks = memref<?x2x?x4x1x4xi8>
!qscales = memref<?x2x?x4x1xf32>
!qcoll = !kvcache.paged_collection<i8, num_heads = 1, head_size = 4, page_size = 4, scales = token_head>
!cblocks = memref<?x2x?x?x1x4xf32>
!ccoll = !kvcache.continuous_collection<f32, num_heads = 1, head_size = 4>
!ccache = !kvcache.continuous_cache<f32, num_heads = 1, head_size = 4>

//===----------------------------------------------------------------------===//
// The functions whose routines are checked
//===----------------------------------------------------------------------===//

func.func @store(%blocks: !blocks, %lengths: !i32s, %table: !table, %max_seq: i32, %max_cache: i32,
                 %layer: index, %new: !rows, %offsets: !i32s) attributes {llvm.emit_c_interface} {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache : !blocks, !i32s, !table -> !coll
  %k = kvcache.get_key_cache %c[%layer] : !coll
  kvcache.store_ragged %k, %new, %offsets : !cache, !rows, !i32s
  return
}

func.func @gather(%blocks: !blocks, %lengths: !i32s, %table: !table, %max_seq: i32, %max_cache: i32,
                  %layer: index, %out: !rows, %offsets: !i32s) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache : !blocks, !i32s, !table -> !coll
  %v = kvcache.get_value_cache %c[%layer] : !coll
  kvcache.gather_ragged %v, %out, %offsets : !cache, !rows, !i32s
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
  %layer = arith.constant 1 : index
  %k = kvcache.get_key_cache %c[%layer] : !coll
  %v = kvcache.get_value_cache %c[%layer] : !coll
  kvcache.attention_ragged %q, %k, %v, %offsets, %out lse(%lse) {scale = 0.5 : f32}
      : !rows, !cache, !cache, !i32s, !rows, !lse
  return
}

// The keys a row sees decide the pages: from the window's or the chunk's
// start, or [0, cache_length) without the step's rows (noncausal). K and V
// through tables of their own (@attention_kv).
func.func @attention_window(%q: !rows, %blocks: !blocks, %lengths: !i32s, %table: !table, %offsets: !i32s, %out: !rows) {
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %c = kvcache.paged_collection %blocks, %lengths, %table, %i4, %i8 : !blocks, !i32s, !table -> !coll
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !coll
  %v = kvcache.get_value_cache %c[%layer] : !coll
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.5 : f32, window = 2 : i64}
      : !rows, !cache, !cache, !i32s, !rows
  return
}

func.func @attention_chunk(%q: !rows, %blocks: !blocks, %lengths: !i32s, %table: !table, %offsets: !i32s, %out: !rows) {
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %c = kvcache.paged_collection %blocks, %lengths, %table, %i4, %i8 : !blocks, !i32s, !table -> !coll
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !coll
  %v = kvcache.get_value_cache %c[%layer] : !coll
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {chunk = 4 : i64, scale = 0.5 : f32}
      : !rows, !cache, !cache, !i32s, !rows
  return
}

func.func @attention_noncausal(%q: !rows, %blocks: !blocks, %lengths: !i32s, %table: !table, %offsets: !i32s, %out: !rows) {
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %c = kvcache.paged_collection %blocks, %lengths, %table, %i4, %i8 : !blocks, !i32s, !table -> !coll
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !coll
  %v = kvcache.get_value_cache %c[%layer] : !coll
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {noncausal, scale = 0.5 : f32}
      : !rows, !cache, !cache, !i32s, !rows
  return
}

func.func @attention_kv(%q: !rows, %blocks: !blocks, %lengths: !i32s, %k_table: !table, %v_table: !table,
                        %offsets: !i32s, %out: !rows) {
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %kc = kvcache.paged_collection %blocks, %lengths, %k_table, %i4, %i8 : !blocks, !i32s, !table -> !coll
  %vc = kvcache.paged_collection %blocks, %lengths, %v_table, %i4, %i8 : !blocks, !i32s, !table -> !coll
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %kc[%layer] : !coll
  %v = kvcache.get_value_cache %vc[%layer] : !coll
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.5 : f32}
      : !rows, !cache, !cache, !i32s, !rows
  return
}

func.func @merge(%out_a: !rows, %lse_a: !lse, %out_b: !rows, %lse_b: !lse,
                 %out: !rows, %lse: !lse) {
  kvcache.merge_states %out_a, %lse_a, %out_b, %lse_b, %out, %lse
      : !rows, !lse, !rows, !lse, !rows, !lse
  return
}

func.func @quantized(%blocks: !qblocks, %lengths: !i32s, %table: !table, %max_seq: i32, %max_cache: i32,
                     %scales: !qscales, %out: !rows, %offsets: !i32s) {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache, %scales
      : !qblocks, !i32s, !table, !qscales -> !qcoll
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !qcoll
  kvcache.gather_ragged %k, %out, %offsets
      : !kvcache.paged_cache<i8, num_heads = 1, head_size = 4, page_size = 4, scales = token_head>, !rows, !i32s
  return
}

func.func @continuous(%blocks: !cblocks, %lengths: !i32s, %table: !i32s, %max_seq: i32, %max_cache: i32,
                      %new: !rows, %offsets: !i32s) {
  %c = kvcache.continuous_collection %blocks, %lengths, %table, %max_seq, %max_cache : !cblocks, !i32s, !i32s -> !ccoll
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !ccoll
  kvcache.store_ragged %k, %new, %offsets : !ccache, !rows, !i32s
  return
}

// The routines, linked by the RUN lines.
func.func private @check_store(!blocks, !i32s, !table, i32, i32, index, !rows, !i32s, !message) -> i32
func.func private @check_gather(!blocks, !i32s, !table, i32, i32, index, !rows, !i32s, !message) -> i32
func.func private @check_copy(!blocks, !i32s, !table, i32, i32, !pairs, !message) -> i32
func.func private @check_attention(!rows, !blocks, !i32s, !table, i32, i32, !i32s, !rows, !lse, !message) -> i32
func.func private @check_attention_window(!rows, !blocks, !i32s, !table, !i32s, !rows, !message) -> i32
func.func private @check_attention_chunk(!rows, !blocks, !i32s, !table, !i32s, !rows, !message) -> i32
func.func private @check_attention_noncausal(!rows, !blocks, !i32s, !table, !i32s, !rows, !message) -> i32
func.func private @check_attention_kv(!rows, !blocks, !i32s, !table, !table, !i32s, !rows, !message) -> i32
func.func private @check_merge(!rows, !lse, !rows, !lse, !rows, !lse, !message) -> i32
func.func private @check_quantized(!qblocks, !i32s, !table, i32, i32, !qscales, !rows, !i32s, !message) -> i32
func.func private @check_continuous(!cblocks, !i32s, !i32s, i32, i32, !rows, !i32s, !message) -> i32

//===----------------------------------------------------------------------===//
// The calls and their messages
//===----------------------------------------------------------------------===//

memref.global "private" constant @offsets_023 : memref<3xi32> = dense<[0, 2, 3]>
memref.global "private" constant @offsets_134 : memref<3xi32> = dense<[1, 3, 4]>
memref.global "private" constant @offsets_032 : memref<3xi32> = dense<[0, 3, 2]>
memref.global "private" constant @offsets_056 : memref<3xi32> = dense<[0, 5, 6]>
memref.global "private" constant @offsets_054 : memref<3xi32> = dense<[0, 5, 4]>
memref.global "private" constant @offsets_0910 : memref<3xi32> = dense<[0, 9, 10]>
memref.global "private" constant @lengths_31 : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @lengths_3 : memref<1xi32> = dense<[3]>
memref.global "private" constant @lengths_71 : memref<2xi32> = dense<[7, 1]>
memref.global "private" constant @lengths_51 : memref<2xi32> = dense<[5, 1]>
memref.global "private" constant @offsets_012 : memref<3xi32> = dense<[0, 1, 2]>
memref.global "private" constant @table_good : memref<2x2xi32> = dense<[[0, 1], [2, 3]]>
memref.global "private" constant @table_one_row : memref<1x2xi32> = dense<[[0, 1]]>
memref.global "private" constant @table_bad_0 : memref<2x2xi32> = dense<[[0, 4], [2, 3]]>
memref.global "private" constant @table_bad_first : memref<2x2xi32> = dense<[[4, 1], [2, 3]]>
memref.global "private" constant @table_bad_1 : memref<2x2xi32> = dense<[[0, 1], [2, 4]]>
memref.global "private" constant @pairs_good : memref<2x2xi32> = dense<[[0, 2], [1, 3]]>
memref.global "private" constant @pairs_bad_src : memref<2x2xi32> = dense<[[0, 2], [4, 3]]>
memref.global "private" constant @pairs_bad_dst : memref<1x2xi32> = dense<[[0, 4]]>
memref.global "private" constant @pairs_same_dst : memref<2x2xi32> = dense<[[0, 2], [1, 2]]>
memref.global "private" constant @pairs_self : memref<2x2xi32> = dense<[[0, 2], [1, 1]]>
memref.global "private" constant @pairs_overlap : memref<2x2xi32> = dense<[[0, 2], [2, 3]]>
memref.global "private" constant @blocks_good : memref<2xi32> = dense<[0, 1]>
memref.global "private" constant @blocks_bad : memref<2xi32> = dense<[0, 4]>

// CHECK-LABEL: store_ragged
// CHECK-NEXT: status 0: {{$}}
// Offsets that start above 0 and rows past the batch's are valid.
// CHECK-NEXT: status 0: {{$}}
// A bad page that the op does not touch (sequence 1 writes position 1).
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: 'row_offsets'{{.*}} has 0 entries, but needs at least 1 (batch + 1){{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: row_offsets[2] is 2, below row_offsets[1] = 3: offsets never decrease{{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: 'values'{{.*}} has 2 rows, but row_offsets[2] (the end of the batch's rows) is 3{{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: 'row_offsets'{{.*}} describes 2 sequences, but 'cache'{{.*}} has 1 ({{.*}}kvcache.num_sequences){{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: 'row_offsets'{{.*}} describes 2 sequences, but 'cache'{{.*}} has 1 ({{.*}}kvcache.num_sequences){{$}}
// CHECK-NEXT: status 1: store: kvcache.get_key_cache at {{.*}}argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: {{.*}}layer{{.*}} 2{{.*}} out of range: 'collection'{{.*}} has 2 layers (num_layers){{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: sequence 0 needs 9 token positions ({{.*}}7 + 2 rows), but 'cache'{{.*}} holds 8 ({{.*}}kvcache.capacity){{$}}
// CHECK-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: token 4 of sequence 0 is on page 4 {{.*}}'cache'{{.*}}, but num_pages is 4{{$}}
// A 16-byte buffer: the message truncated to 15 characters.
// CHECK-NEXT: status 1: store: kvcache.{{$}}
func.func @store_cases() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %c16 = arith.constant 16 : index
  %c1024 = arith.constant 1024 : index
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %l31 = call @i32s_lengths_31() : () -> !i32s
  %l3 = call @i32s_lengths_3() : () -> !i32s
  %l71 = call @i32s_lengths_71() : () -> !i32s
  %tg = call @get_table_good() : () -> !table
  %t1 = call @get_table_one_row() : () -> !table
  %tb0 = call @get_table_bad_0() : () -> !table
  %tb1 = call @get_table_bad_1() : () -> !table
  %o023 = call @i32s_offsets_023() : () -> !i32s
  %o134 = call @i32s_offsets_134() : () -> !i32s
  %o032 = call @i32s_offsets_032() : () -> !i32s
  %none = memref.alloc(%c0) : !i32s
  call @title(%c0) : (index) -> ()
  call @run_store(%l31, %tg, %i4, %i8, %c0, %c3, %o023, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l31, %tg, %i4, %i8, %c0, %c6, %o134, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l31, %tb1, %i4, %i8, %c0, %c3, %o023, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l31, %tg, %i4, %i8, %c0, %c3, %none, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l31, %tg, %i4, %i8, %c0, %c3, %o032, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l31, %tg, %i4, %i8, %c0, %c2, %o023, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l3, %tg, %i4, %i8, %c0, %c3, %o023, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l31, %t1, %i4, %i8, %c0, %c3, %o023, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l31, %tg, %i4, %i8, %c2, %c3, %o023, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l71, %tg, %i4, %i8, %c0, %c3, %o023, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l31, %tb0, %i4, %i8, %c0, %c3, %o023, %c1024) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  call @run_store(%l31, %tg, %i4, %i8, %c0, %c2, %o023, %c16) : (!i32s, !table, i32, i32, index, index, !i32s, index) -> ()
  return
}

// CHECK-LABEL: gather_ragged
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 1: gather: kvcache.gather_ragged at {{.*}}argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: ctx_offsets[2] is 4, below ctx_offsets[1] = 5: offsets never decrease{{$}}
// CHECK-NEXT: status 1: gather: kvcache.gather_ragged at {{.*}}: 'out'{{.*}} has 5 rows, but ctx_offsets[2] (the end of the batch's rows) is 6{{$}}
// CHECK-NEXT: status 1: gather: kvcache.gather_ragged at {{.*}}: 'ctx_offsets'{{.*}} describes 2 sequences, but 'cache'{{.*}} has 1 ({{.*}}kvcache.num_sequences){{$}}
// CHECK-NEXT: status 1: gather: kvcache.get_value_cache at {{.*}}: {{.*}}layer{{.*}} 5{{.*}} out of range: 'collection'{{.*}} has 2 layers (num_layers){{$}}
// CHECK-NEXT: status 1: gather: kvcache.gather_ragged at {{.*}}: sequence 0 needs 9 token positions ({{.*}}), but 'cache'{{.*}} holds 8 ({{.*}}kvcache.capacity){{$}}
// CHECK-NEXT: status 1: gather: kvcache.gather_ragged at {{.*}}: token 4 of sequence 0 is on page 4 {{.*}}'cache'{{.*}}, but num_pages is 4{{$}}
func.func @gather_cases() {
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c10 = arith.constant 10 : index
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %l31 = call @i32s_lengths_31() : () -> !i32s
  %l3 = call @i32s_lengths_3() : () -> !i32s
  %tg = call @get_table_good() : () -> !table
  %tb0 = call @get_table_bad_0() : () -> !table
  %o056 = call @i32s_offsets_056() : () -> !i32s
  %o054 = call @i32s_offsets_054() : () -> !i32s
  %o0910 = call @i32s_offsets_0910() : () -> !i32s
  call @title(%c1) : (index) -> ()
  call @run_gather(%l31, %tg, %i4, %i8, %c1, %c6, %o056) : (!i32s, !table, i32, i32, index, index, !i32s) -> ()
  call @run_gather(%l31, %tg, %i4, %i8, %c1, %c6, %o054) : (!i32s, !table, i32, i32, index, index, !i32s) -> ()
  call @run_gather(%l31, %tg, %i4, %i8, %c1, %c5, %o056) : (!i32s, !table, i32, i32, index, index, !i32s) -> ()
  call @run_gather(%l3, %tg, %i4, %i8, %c1, %c6, %o056) : (!i32s, !table, i32, i32, index, index, !i32s) -> ()
  call @run_gather(%l31, %tg, %i4, %i8, %c5, %c6, %o056) : (!i32s, !table, i32, i32, index, index, !i32s) -> ()
  call @run_gather(%l31, %tg, %i4, %i8, %c1, %c10, %o0910) : (!i32s, !table, i32, i32, index, index, !i32s) -> ()
  call @run_gather(%l31, %tb0, %i4, %i8, %c1, %c6, %o056) : (!i32s, !table, i32, i32, index, index, !i32s) -> ()
  return
}

// CHECK-LABEL: copy_pages
// CHECK-NEXT: status 0: {{$}}
// A page copied onto itself by one pair is no overlap.
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 1: copy: kvcache.copy_pages at {{.*}}argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: {{.*}}pair{{.*}}1{{.*}} copies from page 4, but 'collection'{{.*}} has 4 pages (num_pages){{$}}
// CHECK-NEXT: status 1: copy: kvcache.copy_pages at {{.*}}: {{.*}}pair{{.*}}0{{.*}} copies to page 4, but 'collection'{{.*}} has 4 pages (num_pages){{$}}
// CHECK-NEXT: status 1: copy: kvcache.copy_pages at {{.*}}: {{.*}}pair{{.*}}0{{.*}} and {{.*}}1{{.*}} both copy to page 2{{$}}
// CHECK-NEXT: status 1: copy: kvcache.copy_pages at {{.*}}: {{.*}}page 2 is copied to by pair{{.*}}0{{.*}} and from by pair{{.*}}1{{.*}}: pairs must not overlap{{$}}
func.func @copy_cases() {
  %c2 = arith.constant 2 : index
  %pg = call @get_pairs_good() : () -> !pairs
  %pself = call @get_pairs_self() : () -> !pairs
  %ps = call @get_pairs_bad_src() : () -> !pairs
  %pd = call @get_pairs_bad_dst() : () -> !pairs
  %p2 = call @get_pairs_same_dst() : () -> !pairs
  %po = call @get_pairs_overlap() : () -> !pairs
  call @title(%c2) : (index) -> ()
  call @run_copy(%pg) : (!pairs) -> ()
  call @run_copy(%pself) : (!pairs) -> ()
  call @run_copy(%ps) : (!pairs) -> ()
  call @run_copy(%pd) : (!pairs) -> ()
  call @run_copy(%p2) : (!pairs) -> ()
  call @run_copy(%po) : (!pairs) -> ()
  return
}

// CHECK-LABEL: attention_ragged
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: 'row_offsets'{{.*}} has 0 entries, but needs at least 1 (batch + 1){{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: 'q'{{.*}} has 2 rows, but row_offsets[2] (the end of the batch's rows) is 3{{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: 'out'{{.*}} has 2 rows, but row_offsets[2] (the end of the batch's rows) is 3{{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: 'lse'{{.*}} has 2 rows, but row_offsets[2] (the end of the batch's rows) is 3{{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: 'row_offsets'{{.*}} describes 2 sequences, but 'key_cache'{{.*}} has 1 ({{.*}}kvcache.num_sequences){{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: sequence 0 needs 9 token positions ({{.*}}7 + 2 rows), but 'key_cache'{{.*}} holds 8 ({{.*}}kvcache.capacity){{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: token 4 of sequence 0 is on page 4 {{.*}}'key_cache'{{.*}}, but num_pages is 4{{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: max_seq_length of 'key_cache'{{.*}} is 1, but a sequence has 2 rows{{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: max_cache_length of 'key_cache'{{.*}} is 4, but a sequence needs 5 token positions{{$}}
// CHECK-NEXT: status 1: attention: kvcache.attention_ragged at {{.*}}: max_cache_length of 'key_cache'{{.*}} is 9, but it holds 8 token positions per sequence at most (kvcache.capacity){{$}}
func.func @attention_cases() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %i1 = arith.constant 1 : i32
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %i9 = arith.constant 9 : i32
  %l31 = call @i32s_lengths_31() : () -> !i32s
  %l3 = call @i32s_lengths_3() : () -> !i32s
  %l71 = call @i32s_lengths_71() : () -> !i32s
  %tg = call @get_table_good() : () -> !table
  %tb0 = call @get_table_bad_0() : () -> !table
  %o023 = call @i32s_offsets_023() : () -> !i32s
  %none = memref.alloc(%c0) : !i32s
  call @title(%c3) : (index) -> ()
  call @run_attention(%c3, %c3, %c3, %l31, %tg, %i4, %i8, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c3, %c3, %c3, %l31, %tg, %i4, %i8, %none) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c2, %c3, %c3, %l31, %tg, %i4, %i8, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c3, %c2, %c3, %l31, %tg, %i4, %i8, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c3, %c3, %c2, %l31, %tg, %i4, %i8, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c3, %c3, %c3, %l3, %tg, %i4, %i8, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c3, %c3, %c3, %l71, %tg, %i4, %i8, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c3, %c3, %c3, %l31, %tb0, %i4, %i8, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c3, %c3, %c3, %l31, %tg, %i1, %i8, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c3, %c3, %c3, %l31, %tg, %i4, %i4, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  call @run_attention(%c3, %c3, %c3, %l31, %tg, %i4, %i9, %o023) : (index, index, index, !i32s, !table, i32, i32, !i32s) -> ()
  return
}

// Sequence 0 has cache_length 5 and one row, at position 5; page 0 of its
// table is bad. Causal attention reads it (keys from 0); with window = 2 or
// chunk = 4 (keys 4 and 5) only page 1 is read. Noncausal attention reads
// [0, cache_length): with cache_lengths [3, 1] page 1 of sequence 0 may be
// bad. K and V are checked through their own tables.
// CHECK-LABEL: attention_ragged variants
// CHECK-NEXT: status 1: attention_kv: kvcache.attention_ragged at {{.*}}: token 0 of sequence 0 is on page 4 {{.*}}'key_cache'{{.*}}, but num_pages is 4{{$}}
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 1: attention_kv: kvcache.attention_ragged at {{.*}}: token 4 of sequence 0 is on page 4 {{.*}}'value_cache'{{.*}}, but num_pages is 4{{$}}
// CHECK-NEXT: status 1: attention_kv: kvcache.attention_ragged at {{.*}}: 'row_offsets'{{.*}} describes 2 sequences, but 'value_cache'{{.*}} has 1 ({{.*}}kvcache.num_sequences){{$}}
func.func @attention_variant_cases() {
  %window = arith.constant 0 : index
  %chunk = arith.constant 1 : index
  %noncausal = arith.constant 2 : index
  %kv = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %l51 = call @i32s_lengths_51() : () -> !i32s
  %l31 = call @i32s_lengths_31() : () -> !i32s
  %tg = call @get_table_good() : () -> !table
  %t1 = call @get_table_one_row() : () -> !table
  %tb0 = call @get_table_bad_0() : () -> !table
  %tbf = call @get_table_bad_first() : () -> !table
  %o012 = call @i32s_offsets_012() : () -> !i32s
  %o023 = call @i32s_offsets_023() : () -> !i32s
  call @title(%c7) : (index) -> ()
  call @run_variant(%kv, %l51, %tbf, %tbf, %o012) : (index, !i32s, !table, !table, !i32s) -> ()
  call @run_variant(%window, %l51, %tbf, %tbf, %o012) : (index, !i32s, !table, !table, !i32s) -> ()
  call @run_variant(%chunk, %l51, %tbf, %tbf, %o012) : (index, !i32s, !table, !table, !i32s) -> ()
  call @run_variant(%noncausal, %l31, %tb0, %tb0, %o023) : (index, !i32s, !table, !table, !i32s) -> ()
  call @run_variant(%kv, %l31, %tg, %tb0, %o023) : (index, !i32s, !table, !table, !i32s) -> ()
  call @run_variant(%kv, %l31, %tg, %t1, %o023) : (index, !i32s, !table, !table, !i32s) -> ()
  return
}

// CHECK-LABEL: merge_states
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 1: merge: kvcache.merge_states at {{.*}}argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: 'out_a'{{.*}} has 2 rows, but 'out'{{.*}} has 3{{$}}
// CHECK-NEXT: status 1: merge: kvcache.merge_states at {{.*}}: 'lse_b'{{.*}} has 4 rows, but 'out'{{.*}} has 3{{$}}
func.func @merge_cases() {
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  call @title(%c4) : (index) -> ()
  call @run_merge(%c3, %c3) : (index, index) -> ()
  call @run_merge(%c2, %c3) : (index, index) -> ()
  call @run_merge(%c3, %c4) : (index, index) -> ()
  return
}

// CHECK-LABEL: quantized
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 1: quantized: kvcache.paged_collection at {{.*}}argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: 'scales'{{.*}} has 3 num_pages (dim 0), but 'blocks'{{.*}} has 4{{$}}
// CHECK-NEXT: status 1: quantized: kvcache.paged_collection at {{.*}}: 'scales'{{.*}} has 1 num_layers (dim 2), but 'blocks'{{.*}} has 2{{$}}
func.func @quantized_cases() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  call @title(%c5) : (index) -> ()
  call @run_quantized(%c4, %c2) : (index, index) -> ()
  call @run_quantized(%c3, %c2) : (index, index) -> ()
  call @run_quantized(%c4, %c1) : (index, index) -> ()
  return
}

// A continuous collection of 4 blocks of 8 tokens: the capacity is
// block_tokens, the page a sequence's block.
// CHECK-LABEL: continuous
// CHECK-NEXT: status 0: {{$}}
// CHECK-NEXT: status 1: continuous: kvcache.store_ragged at {{.*}}argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: sequence 0 needs 9 token positions ({{.*}}7 + 2 rows), but 'cache'{{.*}} holds 8 ({{.*}}kvcache.capacity){{$}}
// CHECK-NEXT: status 1: continuous: kvcache.store_ragged at {{.*}}: token 1 of sequence 1 is on page 4 {{.*}}'cache'{{.*}}, but num_pages is 4{{$}}
func.func @continuous_cases() {
  %c6 = arith.constant 6 : index
  %l31 = call @i32s_lengths_31() : () -> !i32s
  %l71 = call @i32s_lengths_71() : () -> !i32s
  %good = memref.get_global @blocks_good : memref<2xi32>
  %bg = memref.cast %good : memref<2xi32> to !i32s
  %bad = memref.get_global @blocks_bad : memref<2xi32>
  %bb = memref.cast %bad : memref<2xi32> to !i32s
  call @title(%c6) : (index) -> ()
  call @run_continuous(%l31, %bg) : (!i32s, !i32s) -> ()
  call @run_continuous(%l71, %bg) : (!i32s, !i32s) -> ()
  call @run_continuous(%l31, %bb) : (!i32s, !i32s) -> ()
  return
}

func.func @main() {
  call @store_cases() : () -> ()
  call @gather_cases() : () -> ()
  call @copy_cases() : () -> ()
  call @attention_cases() : () -> ()
  call @attention_variant_cases() : () -> ()
  call @merge_cases() : () -> ()
  call @quantized_cases() : () -> ()
  call @continuous_cases() : () -> ()
  return
}

//===----------------------------------------------------------------------===//
// Runners: the arguments of one call, the call, its status and message
//===----------------------------------------------------------------------===//

llvm.mlir.global internal constant @status_format("status %d: %s\0A\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @titles("store_ragged\00gather_ragged\00copy_pages\00attention_ragged\00merge_states\00quantized\00continuous\00attention_ragged variants\00") {addr_space = 0 : i32}
llvm.mlir.global internal constant @title_offsets(dense<[0, 13, 27, 38, 55, 68, 78, 89]> : tensor<8xi32>) {addr_space = 0 : i32} : !llvm.array<8 x i32>
llvm.func @printf(!llvm.ptr, ...) -> i32
llvm.func @puts(!llvm.ptr) -> i32

// Prints the name of case group `i` (a line of its own).
func.func private @title(%i: index) {
  %titles = llvm.mlir.addressof @titles : !llvm.ptr
  %offsets = llvm.mlir.addressof @title_offsets : !llvm.ptr
  %i64 = arith.index_cast %i : index to i64
  %slot = llvm.getelementptr %offsets[0, %i64] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<8 x i32>
  %offset = llvm.load %slot : !llvm.ptr -> i32
  %name = llvm.getelementptr %titles[%offset] : (!llvm.ptr, i32) -> !llvm.ptr, i8
  %r = llvm.call @puts(%name) : (!llvm.ptr) -> i32
  return
}

// A message buffer of `bytes` bytes holding "" (what a successful call
// leaves).
func.func private @message(%bytes: index) -> !message {
  %buffer = memref.alloc(%bytes) : !message
  %c0 = arith.constant 0 : index
  %nul = arith.constant 0 : i8
  memref.store %nul, %buffer[%c0] : !message
  return %buffer : !message
}

func.func private @report(%status: i32, %message: !message) {
  %base = memref.extract_aligned_pointer_as_index %message : !message -> index
  %base64 = arith.index_cast %base : index to i64
  %text = llvm.inttoptr %base64 : i64 to !llvm.ptr
  %format = llvm.mlir.addressof @status_format : !llvm.ptr
  %r = llvm.call @printf(%format, %status, %text) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr, i32, !llvm.ptr) -> i32
  memref.dealloc %message : !message
  return
}

// Zeroed blocks of `pages` pages (2 layers).
func.func private @blocks(%pages: index) -> !blocks {
  %storage = memref.alloc(%pages) : memref<?x2x2x4x1x4xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%storage : memref<?x2x2x4x1x4xf32>)
  %blocks = memref.cast %storage : memref<?x2x2x4x1x4xf32> to !blocks
  return %blocks : !blocks
}

func.func private @rows(%n: index) -> !rows {
  %rows = memref.alloc(%n) : !rows
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%rows : !rows)
  return %rows : !rows
}

func.func private @run_store(%lengths: !i32s, %table: !table, %max_seq: i32, %max_cache: i32,
                             %layer: index, %n: index, %offsets: !i32s, %bytes: index) {
  %c4 = arith.constant 4 : index
  %blocks = call @blocks(%c4) : (index) -> !blocks
  %new = call @rows(%n) : (index) -> !rows
  %message = call @message(%bytes) : (index) -> !message
  %status = call @check_store(%blocks, %lengths, %table, %max_seq, %max_cache, %layer, %new, %offsets, %message)
      : (!blocks, !i32s, !table, i32, i32, index, !rows, !i32s, !message) -> i32
  call @report(%status, %message) : (i32, !message) -> ()
  return
}

func.func private @run_gather(%lengths: !i32s, %table: !table, %max_seq: i32, %max_cache: i32,
                              %layer: index, %n: index, %offsets: !i32s) {
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %blocks = call @blocks(%c4) : (index) -> !blocks
  %out = call @rows(%n) : (index) -> !rows
  %message = call @message(%c1024) : (index) -> !message
  %status = call @check_gather(%blocks, %lengths, %table, %max_seq, %max_cache, %layer, %out, %offsets, %message)
      : (!blocks, !i32s, !table, i32, i32, index, !rows, !i32s, !message) -> i32
  call @report(%status, %message) : (i32, !message) -> ()
  return
}

func.func private @run_copy(%pairs: !pairs) {
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %blocks = call @blocks(%c4) : (index) -> !blocks
  %lengths = call @i32s_lengths_31() : () -> !i32s
  %table = call @get_table_good() : () -> !table
  %message = call @message(%c1024) : (index) -> !message
  %status = call @check_copy(%blocks, %lengths, %table, %i4, %i8, %pairs, %message)
      : (!blocks, !i32s, !table, i32, i32, !pairs, !message) -> i32
  call @report(%status, %message) : (i32, !message) -> ()
  return
}

func.func private @run_attention(%q_rows: index, %out_rows: index, %lse_rows: index, %lengths: !i32s,
                                 %table: !table, %max_seq: i32, %max_cache: i32, %offsets: !i32s) {
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %blocks = call @blocks(%c4) : (index) -> !blocks
  %q = call @rows(%q_rows) : (index) -> !rows
  %out = call @rows(%out_rows) : (index) -> !rows
  %lse = memref.alloc(%lse_rows) : !lse
  %message = call @message(%c1024) : (index) -> !message
  %status = call @check_attention(%q, %blocks, %lengths, %table, %max_seq, %max_cache, %offsets, %out, %lse, %message)
      : (!rows, !blocks, !i32s, !table, i32, i32, !i32s, !rows, !lse, !message) -> i32
  call @report(%status, %message) : (i32, !message) -> ()
  return
}

// out_a of `a_rows` rows, lse_b of `b_rows`. (A dynamic head size, which
// the routine checks too, cannot be lowered by convert-kvcache-to-scf.)
func.func private @run_merge(%a_rows: index, %b_rows: index) {
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %out_a = memref.alloc(%a_rows) : !rows
  %lse_a = memref.alloc(%c3) : !lse
  %out_b = memref.alloc(%c3) : !rows
  %lse_b = memref.alloc(%b_rows) : !lse
  %out = memref.alloc(%c3) : !rows
  %lse = memref.alloc(%c3) : !lse
  %message = call @message(%c1024) : (index) -> !message
  %status = call @check_merge(%out_a, %lse_a, %out_b, %lse_b, %out, %lse, %message)
      : (!rows, !lse, !rows, !lse, !rows, !lse, !message) -> i32
  call @report(%status, %message) : (i32, !message) -> ()
  return
}

// @attention_window, _chunk, _noncausal (`which` 0 to 2) or @attention_kv
// (3) on 3 rows of q at `offsets`.
func.func private @run_variant(%which: index, %lengths: !i32s, %table: !table, %v_table: !table, %offsets: !i32s) {
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %blocks = call @blocks(%c4) : (index) -> !blocks
  %q = call @rows(%c3) : (index) -> !rows
  %out = call @rows(%c3) : (index) -> !rows
  %message = call @message(%c1024) : (index) -> !message
  %status = scf.index_switch %which -> i32
  case 0 {
    %r = func.call @check_attention_window(%q, %blocks, %lengths, %table, %offsets, %out, %message)
        : (!rows, !blocks, !i32s, !table, !i32s, !rows, !message) -> i32
    scf.yield %r : i32
  }
  case 1 {
    %r = func.call @check_attention_chunk(%q, %blocks, %lengths, %table, %offsets, %out, %message)
        : (!rows, !blocks, !i32s, !table, !i32s, !rows, !message) -> i32
    scf.yield %r : i32
  }
  case 2 {
    %r = func.call @check_attention_noncausal(%q, %blocks, %lengths, %table, %offsets, %out, %message)
        : (!rows, !blocks, !i32s, !table, !i32s, !rows, !message) -> i32
    scf.yield %r : i32
  }
  default {
    %r = func.call @check_attention_kv(%q, %blocks, %lengths, %table, %v_table, %offsets, %out, %message)
        : (!rows, !blocks, !i32s, !table, !table, !i32s, !rows, !message) -> i32
    scf.yield %r : i32
  }
  call @report(%status, %message) : (i32, !message) -> ()
  return
}

// Scales of `pages` pages and `layers` layers for 4 pages of 2 layers.
func.func private @run_quantized(%pages: index, %layers: index) {
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %c1024 = arith.constant 1024 : index
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %blocks = memref.alloc(%c4, %c2) : !qblocks
  %scales = memref.alloc(%pages, %layers) : !qscales
  %lengths = call @i32s_lengths_31() : () -> !i32s
  %table = call @get_table_good() : () -> !table
  %offsets = call @i32s_offsets_056() : () -> !i32s
  %out = call @rows(%c6) : (index) -> !rows
  %message = call @message(%c1024) : (index) -> !message
  %status = call @check_quantized(%blocks, %lengths, %table, %i4, %i8, %scales, %out, %offsets, %message)
      : (!qblocks, !i32s, !table, i32, i32, !qscales, !rows, !i32s, !message) -> i32
  call @report(%status, %message) : (i32, !message) -> ()
  return
}

func.func private @run_continuous(%lengths: !i32s, %table: !i32s) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c1024 = arith.constant 1024 : index
  %i4 = arith.constant 4 : i32
  %i8 = arith.constant 8 : i32
  %blocks = memref.alloc(%c4, %c1, %c8) : !cblocks
  %new = call @rows(%c3) : (index) -> !rows
  %offsets = call @i32s_offsets_023() : () -> !i32s
  %message = call @message(%c1024) : (index) -> !message
  %status = call @check_continuous(%blocks, %lengths, %table, %i4, %i8, %new, %offsets, %message)
      : (!cblocks, !i32s, !i32s, i32, i32, !rows, !i32s, !message) -> i32
  call @report(%status, %message) : (i32, !message) -> ()
  return
}

// The globals as dynamically shaped memrefs.
func.func private @i32s_lengths_31() -> !i32s {
  %g = memref.get_global @lengths_31 : memref<2xi32>
  %r = memref.cast %g : memref<2xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_lengths_3() -> !i32s {
  %g = memref.get_global @lengths_3 : memref<1xi32>
  %r = memref.cast %g : memref<1xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_lengths_71() -> !i32s {
  %g = memref.get_global @lengths_71 : memref<2xi32>
  %r = memref.cast %g : memref<2xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_offsets_023() -> !i32s {
  %g = memref.get_global @offsets_023 : memref<3xi32>
  %r = memref.cast %g : memref<3xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_lengths_51() -> !i32s {
  %g = memref.get_global @lengths_51 : memref<2xi32>
  %r = memref.cast %g : memref<2xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_offsets_012() -> !i32s {
  %g = memref.get_global @offsets_012 : memref<3xi32>
  %r = memref.cast %g : memref<3xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_offsets_134() -> !i32s {
  %g = memref.get_global @offsets_134 : memref<3xi32>
  %r = memref.cast %g : memref<3xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_offsets_032() -> !i32s {
  %g = memref.get_global @offsets_032 : memref<3xi32>
  %r = memref.cast %g : memref<3xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_offsets_056() -> !i32s {
  %g = memref.get_global @offsets_056 : memref<3xi32>
  %r = memref.cast %g : memref<3xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_offsets_054() -> !i32s {
  %g = memref.get_global @offsets_054 : memref<3xi32>
  %r = memref.cast %g : memref<3xi32> to !i32s
  return %r : !i32s
}
func.func private @i32s_offsets_0910() -> !i32s {
  %g = memref.get_global @offsets_0910 : memref<3xi32>
  %r = memref.cast %g : memref<3xi32> to !i32s
  return %r : !i32s
}
func.func private @get_table_good() -> !table {
  %g = memref.get_global @table_good : memref<2x2xi32>
  %r = memref.cast %g : memref<2x2xi32> to !table
  return %r : !table
}
func.func private @get_table_one_row() -> !table {
  %g = memref.get_global @table_one_row : memref<1x2xi32>
  %r = memref.cast %g : memref<1x2xi32> to !table
  return %r : !table
}
func.func private @get_table_bad_0() -> !table {
  %g = memref.get_global @table_bad_0 : memref<2x2xi32>
  %r = memref.cast %g : memref<2x2xi32> to !table
  return %r : !table
}
func.func private @get_table_bad_first() -> !table {
  %g = memref.get_global @table_bad_first : memref<2x2xi32>
  %r = memref.cast %g : memref<2x2xi32> to !table
  return %r : !table
}
func.func private @get_table_bad_1() -> !table {
  %g = memref.get_global @table_bad_1 : memref<2x2xi32>
  %r = memref.cast %g : memref<2x2xi32> to !table
  return %r : !table
}
func.func private @get_pairs_good() -> !pairs {
  %g = memref.get_global @pairs_good : memref<2x2xi32>
  %r = memref.cast %g : memref<2x2xi32> to !pairs
  return %r : !pairs
}
func.func private @get_pairs_bad_src() -> !pairs {
  %g = memref.get_global @pairs_bad_src : memref<2x2xi32>
  %r = memref.cast %g : memref<2x2xi32> to !pairs
  return %r : !pairs
}
func.func private @get_pairs_bad_dst() -> !pairs {
  %g = memref.get_global @pairs_bad_dst : memref<1x2xi32>
  %r = memref.cast %g : memref<1x2xi32> to !pairs
  return %r : !pairs
}
func.func private @get_pairs_same_dst() -> !pairs {
  %g = memref.get_global @pairs_same_dst : memref<2x2xi32>
  %r = memref.cast %g : memref<2x2xi32> to !pairs
  return %r : !pairs
}
func.func private @get_pairs_self() -> !pairs {
  %g = memref.get_global @pairs_self : memref<2x2xi32>
  %r = memref.cast %g : memref<2x2xi32> to !pairs
  return %r : !pairs
}
func.func private @get_pairs_overlap() -> !pairs {
  %g = memref.get_global @pairs_overlap : memref<2x2xi32>
  %r = memref.cast %g : memref<2x2xi32> to !pairs
  return %r : !pairs
}
