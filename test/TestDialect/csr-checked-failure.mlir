// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true -o %t.cpu.mlir
// RUN: mlir-runner %t.cpu.mlir -e valid -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s --check-prefix=VALID
// With checked=true the kernel ops' argument checks stop each bad call
// first, through the kind's num_sequences and capacity hooks (ARGS); the
// lookup hook's own checks stop the same bad metadata read by a
// kvcache.lookup written in the IR (@lookup_*).
// RUN: not --crash mlir-runner %t.cpu.mlir -e bad_page -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 | FileCheck %s --check-prefix=ARGS-PAGE
// RUN: not --crash mlir-runner %t.cpu.mlir -e past_indices -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 | FileCheck %s --check-prefix=ARGS-INDICES
// RUN: not --crash mlir-runner %t.cpu.mlir -e past_pages -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 | FileCheck %s --check-prefix=ARGS-PAGES
// RUN: not --crash mlir-runner %t.cpu.mlir -e bad_batch -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 | FileCheck %s --check-prefix=ARGS-BATCH
// RUN: not --crash mlir-runner %t.cpu.mlir -e lookup_bad_page -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 | FileCheck %s --check-prefix=CPU-PAGE
// RUN: not --crash mlir-runner %t.cpu.mlir -e lookup_past_indices -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 | FileCheck %s --check-prefix=CPU-INDICES
// RUN: not --crash mlir-runner %t.cpu.mlir -e lookup_bad_batch -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 | FileCheck %s --check-prefix=CPU-BATCH

// Without checked=true the writes of an assert_write_mode = 1 cache are
// still checked (@past_pages).
// RUN: kvcache-opt %s -kvcache-to-cpu -o %t.unchecked.mlir
// RUN: mlir-runner %t.unchecked.mlir -e valid -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils | FileCheck %s --check-prefix=VALID
// RUN: not --crash mlir-runner %t.unchecked.mlir -e past_pages -entry-point-result=void \
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils 2>&1 | FileCheck %s --check-prefix=CPU-PAGES

// The same on the emulated GPU: with checked=true the argument checks on the
// host, before any launch; without it the writes of the assert_write_mode
// cache stop at a device assert with the check's text.
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu=checked=true -o %t.gpu.mlir
// RUN: %emu_run %t.gpu.mlir -e valid | FileCheck %s --check-prefix=VALID
// RUN: not --crash %emu_run %t.gpu.mlir -e bad_page 2>&1 | FileCheck %s --check-prefix=ARGS-PAGE
// RUN: not --crash %emu_run %t.gpu.mlir -e past_indices 2>&1 | FileCheck %s --check-prefix=ARGS-INDICES
// RUN: not --crash %emu_run %t.gpu.mlir -e past_pages 2>&1 | FileCheck %s --check-prefix=ARGS-PAGES
// RUN: not --crash %emu_run %t.gpu.mlir -e bad_batch 2>&1 | FileCheck %s --check-prefix=ARGS-BATCH
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.gpu.unchecked.mlir
// RUN: env KVCACHE_EMU_ORDER=reverse not --crash %emu_run %t.gpu.unchecked.mlir -e past_pages 2>&1 | FileCheck %s --check-prefix=GPU-PAGES

// Run-time checks of the CSR kind's lookup hook (test/lib), which
// convert-kvcache-to-memref calls with its checker: a kv_indices entry that
// is not a page, a kv_indptr that points past kv_indices, a token past the
// pages its sequence owns, a sequence kv_indptr does not have. One collection of 4 pages of 4 tokens, one head
// of 4 f32; sequence 0 owns kv_indices[1, 2) = page 2, sequence 1 owns
// kv_indices[2, 3) = page 1.

// VALID: ( 2, 3, 4, 5 )
// VALID-NEXT: ( 1, 2, 3, 4 )
// VALID-NOT: check failed

