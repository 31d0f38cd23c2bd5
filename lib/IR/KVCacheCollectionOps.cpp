//===- KVCacheCollectionOps.cpp - collection constructors -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The verifiers of `kvcache.paged_collection` and
// `kvcache.continuous_collection`: the buffers a collection is built from
// checked against its type (docs/Contract.md, sections 1, 2 and 8).
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheOps.h"
#include "VerifierHelpers.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::opverify;

//===----------------------------------------------------------------------===//
// PagedCollectionOp / ContinuousCollectionOp
//===----------------------------------------------------------------------===//

/// Checks the `blocks` operand of a collection constructor against its
/// type: rank 6, element type, memory space, static dims kv_dim (1),
/// num_heads (4), head_size (5) and, for the kinds with pages, page_size
/// (3); for a memref, contiguous inner dims and head rows aligned.
static LogicalResult verifyBlocks(Operation *op, ShapedType blocks,
                                  const KVCacheParams &params,
                                  StringRef slotsName) {
  if (blocks.getRank() != 6)
    return op->emitOpError("expects 'blocks' of rank 6 [")
           << (params.hasStaticPages() ? "num_pages" : "num_blocks")
           << ", kv_dim, num_layers, " << slotsName
           << ", num_heads, head_size], got " << blocks;
  if (blocks.getElementType() != params.elementType)
    return op->emitOpError("expects 'blocks' element type ")
           << blocks.getElementType()
           << " to match the collection element type " << params.elementType;
  auto memref = dyn_cast<MemRefType>(blocks);
  if (memref && memref.getMemorySpace())
    return op->emitOpError("expects 'blocks' in the default memory space, got ")
           << blocks;
  if (failed(verifyStaticDim(op, "blocks", blocks, 1, "kv_dim",
                             params.kvDim())) ||
      (params.hasStaticPages() &&
       failed(verifyStaticDim(op, "blocks", blocks, 3, slotsName,
                              params.pageSize))) ||
      failed(verifyStaticDim(op, "blocks", blocks, 4, "num_heads",
                             params.numHeads)) ||
      failed(verifyStaticDim(op, "blocks", blocks, 5, "head_size",
                             params.headSize)))
    return failure();
  if (!memref)
    return success();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset)) ||
      strides[3] != params.rowElements() || strides[4] != params.headSize ||
      strides[5] != 1)
    return op->emitOpError("expects the inner dims [")
           << slotsName
           << ", num_heads, head_size] of 'blocks' to be contiguous (strides ["
           << params.rowElements() << ", " << params.headSize << ", 1]), got "
           << blocks;
  // Vector accesses are aligned to their width relative to a 16-byte aligned
  // base; head rows must start at multiples of head_size for that to hold.
  int64_t headSize = params.headSize;
  auto breaksRows = [&](int64_t value) {
    return ShapedType::isStatic(value) && value % headSize != 0;
  };
  if (breaksRows(offset) || breaksRows(strides[0]) || breaksRows(strides[1]) ||
      breaksRows(strides[2]))
    return op->emitOpError("expects the offset and outer strides of 'blocks' "
                           "to be multiples of head_size = ")
           << headSize << " (head rows must stay aligned), got " << blocks;
  return success();
}

/// Checks the metadata of a collection constructor: i32, the given ranks,
/// memrefs with the identity layout (the kernel ABI passes them as plain
/// memrefs).
static LogicalResult verifyMetadata(Operation *op, Value cacheLengths,
                                    Value lookupTable, int64_t tableRank,
                                    StringRef tableShape) {
  Type i32 = IntegerType::get(op->getContext(), 32);
  if (failed(verifyDataOperand(op, "cache_lengths", cacheLengths, 1, i32,
                               "[batch]")) ||
      failed(verifyDataOperand(op, "lookup_table", lookupTable, tableRank, i32,
                               tableShape)))
    return failure();
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"cache_lengths", cacheLengths},
        {"lookup_table", lookupTable}})
    if (auto memref = dyn_cast<MemRefType>(value.getType());
        memref && !memref.getLayout().isIdentity())
      return op->emitOpError("expects '")
             << name << "' with the identity (row-major) layout, got "
             << value.getType() << "; copy it into a contiguous buffer";
  return success();
}

