// Found by kvcache-fuzz (a time-out): GPU attention with heads of one
// element and a GQA group of 32 unrolled group x keys-per-step (32 x 128)
// merge steps in C++, and kvcache-to-ptx took 60-76 s. The merge of many key
// groups is now a loop and large groups take passes of 8 heads; the whole
// pipeline must end well inside the CPU time limit (a killed process exits
// with a signal and fails the test).
// RUN: ulimit -t 20; kvcache-opt %s -kvcache-to-ptx | FileCheck %s
// CHECK: gpu.binary @kvcache_kernels

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 1, page_size = 16>
func.func @attention_tiny_head(%q: memref<4x256x1xf16>, %key: !cache, %value: !cache, %row_offsets: memref<4xi32>, %out: memref<4x256x1xf16>) {
  kvcache.attention_ragged %q, %key, %value, %row_offsets, %out {scale = 0.883883 : f32} : memref<4x256x1xf16>, !cache, !cache, memref<4xi32>, memref<4x256x1xf16>
  return
}