// CPU-PAGE: kvcache run-time check failed: kvcache.lookup at {{.*}}csr-checked-failure.mlir:{{[0-9]+}}:{{[0-9]+}}: physical page (kv_indices entry) 7 is out of range: num_pages is 4
// CPU-INDICES: kvcache run-time check failed: kvcache.lookup at {{.*}}: kv_indices position (kv_indptr[b] + token / page_size) 5 is out of range: the size of kv_indices is 3
// CPU-BATCH: kvcache run-time check failed: kvcache.lookup at {{.*}}: batch index 2 is out of range: the size of kv_indptr - 1 (the batch) is 2
// CPU-PAGES: kvcache run-time check failed: kvcache.store_ragged (kvcache.lookup) at {{.*}}: logical page (token / page_size) 1 is out of range: the sequence's pages (kv_indptr[b+1] - kv_indptr[b]) is 1

// ARGS-PAGE: kvcache run-time check failed: gather_rows: kvcache.gather_ragged at {{.*}}csr-checked-failure.mlir:{{[0-9]+}}:3: token 0 of sequence 1 is on page 7 (the page table of 'cache'), but num_pages is 4
// ARGS-INDICES: kvcache run-time check failed: gather_rows: kvcache.gather_ragged at {{.*}}: sequence 1 needs 1 token positions (its rows in ctx_offsets), but 'cache' holds 0 (its capacity: kvcache.capacity)
// ARGS-PAGES: kvcache run-time check failed: past_pages: kvcache.store_ragged at {{.*}}: sequence 0 needs 6 token positions (cache_lengths[0] = 1 + 5 rows), but 'cache' holds 4 (its capacity: kvcache.capacity)
// ARGS-BATCH: kvcache run-time check failed: gather_rows: kvcache.gather_ragged at {{.*}}: 'ctx_offsets' (function argument 2) describes 3 sequences, but 'cache' has 2 (the sequences of its metadata: kvcache.num_sequences)
// GPU-PAGES: Assertion `kvcache run-time check failed: kvcache.store_ragged (kvcache.lookup) at {{.*}}: logical page (token / page_size) is out of range (must be below the sequence's pages (kv_indptr[b+1] - kv_indptr[b]))` failed.

!blocks = memref<?x2x?x4x1x4xf32>
!collection = !test_kv.csr_collection<f32, num_heads = 1, head_size = 4, page_size = 4>
!cache = !test_kv.csr_cache<f32, num_heads = 1, head_size = 4, page_size = 4>
!writes = !test_kv.csr_collection<f32, num_heads = 1, head_size = 4, page_size = 4, assert_write_mode = 1>
!write_cache = !test_kv.csr_cache<f32, num_heads = 1, head_size = 4, page_size = 4, assert_write_mode = 1>
!rows = memref<?x1x4xf32>

memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[1, 1]>
memref.global "private" constant @kv_indptr : memref<3xi32> = dense<[1, 2, 3]>
memref.global "private" constant @kv_indptr_past : memref<3xi32> = dense<[1, 5, 6]>
memref.global "private" constant @kv_indices : memref<3xi32> = dense<[0, 2, 1]>
memref.global "private" constant @kv_indices_bad : memref<3xi32> = dense<[0, 2, 7]>
memref.global "private" constant @one_row_each : memref<3xi32> = dense<[0, 1, 2]>
memref.global "private" constant @three_sequences : memref<4xi32> = dense<[0, 1, 2, 3]>
memref.global "private" constant @five_rows : memref<3xi32> = dense<[0, 5, 5]>

