//===- AttentionParams.cpp - the attention kernels' parameters ------------===//
//
// Part of the kvcache-mlir project.
//
// The parameters of the attention kernels (AttentionKernels.h) that stand
// for the op's operands in the body, and the rope clause on q over them.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

std::tuple<Value, Value, Value, Value, Value, Value>
attention::getAttentionParams(GPUKernel &kernel, AttentionOpInterface op) {
  return {kernel.param(op.getQ()),          kernel.param(op.getKeyCache()),
          kernel.param(op.getValueCache()), kernel.param(op.getRowOffsets()),
          kernel.param(op.getOut()),
          getOptionalParam(kernel, op.getWorkspace())};
}

Value attention::getOptionalParam(GPUKernel &kernel, Value operand) {
  return operand ? kernel.param(operand) : Value();
}

QueryRope attention::makeQueryRope(GPUKernel &kernel, AttentionOpInterface op,
                                   const AttentionPlan &plan) {
  return QueryRope(kernel.builder(), op, kernel.param(op.getQ()),
                   getOptionalParam(kernel, op.getCosSin()),
                   getOptionalParam(kernel, op.getPositions()), plan.checked);
}
