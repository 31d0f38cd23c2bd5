// Execution twin of test/Integration/GPU/host-launch.mlir: its host function
// @step and its kernel copy_layer, copied verbatim (the first RUN lines check
// that they still are), run on the emulated GPU: @step launches copy_layer
// with gpu.launch_func (K of layer 0 to K of layer 1) and then a gpu.launch
// region that the pipeline outlines into step_kernel (V of layer 1 into
// `out`). f16 cache of 7 pages x 2 layers (16 tokens of 8 heads x 128), page
// 0 the null page, three sequences whose pages are out of order: [3, 5, 0],
// [1, 4, 2], [6, 0, 0]. @main calls @step on 25, 40 and 9 tokens of the three
// sequences, prints each `out`, then all of blocks;
// Inputs/twin_reference.py recomputes every printed buffer from the fill
// formula. Same result in three orders; every 128-bit load and store of both
// kernels is perfectly coalesced.

// RUN: sed -n '/^  gpu.module/,/^  }$/p;/^  func.func @step/,/^  }$/p' %S/../host-launch.mlir | grep -v '^ *//' > %t.original
// RUN: sed -n '/^  gpu.module/,/^  }$/p;/^  func.func @step/,/^  }$/p' %s | grep -v '^ *//' > %t.twin
// RUN: diff %t.original %t.twin
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.mlir
// RUN: rm -f %t.profile
// RUN: env KVCACHE_EMU_PROFILE=%t.profile %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py host-launch | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py host-launch | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=random:5 %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py host-launch | FileCheck %s
// RUN: FileCheck %s --check-prefix=PROFILE < %t.profile

// CHECK-NOT: MISMATCH
// CHECK: OK 4 buffers 534528 values

// Two lines per @step, on n tokens: copy_layer's n x 128 threads each load
// two 4-byte lookup-table entries (source and destination cache) and 16
// bytes, and store 16 bytes (3072 n bytes loaded, 2048 n stored);
// step_kernel's each load one entry and 16 bytes and store 16 bytes (2560 n
// loaded, 2048 n stored).
// PROFILE: {"kernel": "copy_layer", "grid": [25, 1, 1], "block": [16, 8, 1], "shared_bytes": 0, "global_load_bytes": 76800, "global_store_bytes": 51200, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "step_kernel", "grid": [25, 1, 1], "block": [16, 8, 1], "shared_bytes": 0, "global_load_bytes": 64000, "global_store_bytes": 51200, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "copy_layer", "grid": [40, 1, 1], "block": [16, 8, 1], "shared_bytes": 0, "global_load_bytes": 122880, "global_store_bytes": 81920, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "step_kernel", "grid": [40, 1, 1], "block": [16, 8, 1], "shared_bytes": 0, "global_load_bytes": 102400, "global_store_bytes": 81920, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "copy_layer", "grid": [9, 1, 1], "block": [16, 8, 1], "shared_bytes": 0, "global_load_bytes": 27648, "global_store_bytes": 18432, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "step_kernel", "grid": [9, 1, 1], "block": [16, 8, 1], "shared_bytes": 0, "global_load_bytes": 23040, "global_store_bytes": 18432, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NOT: kernel

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!storage = memref<7x2x2x16x8x128xf16>
!blocks = memref<?x2x?x16x8x128xf16>
!rows = memref<?x8x128xf16>

module attributes {gpu.container_module} {
  memref.global "private" constant @lookup_table : memref<3x3xi32> = dense<[[3, 5, 0], [1, 4, 2], [6, 0, 0]]>
  memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[25, 40, 9]>

