//===- GPUKernelBuilder.cpp - the builder of GPU kernel bodies ------------===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "GPUKernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::kvcache;

/// A unary f32 NVVM intrinsic call.
static Value callNVVM(KernelBuilder &k, StringRef intrinsic, Value x) {
  return LLVM::CallIntrinsicOp::create(k.b, k.loc, k.b.getF32Type(),
                                       k.b.getStringAttr(intrinsic),
                                       ValueRange{x})
      .getResult(0);
}

Value GPUKernelBuilder::exp2Approx(Value x) {
  return callNVVM(*this, "llvm.nvvm.ex2.approx.ftz.f32", x);
}

Value GPUKernelBuilder::log2Approx(Value x) {
  return callNVVM(*this, "llvm.nvvm.lg2.approx.ftz.f", x);
}

Value GPUKernelBuilder::exp(Value x) {
  return exp2Approx(fmul(x, f32(kLog2E)));
}

Value GPUKernelBuilder::log(Value x) {
  return fmul(log2Approx(x), f32(kLn2));
}

Value GPUKernelBuilder::tanh(Value x) {
  Value e = exp2Approx(fmul(x, f32(2 * kLog2E)));
  return fsub(f32(1), fdiv(f32(2), fadd(f32(1), e)));
}

/// `combine` of `value` over `lanes` consecutive lanes by xor shuffles.
static Value laneReduce(KernelBuilder &k, Value value, int64_t lanes,
                        function_ref<Value(Value, Value)> combine) {
  for (int64_t offset = lanes / 2; offset >= 1; offset /= 2)
    value = combine(value, gpu::ShuffleOp::create(k.b, k.loc, value, offset,
                                                  32, gpu::ShuffleMode::XOR)
                               .getShuffleResult());
  return value;
}

Value GPUKernelBuilder::readLane(Value index, Value lane) {
  Value value = gpu::ShuffleOp::create(b, loc, toI32(index), lane, i32(32),
                                       gpu::ShuffleMode::IDX)
                    .getShuffleResult();
  return toIndex(value);
}

Value GPUKernelBuilder::laneSum(Value value, int64_t lanes) {
  return laneReduce(*this, value, lanes,
                    [&](Value x, Value y) { return fadd(x, y); });
}

Value GPUKernelBuilder::laneMax(Value value, int64_t lanes) {
  return laneReduce(*this, value, lanes,
                    [&](Value x, Value y) { return fmax(x, y); });
}
