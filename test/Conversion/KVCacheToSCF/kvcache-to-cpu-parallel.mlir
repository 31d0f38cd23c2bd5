// RUN: kvcache-opt %s -kvcache-to-cpu | FileCheck %s --check-prefix=SERIAL --implicit-check-not='omp.'
// RUN: kvcache-opt %s -kvcache-to-cpu=parallel=true | FileCheck %s --check-prefixes=CHECK,DEFAULT \
// RUN:   --implicit-check-not='{{^ *(%[^=]+= )?"?(affine|arith|builtin|cf|func|gpu|kvcache|memref|scf|vector)\.[a-z_]+}}'
// RUN: kvcache-opt %s -kvcache-to-cpu="parallel=true threads=3 checked=true" | FileCheck %s --check-prefixes=CHECK,THREADS \
// RUN:   --implicit-check-not='{{^ *(%[^=]+= )?"?(affine|arith|builtin|cf|func|gpu|kvcache|memref|scf|vector)\.[a-z_]+}}'

// kvcache-to-cpu{parallel=true}: the outer loop of each kernel op (an
// scf.parallel from convert-kvcache-to-scf) becomes one OpenMP parallel
// region with a worksharing loop (MLIR's convert-scf-to-openmp, then
// convert-openmp-to-llvm); the loops inside it are plain LLVM control flow.
// threads=N sets each region's thread count; without it the OpenMP runtime
// decides (every core, or OMP_NUM_THREADS). The default pipeline stays
// serial: no omp op at all, so mlir-runner needs no OpenMP runtime.

!cache = !kvcache.paged_cache<f16, num_heads = 2, head_size = 64, page_size = 16>
!collection = !kvcache.paged_collection<f16, num_heads = 2, head_size = 64, page_size = 16>

// Attention's decision (below) asks the runtime for its threads.
// DEFAULT: llvm.func @omp_get_max_threads() -> i32 attributes {sym_visibility = "private"}
// THREADS-NOT: omp_get_max_threads
// SERIAL-LABEL: llvm.func @store_ragged(
// CHECK-LABEL: llvm.func @store_ragged(
// THREADS: %[[N:.*]] = llvm.mlir.constant(3 : i32) : i32
// DEFAULT: omp.parallel {
// THREADS: omp.parallel num_threads(%[[N]] : i32) {
// CHECK-NEXT: omp.wsloop {
// CHECK-NEXT: omp.loop_nest (%{{.*}}) : i64 = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK: llvm.store %{{.*}} : vector<32xf16>, !llvm.ptr
// CHECK: omp.yield
// CHECK: omp.terminator
// CHECK-NOT: omp.parallel
// CHECK: llvm.return
func.func @store_ragged(%cache: !cache, %new: memref<?x2x64xf16>, %row_offsets: memref<?xi32>) {
  kvcache.store_ragged %cache, %new, %row_offsets : !cache, memref<?x2x64xf16>, memref<?xi32>
  return
}

// SERIAL-LABEL: llvm.func @gather_ragged(
// CHECK-LABEL: llvm.func @gather_ragged(
// CHECK: omp.parallel
// CHECK: omp.wsloop
// CHECK-NOT: omp.parallel
// CHECK: llvm.return
func.func @gather_ragged(%cache: !cache, %out: memref<?x2x64xf16>, %ctx_offsets: memref<?xi32>) {
  kvcache.gather_ragged %cache, %out, %ctx_offsets : !cache, memref<?x2x64xf16>, memref<?xi32>
  return
}

// SERIAL-LABEL: llvm.func @copy_pages(
// CHECK-LABEL: llvm.func @copy_pages(
// CHECK: omp.parallel
// CHECK: omp.wsloop
// CHECK-NOT: omp.parallel
// CHECK: llvm.return
func.func @copy_pages(%collection: !collection, %pairs: memref<?x2xi32>) {
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  return
}

