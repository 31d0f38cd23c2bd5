//===- KernelBuilder.cpp - the vocabulary kernel lowerings build with -----===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace mlir::kvcache;

Value KernelBuilder::fma(Value x, Value y, Value z) {
  return LLVM::FMAOp::create(b, loc, x, y, z);
}

Value KernelBuilder::dot(Value x, Value y) {
  auto at = [&](Value v, int64_t i) -> Value {
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
  };
  int64_t n = cast<VectorType>(x.getType()).getNumElements();
  Value sum = fmul(at(x, 0), at(y, 0));
  for (int64_t i = 1; i < n; ++i)
    sum = fma(at(x, i), at(y, i), sum);
  return sum;
}

Value KernelBuilder::exp2(Value x) { return math::Exp2Op::create(b, loc, x); }

Value KernelBuilder::exp2Approx(Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, loc, b.getF32Type(),
             b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"), ValueRange{x})
      .getResult(0);
}

Value KernelBuilder::laneSum(Value value, int64_t lanes) {
  for (int64_t offset = lanes / 2; offset >= 1; offset /= 2)
    value = fadd(value, gpu::ShuffleOp::create(b, loc, value, offset, 32,
                                               gpu::ShuffleMode::XOR)
                            .getShuffleResult());
  return value;
}

void KernelBuilder::forLoop(Value lower, Value upper, Value step,
                            function_ref<void(Value)> body) {
  forLoop(lower, upper, step, ValueRange{},
          [&](Value iv, ValueRange) -> SmallVector<Value> {
            body(iv);
            return {};
          });
}

SmallVector<Value>
KernelBuilder::forLoop(Value lower, Value upper, Value step, ValueRange init,
                       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(b, loc, lower, upper, step, init);
  OpBuilder::InsertionGuard guard(b);
  if (init.empty()) {
    // A loop without iteration arguments comes with its scf.yield.
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar(), ValueRange{});
    return {};
  }
  b.setInsertionPointToStart(loop.getBody());
  scf::YieldOp::create(b, loc,
                       body(loop.getInductionVar(), loop.getRegionIterArgs()));
  return SmallVector<Value>(loop.getResults());
}

void KernelBuilder::ifThen(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  body();
}

SmallVector<Value>
KernelBuilder::ifThenElse(Value cond, TypeRange types,
                          function_ref<SmallVector<Value>()> thenBody,
                          function_ref<SmallVector<Value>()> elseBody) {
  auto ifOp = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  if (types.empty()) {
    // scf.if without results gets an implicit terminator.
    b.setInsertionPoint(ifOp.thenYield());
    thenBody();
    b.setInsertionPoint(ifOp.elseYield());
    elseBody();
    return {};
  }
  scf::YieldOp::create(b, loc, thenBody());
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  scf::YieldOp::create(b, loc, elseBody());
  return SmallVector<Value>(ifOp.getResults());
}
