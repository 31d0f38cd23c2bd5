// RUN: kvcache-opt %s -kvcache-generate-argument-checks -split-input-file | FileCheck %s
// RUN: kvcache-opt %s -kvcache-generate-argument-checks=checked=true -split-input-file | FileCheck %s --check-prefix=CHECKED

// kvcache-generate-argument-checks (docs/Contract.md, section 5.1): every
// public function F with kernel ops gets the public routine
// @kvcache_check_F(F's arguments..., memref<?xi8>) -> i32 (with F's
// llvm.emit_c_interface), which checks the kernel ops of F's entry block
// whose operands come from F's arguments: the ops they come from are cloned
// into it, their own checks first. Each failed check formats its message
// with snprintf into the buffer and sets a flag that skips every later
// check; the flag is the result. With checked=true F calls its routine at
// entry and checks the other ops in place.

!coll = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>
!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// store_ragged through a layer of a collection built from the arguments:
// the layer index, the offsets, the rows, the sequences against
// kvcache.num_sequences and kvcache.capacity, and the pages written, read
// by lookups {read_only, unchecked}.
// CHECK-DAG: llvm.mlir.global private constant @[[LAYER_MSG:.*]]("store: kvcache.get_key_cache at {{.*}}generate-argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: {{.*}}layer{{.*}}out of range{{.*}}(num_layers)\00")
// CHECK-DAG: llvm.mlir.global private constant @[[ROWS_MSG:.*]]("store: kvcache.store_ragged at {{.*}}generate-argument-checks.mlir:{{[0-9]+}}:{{[0-9]+}}: 'values'{{.*}} has %lld rows, but row_offsets[%lld] (the end of the batch's rows) is %lld\00")
// CHECK-DAG: llvm.func @snprintf(!llvm.ptr, i64, !llvm.ptr, ...) -> i32
// CHECK-LABEL: func.func @store(
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-NEXT: kvcache.paged_collection
// CHECK-NEXT: kvcache.get_key_cache
// CHECK-NEXT: kvcache.store_ragged
// CHECK-NEXT: return
// CHECK-LABEL: func.func @kvcache_check_store(
// CHECK-SAME: %[[BLOCKS:[^:]*]]: memref<?x2x?x4x1x4xf32>, %[[LENGTHS:[^:]*]]: memref<?xi32>, %[[TABLE:[^:]*]]: memref<?x?xi32>, %[[MAX_SEQ:[^:]*]]: i32, %[[MAX_CACHE:[^:]*]]: i32, %[[LAYER:[^:]*]]: index, %[[NEW:[^:]*]]: memref<?x1x4xf32>, %[[OFFSETS:[^:]*]]: memref<?xi32>, %[[MESSAGE:[^:]*]]: memref<?xi8>) -> i32
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: %[[FLAG:.*]] = memref.alloca() : memref<i1>
// The constructor is cloned (it has no checks of its own without scales),
// the layer checked before get_key_cache is cloned.
// CHECK: %[[C:.*]] = kvcache.paged_collection %[[BLOCKS]], %[[LENGTHS]], %[[TABLE]], %[[MAX_SEQ]], %[[MAX_CACHE]]
// CHECK: %[[LAYERS:.*]] = kvcache.num_layers %[[C]]
// CHECK: arith.cmpi uge, %[[LAYER]], %[[LAYERS]] : index
// CHECK: llvm.mlir.addressof @[[LAYER_MSG]]
// CHECK: llvm.call @snprintf
// CHECK: %[[K:.*]] = kvcache.get_key_cache %[[C]][%[[LAYER]]]
// CHECK: memref.dim %[[OFFSETS]]
// CHECK: memref.dim %[[NEW]]
// CHECK: llvm.mlir.addressof @[[ROWS_MSG]]
// CHECK: kvcache.num_sequences %[[K]]
// CHECK: kvcache.num_pages %[[K]]
// CHECK: scf.for
// CHECK: kvcache.cache_length %[[K]]
// CHECK: kvcache.capacity %[[K]]
// CHECK: scf.for
// CHECK: kvcache.lookup %[[K]][%{{.*}}, %{{.*}}] {read_only, unchecked}
// CHECK-NOT: kvcache.store_ragged
// CHECK: %[[STATUS:.*]] = arith.extui %{{.*}} : i1 to i32
// CHECK-NEXT: return %[[STATUS]] : i32
// No checked-mode runtime without checked=true.
// CHECK-NOT: kvcache_check_capture
// CHECK-NOT: kvcache_check_failure
func.func @store(%blocks: memref<?x2x?x4x1x4xf32>, %lengths: memref<?xi32>, %table: memref<?x?xi32>,
                 %max_seq: i32, %max_cache: i32, %layer: index, %new: memref<?x1x4xf32>,
                 %offsets: memref<?xi32>) attributes {llvm.emit_c_interface} {
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache
      : memref<?x2x?x4x1x4xf32>, memref<?xi32>, memref<?x?xi32> -> !coll
  %k = kvcache.get_key_cache %c[%layer] : !coll
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}

