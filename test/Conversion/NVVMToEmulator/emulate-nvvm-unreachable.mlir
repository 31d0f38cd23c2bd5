// RUN: kvcache-opt %s -kvcache-emulate-nvvm | FileCheck %s

// Blocks no path reaches are dropped before the ops are rewritten: their
// ops never run, so even one the emulator does not model is no error.

// CHECK-LABEL: llvm.func @__kvemu_kernels_kernel(
// CHECK-NOT: nvvm.
// CHECK: llvm.br ^[[NEXT:.*]]
// CHECK-NEXT: ^[[NEXT]]:
// CHECK: llvm.call @__kvemu_barrier(
// CHECK-NEXT: llvm.return
// CHECK-NEXT: }
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @kernel() attributes {gpu.kernel, nvvm.kernel} {
      llvm.br ^next
    ^dead:
      nvvm.fence.sc.cluster
      llvm.br ^next
    ^next:
      nvvm.barrier0
      llvm.return
    }
  }
}
