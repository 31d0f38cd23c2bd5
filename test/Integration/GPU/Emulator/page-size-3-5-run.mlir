// Execution twin of test/Integration/GPU/page-size-3-5.mlir: its two kernels
// (copy_3_to_5: tokens of a page-size-3 cache to the same positions of a
// page-size-5 cache; lookups: page and slot of one token in both), copied
// verbatim (the first RUN lines check that they still are), run on the
// emulated GPU. Two f16 collections of 8 heads x 128 and 2 layers: 10 pages
// of 3 tokens with tables [7, 2, 9, 4, 1, 0] and [3, 8, 5, 6, 0, 0], 7 pages
// of 5 tokens with tables [5, 1, 3, 0] and [2, 6, 4, 0] (pages out of order,
// page 0 the null page). @main copies 14 tokens of sequence 0 (5 pages of 3,
// 3 pages of 5) K -> K and V -> K across layers, and 11 tokens of sequence 1
// V -> V, prints both collections' blocks, then the lookups of 11 (sequence,
// token) pairs; Inputs/twin_reference.py recomputes everything from the fill
// formula and the tables. Same result in three orders; the 128-bit loads and
// stores are perfectly coalesced.

// RUN: sed -n '/^  gpu.module/,/^  }$/p' %S/../page-size-3-5.mlir | grep -v '^ *//' > %t.original
// RUN: sed -n '/^  gpu.module/,/^  }$/p' %s | grep -v '^ *//' > %t.twin
// RUN: diff %t.original %t.twin
// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.mlir
// RUN: rm -f %t.profile
// RUN: env KVCACHE_EMU_PROFILE=%t.profile %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py page-size-3-5 | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=reverse %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py page-size-3-5 | FileCheck %s
// RUN: env KVCACHE_EMU_ORDER=random:23 %emu_run %t.mlir -e main | %python %S/Inputs/twin_reference.py page-size-3-5 | FileCheck %s
// RUN: FileCheck %s --check-prefix=PROFILE < %t.profile

// CHECK-NOT: MISMATCH
// CHECK: OK 3 buffers 266284 values

// copy_3_to_5 on n tokens: n x 128 threads, each loading two 4-byte
// lookup-table entries (one per cache) and 16 bytes, and storing 16 bytes
// (3072 n bytes loaded, 2048 n stored). lookups: one thread loads one entry
// of each table (two sectors, one per instruction) and stores 16 bytes (one
// sector).
// PROFILE: {"kernel": "copy_3_to_5", "grid": [14, 1, 1], "block": [128, 1, 1], "shared_bytes": 0, "global_load_bytes": 43008, "global_store_bytes": 28672, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "copy_3_to_5", "grid": [14, 1, 1], "block": [128, 1, 1], "shared_bytes": 0, "global_load_bytes": 43008, "global_store_bytes": 28672, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NEXT: {"kernel": "copy_3_to_5", "grid": [11, 1, 1], "block": [128, 1, 1], "shared_bytes": 0, "global_load_bytes": 33792, "global_store_bytes": 22528, "load_sectors": [[L:[0-9]+]], "store_sectors": [[S:[0-9]+]], "ideal_load_sectors": [[L]], "ideal_store_sectors": [[S]], "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-COUNT-11: {"kernel": "lookups", "grid": [1, 1, 1], "block": [1, 1, 1], "shared_bytes": 0, "global_load_bytes": 8, "global_store_bytes": 16, "load_sectors": 2, "store_sectors": 1, "ideal_load_sectors": 2, "ideal_store_sectors": 1, "shared_bank_conflicts": 0, "barriers": 0, "cp_async_bytes": 0}
// PROFILE-NOT: kernel

!cache3 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 3>
!cache5 = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 5>
!collection3 = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 3>
!collection5 = !kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 5>
!storage3 = memref<10x2x2x3x8x128xf16>
!storage5 = memref<7x2x2x5x8x128xf16>
!blocks3 = memref<?x2x?x3x8x128xf16>
!blocks5 = memref<?x2x?x5x8x128xf16>

