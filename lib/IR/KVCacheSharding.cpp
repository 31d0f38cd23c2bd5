//===- KVCacheSharding.cpp - head sharding of the tensor forms --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The ShardingInterface models of the tensor forms: the KV heads are the one
// shardable dimension. A collection's sharding is the sharding of its
// `blocks` on their head dimension; the token rows of the kernel ops follow
// it (query heads by whole GQA groups, since a contiguous chunk of KV heads
// serves a contiguous chunk of query heads), except that a replicated
// collection of one KV head (MQA, MLA's latent head) serves query heads
// split alone. Partitioned, each op keeps its operation and attributes, and
// its collection and cache types get num_heads / N: no op needs
// communication (docs/Contract.md, section 3.7).
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/ShardingInterfaceImpl.h"
#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::shard;

/// The head dimension of a tensor of scales of kind `scales`: the last but
/// one for `block<G>`, the last for `token_head`; none for `tensor` (one
/// scale per layer, replicated).
static std::optional<int64_t> scalesHeadDim(KVScales scales, int64_t rank) {
  if (scales.getKind() == KVScales::Kind::TokenHead)
    return rank - 1;
  if (scales.getKind() == KVScales::Kind::Block)
    return rank - 2;
  return std::nullopt;
}

/// The dimension of `value` (a ranked tensor operand or result of `op`) that
/// holds heads, or none when `value` is replicated (offsets, lengths, the
/// lookup table, page pairs, the cos/sin table, positions).
static std::optional<int64_t> headDim(Operation *op, Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return std::nullopt;
  int64_t rank = type.getRank();
  if (auto constructor = dyn_cast<CollectionOpInterface>(op)) {
    SmallVector<OpOperand *> data = constructor.getCacheDataOperands();
    if (value == data.front()->get())
      return rank - 2;
    if (data.size() == 1 || value != data.back()->get())
      return std::nullopt;
    auto collection =
        cast<KVCollectionTypeInterface>(op->getResult(0).getType());
    return scalesHeadDim(collection.getScales(), rank);
  }
  if (auto tensors = dyn_cast<CollectionTensorsOp>(op)) {
    if (value == tensors.getTensors().front())
      return rank - 2;
    auto collection =
        cast<KVCollectionTypeInterface>(tensors.getCollection().getType());
    return scalesHeadDim(collection.getScales(), rank);
  }
  // The other tensors are token rows [tokens, heads, ...] or per-head
  // vectors, but for the ops' offsets and tables.
  if (auto attention = dyn_cast<AttentionOpInterface>(op)) {
    if (value == attention.getSinks() || value == attention.getAlibi())
      return 0;
    if (value == attention.getRowOffsets() ||
        value == attention.getCosSin() || value == attention.getPositions())
      return std::nullopt;
    return 1;
  }
  bool isRows = TypeSwitch<Operation *, bool>(op)
                    .Case([&](StoreRaggedOp store) {
                      return value == store.getValues();
                    })
                    .Case([&](GatherRaggedOp gather) {
                      return value != gather.getCtxOffsets();
                    })
                    .Case([&](RopeRaggedOp rope) {
                      return value == rope.getQ() ||
                             value == rope.getQOut() ||
                             value.getDefiningOp() == op;
                    })
                    .Case([](MergeStatesOp) { return true; })
                    .Default([](Operation *) { return false; });
  return isRows ? std::optional<int64_t>(1) : std::nullopt;
}

