// RUN: kvcache-opt %s -kvcache-to-ptx | FileCheck %s
// RUN: kvcache-opt %s -kvcache-merge-gpu-modules | FileCheck %s --check-prefix=MERGE

// -kvcache-to-ptx merges every gpu.module (the two written here and the one
// outlined from the gpu.launch) into the first, so the result has exactly
// one gpu.binary holding all kernels and every launch refers to it. A kernel
// whose name is taken in the first module is renamed (`copy` -> `copy_0`),
// and its launch follows.

// CHECK-NOT: gpu.module
// CHECK: gpu.binary @first [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
// CHECK-SAME: .visible .entry copy(
// CHECK-SAME: .visible .entry copy_0(
// CHECK-SAME: .visible .entry host_kernel(
// CHECK-NOT: gpu.binary
// CHECK-NOT: gpu.module
// CHECK-LABEL: llvm.func @host(
// CHECK: gpu.launch_func @first::@copy blocks
// CHECK: gpu.launch_func @first::@copy_0 blocks
// CHECK: gpu.launch_func @first::@host_kernel blocks
// CHECK-NOT: gpu.launch_func

// MERGE: gpu.module @first {
// MERGE: gpu.func @copy(
// MERGE: memref.store %{{.*}}, %{{.*}}[%c0]
// MERGE: gpu.func @copy_0(
// MERGE: memref.store %{{.*}}, %{{.*}}[%c1]
// MERGE-NOT: gpu.module
// MERGE-LABEL: func.func @host(
// MERGE: gpu.launch_func @first::@copy blocks
// MERGE: gpu.launch_func @first::@copy_0 blocks

!cache = !kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>

module attributes {gpu.container_module} {
  gpu.module @first {
    gpu.func @copy(%cache: !cache, %out: memref<?xf16>, %b: index, %t: index) kernel {
      %c0 = arith.constant 0 : index
      %x = kvcache.load %cache[%b, %c0, %t, %c0] : !cache -> f16
      memref.store %x, %out[%c0] : memref<?xf16>
      gpu.return
    }
  }
  gpu.module @second {
    gpu.func @copy(%cache: !cache, %out: memref<?xf16>, %b: index, %t: index) kernel {
      %c1 = arith.constant 1 : index
      %x = kvcache.load %cache[%b, %c1, %t, %c1] : !cache -> f16
      memref.store %x, %out[%c1] : memref<?xf16>
      gpu.return
    }
  }
  func.func @host(%cache: !cache, %out: memref<?xf16>, %b: index, %t: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @first::@copy blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%cache : !cache, %out : memref<?xf16>, %b : index, %t : index)
    gpu.launch_func @second::@copy blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%cache : !cache, %out : memref<?xf16>, %b : index, %t : index)
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %x = kvcache.load %cache[%b, %tx, %t, %tx] : !cache -> f16
      memref.store %x, %out[%tx] : memref<?xf16>
      gpu.terminator
    }
    return
  }
}
