// RUN: kvcache-opt %s -convert-kvcache-to-scf -canonicalize | FileCheck %s --check-prefixes=CHECK,SERIAL
// RUN: kvcache-opt %s -convert-kvcache-to-scf=threads=6 -canonicalize | FileCheck %s --check-prefixes=CHECK,SIX
// RUN: kvcache-opt %s -convert-kvcache-to-scf=threads=0 -canonicalize | FileCheck %s --check-prefixes=CHECK,RUNTIME
// RUN: not kvcache-opt %s -convert-kvcache-to-scf=threads=-2 2>&1 | FileCheck %s --check-prefix=BAD

// convert-kvcache-to-scf{threads}: the threads the outer scf.parallel loops
// will run on. attention_ragged's decode tasks take every KV head of their
// sequence (one task per sequence and tile of rows, token-major) from 4
// sequences per thread: 4 when serial (the default, 1), 24 at threads=6;
// threads=0 asks the OpenMP runtime at run time (omp_get_max_threads,
// declared once in the module). Otherwise, and always for a cache of block<G>
// scales (the per-row loop's KeyPass) or a single KV head, one task per KV
// head.

// BAD: convert-kvcache-to-scf: threads must be 0 (the OpenMP runtime's count) or more, got -2

// RUNTIME: func.func private @omp_get_max_threads() -> i32
// RUNTIME-NOT: func.func private @omp_get_max_threads
// SERIAL-NOT: omp_get_max_threads
// SIX-NOT: omp_get_max_threads

!c = !kvcache.paged_cache<bf16, num_heads = 4, head_size = 32, page_size = 16>
// CHECK-LABEL: func.func @decode(
// RUNTIME: %[[N:.*]] = call @omp_get_max_threads() : () -> i32
// RUNTIME-NEXT: %[[T:.*]] = arith.index_castui %[[N]] : i32 to index
// RUNTIME-NEXT: %[[MIN:.*]] = arith.muli %[[T]], %c4 : index
// RUNTIME-NEXT: %[[ENOUGH:.*]] = arith.cmpi uge, %{{.*}}, %[[MIN]] : index
// SERIAL: %[[ENOUGH:.*]] = arith.cmpi uge, %{{.*}}, %c4 : index
// SIX: %[[ENOUGH:.*]] = arith.cmpi uge, %{{.*}}, %c24 : index
// CHECK-NEXT: %[[LANES:.*]] = arith.muli %{{.*}}, %c2 : index
// CHECK-NEXT: %[[DECODE:.*]] = arith.cmpi ult, %[[LANES]], %c16 : index
// CHECK-NEXT: %[[WHOLE:.*]] = arith.andi %[[ENOUGH]], %[[DECODE]] : i1
// CHECK-NEXT: %[[NKV:.*]] = arith.select %[[WHOLE]], %c4, %c1 : index
// CHECK-NEXT: arith.divui %c4, %[[NKV]] : index
// CHECK: scf.parallel
func.func @decode(%q: memref<?x8x32xbf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x32xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x32xbf16>, !c, !c, memref<?xi32>, memref<?x8x32xbf16>
  return
}

// A second attention op: the declaration is not repeated.
// CHECK-LABEL: func.func @decode_again(
// RUNTIME: call @omp_get_max_threads() : () -> i32
func.func @decode_again(%q: memref<?x8x32xbf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x32xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x32xbf16>, !c, !c, memref<?xi32>, memref<?x8x32xbf16>
  return
}

// The per-row loop's KeyPass (block<8> scales): one KV head per task.
!q = !kvcache.paged_cache<i8, num_heads = 4, head_size = 32, page_size = 16, scales = block<8>>
// CHECK-LABEL: func.func @quantized(
// CHECK-NOT: omp_get_max_threads
// CHECK-NOT: arith.select %{{.*}}, %c4, %c1 : index
// CHECK: scf.parallel
func.func @quantized(%q: memref<?x8x32xf32>, %k: !q, %v: !q, %offsets: memref<?xi32>, %out: memref<?x8x32xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x32xf32>, !q, !q, memref<?xi32>, memref<?x8x32xf32>
  return
}