/// `type` (a collection or layer cache type of the paged or continuous
/// kind) with `numHeads` heads; null for another kind.
static Type withNumHeads(Type type, int64_t numHeads) {
  MLIRContext *context = type.getContext();
  auto paged = [&](auto paged) -> Type {
    return decltype(paged)::get(context, paged.getElementType(), numHeads,
                                paged.getHeadSize(), paged.getPageSize(),
                                paged.getMla(), paged.getAssertWriteMode(),
                                paged.getScales());
  };
  auto continuous = [&](auto continuous) -> Type {
    return decltype(continuous)::get(
        context, continuous.getElementType(), numHeads,
        continuous.getHeadSize(), continuous.getMla(),
        continuous.getAssertWriteMode(), continuous.getScales());
  };
  return TypeSwitch<Type, Type>(type)
      .Case<PagedCacheType, PagedCollectionType>(paged)
      .Case<ContinuousCacheType, ContinuousCollectionType>(continuous)
      .Default([](Type) { return Type(); });
}

/// The KV heads of `type` (a layer cache or collection type), or none.
static std::optional<int64_t> numHeadsOf(Type type) {
  if (auto cache = dyn_cast<KVCacheTypeInterface>(type))
    return cache.getNumHeads();
  if (auto collection = dyn_cast<KVCollectionTypeInterface>(type))
    return collection.getNumHeads();
  return std::nullopt;
}

namespace {

/// The head sharding an op was found with: the grid axes its heads are split
/// over (none: replicated), on grid `grid`.
struct HeadSharding {
  FlatSymbolRefAttr grid;
  SmallVector<GridAxis> axes;
};

/// Reports that `op` has its heads sharded two ways.
LogicalResult reportTwoShardings(Operation *op) {
  return op->emitOpError(
      "has heads sharded two ways (a query head follows its KV head): split "
      "the heads of its rows over the grid axes of its collection's blocks, "
      "or replicate both; only a replicated collection of one KV head (MQA, "
      "MLA) serves query heads split alone");
}

/// Merges the sharding of `value` (`sharding`, on `op`) into `found`, with an
/// error where it splits a dimension other than the heads or disagrees with
/// what was found before.
LogicalResult mergeSharding(Operation *op, Value value,
                            const Sharding &sharding,
                            std::optional<HeadSharding> &found) {
  if (!sharding)
    return success();
  std::optional<int64_t> dim = headDim(op, value);
  HeadSharding here{sharding.getGridAttr(), {}};
  for (auto [index, axes] : llvm::enumerate(sharding.getSplitAxes())) {
    if (axes.empty())
      continue;
    if (!dim || static_cast<int64_t>(index) != *dim)
      return op->emitOpError("can be sharded only on its heads: dimension ")
             << index << " of a value of type " << value.getType()
             << " is split";
    here.axes.assign(axes.asArrayRef().begin(), axes.asArrayRef().end());
  }
  // A value without heads (offsets, lengths, the table) is replicated
  // whatever the heads' sharding.
  if (!dim)
    return success();
  if (found && (found->grid != here.grid || found->axes != here.axes))
    return reportTwoShardings(op);
  found = std::move(here);
  return success();
}

/// The head sharding of the collection `value` (a collection or a layer
/// cache) belongs to: that of the `blocks` its constructor is built from,
/// which propagation annotates first; none where the constructor is not
/// visible or its blocks have no sharding.
std::optional<HeadSharding> collectionSharding(Value value) {
  CollectionOpInterface constructor = getCollectionConstructor(value);
  if (!constructor)
    return std::nullopt;
  OpOperand &blocks = *constructor.getCacheDataOperands().front();
  FailureOr<std::pair<bool, Sharding>> sharding = getSharding(blocks);
  std::optional<HeadSharding> found;
  if (failed(sharding) ||
      failed(mergeSharding(constructor, blocks.get(), sharding->second, found)))
    return std::nullopt;
  return found;
}

/// Merges into `found` the sharding of the collection of each cache or
/// collection operand of `op`, with an error where it disagrees with the
/// rows or is unknown while the rows are split.
LogicalResult mergeCollectionShardings(Operation *op,
                                       std::optional<HeadSharding> &found) {
  SmallVector<std::pair<Value, int64_t>> unknown;
  for (Value operand : op->getOperands()) {
    std::optional<int64_t> heads = numHeadsOf(operand.getType());
    if (!heads)
      continue;
    std::optional<HeadSharding> collection = collectionSharding(operand);
    if (!collection) {
      unknown.emplace_back(operand, *heads);
      continue;
    }
    // One KV head cannot split: every device keeps it whole and every
    // query head reads it, so the query heads shard alone (MQA, MLA's
    // latent head).
    if (*heads == 1 && collection->axes.empty() && found)
      continue;
    if (found && (found->grid != collection->grid ||
                  found->axes != collection->axes))
      return reportTwoShardings(op);
    found = std::move(collection);
  }
  if (!found || found->axes.empty())
    return success();
  for (auto [operand, heads] : unknown)
    if (heads != 1)
      return op->emitOpError("has its heads split, but the ")
             << heads << " KV heads of its operand of type "
             << operand.getType()
             << " have no sharding: build its collection in this function "
                "from tensors and annotate their blocks with the same split, "
                "or replicate the heads";
  return success();
}

/// Checks that the heads of every tensor of `op` divide among the devices
/// of `found`. The collection's KV heads are those of its `blocks`: its
/// constructor reports them, once.
LogicalResult checkDivisible(Operation *op, const HeadSharding &found) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<GridOp>(op, found.grid);
  if (!grid)
    return op->emitOpError("shards its heads on an unknown grid ")
           << found.grid;
  int64_t devices = collectiveProcessGroupSize(found.axes, grid);
  auto check = [&](Value value, int64_t heads) -> LogicalResult {
    if (ShapedType::isDynamic(heads) || heads % devices == 0)
      return success();
    return op->emitOpError("has ")
           << heads << " heads in a value of type " << value.getType()
           << ", not divisible among the " << devices << " devices of "
           << found.grid
           << " (a GQA group stays on one device): shard over a number of "
              "devices that divides it, or replicate the heads";
  };
  SmallVector<Value> values(op->getOperands());
  llvm::append_range(values, op->getResults());
  for (Value value : values) {
    std::optional<int64_t> dim = headDim(op, value);
    if (dim && failed(check(value, cast<RankedTensorType>(value.getType())
                                       .getDimSize(*dim))))
      return failure();
  }
  return success();
}

