// Execution twin of test/Integration/GPU/access-ops.mlir: its three kernels
// (read_keys in @readers; write_keys and mixed in @writers), copied verbatim
// (the first RUN lines check that they still are), run on the emulated GPU
// on an f16 cache of 8 pages x 2 layers (16 tokens of 8 heads x 128) with
// three sequences whose pages are out of order: [5, 1, 3], [2, 6, 0],
// [4, 7, 0]. @main reads 37 tokens of K (three pages) and 20 of V, writes 21
// tokens of K and 18 of V, runs mixed on two sequences (one block: tile 0,
// see below), reads back what write_keys wrote, then prints all of blocks.
// Inputs/twin_reference.py recomputes every printed buffer from the fill
// formula with a numpy model of the layout and of each kernel. Same result in
// three orders; with KVCACHE_EMU_PROFILE every 128-bit load and store of the
// three kernels is perfectly coalesced (sectors == ideal sectors).
//
// mixed is launched with one block: every block of a launch performs the same
// K -> V and V -> K row copies, so two blocks would write the same bytes (a
// cross-block race the emulator reports), and the tile of block i > 0 could
// read the row block 0 writes.

// RUN: sed -n '/^  gpu.module/,/^  }$/p' %S/../access-ops.mlir | grep -v '^ *//' > %t.original
// RUN: sed -n '/^  gpu.module/,/^  }$/p' %s | grep -v '^ *//' > %t.twin
// RUN: diff %t.original %t.twin
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.mlir
// RUN: rm -f %t.profile
// RUN: env KVCACHE_EMU_PROFILE=%t.profile %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py access-ops | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py access-ops | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=random:29 %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py access-ops | FileCheck %s
// RUN: FileCheck %s --check-prefix=PROFILE < %t.profile

// CHECK-NOT: MISMATCH
// CHECK: OK 6 buffers 669696 values

// One line per launch, in program order. read_keys and write_keys on n
// tokens: n x 128 threads, each loading a 4-byte lookup-table entry and
// 16 bytes and storing 16 bytes: 2560 n bytes loaded, 2048 n stored. mixed:
// 128 threads, each loading 4 lookup-table entries (src, dst twice, the tile)
// and 2 + 16 vectors of 16 bytes (304 bytes), and storing 2 + 16 vectors (288
// bytes). Every warp instruction touches exactly ceil(bytes / 32) sectors.
// PROFILE: {"kernel": "read_keys", "grid": [37, 1, 1], "block": [128, 1, 1], "shared_bytes": 0, "global_load_bytes": 94720, "global_store_bytes": 75776, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "read_keys", "grid": [20, 1, 1], "block": [128, 1, 1], "shared_bytes": 0, "global_load_bytes": 51200, "global_store_bytes": 40960, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "write_keys", "grid": [21, 1, 1], "block": [128, 1, 1], "shared_bytes": 0, "global_load_bytes": 53760, "global_store_bytes": 43008, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "write_keys", "grid": [18, 1, 1], "block": [128, 1, 1], "shared_bytes": 0, "global_load_bytes": 46080, "global_store_bytes": 36864, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "mixed", "grid": [1, 1, 1], "block": [16, 8, 1], "shared_bytes": 0, "global_load_bytes": 38912, "global_store_bytes": 36864, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "mixed", "grid": [1, 1, 1], "block": [16, 8, 1], "shared_bytes": 0, "global_load_bytes": 38912, "global_store_bytes": 36864, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "read_keys", "grid": [21, 1, 1], "block": [128, 1, 1], "shared_bytes": 0, "global_load_bytes": 53760, "global_store_bytes": 43008, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NOT: kernel

!collection = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>
!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>
!tile = memref<16x128xf16, strided<[1024, 1], offset: ?>>
!storage = memref<8x2x2x16x8x128xf16>
!blocks = memref<?x2x?x16x8x128xf16>
!rows = memref<?x8x128xf16>

module attributes {gpu.container_module} {
  memref.global "private" constant @lookup_table : memref<3x3xi32> = dense<[[5, 1, 3], [2, 6, 0], [4, 7, 0]]>
  memref.global "private" constant @cache_lengths : memref<3xi32> = dense<[37, 20, 21]>

