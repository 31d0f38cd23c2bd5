// Execution twin of test/Integration/GPU/collection-kernel.mlir: its kernel
// swap_kv (a whole collection as the argument, the layer selected inside the
// kernel), copied verbatim (the first RUN lines check that it still is), run
// on the emulated GPU on a bf16 collection of 7 pages x 3 layers (32 tokens
// of 4 heads x 64), page 0 the null page, three sequences whose pages are out
// of order: [4, 1, 0], [2, 5, 3], [6, 0, 0]. @main swaps K and V of 40 tokens
// of layer 0 (two pages), 70 of layer 2 (three pages) and 20 of layer 1, then
// swaps the first 10 tokens of layer 0 back, and prints all of blocks;
// Inputs/twin_reference.py recomputes it from the fill formula. Same result
// in three orders; every 128-bit load and store is perfectly coalesced.

// RUN: sed -n '/^  gpu.module/,/^  }$/p' %S/../collection-kernel.mlir | grep -v '^ *//' > %t.original
// RUN: sed -n '/^  gpu.module/,/^  }$/p' %s | grep -v '^ *//' > %t.twin
// RUN: diff %t.original %t.twin
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.mlir
// RUN: rm -f %t.profile
// RUN: env KVCACHE_EMU_PROFILE=%t.profile %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py collection-kernel | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py collection-kernel | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=random:41 %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py collection-kernel | FileCheck %s
// RUN: FileCheck %s --check-prefix=PROFILE < %t.profile

// CHECK-NOT: MISMATCH
// CHECK: OK 1 buffers 344064 values

// One line per launch. swap_kv on n tokens: n x 32 threads, each loading one
// 4-byte lookup-table entry (shared by K and V) and 16 bytes of K and of V
// (1152 n bytes), and storing 16 bytes of each (1024 n bytes).
// PROFILE: {"kernel": "swap_kv", "grid": [40, 1, 1], "block": [8, 4, 1], "shared_bytes": 0, "global_load_bytes": 46080, "global_store_bytes": 40960, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "swap_kv", "grid": [70, 1, 1], "block": [8, 4, 1], "shared_bytes": 0, "global_load_bytes": 80640, "global_store_bytes": 71680, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "swap_kv", "grid": [20, 1, 1], "block": [8, 4, 1], "shared_bytes": 0, "global_load_bytes": 23040, "global_store_bytes": 20480, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "swap_kv", "grid": [10, 1, 1], "block": [8, 4, 1], "shared_bytes": 0, "global_load_bytes": 11520, "global_store_bytes": 10240, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NOT: kernel

!collection = !kvcache.paged_collection<bf16, num_heads = 4, head_size = 64, page_size = 32>
!cache = !kvcache.paged_cache<bf16, num_heads = 4, head_size = 64, page_size = 32>
!storage = memref<7x2x3x32x4x64xbf16>
!blocks = memref<?x2x?x32x4x64xbf16>

module attributes {gpu.container_module} {
  memref.global "private" constant @lookup_table : memref<3x3xi32> = dense<[[4, 1, 0], [2, 5, 3], [6, 0, 0]]>
  memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[40, 70, 20]>

  gpu.module @kernels {

    gpu.func @swap_kv(%collection: !collection, %layer: index, %batch: index) kernel
        attributes {known_block_size = array<i32: 8, 4, 1>} {
      %token = gpu.block_id x
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.get_key_cache %collection[%layer] : !collection
      %values = kvcache.get_value_cache %collection[%layer] : !collection
      %k = kvcache.load %keys[%batch, %head, %token, %element] : !cache -> vector<8xbf16>
      %v = kvcache.load %values[%batch, %head, %token, %element] : !cache -> vector<8xbf16>
      kvcache.store %v, %keys[%batch, %head, %token, %element] : !cache, vector<8xbf16>
      kvcache.store %k, %values[%batch, %head, %token, %element] : !cache, vector<8xbf16>
      gpu.return
    }
  }