/// The sharding of a tensor of `op` in the op's sharding `option`: split on
/// its head dimension, or replicated.
Sharding tensorSharding(Operation *op, Value value,
                        const ShardingOption &option) {
  SmallVector<GridAxesAttr> split;
  std::optional<int64_t> dim = headDim(op, value);
  if (dim && !option.shardingArray.front().empty()) {
    split.assign(*dim + 1, GridAxesAttr::get(op->getContext(), {}));
    split.back() =
        GridAxesAttr::get(op->getContext(), option.shardingArray.front());
  } else {
    split.push_back(GridAxesAttr::get(op->getContext(), {}));
  }
  return Sharding::get(option.grid, split);
}

/// The ShardingInterface model of `OpTy`: one notional loop, over the KV
/// heads, sharded alike in every tensor with heads and in the collection.
template <typename OpTy>
struct HeadShardingModel
    : public ShardingInterface::ExternalModel<HeadShardingModel<OpTy>, OpTy> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *) const {
    return {utils::IteratorType::parallel};
  }

  FailureOr<ShardingOption>
  getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                    ArrayRef<Sharding> resultShardings) const {
    std::optional<HeadSharding> found;
    for (auto [value, sharding] :
         llvm::zip(op->getOperands(), operandShardings))
      if (failed(mergeSharding(op, value, sharding, found)))
        return failure();
    for (auto [value, sharding] : llvm::zip(op->getResults(), resultShardings))
      if (failed(mergeSharding(op, value, sharding, found)))
        return failure();
    if (failed(mergeCollectionShardings(op, found)))
      return failure();
    if (!found)
      return ShardingOption::makeEmpty();
    if (failed(checkDivisible(op, *found)))
      return failure();
    return ShardingOption({found->axes}, found->grid);
  }

  FailureOr<std::vector<Sharding>>
  getShardingAnnotations(Operation *op, const ShardingOption &option) const {
    std::vector<Sharding> result;
    SmallVector<Value> values(op->getOperands());
    llvm::append_range(values, op->getResults());
    for (Value value : values)
      result.push_back(isa<RankedTensorType>(value.getType())
                           ? tensorSharding(op, value, option)
                           : Sharding());
    return result;
  }

  LogicalResult addShardingAnnotations(Operation *op, OpBuilder &builder,
                                       const ShardingOption &option) const {
    if (option.empty)
      return success();
    for (OpResult result : op->getResults())
      if (isa<RankedTensorType>(result.getType()))
        maybeInsertTargetShardingAnnotation(
            tensorSharding(op, result, option), result, builder);
    for (OpOperand &operand : op->getOpOperands())
      if (isa<RankedTensorType>(operand.get().getType()))
        maybeInsertSourceShardingAnnotation(
            tensorSharding(op, operand.get(), option), operand, builder);
    return success();
  }

  /// The same op on the partitioned operands; its tensor results get the
  /// shapes of their shardings, its collection and cache results the heads of
  /// one device (those of the partitioned operands).
  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    int64_t devices = 1;
    for (auto [operand, partitioned] :
         llvm::zip(op->getOperands(), partitionedOperands)) {
      std::optional<int64_t> heads = numHeadsOf(operand.getType());
      std::optional<int64_t> dim = headDim(op, operand);
      if (heads)
        devices = *heads / *numHeadsOf(partitioned.getType());
      else if (dim && isa<CollectionOpInterface>(op))
        devices = cast<RankedTensorType>(operand.getType()).getDimSize(*dim) /
                  cast<RankedTensorType>(partitioned.getType())
                      .getDimSize(*dim);
    }
    SmallVector<Type> types;
    for (auto [result, sharding] :
         llvm::zip(op->getResults(), resultShardings)) {
      Type type = result.getType();
      std::optional<int64_t> heads = numHeadsOf(type);
      if (heads && devices != 1)
        type = withNumHeads(type, *heads / devices);
      else if (!heads && sharding)
        type = shardType(type, getGrid(op, sharding.getGridAttr(), symbolTable),
                         sharding);
      if (!type)
        return op->emitOpError("has heads sharded in a value of type ")
               << result.getType()
               << ", whose kind has no sharded form (the paged and "
                  "continuous kinds have one): replicate its blocks";
      types.push_back(type);
    }
    IRMapping operands;
    operands.map(op->getOperands(), partitionedOperands);
    Operation *partitionedOp = builder.clone(*op, operands);
    for (auto [result, type] : llvm::zip(partitionedOp->getResults(), types))
      result.setType(type);
    partitionMap.map(op->getResults(), partitionedOp->getResults());
    return success();
  }
};

} // namespace

/// Attaches HeadShardingModel to each of `OpTys`.
template <typename... OpTys>
static void attachHeadShardingModels(MLIRContext *context) {
  (OpTys::template attachInterface<HeadShardingModel<OpTys>>(*context), ...);
}

void mlir::kvcache::registerShardingInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, KVCacheDialect *) {
    // The metadata ops read what every device has alike (lengths, table,
    // layers): they take the collection's sharding and keep their results.
    attachHeadShardingModels<
        PagedCollectionOp, ContinuousCollectionOp, GetKeyCacheOp,
        GetValueCacheOp, StoreRaggedOp, GatherRaggedOp, CopyPagesOp,
        AttentionRaggedOp, MlaAttentionRaggedOp, MergeStatesOp, RopeRaggedOp,
        CollectionTensorsOp, CacheLengthOp, MaxSeqLengthOp, MaxCacheLengthOp,
        NumPagesOp, NumLayersOp, NumSequencesOp, CapacityOp>(context);
  });
}