/// Checks the scales operand of a collection constructor: present exactly
/// when the type has scales; f32, default memory space; the rank and static
/// dims of its kind (docs/Contract.md, section 8); the dims after the layer
/// dim contiguous (for a memref).
static LogicalResult verifyScalesOperand(Operation *op, Value scales,
                                         const KVCacheParams &params,
                                         StringRef slotsName) {
  if (!params.scales) {
    if (scales)
      return op->emitOpError("has a scales operand but its type has no "
                             "'scales'; drop the operand or give the type "
                             "'scales = tensor | token_head | block<G>'");
    return success();
  }
  if (!scales)
    return op->emitOpError("expects a scales operand (the sixth) for a type "
                           "with 'scales = ")
           << params.scales << "'";
  auto type = cast<ShapedType>(scales.getType());
  std::string shape;
  SmallVector<std::pair<StringRef, int64_t>> dims;
  int64_t perHead = params.scales.scalesPerHead(params.headSize);
  switch (params.scales.getKind()) {
  case KVScales::Kind::None:
    break;
  case KVScales::Kind::Tensor:
    shape = "[num_layers, kv_dim]";
    dims = {{"num_layers", ShapedType::kDynamic}, {"kv_dim", params.kvDim()}};
    break;
  case KVScales::Kind::TokenHead:
  case KVScales::Kind::Block:
    shape = (Twine("[") +
             (params.hasStaticPages() ? "num_pages" : "num_blocks") +
             ", kv_dim, num_layers, " + slotsName + ", num_heads" +
             (params.scales.getKind() == KVScales::Kind::Block
                  ? ", head_size / G]"
                  : "]"))
                .str();
    dims = {{"", ShapedType::kDynamic},
            {"kv_dim", params.kvDim()},
            {"num_layers", ShapedType::kDynamic},
            {slotsName, params.pageSize},
            {"num_heads", params.numHeads}};
    if (params.scales.getKind() == KVScales::Kind::Block)
      dims.push_back({"head_size / G", perHead});
    break;
  }
  if (failed(verifyDataOperand(op, "scales", scales, dims.size(),
                               Float32Type::get(op->getContext()), shape)))
    return failure();
  for (auto [dim, entry] : llvm::enumerate(dims))
    if (!ShapedType::isDynamic(entry.second) &&
        failed(verifyStaticDim(op, "scales", type, dim, entry.first,
                               entry.second)))
      return failure();
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return success();
  // Contiguous after the layer dim (dim 0 for tensor, dim 2 otherwise).
  SmallVector<int64_t> strides;
  int64_t offset;
  bool layered = params.scales.getKind() == KVScales::Kind::Tensor;
  size_t firstInner = layered ? 1 : 3;
  bool contiguous = succeeded(memref.getStridesAndOffset(strides, offset));
  int64_t expected = 1;
  SmallVector<int64_t> expectedStrides(dims.size() - firstInner);
  for (size_t dim = dims.size(); contiguous && dim-- > firstInner;) {
    expectedStrides[dim - firstInner] = expected;
    contiguous = strides[dim] == expected;
    // The dims after firstInner are static; firstInner's own size (the
    // continuous kind's block_tokens) may be dynamic and is not needed.
    if (dim > firstInner)
      expected *= dims[dim].second;
  }
  if (!contiguous) {
    std::string list;
    llvm::raw_string_ostream os(list);
    llvm::interleaveComma(expectedStrides, os);
    return op->emitOpError("expects the dims of 'scales' after num_layers to "
                           "be contiguous (strides [")
           << list << "]), got " << memref;
  }
  return success();
}

/// The static num_layers (dim 2) of a constructor's `blocks`, if any.
static std::optional<int64_t> getStaticLayers(Value blocks) {
  auto type = cast<ShapedType>(blocks.getType());
  if (type.getRank() != 6 || type.isDynamicDim(2))
    return std::nullopt;
  return type.getDimSize(2);
}

/// Checks that a constructor takes its data operands in one form, all
/// memrefs or all tensors (docs/Contract.md section 3.5).
static LogicalResult verifyConstructorForm(CollectionOpInterface op) {
  bool tensors = op.isTensorForm();
  for (Value operand : op->getOperands())
    if (isa<ShapedType>(operand.getType()) &&
        isa<TensorType>(operand.getType()) != tensors)
      return op->emitOpError("expects its data operands in one form, all "
                             "memrefs or all tensors, got ")
             << op->getOperand(0).getType() << " and " << operand.getType();
  return success();
}

/// `blocks`, then `scales` when present: the operands the writes update.
static SmallVector<OpOperand *> getBlocksAndScales(OpOperand &blocks,
                                                   MutableOperandRange scales) {
  SmallVector<OpOperand *> operands = {&blocks};
  if (!scales.empty())
    operands.push_back(&scales[0]);
  return operands;
}

LogicalResult PagedCollectionOp::verify() {
  KVCacheParams params = KVCacheParams::get(getType());
  if (failed(verifyConstructorForm(*this)) ||
      failed(verifyBlocks(*this, getBlocks().getType(), params,
                          "page_size")) ||
      failed(verifyScalesOperand(*this, getScales(), params, "page_size")))
    return failure();
  return verifyMetadata(*this, getCacheLengths(), getLookupTable(), 2,
                        "[batch, max_pages]");
}

std::optional<int64_t> PagedCollectionOp::getStaticNumLayers() {
  return getStaticLayers(getBlocks());
}

LogicalResult ContinuousCollectionOp::verify() {
  KVCacheParams params = KVCacheParams::get(getType());
  if (failed(verifyConstructorForm(*this)) ||
      failed(verifyBlocks(*this, getBlocks().getType(), params,
                          "block_tokens")) ||
      failed(verifyScalesOperand(*this, getScales(), params, "block_tokens")))
    return failure();
  return verifyMetadata(*this, getCacheLengths(), getLookupTable(), 1,
                        "[batch] (the block of each sequence)");
}

std::optional<int64_t> ContinuousCollectionOp::getStaticNumLayers() {
  return getStaticLayers(getBlocks());
}


SmallVector<OpOperand *> PagedCollectionOp::getCacheDataOperands() {
  return getBlocksAndScales(getBlocksMutable(), getScalesMutable());
}

SmallVector<OpOperand *> ContinuousCollectionOp::getCacheDataOperands() {
  return getBlocksAndScales(getBlocksMutable(), getScalesMutable());
}
