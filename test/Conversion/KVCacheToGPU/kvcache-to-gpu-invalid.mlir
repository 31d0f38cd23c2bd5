// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=threads-per-block=16 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=threads-per-block=2048 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=max-blocks=0 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=attention-threads=16 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=attention-threads=4096 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=max-splits=0 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=keys-per-split=0 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=sm-count=-1 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=chunks-in-flight=0 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=chunks-in-flight=65 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu="max-splits=0 keys-per-split=-3 sm-count=-2" 2>&1 | FileCheck %s --check-prefix=VALUES
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=chip=foo 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=chip=sm_ 2>&1 | FileCheck %s --check-prefix=CHIP-NO-NUMBER
// RUN: kvcache-opt %s -convert-kvcache-to-gpu="threads-per-block=1024 max-blocks=1 chip=sm_90a" -cse \
// RUN:   | FileCheck %s --check-prefix=BOUNDS
// RUN: kvcache-opt %s -convert-kvcache-to-gpu="chunks-in-flight=64 threads-per-block=32 chip=sm_90" -cse \
// RUN:   | FileCheck %s --check-prefix=BOUNDS-CHUNKS
// RUN: kvcache-opt %s -convert-kvcache-to-gpu="chunks-in-flight=1 threads-per-block=63" -cse \
// RUN:   | FileCheck %s --check-prefix=BOUNDS-ONE

// Options of convert-kvcache-to-gpu out of range are reported on the module
// (nothing is rewritten); the extremes of the ranges are accepted.

// THREADS: kvcache-to-gpu-invalid.mlir:[[@LINE+5]]:1: error: convert-kvcache-to-gpu: threads-per-block and attention-threads must be in [32, 1024], chunks-in-flight in [1, 64], max-blocks, max-splits and keys-per-split >= 1, sm-count >= 0
// VALUES: (got threads-per-block=256, attention-threads=128, chunks-in-flight=8, max-blocks=65535, max-splits=0, keys-per-split=-3, sm-count=-2)
// CHIP: kvcache-to-gpu-invalid.mlir:[[@LINE+3]]:1: error: convert-kvcache-to-gpu: unknown chip 'foo'; expected sm_XX, e.g. sm_80 or sm_90
// CHIP-NO-NUMBER: kvcache-to-gpu-invalid.mlir:[[@LINE+2]]:1: error: convert-kvcache-to-gpu: unknown chip 'sm_'; expected sm_XX
// BOUNDS: module attributes {gpu.container_module}
module {
  // A row of 8 x 128 f16 is 128 chunks, 2 rows per warp's tile: 1024
  // threads are 32 warps, 64 rows per block; one block visits every row.

  // BOUNDS-LABEL: func.func @store_ragged
  // BOUNDS: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
  // BOUNDS: %[[C64:[a-z0-9_]+]] = arith.constant 64 : index
  // BOUNDS-NEXT: %[[BLOCKS:[a-z0-9_]+]] = arith.ceildivui %{{[a-z0-9_]+}}, %[[C64]] : index
  // BOUNDS-NEXT: %[[GRID:[a-z0-9_]+]] = arith.minui %[[BLOCKS]], %[[C1]] : index
  // BOUNDS: %[[C1024:[a-z0-9_]+]] = arith.constant 1024 : index
  // BOUNDS: gpu.launch_func @kvcache_kernels::@store_ragged_store_ragged blocks in (%[[GRID]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) threads in (%[[C1024]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}})
  // BOUNDS-LABEL: gpu.func @store_ragged_store_ragged(
  // BOUNDS-SAME: kernel attributes {known_block_size = array<i32: 1024, 1, 1>}

  // chunks-in-flight=64: 64 chunks per lane, so a tile of 16 rows (2048
  // chunks), every load of a lane before its first store.

  // BOUNDS-CHUNKS-LABEL: gpu.func @store_ragged_store_ragged(
  // BOUNDS-CHUNKS-SAME: kernel attributes {known_block_size = array<i32: 32, 1, 1>}
  // BOUNDS-CHUNKS: %[[C16:[a-z0-9_]+]] = arith.constant 16 : index
  // BOUNDS-CHUNKS-NEXT: arith.ceildivui %{{[a-z0-9_]+}}, %[[C16]] : index
  // BOUNDS-CHUNKS-COUNT-64: vector.load
  // BOUNDS-CHUNKS-NOT: vector.load
  // BOUNDS-CHUNKS-COUNT-64: kvcache.page_store

  // chunks-in-flight=1: a tile of 1 row, whose page and slot every lane
  // reads from lane 0 once, moved in 4 passes (a loop) of one chunk per lane;
  // 63 threads are 1 warp.

  // BOUNDS-ONE-LABEL: gpu.func @store_ragged_store_ragged(
  // BOUNDS-ONE-SAME: kernel attributes {known_block_size = array<i32: 32, 1, 1>}
  // BOUNDS-ONE: %[[C32:[a-z0-9_]+]] = arith.constant 32 : index
  // BOUNDS-ONE-NEXT: %[[LANE:[a-z0-9_]+]] = arith.remui %{{[a-z0-9_]+}}, %[[C32]] : index
  // BOUNDS-ONE: %[[C0:[a-z0-9_]+]] = arith.constant 0 : index
  // BOUNDS-ONE: scf.for
  // BOUNDS-ONE: %[[C0_I32:[a-z0-9_]+]] = arith.constant 0 : i32
  // BOUNDS-ONE: gpu.shuffle idx %{{[a-z0-9_]+}}, %[[C0_I32]],
  // BOUNDS-ONE: gpu.shuffle idx %{{[a-z0-9_]+}}, %[[C0_I32]],
  // BOUNDS-ONE: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
  // BOUNDS-ONE-NEXT: scf.for %[[PASS:[a-z0-9_]+]] = %[[C0]] to %[[C128]] step %[[C32]] {
  // BOUNDS-ONE-NEXT: %[[CHUNK:[a-z0-9_]+]] = arith.addi %[[PASS]], %[[LANE]] : index
  // BOUNDS-ONE-NOT: gpu.shuffle
  // BOUNDS-ONE: vector.load
  // BOUNDS-ONE-NOT: vector.load
  // BOUNDS-ONE: kvcache.page_store
  // BOUNDS-ONE-NOT: kvcache.page_store
  // BOUNDS-ONE: gpu.return
  func.func @store_ragged(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>,
                          %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
    kvcache.store_ragged %cache, %new, %row_offsets
        : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
    return
  }
}
