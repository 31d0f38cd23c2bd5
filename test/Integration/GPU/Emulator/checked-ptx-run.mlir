// Execution twin of test/Integration/GPU/checked-ptx.mlir: its three kernels
// (read_keys and write_keys on a plain cache, copy_checked on an
// assert_write_mode = 1 cache), copied verbatim (the first RUN lines check
// that they still are), run on the emulated GPU, built without and with
// checked=true as the PTX test compiles them. f16 cache of 8 pages x 2 layers
// (16 tokens of 8 heads x 128), page 0 the null page, three sequences whose
// pages are out of order: [3, 7, 5], [6, 2, 0], [1, 4, 0]. @main reads 23
// tokens of K, writes 35 tokens of V, copies 19 tokens of K to V and the 35
// new V rows to K of another layer through copy_checked, reads them back and
// prints all of blocks; Inputs/twin_reference.py recomputes every printed
// buffer from the fill formula. Both builds, in three orders, give it.
//
// Planted errors: @bad_read reads through a lookup-table entry equal to
// num_pages (8): the checked build stops at read_keys' device assert.
// @bad_write copies into a collection whose table has that entry: every
// build stops at copy_checked's device assert (assert_write_mode = 1 checks
// the lookup of every store).

// RUN: sed -n '/^  gpu.module/,/^  }$/p' %S/../checked-ptx.mlir | grep -v '^ *//' > %t.original
// RUN: sed -n '/^  gpu.module/,/^  }$/p' %s | grep -v '^ *//' > %t.twin
// RUN: diff %t.original %t.twin
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.mlir
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu=checked=true -o %t.checked.mlir
// RUN: %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py checked-ptx | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py checked-ptx | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=random:17 %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py checked-ptx | FileCheck %s
// RUN: %emu_run %t.checked.mlir -e main | %python %S/Inputs/twin_reference.py checked-ptx | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.checked.mlir -e main | %python %S/Inputs/twin_reference.py checked-ptx | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=random:17 %emu_run %t.checked.mlir -e main | %python %S/Inputs/twin_reference.py checked-ptx | FileCheck %s
// RUN: not --crash %emu_run %t.checked.mlir -e bad_read 2>&1 | FileCheck %s --check-prefix=BAD-READ
// RUN: env KVCACHE_EMU_ORDER=reverse not --crash %emu_run %t.mlir -e bad_write 2>&1 | FileCheck %s --check-prefix=BAD-WRITE
// RUN: env KVCACHE_EMU_ORDER=random:17 not --crash %emu_run %t.checked.mlir -e bad_write 2>&1 | FileCheck %s --check-prefix=BAD-WRITE

// CHECK-NOT: MISMATCH
// CHECK: OK 3 buffers 583680 values

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!checked_cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>
!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!checked_collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16, assert_write_mode = 1>
!storage = memref<8x2x2x16x8x128xf16>
!blocks = memref<?x2x?x16x8x128xf16>
!rows = memref<?x8x128xf16>

module attributes {gpu.container_module} {
  memref.global "private" constant @lookup_table : memref<3x3xi32> = dense<[[3, 7, 5], [6, 2, 0], [1, 4, 0]]>
  // Logical page 1 of sequence 1 (tokens 16..31) is page 8: out of range.
  memref.global "private" constant @bad_lookup_table : memref<3x3xi32> = dense<[[3, 7, 5], [6, 8, 0], [1, 4, 0]]>
  memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[35, 23, 19]>

