//===- GPUKernelBuilder.h - the builder of GPU kernel bodies ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// KernelBuilder for the body of a GPU kernel: the warp-level operations
// (xor and idx shuffles) and NVVM's fast approximations of 2^x and log2(x),
// which the common formulas (online softmax, attention's clauses) reach
// through KernelBuilder's target hooks. A math.exp2 in a gpu.func would
// become a libdevice call; ex2.approx is one instruction and needs no
// libdevice.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOGPU_GPUKERNELBUILDER_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOGPU_GPUKERNELBUILDER_H

#include "../KernelCommon/KernelBuilder.h"

namespace mlir::kvcache {

/// Builds the ops of a GPU kernel's body at one location.
struct GPUKernelBuilder : KernelBuilder {
  using KernelBuilder::KernelBuilder;

  /// 2^x through NVVM's ex2.approx (GPU kernels: no libdevice needed).
  Value exp2Approx(Value x);
  /// log2(x) through NVVM's lg2.approx (-inf for 0).
  Value log2Approx(Value x);

  /// The sum of `value` over the `lanes` consecutive lanes of a key (xor
  /// shuffles within a warp).
  Value laneSum(Value value, int64_t lanes);
  /// The maximum of `value` over the `lanes` consecutive lanes (as laneSum).
  Value laneMax(Value value, int64_t lanes);
  /// The value that `index` (below 2^32) has in lane `lane` (i32) of the
  /// warp: one 32-bit idx shuffle, in which every lane of the warp must take
  /// part.
  Value readLane(Value index, Value lane);

  //===--- target hooks ---------------------------------------------------===//
  /// ex2.approx.
  Value softmaxExp2(Value x) override { return exp2Approx(x); }
  /// 2^(x log2(e)) through ex2.approx.
  Value exp(Value x) override;
  /// log2(x) ln(2) through lg2.approx.
  Value log(Value x) override;
  /// lg2.approx.
  Value log2(Value x) override { return log2Approx(x); }
  /// 1 - 2 / (1 + 2^(2 x log2(e))) through ex2.approx (+-1 for large |x|:
  /// 2^x saturates to 0 or +inf).
  Value tanh(Value x) override;
  /// The device: a failed check is a device assertion.
  RunsOn runsOn() const override { return RunsOn::Device; }
};

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOGPU_GPUKERNELBUILDER_H