  gpu.module @readers {
    gpu.func @read_keys(%cache: !cache, %batch: index, %out: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %token = gpu.block_id x
      %thread = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %head = arith.divui %thread, %c16 : index
      %chunk = arith.remui %thread, %c16 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = kvcache.load %cache[%batch, %head, %token, %element] : !cache -> vector<8xf16>
      vector.store %keys, %out[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      gpu.return
    }
  }
  gpu.module @writers {
    gpu.func @write_keys(%cache: !cache, %batch: index, %new: memref<?x8x128xf16>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %token = gpu.block_id x
      %thread = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %head = arith.divui %thread, %c16 : index
      %chunk = arith.remui %thread, %c16 : index
      %element = arith.muli %chunk, %c8 : index
      %keys = vector.load %new[%token, %head, %element] {alignment = 16} : memref<?x8x128xf16>, vector<8xf16>
      kvcache.store %keys, %cache[%batch, %head, %token, %element] : !cache, vector<8xf16>
      gpu.return
    }


    gpu.func @mixed(%keys: !cache, %values: !cache, %batch: index, %src: index, %dst: index,
                    %out: memref<?x16x128xf16>) kernel
        attributes {known_block_size = array<i32: 16, 8, 1>} {
      %head = gpu.thread_id y
      %chunk = gpu.thread_id x
      %tile_index = gpu.block_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %element = arith.muli %chunk, %c8 : index
      %page, %slot = kvcache.lookup %keys[%batch, %src] : !cache
      %k = kvcache.page_load %keys[%page, %slot, %head, %element] : !cache -> vector<8xf16>
      kvcache.page_store %k, %values[%page, %slot, %head, %element] : !cache, vector<8xf16>
      %v = kvcache.load %values[%batch, %head, %dst, %element] : !cache -> vector<8xf16>
      kvcache.store %v, %keys[%batch, %head, %dst, %element] : !cache, vector<8xf16>
      %first = arith.muli %tile_index, %c16 : index
      %tile = kvcache.tile %keys[%batch, %first, %head] : !cache -> !tile
      scf.for %row = %c0 to %c16 step %c1 {
        %x = vector.load %tile[%row, %element] {alignment = 16} : !tile, vector<8xf16>
        %token = arith.addi %first, %row : index
        vector.store %x, %out[%token, %head, %element] {alignment = 16} : memref<?x16x128xf16>, vector<8xf16>
      }
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

  // read_keys on tokens 0 .. n-1 of sequence `batch`; prints out[n, 8, 128]
  // (prefilled with @fill(100), all of it overwritten).
  func.func @run_read_keys(%cache: !cache, %batch: index, %n: index) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %seed = arith.constant 100 : i64
    %out = call @new_rows(%n, %seed) : (index, i64) -> !rows
    gpu.launch_func @readers::@read_keys blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%cache : !cache, %batch : index, %out : !rows)
    %flat = memref.collapse_shape %out [[0, 1], [2]] : !rows into memref<?x128xf16>
    call @print_rows(%flat) : (memref<?x128xf16>) -> ()
    memref.dealloc %out : !rows
    return
  }

  // write_keys of n new rows @fill(seed) to tokens 0 .. n-1 of `batch`.
  func.func @run_write_keys(%cache: !cache, %batch: index, %n: index, %seed: i64) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %new = call @new_rows(%n, %seed) : (index, i64) -> !rows
    gpu.launch_func @writers::@write_keys blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%cache : !cache, %batch : index, %new : !rows)
    memref.dealloc %new : !rows
    return
  }

  // mixed with one block of 16 x 8 threads; prints out[16, 16, 128]
  // (prefilled with @fill(seed); heads 8..15 stay as they were).
  func.func @run_mixed(%keys: !cache, %values: !cache, %batch: index, %src: index, %dst: index,
                       %seed: i64) {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %storage = memref.alloc() {alignment = 256 : i64} : memref<16x16x128xf16>
    %flat = memref.collapse_shape %storage [[0, 1, 2]] : memref<16x16x128xf16> into memref<32768xf16>
    %flat_dynamic = memref.cast %flat : memref<32768xf16> to memref<?xf16>
    call @fill(%flat_dynamic, %seed) : (memref<?xf16>, i64) -> ()
    %out = memref.cast %storage : memref<16x16x128xf16> to memref<?x16x128xf16>
    gpu.launch_func @writers::@mixed blocks in (%c1, %c1, %c1) threads in (%c16, %c8, %c1)
        args(%keys : !cache, %values : !cache, %batch : index, %src : index, %dst : index,
             %out : memref<?x16x128xf16>)
    %rows = memref.collapse_shape %storage [[0, 1], [2]] : memref<16x16x128xf16> into memref<256x128xf16>
    %rows_dynamic = memref.cast %rows : memref<256x128xf16> to memref<?x128xf16>
    call @print_rows(%rows_dynamic) : (memref<?x128xf16>) -> ()
    memref.dealloc %storage : memref<16x16x128xf16>
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c5 = arith.constant 5 : index
    %c9 = arith.constant 9 : index
    %c17 = arith.constant 17 : index
    %c18 = arith.constant 18 : index
    %c19 = arith.constant 19 : index
    %c20 = arith.constant 20 : index
    %c21 = arith.constant 21 : index
    %c37 = arith.constant 37 : index
    %seed0 = arith.constant 0 : i64
    %seed1 = arith.constant 1 : i64
    %seed2 = arith.constant 2 : i64
    %seed3 = arith.constant 3 : i64
    %seed4 = arith.constant 4 : i64
    %max_seq_length = arith.constant 0 : i32
    %max_cache_length = arith.constant 37 : i32
    %storage = memref.alloc() {alignment = 256 : i64} : !storage
    %storage_flat = memref.collapse_shape %storage [[0, 1, 2, 3, 4, 5]] : !storage into memref<524288xf16>
    %storage_dynamic = memref.cast %storage_flat : memref<524288xf16> to memref<?xf16>
    call @fill(%storage_dynamic, %seed0) : (memref<?xf16>, i64) -> ()
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
    %k0 = kvcache.get_key_cache %collection[%c0] : !collection
    %v0 = kvcache.get_value_cache %collection[%c0] : !collection
    %k1 = kvcache.get_key_cache %collection[%c1] : !collection
    %v1 = kvcache.get_value_cache %collection[%c1] : !collection

    // K of layer 0, sequence 0, tokens 0..36 (pages 5, 1, 3).
    call @run_read_keys(%k0, %c0, %c37) : (!cache, index, index) -> ()
    // V of layer 1, sequence 1, tokens 0..19 (pages 2, 6).
    call @run_read_keys(%v1, %c1, %c20) : (!cache, index, index) -> ()
    // New K of layer 1 for sequence 2, tokens 0..20 (pages 4, 7).
    call @run_write_keys(%k1, %c2, %c21, %seed1) : (!cache, index, index, i64) -> ()
    // New V of layer 0 for sequence 0, tokens 0..17 (pages 5, 1).
    call @run_write_keys(%v0, %c0, %c18, %seed2) : (!cache, index, index, i64) -> ()
    // Layer 1, sequence 1: K of token 19 (page 6) to V, V of token 5 (page 2)
    // to K, then the tile of tokens 0..15 (page 2) of K.
    call @run_mixed(%k1, %v1, %c1, %c19, %c5, %seed3) : (!cache, !cache, index, index, index, i64) -> ()
    // Layer 0, sequence 2: token 17 (page 7), token 9 and the tile on page 4.
    call @run_mixed(%k0, %v0, %c2, %c17, %c9, %seed4) : (!cache, !cache, index, index, index, i64) -> ()
    // What the first write_keys wrote, read back.
    call @run_read_keys(%k1, %c2, %c21) : (!cache, index, index) -> ()

    // All of blocks, [8 * 2 * 2 * 16 * 8, 128].
    %all = memref.collapse_shape %storage [[0, 1, 2, 3, 4], [5]] : !storage into memref<4096x128xf16>
    %all_dynamic = memref.cast %all : memref<4096x128xf16> to memref<?x128xf16>
    call @print_rows(%all_dynamic) : (memref<?x128xf16>) -> ()
    memref.dealloc %storage : !storage
    memref.dealloc %table : memref<3x3xi32>
    memref.dealloc %lengths : memref<3xi32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
}