module attributes {gpu.container_module} {
  memref.global "private" constant @lookup_table3 : memref<2x6xi32> = dense<[[7, 2, 9, 4, 1, 0], [3, 8, 5, 6, 0, 0]]>
  memref.global "private" constant @lookup_table5 : memref<2x4xi32> = dense<[[5, 1, 3, 0], [2, 6, 4, 0]]>
  memref.global "private" constant @cache_lengths : memref<2xi32> = dense<[14, 11]>
  // (sequence, token) pairs for lookups.
  memref.global "private" constant @queries : memref<11x2xi32> = dense<[[0, 0], [0, 2], [0, 3], [0, 13], [0, 17], [1, 4], [1, 5], [1, 9], [1, 10], [1, 14], [1, 16]]>

  gpu.module @kernels {

    gpu.func @copy_3_to_5(%src: !cache3, %dst: !cache5, %batch: index) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %token = gpu.block_id x
      %thread = gpu.thread_id x
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %head = arith.divui %thread, %c16 : index
      %chunk = arith.remui %thread, %c16 : index
      %element = arith.muli %chunk, %c8 : index
      %x = kvcache.load %src[%batch, %head, %token, %element] : !cache3 -> vector<8xf16>
      kvcache.store %x, %dst[%batch, %head, %token, %element] : !cache5, vector<8xf16>
      gpu.return
    }


    gpu.func @lookups(%src: !cache3, %dst: !cache5, %batch: index, %token: index,
                      %out: memref<4xi32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %page3, %slot3 = kvcache.lookup %src[%batch, %token] : !cache3
      %page5, %slot5 = kvcache.lookup %dst[%batch, %token] : !cache5
      %results = vector.from_elements %page3, %slot3, %page5, %slot5 : vector<4xindex>
      %results32 = arith.index_cast %results : vector<4xindex> to vector<4xi32>
      vector.store %results32, %out[%c0] {alignment = 16} : memref<4xi32>, vector<4xi32>
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

  // copy_3_to_5 on tokens 0 .. n-1 of `batch`: n blocks of 128 threads.
  func.func @run_copy(%src: !cache3, %dst: !cache5, %batch: index, %n: index) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch_func @kernels::@copy_3_to_5 blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1)
        args(%src : !cache3, %dst : !cache5, %batch : index)
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c11 = arith.constant 11 : index
    %c14 = arith.constant 14 : index
    %seed0 = arith.constant 0 : i64
    %seed1 = arith.constant 1 : i64
    %max_seq_length = arith.constant 0 : i32
    %max_cache_length = arith.constant 14 : i32
    %lengths_global = memref.get_global @cache_lengths : memref<2xi32>
    %lengths = memref.alloc() {alignment = 256 : i64} : memref<2xi32>
    memref.copy %lengths_global, %lengths : memref<2xi32> to memref<2xi32>
    %cache_lengths = memref.cast %lengths : memref<2xi32> to memref<?xi32>

    // Page size 3: blocks filled with @fill(0).
    %storage3 = memref.alloc() {alignment = 256 : i64} : !storage3
    %flat3 = memref.collapse_shape %storage3 [[0, 1, 2, 3, 4, 5]] : !storage3 into memref<122880xf16>
    %flat3_dynamic = memref.cast %flat3 : memref<122880xf16> to memref<?xf16>
    call @fill(%flat3_dynamic, %seed0) : (memref<?xf16>, i64) -> ()
    %blocks3 = memref.cast %storage3 : !storage3 to !blocks3
    %table3_global = memref.get_global @lookup_table3 : memref<2x6xi32>
    %table3 = memref.alloc() {alignment = 256 : i64} : memref<2x6xi32>
    memref.copy %table3_global, %table3 : memref<2x6xi32> to memref<2x6xi32>
    %lookup_table3 = memref.cast %table3 : memref<2x6xi32> to memref<?x?xi32>
    %collection3 = kvcache.paged_collection %blocks3, %cache_lengths, %lookup_table3, %max_seq_length, %max_cache_length
        : !blocks3, memref<?xi32>, memref<?x?xi32> -> !collection3