  gpu.module @kernels {
    gpu.func @read_keys(%cache: !cache, %batch: index, %out: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      // Forward order: the first thread of block 16 (token 16) fails first.
      // BAD-READ: checked-ptx-run.mlir:[[# @LINE + 2]]: kvcache.load: block: [16,0,0], thread: [0,0,0] Assertion `kvcache run-time check failed: kvcache.load (kvcache.lookup) at {{.*}}checked-ptx-run.mlir:[[# @LINE + 2]]:15: physical page (lookup_table entry) is out of range (must be below num_pages)` failed.
      // BAD-READ-NOT: kvcache
      %keys = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      vector.store %keys, %out[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      gpu.return
    }

    gpu.func @write_keys(%cache: !cache, %batch: index, %new: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = vector.load %new[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      kvcache.store %keys, %cache[%batch, %head, %token, %element] : !cache, vector<8xf16>
      gpu.return
    }

    gpu.func @copy_checked(%src: !checked_cache, %dst: !checked_cache, %batch: index) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.load %src[%batch, %head, %token, %element] : !checked_cache -> vector<8xf16>
      // Some thread of a block 16..22 (tokens on logical page 1) fails first.
      // BAD-WRITE: checked-ptx-run.mlir:[[# @LINE + 2]]: kvcache.store: block: [{{1[6-9]|2[0-2]}},0,0], thread: [{{[0-9]+}},{{[0-7]}},0] Assertion `kvcache run-time check failed: kvcache.store (kvcache.lookup) at {{.*}}checked-ptx-run.mlir:[[# @LINE + 2]]:7: physical page (lookup_table entry) is out of range (must be below num_pages)` failed.
      // BAD-WRITE-NOT: kvcache
      kvcache.store %keys, %dst[%batch, %head, %token, %element] : !checked_cache, vector<8xf16>
      gpu.return
    }
  }

  // buf[i] = ((i + seed) * 7919) mod 4093 - 2046: integers in [-2046, 2046],
  // exact in f16.
  func.func @fill(%buf: memref<?xf16>, %seed: i64) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %mul = arith.constant 7919 : i64
    %mod = arith.constant 4093 : i64
    %sub = arith.constant 2046 : i64
    %n = memref.dim %buf, %c0 : memref<?xf16>
    scf.for %i = %c0 to %n step %c1 {
      %i64 = arith.index_cast %i : index to i64
      %shifted = arith.addi %i64, %seed : i64
      %product = arith.muli %shifted, %mul : i64
      %hash = arith.remui %product, %mod : i64
      %centered = arith.subi %hash, %sub : i64
      %wide = arith.sitofp %centered : i64 to f32
      %value = arith.truncf %wide : f32 to f16
      memref.store %value, %buf[%i] : memref<?xf16>
    }
    return
  }

  // Prints rows of 128 f16 values as f32.
  func.func @print_rows(%rows: memref<?x128xf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %n = memref.dim %rows, %c0 : memref<?x128xf16>
    %wide = memref.alloc(%n) : memref<?x128xf32>
    scf.for %r = %c0 to %n step %c1 {
      scf.for %d = %c0 to %c128 step %c1 {
        %x = memref.load %rows[%r, %d] : memref<?x128xf16>
        %y = arith.extf %x : f16 to f32
        memref.store %y, %wide[%r, %d] : memref<?x128xf32>
      }
    }
    %unranked = memref.cast %wide : memref<?x128xf32> to memref<*xf32>
    call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
    memref.dealloc %wide : memref<?x128xf32>
    return
  }

  // [n, 8, 128] rows, 256-byte aligned, filled with @fill(seed).
  func.func @new_rows(%n: index, %seed: i64) -> !rows {
    %rows = memref.alloc(%n) {alignment = 256 : i64} : !rows
    %flat = memref.collapse_shape %rows [[0, 1, 2]] : !rows into memref<?xf16>
    call @fill(%flat, %seed) : (memref<?xf16>, i64) -> ()
    return %rows : !rows
  }

  // 8 pages x 2 layers filled with @fill(0).
  func.func @new_storage() -> !storage {
    %seed = arith.constant 0 : i64
    %storage = memref.alloc() {alignment = 256 : i64} : !storage
    %flat = memref.collapse_shape %storage [[0, 1, 2, 3, 4, 5]] : !storage into memref<524288xf16>
    %flat_dynamic = memref.cast %flat : memref<524288xf16> to memref<?xf16>
    call @fill(%flat_dynamic, %seed) : (memref<?xf16>, i64) -> ()
    return %storage : !storage
  }