// With checked=true, @store calls its routine first, before any write, and
// passes it a 1024-byte buffer; a failure goes to the handler, and a call
// while a failure is recorded (capture mode) returns at once.
// CHECKED-LABEL: func.func @store(
// CHECKED: %[[BUFFER:.*]] = memref.alloca() : memref<1024xi8>
// CHECKED: %[[MESSAGE:.*]] = memref.cast %[[BUFFER]] : memref<1024xi8> to memref<?xi8>
// CHECKED: %[[STATUS:.*]] = call @kvcache_check_store(%{{.*}}, %[[MESSAGE]]) :
// CHECKED: %[[FAILED:.*]] = arith.cmpi ne, %[[STATUS]], %{{.*}} : i32
// CHECKED: scf.if %[[FAILED]] {
// CHECKED: func.call @__kvcache_check_fail(
// CHECKED: llvm.mlir.addressof @__kvcache_check_message : !llvm.ptr
// CHECKED: cf.cond_br %{{.*}}, ^[[EXIT:.*]], ^[[BODY:.*]]
// CHECKED: ^[[BODY]]:
// CHECKED-NEXT: kvcache.paged_collection
// CHECKED-NEXT: kvcache.get_key_cache
// CHECKED-NEXT: kvcache.store_ragged
// CHECKED-NEXT: return
// CHECKED: ^[[EXIT]]:
// CHECKED-NEXT: return
// CHECKED-LABEL: func.func @kvcache_check_store(
// The runtime of checked mode, once per module: the capture flag and the
// recorded message, the handler (record, or print and abort), and the two
// public functions.
// CHECKED-DAG: llvm.mlir.global internal @__kvcache_check_capture_on(
// CHECKED-DAG: llvm.mlir.global internal @__kvcache_check_message(
// CHECKED-DAG: func.func private @__kvcache_check_fail(%{{.*}}: !llvm.ptr)
// CHECKED-DAG: llvm.call @abort()
// CHECKED-DAG: func.func @kvcache_check_capture(%{{.*}}: i32)
// CHECKED-DAG: func.func @kvcache_check_failure() -> !llvm.ptr

// -----

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// gather_ragged on a layer cache argument: the routine reads the cache
// argument itself; its pages are [0, rows) of each sequence.
// CHECK-LABEL: func.func @kvcache_check_gather(
// CHECK-SAME: %[[K:[^:]*]]: !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>, %[[OUT:[^:]*]]: memref<?x1x4xf32>, %[[OFFSETS:[^:]*]]: memref<?xi32>, %{{[^:]*}}: memref<?xi8>) -> i32 {
// CHECK: memref.dim %[[OFFSETS]]
// CHECK: memref.dim %[[OUT]]
// CHECK: kvcache.num_sequences %[[K]]
// CHECK: kvcache.capacity %[[K]]
// CHECK: kvcache.lookup %[[K]][%{{.*}}, %{{.*}}] {read_only, unchecked}
// CHECK: return %{{.*}} : i32
// Every public function gets its own routine, checking each of its ops.
// CHECK-LABEL: func.func @kvcache_check_two(
// CHECK-COUNT-2: kvcache.lookup
// With checked=true both call their routines, and the module defines the
// runtime of checked mode once.
// CHECKED-LABEL: func.func @gather(
// CHECKED: call @kvcache_check_gather(
// CHECKED-LABEL: func.func @two(
// CHECKED: call @kvcache_check_two(
// CHECKED-COUNT-1: func.func private @__kvcache_check_fail(
// CHECKED-COUNT-1: func.func @kvcache_check_capture(
// CHECKED-COUNT-1: func.func @kvcache_check_failure(
// CHECKED-NOT: func.func
// CHECKED: {{^//[ ]-----$}}
func.func @gather(%k: !cache, %out: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %out, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}