    // Page size 5: blocks filled with @fill(1).
    %storage5 = memref.alloc() {alignment = 256 : i64} : !storage5
    %flat5 = memref.collapse_shape %storage5 [[0, 1, 2, 3, 4, 5]] : !storage5 into memref<143360xf16>
    %flat5_dynamic = memref.cast %flat5 : memref<143360xf16> to memref<?xf16>
    call @fill(%flat5_dynamic, %seed1) : (memref<?xf16>, i64) -> ()
    %blocks5 = memref.cast %storage5 : !storage5 to !blocks5
    %table5_global = memref.get_global @lookup_table5 : memref<2x4xi32>
    %table5 = memref.alloc() {alignment = 256 : i64} : memref<2x4xi32>
    memref.copy %table5_global, %table5 : memref<2x4xi32> to memref<2x4xi32>
    %lookup_table5 = memref.cast %table5 : memref<2x4xi32> to memref<?x?xi32>
    %collection5 = kvcache.paged_collection %blocks5, %cache_lengths, %lookup_table5, %max_seq_length, %max_cache_length
        : !blocks5, memref<?xi32>, memref<?x?xi32> -> !collection5

    %k3_0 = kvcache.get_key_cache %collection3[%c0] : !collection3
    %v3_0 = kvcache.get_value_cache %collection3[%c0] : !collection3
    %v3_1 = kvcache.get_value_cache %collection3[%c1] : !collection3
    %k5_0 = kvcache.get_key_cache %collection5[%c0] : !collection5
    %k5_1 = kvcache.get_key_cache %collection5[%c1] : !collection5
    %v5_0 = kvcache.get_value_cache %collection5[%c0] : !collection5
    // Sequence 0, tokens 0..13: K of layer 0 to K of layer 1, V of layer 0
    // to K of layer 0.
    call @run_copy(%k3_0, %k5_1, %c0, %c14) : (!cache3, !cache5, index, index) -> ()
    call @run_copy(%v3_0, %k5_0, %c0, %c14) : (!cache3, !cache5, index, index) -> ()
    // Sequence 1, tokens 0..10: V of layer 1 to V of layer 0.
    call @run_copy(%v3_1, %v5_0, %c1, %c11) : (!cache3, !cache5, index, index) -> ()

    // All of both blocks, [10 * 2 * 2 * 3 * 8, 128] and [7 * 2 * 2 * 5 * 8, 128].
    %all3 = memref.collapse_shape %storage3 [[0, 1, 2, 3, 4], [5]] : !storage3 into memref<960x128xf16>
    %all3_dynamic = memref.cast %all3 : memref<960x128xf16> to memref<?x128xf16>
    call @print_rows(%all3_dynamic) : (memref<?x128xf16>) -> ()
    %all5 = memref.collapse_shape %storage5 [[0, 1, 2, 3, 4], [5]] : !storage5 into memref<1120x128xf16>
    %all5_dynamic = memref.cast %all5 : memref<1120x128xf16> to memref<?x128xf16>
    call @print_rows(%all5_dynamic) : (memref<?x128xf16>) -> ()

    // lookups of every query, one thread each: [page3, slot3, page5, slot5].
    %queries = memref.get_global @queries : memref<11x2xi32>
    %results = memref.alloc() : memref<11x4xi32>
    %out = memref.alloc() {alignment = 256 : i64} : memref<4xi32>
    scf.for %q = %c0 to %c11 step %c1 {
      %batch32 = memref.load %queries[%q, %c0] : memref<11x2xi32>
      %token32 = memref.load %queries[%q, %c1] : memref<11x2xi32>
      %batch = arith.index_cast %batch32 : i32 to index
      %token = arith.index_cast %token32 : i32 to index
      gpu.launch_func @kernels::@lookups blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
          args(%k3_0 : !cache3, %v5_0 : !cache5, %batch : index, %token : index, %out : memref<4xi32>)
      scf.for %i = %c0 to %c4 step %c1 {
        %x = memref.load %out[%i] : memref<4xi32>
        memref.store %x, %results[%q, %i] : memref<11x4xi32>
      }
    }
    %unranked = memref.cast %results : memref<11x4xi32> to memref<*xi32>
    call @printMemrefI32(%unranked) : (memref<*xi32>) -> ()
    return
  }
  func.func private @printMemrefF32(memref<*xf32>)
  func.func private @printMemrefI32(memref<*xi32>)
}