// blocks[p, kv, 0, s, 0, d] = p + s + d, in a fresh allocation.
func.func @make_blocks() -> !blocks {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %storage = memref.alloc() {alignment = 64 : i64} : memref<4x2x1x4x1x4xf32>
  scf.for %p = %c0 to %c4 step %c1 {
    scf.for %s = %c0 to %c4 step %c1 {
      scf.for %d = %c0 to %c4 step %c1 {
        %ps = arith.addi %p, %s : index
        %psd = arith.addi %ps, %d : index
        %i = arith.index_cast %psd : index to i32
        %x = arith.sitofp %i : i32 to f32
        memref.store %x, %storage[%p, %c0, %c0, %s, %c0, %d] : memref<4x2x1x4x1x4xf32>
        memref.store %x, %storage[%p, %c1, %c0, %s, %c0, %d] : memref<4x2x1x4x1x4xf32>
      }
    }
  }
  %blocks = memref.cast %storage : memref<4x2x1x4x1x4xf32> to !blocks
  return %blocks : !blocks
}

func.func @vector(%name: memref<3xi32>) -> memref<?xi32> {
  %cast = memref.cast %name : memref<3xi32> to memref<?xi32>
  return %cast : memref<?xi32>
}

// Gathers token 0 of each sequence of `offsets` from K of layer 0 and
// prints the rows.
func.func @gather_rows(%indptr_global: memref<3xi32>, %indices_global: memref<3xi32>,
                       %offsets: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i32
  %blocks = call @make_blocks() : () -> !blocks
  %lengths_global = memref.get_global @cache_lengths : memref<2xi32>
  %lengths = memref.cast %lengths_global : memref<2xi32> to memref<?xi32>
  %indptr = call @vector(%indptr_global) : (memref<3xi32>) -> memref<?xi32>
  %indices = call @vector(%indices_global) : (memref<3xi32>) -> memref<?xi32>
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %one, %one
      : !blocks, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  %k = kvcache.get_key_cache %c[%c0] : !collection
  %last = memref.dim %offsets, %c0 : memref<?xi32>
  %rows = arith.subi %last, %c1 : index
  %out = memref.alloc(%rows) {alignment = 64 : i64} : !rows
  kvcache.gather_ragged %k, %out, %offsets : !cache, !rows, memref<?xi32>
  scf.for %r = %c0 to %rows step %c1 {
    %row = vector.load %out[%r, %c0, %c0] : !rows, vector<4xf32>
    vector.print %row : vector<4xf32>
  }
  memref.dealloc %out : !rows
  memref.dealloc %blocks : !blocks
  return
}

// Token 0 of both sequences.
func.func @gather(%indptr: memref<3xi32>, %indices: memref<3xi32>) {
  %offsets_global = memref.get_global @one_row_each : memref<3xi32>
  %offsets = call @vector(%offsets_global) : (memref<3xi32>) -> memref<?xi32>
  call @gather_rows(%indptr, %indices, %offsets) : (memref<3xi32>, memref<3xi32>, memref<?xi32>) -> ()
  return
}

// Sequence 0 is token 0 of page 2, sequence 1 token 0 of page 1.
func.func @valid() {
  %indptr = memref.get_global @kv_indptr : memref<3xi32>
  %indices = memref.get_global @kv_indices : memref<3xi32>
  call @gather(%indptr, %indices) : (memref<3xi32>, memref<3xi32>) -> ()
  return
}

// Sequence 1's page is 7: there are 4.
func.func @bad_page() {
  %indptr = memref.get_global @kv_indptr : memref<3xi32>
  %indices = memref.get_global @kv_indices_bad : memref<3xi32>
  call @gather(%indptr, %indices) : (memref<3xi32>, memref<3xi32>) -> ()
  return
}

// Sequence 1 owns kv_indices[5, 6), past the 3 entries.
func.func @past_indices() {
  %indptr = memref.get_global @kv_indptr_past : memref<3xi32>
  %indices = memref.get_global @kv_indices : memref<3xi32>
  call @gather(%indptr, %indices) : (memref<3xi32>, memref<3xi32>) -> ()
  return
}

