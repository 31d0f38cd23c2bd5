// Found by kvcache-fuzz (UBSan, then a time-out): with q_heads = INT64_MAX
// the GPU attention plan's shared-memory estimate (makePlan's sharedBytes,
// lib/Conversion/KVCacheToGPU/AttentionToGPU.cpp) overflows int64_t, slips
// under the 48 KiB limit, and convert-kvcache-to-gpu then runs for minutes
// while its memory grows by gigabytes. It must stop with an error. The CPU
// time limit turns a hang into a failure instead of a stuck test run.
// RUN: ulimit -t 60; not kvcache-opt %s -convert-kvcache-to-gpu 2>&1 | FileCheck %s

!big = !kvcache.paged_cache<f32, num_heads = 1, head_size = 256, page_size = 2>
func.func @attention_huge_group(%q: memref<?x9223372036854775807x256xf32>, %k: !big, %v: !big, %rows: memref<?xi32>, %out: memref<?x9223372036854775807x256xf32>) {
  // CHECK: attention-huge-group-gpu.mlir:[[@LINE+1]]:3: error: 'kvcache.attention_ragged' op
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.625 : f32} : memref<?x9223372036854775807x256xf32>, !big, !big, memref<?xi32>, memref<?x9223372036854775807x256xf32>
  return
}
