//===- KVCacheBufferization.cpp - tensor forms ------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The BufferizableOpInterface models of the kernel ops and of the
// collections built from tensors: one-shot-bufferize replaces an op in
// tensor form by the same op in memref form on the buffers of its tensor
// operands, the results of a destination-style op by the buffers of its
// inits, the updated collection a write returns by the collection it wrote
// in place, and `collection_tensors` by the buffers the collection is built
// from (docs/Contract.md section 3.5).
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/BufferizableOpInterfaceImpl.h"
#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/DstBufferizableOpInterfaceImpl.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::kvcache;

/// Creates the memref form of `op` (tensor form): the same op, attributes
/// and properties on the buffers of its tensor operands, with the results of
/// types `resultTypes`. Sets `operands` to its operands.
static FailureOr<Operation *>
createMemRefForm(Operation *op, TypeRange resultTypes, RewriterBase &rewriter,
                 const BufferizationOptions &options, BufferizationState &state,
                 SmallVectorImpl<Value> &operands) {
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
  memrefForm.addTypes(resultTypes);
  memrefForm.addAttributes(op->getDiscardableAttrDictionary().getValue());
  memrefForm.propertiesAttr = op->getPropertiesAsAttribute();
  // rope_ragged's results are in segments (the new `q_out`, the updated
  // collection); its memref form has none.
  if (op->hasTrait<OpTrait::AttrSizedResultSegments>()) {
    StringRef name =
        OpTrait::AttrSizedResultSegments<void>::getResultSegmentSizeAttr();
    NamedAttrList properties(cast<DictionaryAttr>(memrefForm.propertiesAttr));
    auto sizes = cast<DenseI32ArrayAttr>(properties.get(name));
    assert(resultTypes.empty() && "a memref form with results in segments");
    properties.set(name, rewriter.getDenseI32ArrayAttr(
                             SmallVector<int32_t>(sizes.size(), 0)));
    memrefForm.propertiesAttr = properties.getDictionary(op->getContext());
  }
  rewriter.setInsertionPoint(op);
  return rewriter.create(memrefForm);
}

/// Replaces the kernel op `op` (tensor form) by its memref form, which has no
/// results: it writes its inits' buffers, and the cache, in place. A
/// destination-style op's results become its inits' buffers; the updated
/// collection of a cache write becomes the collection it wrote.
static LogicalResult bufferizeKernelOp(Operation *op, RewriterBase &rewriter,
                                       const BufferizationOptions &options,
                                       BufferizationState &state) {
  SmallVector<Value> operands;
  if (failed(createMemRefForm(op, {}, rewriter, options, state, operands)))
    return failure();
  SmallVector<Value> results;
  if (auto destinationStyle = dyn_cast<DestinationStyleOpInterface>(op))
    for (OpOperand &init : destinationStyle.getDpsInitsMutable())
      results.push_back(operands[init.getOperandNumber()]);
  auto writer = dyn_cast<CacheWriterOpInterface>(op);
  if (writer && writer.getUpdatedCollection()) {
    Value written = getOwningCollection(writer.getWrittenCache());
    if (!written)
      return op->emitOpError("returns an updated collection, but the "
                             "collection of the cache it writes is not "
                             "visible: take the cache from a "
                             "kvcache.get_key_cache in the same function");
    results.push_back(written);
  }
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
/// they write is a collection, whose constructor's operands are written).
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

/// paged_collection, continuous_collection built from tensors: the buffers
/// of `blocks` and `scales` are read, and written when an op consumes the
/// collection (writes it, or gives the buffers back as tensors that later
/// ops may write); those of the metadata only read. None aliases a tensor
/// result, so one-shot-bufferize copies `blocks` or `scales` exactly when
/// writing it in place would be wrong (it is read after the collection, or
/// not writable); kvcache-bufferize rejects such a program instead.
template <typename OpTy>
struct CollectionModel
    : BufferizableOpInterface::ExternalModel<CollectionModel<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }

  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand,
                               const AnalysisState &) const {
    return llvm::is_contained(
               cast<CollectionOpInterface>(op).getCacheDataOperands(),
               &operand) &&
           isCollectionConsumed(op->getResult(0));
  }

  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    SmallVector<Value> operands;
    FailureOr<Operation *> memrefForm = createMemRefForm(
        op, op->getResultTypes(), rewriter, options, state, operands);
    if (failed(memrefForm))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, (*memrefForm)->getResults());
    return success();
  }
};

/// collection_tensors: the buffers of the collection's `blocks` and
/// `scales`, which every write of the collection updated in place.
struct CollectionTensorsModel
    : BufferizableOpInterface::ExternalModel<CollectionTensorsModel,
                                             CollectionTensorsOp> {
  AliasingOpOperandList getAliasingOpOperands(Operation *, Value,
                                              const AnalysisState &) const {
    return {};
  }

  /// The buffer types of the constructor's `blocks` and `scales`.
  FailureOr<BufferLikeType>
  getBufferType(Operation *op, Value value, const BufferizationOptions &options,
                const BufferizationState &state,
                SmallVector<Value> &invocationStack) const {
    FailureOr<SmallVector<Value>> sources = getSources(op);
    if (failed(sources))
      return failure();
    Value source = (*sources)[cast<OpResult>(value).getResultNumber()];
    if (auto buffer = dyn_cast<BufferLikeType>(source.getType()))
      return buffer;
    return bufferization::getBufferType(source, options, state,
                                        invocationStack);
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    FailureOr<SmallVector<Value>> sources = getSources(op);
    if (failed(sources))
      return failure();
    SmallVector<Value> buffers;
    for (Value source : *sources) {
      if (!isa<TensorType>(source.getType())) {
        buffers.push_back(source);
        continue;
      }
      FailureOr<Value> buffer = getBuffer(rewriter, source, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    replaceOpWithBufferizedValues(rewriter, op, buffers);
    return success();
  }

private:
  /// The `blocks` and `scales` operands of the collection's constructor
  /// (tensors, or their buffers once it is bufferized).
  static FailureOr<SmallVector<Value>> getSources(Operation *op) {
    CollectionOpInterface constructor =
        getCollectionConstructor(cast<CollectionTensorsOp>(op).getCollection());
    if (!constructor)
      return op->emitOpError("needs the constructor of its collection in "
                             "the same function (kvcache.paged_collection or "
                             "kvcache.continuous_collection on tensors)");
    SmallVector<Value> sources;
    for (OpOperand *operand : constructor.getCacheDataOperands())
      sources.push_back(operand->get());
    return sources;
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
    RopeRaggedOp::attachInterface<DestinationStyleKernelModel<RopeRaggedOp>>(
        *context);
    StoreRaggedOp::attachInterface<ReadingKernelModel<StoreRaggedOp>>(
        *context);
    CopyPagesOp::attachInterface<ReadingKernelModel<CopyPagesOp>>(*context);
    PagedCollectionOp::attachInterface<CollectionModel<PagedCollectionOp>>(
        *context);
    ContinuousCollectionOp::attachInterface<
        CollectionModel<ContinuousCollectionOp>>(*context);
    CollectionTensorsOp::attachInterface<CollectionTensorsModel>(*context);
  });
}
