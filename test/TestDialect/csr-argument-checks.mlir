// RUN: sed -n '1,/^\/\/ -----/p' %s | kvcache-opt -convert-kvcache-to-memref -cse | FileCheck %s --check-prefix=HOOKS
// RUN: kvcache-opt %s -split-input-file -kvcache-generate-argument-checks | FileCheck %s --check-prefix=ROUTINE
// RUN: sed -n '/^\/\/ EXECUTED/,$p' %s > %t.input.mlir
// RUN: kvcache-opt %t.input.mlir -kvcache-to-cpu \
// RUN: | sed -e '/llvm.func @check_/d' -e 's/@check_/@kvcache_check_/g' > %t.mlir
// RUN: mlir-runner %t.mlir -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \
// RUN: | FileCheck %s --check-prefix=STATUS

// The argument checks of a kind that is not the dialect's: the CSR kind of
// test_kv implements the sequence hooks (docs/Contract.md, section 2.1), so
// kvcache.num_sequences and kvcache.capacity lower through them and the
// check routines check its sequences like a paged cache's:
//   num_sequences = min(size(kv_indptr) - 1, size(cache_lengths)),
//   capacity(b) = min(kv_indptr[b+1] - kv_indptr[b],
//                     size(kv_indices) - kv_indptr[b]) * page_size
// (differences clamped at 0).

!collection = !test_kv.csr_collection<f32, num_heads = 1, head_size = 2, page_size = 2>

// HOOKS-LABEL: func.func @queries
// HOOKS-SAME: (%{{[^:]*}}: memref<{{.*}}>, %[[INDPTR:[^:]*]]: memref<?xi32>, %[[INDICES:[^:]*]]: memref<?xi32>, %[[LENGTHS:[^:]*]]: memref<?xi32>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %[[B:[^:]*]]: index)
// HOOKS-DAG: %[[C0:.*]] = arith.constant 0 : index
// HOOKS-DAG: %[[C1:.*]] = arith.constant 1 : index
// HOOKS: %[[ENTRIES:.*]] = memref.dim %[[INDPTR]], %[[C0]]
// HOOKS: %[[CLAMP:.*]] = arith.minui %[[ENTRIES]], %[[C1]]
// HOOKS: %[[SEQUENCES:.*]] = arith.subi %[[ENTRIES]], %[[CLAMP]]
// HOOKS: %[[NUM_LENGTHS:.*]] = memref.dim %[[LENGTHS]], %[[C0]]
// HOOKS: %[[N:.*]] = arith.minui %[[SEQUENCES]], %[[NUM_LENGTHS]]
// HOOKS: %[[NEXT:.*]] = arith.addi %[[B]], %[[C1]]
// HOOKS: %[[FIRST32:.*]] = memref.load %[[INDPTR]][%[[B]]]
// HOOKS: %[[FIRST:.*]] = arith.index_castui %[[FIRST32]]
// HOOKS: %[[END32:.*]] = memref.load %[[INDPTR]][%[[NEXT]]]
// HOOKS: %[[END:.*]] = arith.index_castui %[[END32]]
// HOOKS: %[[M1:.*]] = arith.minui %[[END]], %[[FIRST]]
// HOOKS: %[[OWNED:.*]] = arith.subi %[[END]], %[[M1]]
// HOOKS: %[[SIZE:.*]] = memref.dim %[[INDICES]], %[[C0]]
// HOOKS: %[[M2:.*]] = arith.minui %[[SIZE]], %[[FIRST]]
// HOOKS: %[[HELD:.*]] = arith.subi %[[SIZE]], %[[M2]]
// HOOKS: %[[PAGES:.*]] = arith.minui %[[OWNED]], %[[HELD]]
// HOOKS: %[[C2:.*]] = arith.constant 2 : index
// HOOKS: %[[T:.*]] = arith.muli %[[PAGES]], %[[C2]]
// HOOKS: return %[[N]], %[[T]] : index, index
func.func @queries(%c: !collection, %b: index) -> (index, index) {
  %n = kvcache.num_sequences %c : !collection
  %t = kvcache.capacity %c[%b] : !collection
  return %n, %t : index, index
}

// -----

!cache = !test_kv.csr_cache<f32, num_heads = 1, head_size = 2, page_size = 2>

// ROUTINE-LABEL: func.func @kvcache_check_append(
// ROUTINE-SAME: %[[K:[^:]*]]: !test_kv.csr_cache<f32, num_heads = 1, head_size = 2, page_size = 2>
// ROUTINE: kvcache.num_sequences %[[K]] : !test_kv.csr_cache
// ROUTINE: kvcache.cache_length %[[K]]
// ROUTINE: kvcache.capacity %[[K]]
// ROUTINE: kvcache.lookup %[[K]][%{{.*}}, %{{.*}}] {read_only, unchecked} : !test_kv.csr_cache
// ROUTINE: return %{{.*}} : i32
func.func @append(%k: !cache, %new: memref<?x1x2xf32>, %offsets: memref<?xi32>) {
  kvcache.store_ragged %k, %new, %offsets : !cache, memref<?x1x2xf32>, memref<?xi32>
  return
}

// -----

// EXECUTED: what the last RUN lines run. A CSR cache of 4 pages of 2
// tokens: kv_indptr [1, 3, 4] and kv_indices [3, 2, 0, 1] give sequence 0
// the pages (2, 0) and sequence 1 the page (1), 4 and 2 positions;
// cache_lengths [3, 1]. @main calls the routine of @store (each call a line,
// as in test/Integration/CPU/argument-checks.mlir, which also says how
// @check_store is linked).

