// The largest head the CPU attention lowers, 4096 elements, lowers within
// the CPU time limit (3.4 s for a decode step in a release build; a head of
// 65536, found by kvcache-fuzz, took a minute, and heads over 4096 are now
// rejected: test/Conversion/KVCacheToSCF/kvcache-to-scf-invalid.mlir). Not
// a fuzzing seed (scripts/make-fuzz-corpus.py skips *-compile-time.mlir).
// RUN: ulimit -t 60; kvcache-opt %s -kvcache-to-cpu | FileCheck %s
// CHECK: llvm.func @head_4096(

!c4096 = !kvcache.paged_cache<f32, num_heads = 1, head_size = 4096, page_size = 2>
func.func @head_4096(%q: memref<?x1x4096xf32>, %k: !c4096, %v: !c4096, %rows: memref<?xi32>, %out: memref<?x1x4096xf32>) {
  kvcache.attention_ragged %q, %k, %v, %rows, %out {scale = 0.5 : f32}
      : memref<?x1x4096xf32>, !c4096, !c4096, memref<?xi32>, memref<?x1x4096xf32>
  return
}