// Attention: one task per (sequence, KV head, tile of rows), so (number of
// sequences) x 2 x (tiles of the longest sequence) iterations; or, with at
// least 4 sequences per thread and rows of decode only (longest x GQA 4 <
// 16), one task per (sequence, tile) with both KV heads. The threads are
// the option's (3: 12 sequences), else the OpenMP runtime's, asked at run
// time (and declared once in the module).
// SERIAL-LABEL: llvm.func @attention(
// SERIAL-NOT: omp_get_max_threads
// CHECK-LABEL: llvm.func @attention(
// THREADS: %[[MIN:.*]] = llvm.mlir.constant(12 : index) : i64
// DEFAULT: %[[N:.*]] = llvm.call @omp_get_max_threads() : () -> i32
// DEFAULT-NEXT: %[[NT:.*]] = llvm.zext %[[N]] : i32 to i64
// DEFAULT-NEXT: %[[MIN:.*]] = llvm.mul %[[NT]], %{{.*}} : i64
// CHECK: %[[ENOUGH:.*]] = llvm.icmp "uge" %[[SEQS:.*]], %[[MIN]] : i64
// CHECK-NEXT: %[[LANES:.*]] = llvm.mul %{{.*}}, %{{.*}} : i64
// CHECK-NEXT: %[[DECODE:.*]] = llvm.icmp "ult" %[[LANES]], %{{.*}} : i64
// CHECK-NEXT: %[[WHOLE:.*]] = llvm.and %[[ENOUGH]], %[[DECODE]] : i1
// CHECK-NEXT: %[[HEADS:.*]] = llvm.select %[[WHOLE]], %{{.*}}, %{{.*}} : i1, i64
// CHECK-NEXT: %[[HEADTASKS:.*]] = llvm.udiv %{{.*}}, %[[HEADS]] : i64
// CHECK-NEXT: %[[KVTASKS:.*]] = llvm.mul %[[SEQS]], %[[HEADTASKS]] : i64
// CHECK-NEXT: %[[TASKS:.*]] = llvm.mul %[[KVTASKS]], %{{.*}} : i64
// CHECK-NEXT: omp.parallel
// CHECK: omp.wsloop
// CHECK: omp.loop_nest (%{{.*}}) : i64 = (%{{.*}}) to (%[[TASKS]]) step
// CHECK: llvm.udiv
// CHECK: llvm.urem
// CHECK-NOT: omp.parallel
// CHECK: llvm.return
func.func @attention(%q: memref<?x8x64xf16>, %k: !cache, %v: !cache, %offsets: memref<?xi32>, %out: memref<?x8x64xf16>) {
  kvcache.attention_ragged %q, %k, %v, %offsets, %out {scale = 0.125 : f32}
      : memref<?x8x64xf16>, !cache, !cache, memref<?xi32>, memref<?x8x64xf16>
  return
}

// SERIAL-LABEL: llvm.func @merge(
// CHECK-LABEL: llvm.func @merge(
// CHECK: omp.parallel
// CHECK: omp.wsloop
// CHECK-NOT: omp.parallel
// CHECK: llvm.return
func.func @merge(%a: memref<?x8x64xf16>, %lse_a: memref<?x8xf32>, %b: memref<?x8x64xf16>, %lse_b: memref<?x8xf32>) {
  kvcache.merge_states %a, %lse_a, %b, %lse_b, %a
      : memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf16>, memref<?x8xf32>, memref<?x8x64xf16>
  return
}

// A parallel loop of the input is lowered the same way.
// SERIAL-LABEL: llvm.func @user_loop(
// CHECK-LABEL: llvm.func @user_loop(
// CHECK: omp.parallel
// CHECK: omp.wsloop
// CHECK: llvm.store
// CHECK: llvm.return
func.func @user_loop(%m: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %m, %c0 : memref<?xf32>
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %one, %m[%i] : memref<?xf32>
  }
  return
}