func.func @two(%k: !cache, %out: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  kvcache.gather_ragged %k, %out, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  kvcache.gather_ragged %k, %out, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}

// -----

!coll = !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>

// copy_pages: the pairs against num_pages, then (two pairs or more) a
// scratch mark per page for the overlaps.
// CHECK-LABEL: func.func @kvcache_check_copy(
// CHECK-SAME: %[[C:[^:]*]]: !kvcache.paged_collection<f32, num_heads = 1, head_size = 4, page_size = 4>, %[[PAIRS:[^:]*]]: memref<?x2xi32>, %{{[^:]*}}: memref<?xi8>) -> i32 {
// CHECK: %[[COUNT:.*]] = memref.dim %[[PAIRS]]
// CHECK: %[[PAGES:.*]] = kvcache.num_pages %[[C]]
// CHECK: scf.for
// CHECK: memref.load %[[PAIRS]]
// CHECK: arith.cmpi uge, %{{.*}}, %[[PAGES]] : index
// CHECK: %[[MARKS:.*]] = memref.alloc(%[[PAGES]]) : memref<?xi32>
// CHECK: memref.dealloc %[[MARKS]]
// CHECK: return %{{.*}} : i32
func.func @copy(%c: !coll, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %c, %pairs : !coll, memref<?x2xi32>
  return
}