  // buf[i] = ((i + seed) * 7919) mod 509 - 254: integers in [-254, 254],
  // exact in bf16.
  func.func @fill(%buf: memref<?xbf16>, %seed: i64) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %mul = arith.constant 7919 : i64
    %mod = arith.constant 509 : i64
    %sub = arith.constant 254 : i64
    %n = memref.dim %buf, %c0 : memref<?xbf16>
    scf.for %i = %c0 to %n step %c1 {
      %i64 = arith.index_cast %i : index to i64
      %shifted = arith.addi %i64, %seed : i64
      %product = arith.muli %shifted, %mul : i64
      %hash = arith.remui %product, %mod : i64
      %centered = arith.subi %hash, %sub : i64
      %wide = arith.sitofp %centered : i64 to f32
      %value = arith.truncf %wide : f32 to bf16
      memref.store %value, %buf[%i] : memref<?xbf16>
    }
    return
  }

  // Prints rows of 64 bf16 values as f32.
  func.func @print_rows(%rows: memref<?x64xbf16>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %n = memref.dim %rows, %c0 : memref<?x64xbf16>
    %wide = memref.alloc(%n) : memref<?x64xf32>
    scf.for %r = %c0 to %n step %c1 {
      scf.for %d = %c0 to %c64 step %c1 {
        %x = memref.load %rows[%r, %d] : memref<?x64xbf16>
        %y = arith.extf %x : bf16 to f32
        memref.store %y, %wide[%r, %d] : memref<?x64xf32>
      }
    }
    %unranked = memref.cast %wide : memref<?x64xf32> to memref<*xf32>
    call @printMemrefF32(%unranked) : (memref<*xf32>) -> ()
    memref.dealloc %wide : memref<?x64xf32>
    return
  }

  // swap_kv on tokens 0 .. n-1 of sequence `batch` of `layer`: n blocks of
  // 8 x 4 threads.
  func.func @run_swap_kv(%collection: !collection, %layer: index, %batch: index, %n: index) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    gpu.launch_func @kernels::@swap_kv blocks in (%n, %c1, %c1) threads in (%c8, %c4, %c1)
        args(%collection : !collection, %layer : index, %batch : index)
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c10 = arith.constant 10 : index
    %c20 = arith.constant 20 : index
    %c40 = arith.constant 40 : index
    %c70 = arith.constant 70 : index
    %seed = arith.constant 0 : i64
    %max_seq_length = arith.constant 0 : i32
    %max_cache_length = arith.constant 70 : i32
    %storage = memref.alloc() {alignment = 256 : i64} : !storage
    %flat = memref.collapse_shape %storage [[0, 1, 2, 3, 4, 5]] : !storage into memref<344064xbf16>
    %flat_dynamic = memref.cast %flat : memref<344064xbf16> to memref<?xbf16>
    call @fill(%flat_dynamic, %seed) : (memref<?xbf16>, i64) -> ()
    %blocks = memref.cast %storage : !storage to !blocks
    %table_global = memref.get_global @lookup_table : memref<3x3xi32>
    %table = memref.alloc() {alignment = 256 : i64} : memref<3x3xi32>
    memref.copy %table_global, %table : memref<3x3xi32> to memref<3x3xi32>
    %lengths_global = memref.get_global @cache_lengths : memref<3xi32>
    %lengths = memref.alloc() {alignment = 256 : i64} : memref<3xi32>
    memref.copy %lengths_global, %lengths : memref<3xi32> to memref<3xi32>
    %lookup_table = memref.cast %table : memref<3x3xi32> to memref<?x?xi32>
    %cache_lengths = memref.cast %lengths : memref<3xi32> to memref<?xi32>
    %collection = kvcache.paged_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length
        : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection

    // Layer 0, sequence 0, tokens 0..39 (pages 4, 1).
    call @run_swap_kv(%collection, %c0, %c0, %c40) : (!collection, index, index, index) -> ()
    // Layer 2, sequence 1, tokens 0..69 (pages 2, 5, 3).
    call @run_swap_kv(%collection, %c2, %c1, %c70) : (!collection, index, index, index) -> ()
    // Layer 1, sequence 2, tokens 0..19 (page 6).
    call @run_swap_kv(%collection, %c1, %c2, %c20) : (!collection, index, index, index) -> ()
    // Layer 0, sequence 0 again, tokens 0..9: swapped back.
    call @run_swap_kv(%collection, %c0, %c0, %c10) : (!collection, index, index, index) -> ()

    // All of blocks, [7 * 2 * 3 * 32 * 4, 64].
    %all = memref.collapse_shape %storage [[0, 1, 2, 3, 4], [5]] : !storage into memref<5376x64xbf16>
    %all_dynamic = memref.cast %all : memref<5376x64xbf16> to memref<?x64xbf16>
    call @print_rows(%all_dynamic) : (memref<?x64xbf16>) -> ()
    memref.dealloc %storage : !storage
    memref.dealloc %table : memref<3x3xi32>
    memref.dealloc %lengths : memref<3xi32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