  gpu.module @kernels {
    gpu.func @copy_layer(%src: !cache, %dst: !cache, %batch: index) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %x = kvcache.load %src[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      kvcache.store %x, %dst[%batch, %head, %token, %element] : !cache, vector<8xf16>
      gpu.return
    }
  }
  func.func @step(%blocks: memref<?x2x?x16x8x128xf16>, %cache_lengths: memref<?xi32>,
                  %lookup_table: memref<?x?xi32>, %max_seq_length: i32, %max_cache_length: i32,
                  %batch: index, %num_tokens: index, %out: memref<?x8x128xf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
        : memref<?x2x?x16x8x128xf16>, memref<?xi32>, memref<?x?xi32> -> !collection
    %keys0 = kvcache.get_key_cache %collection[%c0] : !collection
    %keys1 = kvcache.get_key_cache %collection[%c1] : !collection
    gpu.launch_func @kernels::@copy_layer blocks in (%num_tokens, %c1, %c1) threads in (%c16, %c8, %c1)
        args(%keys0 : !cache, %keys1 : !cache, %batch : index)
    %values1 = kvcache.get_value_cache %collection[%c1] : !collection
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %num_tokens, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c8, %sz = %c1) {
      %element = arith.muli %tx, %c8 : index
      %v = kvcache.load %values1[%batch, %ty, %bx, %element] : !cache -> vector<8xf16>
      vector.store %v, %out[%bx, %ty, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      gpu.terminator
    }
    return
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

  // @step on tokens 0 .. n-1 of `batch`; prints its out[n, 8, 128]
  // (prefilled with @fill(100), all of it overwritten).
  func.func @run_step(%blocks: !blocks, %cache_lengths: memref<?xi32>, %lookup_table: memref<?x?xi32>,
                      %batch: index, %n: index) {
    %seed = arith.constant 100 : i64
    %max_seq_length = arith.constant 0 : i32
    %max_cache_length = arith.constant 40 : i32
    %out = memref.alloc(%n) {alignment = 256 : i64} : !rows
    %out_flat = memref.collapse_shape %out [[0, 1, 2]] : !rows into memref<?xf16>
    call @fill(%out_flat, %seed) : (memref<?xf16>, i64) -> ()
    call @step(%blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length, %batch, %n, %out)
        : (!blocks, memref<?xi32>, memref<?x?xi32>, i32, i32, index, index, !rows) -> ()
    %out_rows = memref.collapse_shape %out [[0, 1], [2]] : !rows into memref<?x128xf16>
    call @print_rows(%out_rows) : (memref<?x128xf16>) -> ()
    memref.dealloc %out : !rows
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c9 = arith.constant 9 : index
    %c25 = arith.constant 25 : index
    %c40 = arith.constant 40 : index
    %seed = arith.constant 0 : i64
    %storage = memref.alloc() {alignment = 256 : i64} : !storage
    %flat = memref.collapse_shape %storage [[0, 1, 2, 3, 4, 5]] : !storage into memref<458752xf16>
    %flat_dynamic = memref.cast %flat : memref<458752xf16> to memref<?xf16>
    call @fill(%flat_dynamic, %seed) : (memref<?xf16>, i64) -> ()
    %blocks = memref.cast %storage : !storage to !blocks
    %table_global = memref.get_global @lookup_table : memref<3x3xi32>
    %table = memref.alloc() {alignment = 256 : i64} : memref<3x3xi32>
    memref.copy %table_global, %table : memref<3x3xi32> to memref<3x3xi32>
    %lengths_global = memref.get_global @cache_lengths : memref<3xi32>
    %lengths = memref.alloc() {alignment = 256 : i64} : memref<3xi32>
    memref.copy %lengths_global, %lengths : memref<3xi32> to memref<3xi32>
    %lookup_table = memref.cast %table : memref<3x3xi32> to memref<?x?xi32>
    %cache_lengths = memref.cast %lengths : memref<3xi32> to memref<?xi32>

    // Sequence 0, tokens 0..24 (pages 3, 5).
    call @run_step(%blocks, %cache_lengths, %lookup_table, %c0, %c25)
        : (!blocks, memref<?xi32>, memref<?x?xi32>, index, index) -> ()
    // Sequence 1, tokens 0..39 (pages 1, 4, 2).
    call @run_step(%blocks, %cache_lengths, %lookup_table, %c1, %c40)
        : (!blocks, memref<?xi32>, memref<?x?xi32>, index, index) -> ()
    // Sequence 2, tokens 0..8 (page 6).
    call @run_step(%blocks, %cache_lengths, %lookup_table, %c2, %c9)
        : (!blocks, memref<?xi32>, memref<?x?xi32>, index, index) -> ()

    // All of blocks, [7 * 2 * 2 * 16 * 8, 128].
    %all = memref.collapse_shape %storage [[0, 1, 2, 3, 4], [5]] : !storage into memref<3584x128xf16>
    %all_dynamic = memref.cast %all : memref<3584x128xf16> to memref<?x128xf16>
    call @print_rows(%all_dynamic) : (memref<?x128xf16>) -> ()
    memref.dealloc %storage : !storage
    memref.dealloc %table : memref<3x3xi32>
    memref.dealloc %lengths : memref<3xi32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