// -----

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// attention_ragged: q, out and lse against the offsets, both caches'
// sequences and pages, then max_seq_length and max_cache_length of the key
// cache.
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("attention: kvcache.attention_ragged at {{.*}}: 'q'{{.*}} has %lld rows, {{.*}}\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("attention: kvcache.attention_ragged at {{.*}}: 'out'{{.*}} has %lld rows, {{.*}}\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("attention: kvcache.attention_ragged at {{.*}}: 'lse'{{.*}} has %lld rows, {{.*}}\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("attention: kvcache.attention_ragged at {{.*}}: max_seq_length of 'key_cache'{{.*}}\00")
// CHECK-LABEL: func.func @kvcache_check_attention(
// CHECK-SAME: %{{[^:]*}}: memref<?x2x4xf32>, %[[K:[^:]*]]: !kvcache.paged_cache<{{.*}}>, %[[V:[^:]*]]: !kvcache.paged_cache<{{.*}}>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?x2x4xf32>, %{{[^:]*}}: memref<?x2xf32>, %{{[^:]*}}: memref<?xi8>) -> i32 {
// CHECK: kvcache.num_sequences %[[K]]
// CHECK: kvcache.capacity %[[K]]
// CHECK: kvcache.lookup %[[K]][%{{.*}}, %{{.*}}] {read_only, unchecked}
// CHECK: kvcache.num_sequences %[[V]]
// CHECK: kvcache.capacity %[[V]]
// CHECK: kvcache.lookup %[[V]][%{{.*}}, %{{.*}}] {read_only, unchecked}
// CHECK: kvcache.max_seq_length %[[K]]
// CHECK: kvcache.max_cache_length %[[K]]
// CHECK: return %{{.*}} : i32
func.func @attention(%q: memref<?x2x4xf32>, %k: !cache, %v: !cache, %offsets: memref<?xi32>,
                     %out: memref<?x2x4xf32>, %lse: memref<?x2xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out lse(%lse) {scale = 0.5 : f32}
      : memref<?x2x4xf32>, !cache, !cache, memref<?xi32>, memref<?x2x4xf32>, memref<?x2xf32>
  return
}

// -----

// merge_states: every row count against out's, and a dynamic head size
// against out's.
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("merge: kvcache.merge_states at {{.*}}: 'out_a'{{.*}} has %lld rows, but 'out'{{.*}} has %lld\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("merge: kvcache.merge_states at {{.*}}: 'lse_b'{{.*}} has %lld rows, but 'out'{{.*}} has %lld\00")
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}("merge: kvcache.merge_states at {{.*}}: 'out_b'{{.*}} has head_size %lld (dim 2), but 'out'{{.*}} has %lld\00")
// CHECK-LABEL: func.func @kvcache_check_merge(
// CHECK-SAME: %[[A:[^:]*]]: memref<?x2x?xf32>, %[[LA:[^:]*]]: memref<?x2xf32>, %[[B:[^:]*]]: memref<?x2x?xf32>, %[[LB:[^:]*]]: memref<?x2xf32>, %[[OUT:[^:]*]]: memref<?x2x?xf32>, %{{[^:]*}}: memref<?xi8>) -> i32 {
// CHECK-DAG: memref.dim %[[OUT]], %{{.*}}
// CHECK-DAG: memref.dim %[[A]], %{{.*}}
// CHECK-DAG: memref.dim %[[LB]], %{{.*}}
// CHECK: return %{{.*}} : i32
func.func @merge(%a: memref<?x2x?xf32>, %la: memref<?x2xf32>, %b: memref<?x2x?xf32>, %lb: memref<?x2xf32>,
                 %out: memref<?x2x?xf32>) {
  kvcache.merge_states %a, %la, %b, %lb, %out
      : memref<?x2x?xf32>, memref<?x2xf32>, memref<?x2x?xf32>, memref<?x2xf32>, memref<?x2x?xf32>
  return
}

// -----

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// An operand computed inside F (a call result): the routine does not check
// the op (it returns 0 for it); with checked=true the op is checked in
// place, after the call and before the op, with F's own message buffer.
// CHECK-LABEL: func.func @computed(
// CHECK-NEXT: call @make_offsets
// CHECK-NEXT: kvcache.store_ragged
// CHECK-LABEL: func.func @kvcache_check_computed(
// CHECK-SAME: -> i32 {
// CHECK-NOT: kvcache.
// CHECK-NOT: llvm.call
// CHECK: return %{{.*}} : i32
// CHECKED-LABEL: func.func @computed(
// CHECKED: %[[BUFFER:.*]] = memref.alloca() : memref<1024xi8>
// CHECKED: %[[MESSAGE:.*]] = memref.cast %[[BUFFER]]
// CHECKED: %[[FLAG:.*]] = memref.alloca() : memref<i1>
// CHECKED: call @kvcache_check_computed(%{{.*}}, %{{.*}}, %[[MESSAGE]])
// The flag is cleared once, after the entry call, never before a check.
// CHECKED: memref.store %false, %[[FLAG]][] : memref<i1>
// CHECKED-NOT: memref.store %false
// CHECKED: %[[OFFSETS:.*]] = call @make_offsets() : () -> memref<?xi32>
// The call's callee may have failed in capture mode: leave.
// CHECKED: llvm.mlir.addressof @__kvcache_check_message
// CHECKED: cf.cond_br
// CHECKED-NOT: memref.store %false
// CHECKED: memref.dim %[[OFFSETS]]
// CHECKED: kvcache.num_sequences
// CHECKED: func.call @__kvcache_check_fail(
// CHECKED: kvcache.store_ragged %{{.*}}, %{{.*}}, %[[OFFSETS]]
// CHECKED: return
func.func private @make_offsets() -> memref<?xi32>

func.func @computed(%k: !cache, %new: memref<?x1x4xf32>) {
  %offsets = func.call @make_offsets() : () -> memref<?xi32>
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}

// -----

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// A kernel op after another write is not in the routine (its checks could
// read what the write changes): only in checked mode, in place.
// CHECK-LABEL: func.func @kvcache_check_after_write(
// CHECK-SAME: -> i32 {
// CHECK-NOT: kvcache.
// CHECK: return
// CHECKED-LABEL: func.func @after_write(
// CHECKED: call @kvcache_check_after_write
// CHECKED: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<?xi32>
// CHECKED: kvcache.num_sequences
// CHECKED: kvcache.store_ragged
func.func @after_write(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i32
  memref.store %zero, %offsets[%c0] : memref<?xi32>
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}

// -----

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 4>

// A private function gets no routine; with checked=true its ops are checked
// in place (and the module gets the runtime of checked mode). A function
// without kernel ops gets nothing.
// CHECK-NOT: @kvcache_check_
// CHECKED-LABEL: func.func private @helper(
// CHECKED-NOT: call @kvcache_check_helper
// CHECKED: kvcache.num_sequences
// CHECKED: kvcache.store_ragged
// CHECKED-LABEL: func.func @no_kernel_ops(
// CHECKED-NEXT: kvcache.cache_length
// CHECKED-NEXT: return
// CHECKED-NOT: func.func @kvcache_check_helper
// CHECKED-NOT: func.func @kvcache_check_no_kernel_ops
func.func private @helper(%k: !cache, %new: memref<?x1x4xf32>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x4xf32>, memref<?xi32>
  return
}

func.func @no_kernel_ops(%k: !cache, %b: index) -> index {
  %n = kvcache.cache_length %k[%b] : !cache
  return %n : index
}
