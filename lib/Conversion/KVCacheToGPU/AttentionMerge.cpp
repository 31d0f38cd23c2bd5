//===- AttentionMerge.cpp - the attention merge kernel ----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The second kernel of a split attention: block (row, query head) reads the
// splits' partial states from the workspace (KernelCommon/Softmax.h's
// SplitWorkspace), combines them with the online softmax's addPartial and
// writes the normalised row; each thread handles elements d, d + blockDim,
// ... of the value (head_size, or MLA's v_head_size). And how the
// attention kernels choose between the result and their partial state.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "../KernelCommon/AttentionClauses.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

void attention::writeResultOrPartial(KernelBuilder &k, Value workspace,
                                     Value numSplits,
                                     function_ref<void()> writeOut,
                                     function_ref<void()> writePartial) {
  if (!workspace)
    return writeOut();
  k.ifThenElse(
      k.eq(numSplits, k.index(1)), TypeRange{},
      [&] {
        writeOut();
        return SmallVector<Value>{};
      },
      [&] {
        writePartial();
        return SmallVector<Value>{};
      });
}

LogicalResult attention::emitAttentionMergeKernel(OpBuilder &host,
                                                  AttentionOpInterface op,
                                                  const AttentionPlan &plan,
                                                  Value grid, Value splits) {
  KernelBuilder hostBuilder{host, getKernelLoc(op)};
  int64_t threads = std::min<int64_t>(plan.valueSize, 256);
  // The sinks and lse operands follow when the op has them
  // (docs/KernelABI.md).
  SmallVector<Value> operands = {op.getWorkspace(), op.getRowOffsets(),
                                 op.getOut(), splits};
  for (Value optional : {op.getSinks(), op.getLse()})
    if (optional)
      operands.push_back(optional);
  std::unique_ptr<GPUKernel> kernel = GPUKernel::create(
      host, op, "attention_merge", operands,
      LaunchShape{grid, hostBuilder.index(plan.qHeads), hostBuilder.index(1),
                  threads});
  if (!kernel)
    return failure();
  GPUKernelBuilder &k = kernel->builder();
  OnlineSoftmax softmax(k);
  AttentionClauses clauses(k, op, getOptionalParam(*kernel, op.getSinks()));
  Value lse = getOptionalParam(*kernel, op.getLse());
  SplitWorkspace layout{plan.valueSize, plan.qHeads};
  Value workspace = kernel->param(op.getWorkspace());
  Value offsets = kernel->param(op.getRowOffsets());
  Value out = kernel->param(op.getOut());
  Value numSplits = kernel->param(splits);
  Value head = kernel->blockId(gpu::Dimension::y);
  Value thread = kernel->threadId(gpu::Dimension::x);
  Type f32 = host.getF32Type();
  kernel->forEachBatchRow(out, offsets, [&](Value row, Value) {
    Value first = layout.rowHeadOffset(k, row, head, numSplits);
    auto load = [&](Value offset) -> Value {
      return memref::LoadOp::create(k.b, k.loc, workspace, offset);
    };
    auto maxOf = [&](Value split) {
      return load(layout.maxOffset(k, layout.recordOffset(k, first, split)));
    };
    // First the largest max, then the weighted sums.
    SoftmaxState total = softmax.empty(f32);
    total.max = k.forLoop(k.index(0), numSplits, k.index(1), {total.max},
                          [&](Value split, ValueRange max) {
                            return SmallVector<Value>{
                                k.fmax(max[0], maxOf(split))};
                          })[0];
    // The sink joins once: one more logit of weight 1, no value.
    if (Value sink = clauses.loadSinkLogit(head)) {
      total.max = k.fmax(total.max, sink);
      total.sum = softmax.weight(sink, total.max);
    }
    total.sum = k.forLoop(k.index(0), numSplits, k.index(1), {total.sum},
                          [&](Value split, ValueRange sum) {
                            Value record = layout.recordOffset(k, first, split);
                            SoftmaxState partial = {total.max, sum[0], {}};
                            return SmallVector<Value>{
                                softmax
                                    .addPartial(partial, maxOf(split),
                                                load(layout.sumOffset(k, record)),
                                                /*acc=*/{})
                                    .sum};
                          })[0];
    if (lse)
      k.ifThen(k.eq(thread, k.index(0)), [&] {
        memref::StoreOp::create(k.b, k.loc,
                                clauses.logSumExp(total.max, total.sum), lse,
                                ValueRange{row, head});
      });
    k.forLoop(thread, k.index(plan.valueSize), k.index(threads), [&](Value d) {
      total.acc = k.forLoop(
          k.index(0), numSplits, k.index(1), {k.f32(0)},
          [&](Value split, ValueRange acc) {
            Value record = layout.recordOffset(k, first, split);
            SoftmaxState partial = {total.max, total.sum, acc[0]};
            return SmallVector<Value>{
                softmax
                    .addPartial(partial, maxOf(split), /*sum=*/{},
                                load(layout.accOffset(k, record, d)))
                    .acc};
          })[0];
      Value result = k.narrow(clauses.normalize(softmax, total),
                              plan.rowsElementType);
      memref::StoreOp::create(k.b, k.loc, result, out,
                              ValueRange{row, head, d});
    });
  });
  return success();
}
