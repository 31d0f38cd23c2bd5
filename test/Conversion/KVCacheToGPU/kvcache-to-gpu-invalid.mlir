// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=threads-per-block=16 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=threads-per-block=2048 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=max-blocks=0 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=attention-threads=16 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=attention-threads=4096 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=max-splits=0 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=keys-per-split=0 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=sm-count=-1 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu="max-splits=0 keys-per-split=-3 sm-count=-2" 2>&1 | FileCheck %s --check-prefix=VALUES
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=chip=foo 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu=chip=sm_ 2>&1 | FileCheck %s --check-prefix=CHIP-NO-NUMBER
// RUN: kvcache-opt %s -convert-kvcache-to-gpu="threads-per-block=1024 max-blocks=1 chip=sm_90a" -cse \
// RUN:   | FileCheck %s --check-prefix=BOUNDS

// Options of convert-kvcache-to-gpu out of range are reported on the module
// (nothing is rewritten); the extremes of the ranges are accepted.

// THREADS: kvcache-to-gpu-invalid.mlir:[[@LINE+5]]:1: error: convert-kvcache-to-gpu: threads-per-block and attention-threads must be in [32, 1024], max-blocks, max-splits and keys-per-split >= 1, sm-count >= 0
// VALUES: (got threads-per-block=256, attention-threads=128, max-blocks=65535, max-splits=0, keys-per-split=-3, sm-count=-2)
// CHIP: kvcache-to-gpu-invalid.mlir:[[@LINE+3]]:1: error: convert-kvcache-to-gpu: unknown chip 'foo'; expected sm_XX, e.g. sm_80 or sm_90
// CHIP-NO-NUMBER: kvcache-to-gpu-invalid.mlir:[[@LINE+2]]:1: error: convert-kvcache-to-gpu: unknown chip 'sm_'; expected sm_XX
// BOUNDS: module attributes {gpu.container_module}
module {
  // A row of 8 x 128 f16 is 128 chunks: 128 threads even when 1024 are
  // allowed; one block visits every row.

  // BOUNDS-LABEL: func.func @store_ragged
  // BOUNDS: %[[C1:[a-z0-9_]+]] = arith.constant 1 : index
  // BOUNDS: %[[GRID:[a-z0-9_]+]] = arith.minui %{{[a-z0-9_]+}}, %[[C1]] : index
  // BOUNDS: %[[C128:[a-z0-9_]+]] = arith.constant 128 : index
  // BOUNDS: gpu.launch_func @kvcache_kernels::@store_ragged_store_ragged blocks in (%[[GRID]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}) threads in (%[[C128]], %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}})
  // BOUNDS-LABEL: gpu.func @store_ragged_store_ragged(
  // BOUNDS-SAME: kernel attributes {known_block_size = array<i32: 128, 1, 1>}
  func.func @store_ragged(%cache: !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>,
                          %new: memref<?x8x128xf16>, %row_offsets: memref<?xi32>) {
    kvcache.store_ragged %cache, %new, %row_offsets
        : !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>, memref<?x8x128xf16>, memref<?xi32>
    return
  }
}