// A third sequence: kv_indptr has two.
func.func @bad_batch() {
  %indptr = memref.get_global @kv_indptr : memref<3xi32>
  %indices = memref.get_global @kv_indices : memref<3xi32>
  %offsets_global = memref.get_global @three_sequences : memref<4xi32>
  %offsets = memref.cast %offsets_global : memref<4xi32> to memref<?xi32>
  call @gather_rows(%indptr, %indices, %offsets) : (memref<3xi32>, memref<3xi32>, memref<?xi32>) -> ()
  return
}

// Five new rows for sequence 0 (cache length 1): tokens 1..5, but it owns
// one page of 4 tokens. The cache checks its writes (assert_write_mode = 1).
func.func @past_pages() {
  %c0 = arith.constant 0 : index
  %six = arith.constant 6 : i32
  %blocks = call @make_blocks() : () -> !blocks
  %lengths_global = memref.get_global @cache_lengths : memref<2xi32>
  %lengths = memref.cast %lengths_global : memref<2xi32> to memref<?xi32>
  %indptr_global = memref.get_global @kv_indptr : memref<3xi32>
  %indptr = call @vector(%indptr_global) : (memref<3xi32>) -> memref<?xi32>
  %indices_global = memref.get_global @kv_indices : memref<3xi32>
  %indices = call @vector(%indices_global) : (memref<3xi32>) -> memref<?xi32>
  %offsets_global = memref.get_global @five_rows : memref<3xi32>
  %offsets = call @vector(%offsets_global) : (memref<3xi32>) -> memref<?xi32>
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %six, %six
      : !blocks, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !writes
  %k = kvcache.get_key_cache %c[%c0] : !writes
  %new_alloc = memref.alloc() {alignment = 64 : i64} : memref<5x1x4xf32>
  %new = memref.cast %new_alloc : memref<5x1x4xf32> to !rows
  kvcache.store_ragged %k, %new, %offsets : !write_cache, !rows, memref<?xi32>
  return
}

// Token 0 of sequence `b` through a kvcache.lookup written in the IR (no
// argument checks: the lookup hook checks it), printing the page.
func.func @lookup_token0(%indptr_global: memref<3xi32>, %indices_global: memref<3xi32>,
                         %b: index) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %blocks = call @make_blocks() : () -> !blocks
  %lengths_global = memref.get_global @cache_lengths : memref<2xi32>
  %lengths = memref.cast %lengths_global : memref<2xi32> to memref<?xi32>
  %indptr = call @vector(%indptr_global) : (memref<3xi32>) -> memref<?xi32>
  %indices = call @vector(%indices_global) : (memref<3xi32>) -> memref<?xi32>
  %c = test_kv.csr_collection %blocks, %indptr, %indices, %lengths, %one, %one
      : !blocks, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection
  %k = kvcache.get_key_cache %c[%c0] : !collection
  %page, %slot = kvcache.lookup %k[%b, %c0] : !cache
  vector.print %page : index
  memref.dealloc %blocks : !blocks
  return
}

func.func @lookup_bad_page() {
  %c1 = arith.constant 1 : index
  %indptr = memref.get_global @kv_indptr : memref<3xi32>
  %indices = memref.get_global @kv_indices_bad : memref<3xi32>
  call @lookup_token0(%indptr, %indices, %c1) : (memref<3xi32>, memref<3xi32>, index) -> ()
  return
}

func.func @lookup_past_indices() {
  %c1 = arith.constant 1 : index
  %indptr = memref.get_global @kv_indptr_past : memref<3xi32>
  %indices = memref.get_global @kv_indices : memref<3xi32>
  call @lookup_token0(%indptr, %indices, %c1) : (memref<3xi32>, memref<3xi32>, index) -> ()
  return
}

func.func @lookup_bad_batch() {
  %c2 = arith.constant 2 : index
  %indptr = memref.get_global @kv_indptr : memref<3xi32>
  %indices = memref.get_global @kv_indices : memref<3xi32>
  call @lookup_token0(%indptr, %indices, %c2) : (memref<3xi32>, memref<3xi32>, index) -> ()
  return
}