!collection = !test_kv.csr_collection<f32, num_heads = 1, head_size = 2, page_size = 2>
!cache = !test_kv.csr_cache<f32, num_heads = 1, head_size = 2, page_size = 2>
!blocks = memref<?x2x?x2x1x2xf32>
!rows = memref<?x1x2xf32>
!i32s = memref<?xi32>

func.func @store(%blocks: !blocks, %indptr: !i32s, %indices: !i32s, %lengths: !i32s, %new: !rows, %offsets: !i32s) {
  %max = arith.constant 8 : i32
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %max, %max
      : !blocks, !i32s, !i32s, !i32s -> !collection
  %layer = arith.constant 0 : index
  %k = kvcache.get_key_cache %c[%layer] : !collection
  kvcache.store_ragged %k, %new, %offsets : !cache, !rows, !i32s
  return
}

func.func private @check_store(!blocks, !i32s, !i32s, !i32s, !rows, !i32s, memref<?xi8>) -> i32

memref.global "private" constant @kv_indptr : memref<3xi32> = dense<[1, 3, 4]>
memref.global "private" constant @one_sequence : memref<2xi32> = dense<[1, 3]>
memref.global "private" constant @kv_indices : memref<4xi32> = dense<[3, 2, 0, 1]>
memref.global "private" constant @bad_page : memref<4xi32> = dense<[3, 2, 4, 1]>
memref.global "private" constant @short_indices : memref<3xi32> = dense<[3, 2, 0]>
memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[3, 1]>
memref.global "private" constant @one_row_each : memref<3xi32> = dense<[0, 1, 2]>
memref.global "private" constant @two_rows_first : memref<3xi32> = dense<[0, 2, 3]>

llvm.mlir.global internal constant @status_format("status %d: %s\0A\00") {addr_space = 0 : i32}
llvm.func @printf(!llvm.ptr, ...) -> i32

func.func private @run(%indptr: !i32s, %indices: !i32s, %offsets: !i32s) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %storage = memref.alloc(%c4, %c2) : memref<?x2x?x2x1x2xf32>
  %new = memref.alloc(%c3) : !rows
  %lengths_global = memref.get_global @cache_lengths : memref<2xi32>
  %lengths = memref.cast %lengths_global : memref<2xi32> to !i32s
  %message = memref.alloc(%c1024) : memref<?xi8>
  %nul = arith.constant 0 : i8
  memref.store %nul, %message[%c0] : memref<?xi8>
  %status = call @check_store(%storage, %indptr, %indices, %lengths, %new, %offsets, %message)
      : (!blocks, !i32s, !i32s, !i32s, !rows, !i32s, memref<?xi8>) -> i32
  %base = memref.extract_aligned_pointer_as_index %message : memref<?xi8> -> index
  %base64 = arith.index_cast %base : index to i64
  %text = llvm.inttoptr %base64 : i64 to !llvm.ptr
  %format = llvm.mlir.addressof @status_format : !llvm.ptr
  %r = llvm.call @printf(%format, %status, %text) vararg(!llvm.func<i32 (ptr, ...)>) : (!llvm.ptr, i32, !llvm.ptr) -> i32
  return
}

// STATUS: status 0: {{$}}
// STATUS-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: sequence 0 needs 5 token positions ({{.*}}3 + 2 rows), but 'cache'{{.*}} holds 4 ({{.*}}kvcache.capacity){{$}}
// STATUS-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: 'row_offsets'{{.*}} describes 2 sequences, but 'cache'{{.*}} has 1 ({{.*}}kvcache.num_sequences){{$}}
// STATUS-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: token 3 of sequence 0 is on page 4 {{.*}}'cache'{{.*}}, but num_pages is 4{{$}}
// STATUS-NEXT: status 1: store: kvcache.store_ragged at {{.*}}: sequence 1 needs 2 token positions ({{.*}}1 + 1 rows), but 'cache'{{.*}} holds 0 ({{.*}}kvcache.capacity){{$}}
func.func @main() {
  %indptr_global = memref.get_global @kv_indptr : memref<3xi32>
  %indptr = memref.cast %indptr_global : memref<3xi32> to !i32s
  %one_global = memref.get_global @one_sequence : memref<2xi32>
  %one = memref.cast %one_global : memref<2xi32> to !i32s
  %indices_global = memref.get_global @kv_indices : memref<4xi32>
  %indices = memref.cast %indices_global : memref<4xi32> to !i32s
  %bad_global = memref.get_global @bad_page : memref<4xi32>
  %bad = memref.cast %bad_global : memref<4xi32> to !i32s
  %short_global = memref.get_global @short_indices : memref<3xi32>
  %short = memref.cast %short_global : memref<3xi32> to !i32s
  %each_global = memref.get_global @one_row_each : memref<3xi32>
  %each = memref.cast %each_global : memref<3xi32> to !i32s
  %first_global = memref.get_global @two_rows_first : memref<3xi32>
  %first = memref.cast %first_global : memref<3xi32> to !i32s
  call @run(%indptr, %indices, %each) : (!i32s, !i32s, !i32s) -> ()
  call @run(%indptr, %indices, %first) : (!i32s, !i32s, !i32s) -> ()
  call @run(%one, %indices, %each) : (!i32s, !i32s, !i32s) -> ()
  call @run(%indptr, %bad, %each) : (!i32s, !i32s, !i32s) -> ()
  call @run(%indptr, %short, %each) : (!i32s, !i32s, !i32s) -> ()
  return
}
