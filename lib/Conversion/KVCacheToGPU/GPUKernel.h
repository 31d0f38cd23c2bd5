//===- GPUKernel.h - a kernel op's GPU kernel and its launch ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Every kernel of convert-kvcache-to-gpu is built the same way: a gpu.func
// named `<function>_<name>` in gpu.module @kvcache_kernels whose parameters
// are exactly the operands the kernel ABI lists (docs/KernelABI.md), in that
// order, and a gpu.launch_func where the kernel op was. The signature is
// explicit: it does not depend on which values the body uses or in which
// order (as it would with gpu.launch and outlining).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOGPU_GPUKERNEL_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOGPU_GPUKERNEL_H

#include "GPUKernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"

#include <memory>

namespace mlir::kvcache {

/// The name of the gpu.module that holds the kernels of kernel ops.
constexpr StringLiteral kKernelModuleName = "kvcache_kernels";

/// Grid and block of a launch: a dynamic grid, a static 1-D block, and the
/// bytes of dynamic shared memory (0: none; docs/KernelABI.md).
struct LaunchShape {
  Value gridX, gridY, gridZ;
  int64_t threads;
  int64_t dynamicSharedBytes = 0;
};

/// A kernel of a kernel op under construction.
class GPUKernel {
public:
  /// Creates kernel `<function>_<name>` (a unique name in the kernel module)
  /// with parameters `operands` and its launch at `host`'s insertion point
  /// with `shape`. The body is empty: build it with `builder()`. Returns null
  /// (with an error on `op`) when the module's symbol @kvcache_kernels is
  /// taken by something other than a gpu.module.
  static std::unique_ptr<GPUKernel> create(OpBuilder &host, Operation *op,
                                           StringRef name,
                                           ValueRange operands,
                                           const LaunchShape &shape);

  /// The builder of the kernel body (inserting before its gpu.return).
  GPUKernelBuilder &builder() { return k; }
  gpu::GPUFuncOp getFunction() { return function; }
  /// The parameter that stands for host value `operand` in the body.
  Value param(Value operand) const { return mapping.lookup(operand); }

  Value blockId(gpu::Dimension dim);
  Value threadId(gpu::Dimension dim);
  Value gridDim(gpu::Dimension dim);
  Value blockDim(gpu::Dimension dim);
  /// A buffer in workgroup (shared) memory of `shape` and `elementType`.
  Value addSharedBuffer(ArrayRef<int64_t> shape, Type elementType);
  /// A buffer of `shape` and `elementType` in the launch's dynamic shared
  /// memory, after the buffers added before it (16-byte aligned); the
  /// launch's LaunchShape::dynamicSharedBytes must hold them all. Put all of
  /// a kernel's buffers there or none: when one kernel uses it, NVPTX turns
  /// the zero-sized array of MLIR's lowering into a one-byte variable, which
  /// is at the start of the block's shared memory (where the dynamic memory
  /// starts) only when the kernel has no static buffers.
  Value addDynamicSharedBuffer(ArrayRef<int64_t> shape, Type elementType);

  /// Visits the rows of the ragged `rows` (dim 0) that belong to the batch
  /// (offsets[0] <= row < offsets[num_sequences]), block x taking rows
  /// x, x + gridDim.x, ...; `body` gets the row and the number of sequences.
  void forEachBatchRow(Value rows, Value offsets,
                       function_ref<void(Value row, Value numSequences)> body);

private:
  GPUKernel(gpu::GPUFuncOp function, Location loc);

  gpu::GPUFuncOp function;
  OpBuilder bodyBuilder;
  GPUKernelBuilder k;
  IRMapping mapping;
  /// Block ids, thread ids, grid and block sizes, per dimension.
  Value ids[4][3];
  /// The launch's dynamic shared memory (bytes, as i8) and the bytes of it
  /// that buffers take so far.
  Value dynamicShared;
  int64_t dynamicSharedBytes = 0, dynamicSharedUsed = 0;
};

/// Builds kernel `<function>_<op name>` of kernel op `op` with the op's
/// kernel operands as parameters, launched with `shape` when `run` holds (a
/// zero-sized grid is a launch error); `body` fills it.
LogicalResult emitGuardedKernel(OpBuilder &builder, Operation *op, Value run,
                                const LaunchShape &shape,
                                function_ref<void(GPUKernel &)> body);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOGPU_GPUKERNEL_H