  // A 256-byte aligned copy of a 3 x 3 table.
  func.func @new_table(%global: memref<3x3xi32>) -> memref<?x?xi32> {
    %table = memref.alloc() {alignment = 256 : i64} : memref<3x3xi32>
    memref.copy %global, %table : memref<3x3xi32> to memref<3x3xi32>
    %dynamic = memref.cast %table : memref<3x3xi32> to memref<?x?xi32>
    return %dynamic : memref<?x?xi32>
  }

  func.func @new_lengths() -> memref<?xi32> {
    %global = memref.get_global @cache_lengths : memref<3xi32>
    %lengths = memref.alloc() {alignment = 256 : i64} : memref<3xi32>
    memref.copy %global, %lengths : memref<3xi32> to memref<3xi32>
    %dynamic = memref.cast %lengths : memref<3xi32> to memref<?xi32>
    return %dynamic : memref<?xi32>
  }

  // read_keys on tokens 0 .. n-1 of sequence `batch` (n blocks of 16 x 8
  // threads); prints out[n, 8, 128] (prefilled with @fill(100), all of it
  // overwritten).
  func.func @run_read_keys(%cache: !cache, %batch: index, %n: index) {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %seed = arith.constant 100 : i64
    %out = call @new_rows(%n, %seed) : (index, i64) -> !rows
    gpu.launch_func @kernels::@read_keys blocks in (%n, %c1, %c1) threads in (%c16, %c8, %c1)
        args(%cache : !cache, %batch : index, %out : !rows)
    %flat = memref.collapse_shape %out [[0, 1], [2]] : !rows into memref<?x128xf16>
    call @print_rows(%flat) : (memref<?x128xf16>) -> ()
    memref.dealloc %out : !rows
    return
  }

  // write_keys of n new rows @fill(seed) to tokens 0 .. n-1 of `batch`.
  func.func @run_write_keys(%cache: !cache, %batch: index, %n: index, %seed: i64) {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %new = call @new_rows(%n, %seed) : (index, i64) -> !rows
    gpu.launch_func @kernels::@write_keys blocks in (%n, %c1, %c1) threads in (%c16, %c8, %c1)
        args(%cache : !cache, %batch : index, %new : !rows)
    memref.dealloc %new : !rows
    return
  }

