// Found by kvcache-fuzz (a kvcache pass left IR that does not verify): the
// GPU lowering of attention_ragged accepts q and out with a non-unit
// innermost stride and emits vector.load on them, which the vector dialect
// rejects ("most minor memref dim must have unit stride") after the pass.
// convert-kvcache-to-scf rejects the same op cleanly.
// RUN: not kvcache-opt %s -convert-kvcache-to-gpu 2>&1 | FileCheck %s --implicit-check-not=vector.load
// RUN: not kvcache-opt %s -kvcache-to-ptx 2>&1 | FileCheck %s --implicit-check-not=vector.load

!cache = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4, page_size = 2>
func.func @attention_strided_q(%q: memref<?x1x4xf32, strided<[8, 8, 2]>>, %k: !cache, %v: !cache, %rows: memref<?xi32>, %out: memref<?x1x4xf32, strided<[8, 8, 2]>>) {
  // CHECK: attention-strided-q-gpu.mlir:[[@LINE+1]]:3: error: 'kvcache.attention_ragged' op
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.5 : f32} : memref<?x1x4xf32, strided<[8, 8, 2]>>, !cache, !cache, memref<?xi32>, memref<?x1x4xf32, strided<[8, 8, 2]>>
  return
}
