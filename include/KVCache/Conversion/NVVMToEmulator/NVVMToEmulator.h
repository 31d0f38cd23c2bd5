//===- NVVMToEmulator.h - NVVM kernels to GPU-emulator calls ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The `kvcache-emulate-nvvm` pass: kernels in the NVVM/LLVM dialects become
// CPU functions calling the GPU emulator runtime (lib/ExecutionEngine), host
// `gpu.launch_func`s become runtime launches. The calls follow
// KVCache/ExecutionEngine/EmulatorABI.h. See docs/Contract.md, "Running the
// GPU kernels without a GPU".
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_CONVERSION_NVVMTOEMULATOR_NVVMTOEMULATOR_H
#define KVCACHE_CONVERSION_NVVMTOEMULATOR_NVVMTOEMULATOR_H

#include "KVCache/ExecutionEngine/EmulatorABI.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
class ModuleOp;

namespace kvcache {

/// Deprecated: the flags of `__kvemu_access` and `__kvemu_mma` are defined
/// once, in KVCache/ExecutionEngine/EmulatorABI.h (emulator::AccessFlags,
/// emulator::kAccessSpaceShift, emulator::MmaFlags). These names refer to
/// them and remain for existing users.
using EmulatorAccessFlags
    [[deprecated("use emulator::AccessFlags")]] = emulator::AccessFlags;
[[deprecated("use emulator::kAccessWrite")]] constexpr int32_t
    kEmulatorAccessWrite = emulator::kAccessWrite;
[[deprecated("use emulator::kAccessAtomic")]] constexpr int32_t
    kEmulatorAccessAtomic = emulator::kAccessAtomic;
[[deprecated("use emulator::kAccessSpaceShift")]] constexpr int32_t
    kEmulatorAccessSpaceShift = emulator::kAccessSpaceShift;
using EmulatorMmaFlags
    [[deprecated("use emulator::MmaFlags")]] = emulator::MmaFlags;
[[deprecated("use emulator::kMmaK16")]] constexpr int32_t kEmulatorMmaK16 =
    emulator::kMmaK16;
[[deprecated("use emulator::kMmaBF16")]] constexpr int32_t kEmulatorMmaBF16 =
    emulator::kMmaBF16;
[[deprecated("use emulator::kMmaAccumulatorF16")]] constexpr int32_t
    kEmulatorMmaAccumulatorF16 = emulator::kMmaAccumulatorF16;
[[deprecated("use emulator::kMmaResultF16")]] constexpr int32_t
    kEmulatorMmaResultF16 = emulator::kMmaResultF16;

/// Rewrites every `gpu.module` of `module` (kernels already in the
/// NVVM/LLVM dialects) into host functions calling the emulator runtime and
/// every LLVM-level `gpu.launch_func` into `__kvemu_launch`. Emits an error
/// on anything the emulator does not model.
LogicalResult emulateNVVMKernels(ModuleOp module);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_CONVERSION_NVVMTOEMULATOR_NVVMTOEMULATOR_H