  // copy_checked of tokens 0 .. n-1 of `batch` from `src` to `dst`.
  func.func @run_copy_checked(%src: !checked_cache, %dst: !checked_cache, %batch: index, %n: index) {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    gpu.launch_func @kernels::@copy_checked blocks in (%n, %c1, %c1) threads in (%c16, %c8, %c1)
        args(%src : !checked_cache, %dst : !checked_cache, %batch : index)
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c19 = arith.constant 19 : index
    %c23 = arith.constant 23 : index
    %c35 = arith.constant 35 : index
    %seed1 = arith.constant 1 : i64
    %max_seq_length = arith.constant 0 : i32
    %max_cache_length = arith.constant 35 : i32
    %storage = call @new_storage() : () -> !storage
    %blocks = memref.cast %storage : !storage to !blocks
    %table_global = memref.get_global @lookup_table : memref<3x3xi32>
    %lookup_table = call @new_table(%table_global) : (memref<3x3xi32>) -> memref<?x?xi32>
    %cache_lengths = call @new_lengths() : () -> memref<?xi32>
    %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
        : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection
    %checked = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
        : !blocks, memref<?xi32>, memref<?x?xi32> -> !checked_collection
    %k0 = kvcache.get_key_cache %collection[%c0] : !collection
    %k1 = kvcache.get_key_cache %collection[%c1] : !collection
    %v1 = kvcache.get_value_cache %collection[%c1] : !collection
    %checked_k1 = kvcache.get_key_cache %checked[%c1] : !checked_collection
    %checked_v0 = kvcache.get_value_cache %checked[%c0] : !checked_collection
    %checked_v1 = kvcache.get_value_cache %checked[%c1] : !checked_collection

    // K of layer 0, sequence 1, tokens 0..22 (pages 6, 2).
    call @run_read_keys(%k0, %c1, %c23) : (!cache, index, index) -> ()
    // New V of layer 1 for sequence 0, tokens 0..34 (pages 3, 7, 5).
    call @run_write_keys(%v1, %c0, %c35, %seed1) : (!cache, index, index, i64) -> ()
    // Sequence 2, tokens 0..18 (pages 1, 4): K of layer 1 to V of layer 0.
    call @run_copy_checked(%checked_k1, %checked_v0, %c2, %c19) : (!checked_cache, !checked_cache, index, index) -> ()
    // Sequence 0: the new V of layer 1 to K of layer 1, read back.
    call @run_copy_checked(%checked_v1, %checked_k1, %c0, %c35) : (!checked_cache, !checked_cache, index, index) -> ()
    call @run_read_keys(%k1, %c0, %c35) : (!cache, index, index) -> ()

    // All of blocks, [8 * 2 * 2 * 16 * 8, 128].
    %all = memref.collapse_shape %storage [[0, 1, 2, 3, 4], [5]] : !storage into memref<4096x128xf16>
    %all_dynamic = memref.cast %all : memref<4096x128xf16> to memref<?x128xf16>
    call @print_rows(%all_dynamic) : (memref<?x128xf16>) -> ()
    return
  }

  // read_keys through the bad table: blocks 16..22 read page 8.
  func.func @bad_read() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c23 = arith.constant 23 : index
    %zero = arith.constant 0 : i32
    %storage = call @new_storage() : () -> !storage
    %blocks = memref.cast %storage : !storage to !blocks
    %table_global = memref.get_global @bad_lookup_table : memref<3x3xi32>
    %lookup_table = call @new_table(%table_global) : (memref<3x3xi32>) -> memref<?x?xi32>
    %cache_lengths = call @new_lengths() : () -> memref<?xi32>
    %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %zero, %zero
        : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection
    %k0 = kvcache.get_key_cache %collection[%c0] : !collection
    call @run_read_keys(%k0, %c1, %c23) : (!cache, index, index) -> ()
    return
  }

  // copy_checked from a valid table to the bad one: blocks 16..22 store to
  // page 8.
  func.func @bad_write() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c23 = arith.constant 23 : index
    %zero = arith.constant 0 : i32
    %storage = call @new_storage() : () -> !storage
    %blocks = memref.cast %storage : !storage to !blocks
    %good_global = memref.get_global @lookup_table : memref<3x3xi32>
    %good_table = call @new_table(%good_global) : (memref<3x3xi32>) -> memref<?x?xi32>
    %bad_global = memref.get_global @bad_lookup_table : memref<3x3xi32>
    %bad_table = call @new_table(%bad_global) : (memref<3x3xi32>) -> memref<?x?xi32>
    %cache_lengths = call @new_lengths() : () -> memref<?xi32>
    %good = kvcache.paged_collection %blocks, %cache_lengths, %good_table, %zero, %zero
        : !blocks, memref<?xi32>, memref<?x?xi32> -> !checked_collection
    %bad = kvcache.paged_collection %blocks, %cache_lengths, %bad_table, %zero, %zero
        : !blocks, memref<?xi32>, memref<?x?xi32> -> !checked_collection
    %src = kvcache.get_key_cache %good[%c0] : !checked_collection
    %dst = kvcache.get_value_cache %bad[%c0] : !checked_collection
    call @run_copy_checked(%src, %dst, %c1, %c23) : (!checked_cache, !checked_cache, index, index) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
