// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf="cpu-features=+avx512f,+avx512bf16" -canonicalize -cse | FileCheck %s --check-prefixes=CHECK,DOT
// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf -canonicalize -cse | FileCheck %s --check-prefixes=CHECK,FMA
// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf="cpu-features=+avx512bf16,-avx512bf16" -canonicalize -cse | FileCheck %s --check-prefixes=CHECK,FMA
// RUN: kvcache-opt %s -split-input-file -kvcache-to-cpu="cpu-features=+avx512bf16" | FileCheck %s --check-prefix=LLVM
// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf=cpu-features=host | FileCheck %s --check-prefix=HOST
// RUN: not kvcache-opt %s -split-input-file -convert-kvcache-to-scf="cpu-features=avx512bf16" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: kvcache-opt %s -split-input-file -convert-kvcache-to-scf="cpu-features=+avx512f,," -canonicalize -cse | FileCheck %s --check-prefixes=CHECK,FMA

// convert-kvcache-to-scf{cpu-features}: with avx512bf16 the decode kernel
// computes q . K of a bf16 cache with AVX512-BF16's dot product of bf16
// pairs (llvm.x86.avx512bf16.dpbf16ps.512: 16 f32 lanes, each the sum of
// two products, per 32 elements): q is kept as stored (bf16, neither
// widened nor scaled) and the scale multiplies the block's scores. Without
// the feature (the default, or a later -avx512bf16), the K rows are widened
// to f32 and dotted with the scaled q by fused multiply-adds. A feature
// without + or - is an error; empty items between commas are ignored.

// HOST-LABEL: func.func @decode(
// HOST-LABEL: func.func @head48(

// BAD: convert-kvcache-to-scf: cpu-features takes 'host' or LLVM feature names each with + or - (e.g. +avx512bf16), got 'avx512bf16'

!c = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @decode(
// DOT: %[[SCALE:.*]] = arith.constant dense<0.180336878> : vector<16xf32>
// DOT: %[[QROWS:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x64xbf16>
// FMA: %[[QROWS:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x64xf32>
// DOT: %[[Q:.*]] = vector.load %arg0[%{{.*}}, %{{.*}}, %c0] : memref<?x8x64xbf16>, vector<64xbf16>
// DOT-NEXT: vector.store %[[Q]], %[[QROWS]][%{{.*}}, %c0] : memref<?x64xbf16>, vector<64xbf16>
// FMA: %[[Q:.*]] = vector.load %arg0[%{{.*}}, %{{.*}}, %c0] : memref<?x8x64xbf16>, vector<64xbf16>
// FMA-NEXT: %[[WIDE:.*]] = arith.extf %[[Q]] : vector<64xbf16> to vector<64xf32>
// FMA-NEXT: %[[SCALED:.*]] = arith.mulf %[[WIDE]], %{{.*}} : vector<64xf32>
// FMA-NEXT: vector.store %[[SCALED]], %[[QROWS]][%{{.*}}, %c0] : memref<?x64xf32>, vector<64xf32>
// The scores' sweep: the 4 heads' q chunks, then per key its K row as
// stored and one dot product per head and 32 elements.
// DOT: vector.load %[[QROWS]][%{{.*}}, %c0] : memref<?x64xbf16>, vector<64xbf16>
// DOT: scf.for
// DOT: %[[K:.*]] = vector.load %{{.*}} : memref<16x64xbf16, strided<[128, 1], offset: ?>>, vector<64xbf16>
// DOT-NOT: arith.extf %[[K]]
// DOT: %[[K0:.*]] = vector.extract_strided_slice %[[K]] {offsets = [0], sizes = [32], strides = [1]} : vector<64xbf16> to vector<32xbf16>
// DOT: %[[D0:.*]] = llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %{{.*}}, %[[K0]]) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// DOT: %[[K1:.*]] = vector.extract_strided_slice %[[K]] {offsets = [32], sizes = [32], strides = [1]} : vector<64xbf16> to vector<32xbf16>
// DOT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%[[D0]], %{{.*}}, %[[K1]])
// 4 keys of a group x 4 heads x 2 pieces of 32.
// DOT-COUNT-30: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// DOT-NOT: llvm.call_intrinsic
// DOT: vector.store %{{.*}} : memref<4x16xf32>, vector<16xf32>
// DOT-NEXT: }
// The scale (0.125 x log2 e) on each head's scores.
// DOT-COUNT-4: arith.mulf %{{.*}}, %[[SCALE]] : vector<16xf32>
// FMA: vector.fma
// FMA-NOT: llvm.call_intrinsic
// LLVM-LABEL: llvm.func @decode(
// LLVM: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
func.func @decode(%q: memref<?x8x64xbf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x64xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x64xbf16>, !c, !c, memref<?xi32>, memref<?x8x64xbf16>
  return
}

// -----

// An f16 cache, a rope clause on q (q is rotated in f32), and a head that
// is not a multiple of 32 elements keep the fused multiply-adds.
!h = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @f16_cache(
// CHECK-NOT: llvm.call_intrinsic
// CHECK: return
func.func @f16_cache(%q: memref<?x8x64xf16>, %k: !h, %v: !h, %offsets: memref<?xi32>, %out: memref<?x8x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x64xf16>, !h, !h, memref<?xi32>, memref<?x8x64xf16>
  return
}

// -----

!c = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 64, page_size = 16>
// CHECK-LABEL: func.func @rope(
// CHECK-NOT: llvm.call_intrinsic
// CHECK: return
func.func @rope(%q: memref<?x8x64xbf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x64xbf16>, %cs: memref<?x64xf32>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out rope(%cs) {rotary_dims = 64 : i64, scale = 0.125 : f32, style = "half"}
      : memref<?x8x64xbf16>, !c, !c, memref<?xi32>, memref<?x8x64xbf16>, memref<?x64xf32>
  return
}

// -----

!c = !kvcache.paged_cache<bf16, num_heads = 2, head_size = 48, page_size = 16>
// CHECK-LABEL: func.func @head48(
// CHECK-NOT: llvm.call_intrinsic
// CHECK: return
func.func @head48(%q: memref<?x8x48xbf16>, %k: !c, %v: !c, %offsets: memref<?xi32>, %out: memref<?x8x48xbf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x48xbf16>, !c, !c, memref<?xi32>, memref<?x8x48xbf16>
  return
}
