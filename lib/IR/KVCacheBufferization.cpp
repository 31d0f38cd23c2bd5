//===- KVCacheBufferization.cpp - tensor forms ------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The BufferizableOpInterface models of the kernel ops: one-shot-bufferize
// replaces an op in tensor form by the same op in memref form on the buffers
// of its tensor operands, and the results of a destination-style op by the
// buffers of its inits (docs/Contract.md section 3.5).
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/BufferizableOpInterfaceImpl.h"
#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::kvcache;

/// Replaces `op` (tensor form) by the same op, attributes and properties on
/// the buffers of its tensor operands, with no results: the memref form, which
/// writes its inits' buffers in place.
static LogicalResult bufferizeKernelOp(Operation *op, RewriterBase &rewriter,
                                       const BufferizationOptions &options,
                                       BufferizationState &state) {
  SmallVector<Value> operands;
  for (Value operand : op->getOperands()) {
    if (!isa<TensorType>(operand.getType())) {
      operands.push_back(operand);
      continue;
    }
    FailureOr<Value> buffer = getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    operands.push_back(*buffer);
  }
  OperationState memrefForm(op->getLoc(), op->getName());
  memrefForm.addOperands(operands);
  memrefForm.addAttributes(op->getDiscardableAttrDictionary().getValue());
  memrefForm.propertiesAttr = op->getPropertiesAsAttribute();
  rewriter.setInsertionPoint(op);
  rewriter.create(memrefForm);
  SmallVector<Value> results;
  if (auto destinationStyle = dyn_cast<DestinationStyleOpInterface>(op))
    for (OpOperand &init : destinationStyle.getDpsInitsMutable())
      results.push_back(operands[init.getOperandNumber()]);
  replaceOpWithBufferizedValues(rewriter, op, results);
  return success();
}

namespace {

/// gather_ragged, the attention ops, merge_states: every operand is read (rows
/// of an init the op does not write keep their values), the inits are
/// written in place and alias their results.
template <typename OpTy>
struct DestinationStyleKernelModel
    : DstBufferizableOpInterfaceExternalModel<DestinationStyleKernelModel<OpTy>,
                                              OpTy> {
  /// merge_states computes each (row, head) of `out` and `lse` from the same
  /// (row, head) of its operands only, so `out` may be `out_a` and `lse`
  /// `lse_a` (docs/Contract.md section 3.3) without a copy.
  bool bufferizesToElementwiseAccess(Operation *op, const AnalysisState &,
                                     ArrayRef<OpOperand *>) const {
    return isa<MergeStatesOp>(op);
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    return bufferizeKernelOp(op, rewriter, options, state);
  }
};

/// store_ragged, copy_pages: their tensor operands are only read (the cache
/// they write is a memref handle, not a tensor).
template <typename OpTy>
struct ReadingKernelModel
    : BufferizableOpInterface::ExternalModel<ReadingKernelModel<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }

  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }

  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    return bufferizeKernelOp(op, rewriter, options, state);
  }
};

} // namespace

void mlir::kvcache::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, KVCacheDialect *) {
    GatherRaggedOp::attachInterface<
        DestinationStyleKernelModel<GatherRaggedOp>>(*context);
    AttentionRaggedOp::attachInterface<
        DestinationStyleKernelModel<AttentionRaggedOp>>(*context);
    MlaAttentionRaggedOp::attachInterface<
        DestinationStyleKernelModel<MlaAttentionRaggedOp>>(*context);
    MergeStatesOp::attachInterface<DestinationStyleKernelModel<MergeStatesOp>>(
        *context);
    StoreRaggedOp::attachInterface<ReadingKernelModel<StoreRaggedOp>>(
        *context);
    CopyPagesOp::attachInterface<ReadingKernelModel<CopyPagesOp>>(*context);
  });
}
