//===- NVVMToEmulator.h - NVVM kernels to GPU-emulator calls ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The `kvcache-emulate-nvvm` pass: kernels in the NVVM/LLVM dialects become
// CPU functions calling the GPU emulator runtime (lib/ExecutionEngine), host
// `gpu.launch_func`s become runtime launches. See docs/Contract.md, "Running
// the GPU kernels without a GPU".
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_NVVMTOEMULATOR_NVVMTOEMULATOR_H
#define KVCACHE_CONVERSION_NVVMTOEMULATOR_NVVMTOEMULATOR_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class ModuleOp;

namespace kvcache {

/// Flags of `__kvemu_access` (the runtime's `kvemu_access_flags`): bit 0 a
/// write, bit 1 an atomic, bits 8-15 the pointer's address space.
enum EmulatorAccessFlags : int32_t {
  kEmulatorAccessWrite = 1,
  kEmulatorAccessAtomic = 2,
  kEmulatorAccessSpaceShift = 8,
};

/// Flags of `__kvemu_mma` (the runtime's `kMma*`): the shape m16n8k16
/// (else m16n8k8), bf16 multiplicands (else f16), an f16 accumulator C and
/// an f16 result D (else f32).
enum EmulatorMmaFlags : int32_t {
  kEmulatorMmaK16 = 1,
  kEmulatorMmaBF16 = 2,
  kEmulatorMmaAccumulatorF16 = 4,
  kEmulatorMmaResultF16 = 8,
};

/// Rewrites every `gpu.module` of `module` (kernels already in the
/// NVVM/LLVM dialects) into host functions calling the emulator runtime and
/// every LLVM-level `gpu.launch_func` into `__kvemu_launch`. Emits an error
/// on anything the emulator does not model.
LogicalResult emulateNVVMKernels(ModuleOp module);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_CONVERSION_NVVMTOEMULATOR_NVVMTOEMULATOR_H
