//===- KVCacheTypeLowering.cpp - lowering hooks of the cache kinds -*- C++ -*-//
//
// Part of the kvcache-mlir project.
//
// What convert-kvcache-to-memref asks of the paged and continuous kinds
// (KVCollectionTypeInterface, KVCacheTypeInterface): their lowered values
// (docs/KernelABI.md) and where a token lives. The only place that knows the
// page-table layout of the two kinds.
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheTypes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// Both kinds lower to the same five values; only the lookup table's rank
/// and the blocks' slot dim differ.
enum LoweredField : unsigned {
  Blocks,
  CacheLengths,
  LookupTable,
  MaxSeqLength,
  MaxCacheLength,
  /// Only with `scales`.
  Scales,
  NumLoweredFields
};

/// The kernel ABI's names of the lowered fields, indexed by LoweredField.
constexpr StringLiteral loweredNames[NumLoweredFields] = {
    "blocks",         "cache_lengths",    "lookup_table",
    "max_seq_length", "max_cache_length", "scales"};

} // namespace

/// The lowered `blocks` of a collection, `memref<? x kv x ? x S x H x D x
/// elt, strided<[?, ?, ?, H*D, D, 1], offset: ?>>`, or of a layer cache,
/// `memref<? x S x H x D x elt, strided<[?, H*D, D, 1], offset: ?>>`, where
/// S is the page size (dynamic for the continuous kind).
static MemRefType getLoweredBlocksType(const KVCacheParams &params,
                                       bool collection) {
  MLIRContext *ctx = params.elementType.getContext();
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<int64_t> shape = {dyn};
  SmallVector<int64_t> strides = {dyn};
  if (collection) {
    shape.append({params.kvDim(), dyn});
    strides.append({dyn, dyn});
  }
  shape.append({params.pageSize, params.numHeads, params.headSize});
  strides.append({params.rowElements(), params.headSize, 1});
  return MemRefType::get(shape, params.elementType,
                         StridedLayoutAttr::get(ctx, dyn, strides));
}

/// The lowered scales of a collection or layer cache with `scales`
/// (docs/Contract.md, section 8): `tensor`, `memref<? x kv x f32,
/// strided<[?, 1], offset: ?>>` or `memref<f32, strided<[], offset: ?>>`;
/// `token_head`, `memref<? x kv x ? x S x H x f32, strided<[?, ?, ?, H, 1],
/// offset: ?>>` or `memref<? x S x H x f32, strided<[?, H, 1], offset: ?>>`;
/// `block<G>`, the same with a last dim D/G.
static MemRefType getLoweredScalesType(const KVCacheParams &params,
                                       bool collection) {
  MLIRContext *ctx = params.elementType.getContext();
  Type f32 = Float32Type::get(ctx);
  int64_t dyn = ShapedType::kDynamic;
  if (params.scales.getKind() == KVScales::Kind::Tensor) {
    if (collection)
      return MemRefType::get({dyn, params.kvDim()}, f32,
                             StridedLayoutAttr::get(ctx, dyn, {dyn, 1}));
    return MemRefType::get({}, f32, StridedLayoutAttr::get(ctx, dyn, {}));
  }
  SmallVector<int64_t> shape = {dyn};
  SmallVector<int64_t> strides = {dyn};
  if (collection) {
    shape.append({params.kvDim(), dyn});
    strides.append({dyn, dyn});
  }
  int64_t perHead = params.scales.scalesPerHead(params.headSize);
  bool block = params.scales.getKind() == KVScales::Kind::Block;
  shape.append({params.pageSize, params.numHeads});
  strides.append({params.numHeads * perHead, perHead});
  if (block) {
    shape.push_back(perHead);
    strides.push_back(1);
  }
  return MemRefType::get(shape, f32, StridedLayoutAttr::get(ctx, dyn, strides));
}

/// The lowered types of a paged or continuous type: five, six with scales.
static void appendLoweredTypes(Type type, bool collection,
                               SmallVectorImpl<Type> &types) {
  KVCacheParams params = KVCacheParams::get(type);
  Type i32 = IntegerType::get(type.getContext(), 32);
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<int64_t> tableShape = {dyn};
  if (params.hasStaticPages())
    tableShape.push_back(dyn);
  types.push_back(getLoweredBlocksType(params, collection));
  types.push_back(MemRefType::get({dyn}, i32));
  types.push_back(MemRefType::get(tableShape, i32));
  types.push_back(i32);
  types.push_back(i32);
  if (params.scales)
    types.push_back(getLoweredScalesType(params, collection));
}

/// The names of the values appendLoweredTypes appends, in its order.
static SmallVector<StringRef> getLoweredNamesOf(Type type) {
  unsigned count = KVCacheParams::get(type).scales ? NumLoweredFields : Scales;
  return SmallVector<StringRef>(loweredNames, loweredNames + count);
}

static Value toIndex(OpBuilder &builder, Location loc, Value i32Value) {
  return arith::IndexCastUIOp::create(builder, loc, builder.getIndexType(),
                                      i32Value);
}

static Value buildCacheLengthOf(OpBuilder &builder, Location loc,
                                ValueRange lowered, Value batch,
                                KVRuntimeChecks *checks) {
  Value lengths = lowered[CacheLengths];
  if (checks)
    checks->checkLess(batch, memref::DimOp::create(builder, loc, lengths, 0),
                      "batch index", "the size of cache_lengths");
  return toIndex(builder, loc,
                 memref::LoadOp::create(builder, loc, lengths, batch));
}

/// The number of sequences with a cache length and a page-table row: the
/// smaller of the sizes of `cache_lengths` and `lookup_table` (dim 0 of
/// either kind's table).
static Value buildNumSequencesOf(OpBuilder &builder, Location loc,
                                 ValueRange lowered) {
  return arith::MinUIOp::create(
      builder, loc, memref::DimOp::create(builder, loc, lowered[CacheLengths], 0),
      memref::DimOp::create(builder, loc, lowered[LookupTable], 0));
}

/// The token positions a sequence can address, the same for every one: the
/// columns of `lookup_table` times `page_size` (paged), or `block_tokens`,
/// the slot dim of `blocks` (dim 3 of a collection's, 1 of a layer's).
static Value buildCapacityOf(Type type, bool collection, OpBuilder &builder,
                             Location loc, ValueRange lowered) {
  KVCacheParams params = KVCacheParams::get(type);
  if (!params.hasStaticPages())
    return memref::DimOp::create(builder, loc, lowered[Blocks],
                                 collection ? 3 : 1);
  return arith::MulIOp::create(
      builder, loc, memref::DimOp::create(builder, loc, lowered[LookupTable], 1),
      arith::ConstantIndexOp::create(builder, loc, params.pageSize));
}

/// The layer's view of the collection's scales: `scales[layer, kv]`
/// (`tensor`, a 0-D memref) or `scales[*, kv, layer, *, *(, *)]`. The layer
/// index was checked against `blocks`; the scales' num_layers is the
/// user's to match (docs/Contract.md, section 8).
static Value buildLayerScales(const KVCacheParams &params, OpBuilder &builder,
                              Location loc, Value scales, Value layer,
                              int64_t kv) {
  auto type = cast<MemRefType>(scales.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, builder.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes;
  for (int64_t dim = 0; dim < rank; ++dim)
    sizes.push_back(type.isDynamicDim(dim)
                        ? OpFoldResult(memref::DimOp::create(builder, loc,
                                                             scales, dim))
                        : OpFoldResult(builder.getIndexAttr(
                              type.getDimSize(dim))));
  if (params.scales.getKind() == KVScales::Kind::Tensor) {
    offsets = {layer, builder.getIndexAttr(kv)};
    sizes = {builder.getIndexAttr(1), builder.getIndexAttr(1)};
  } else {
    offsets[1] = builder.getIndexAttr(kv);
    offsets[2] = layer;
    sizes[1] = builder.getIndexAttr(1);
    sizes[2] = builder.getIndexAttr(1);
  }
  SmallVector<OpFoldResult> strides(rank, builder.getIndexAttr(1));
  return memref::SubViewOp::create(
      builder, loc, getLoweredScalesType(params, /*collection=*/false), scales,
      offsets, sizes, strides);
}

/// The layer's view `blocks[*, kv, layer, *, *, *]`.
static SmallVector<Value> buildLayerOf(Type collectionType, OpBuilder &builder,
                                       Location loc, ValueRange lowered,
                                       Value layer, int64_t kv,
                                       KVRuntimeChecks *checks) {
  Value blocks = lowered[Blocks];
  KVCacheParams params = KVCacheParams::get(collectionType);
  if (checks)
    checks->checkLess(layer, memref::DimOp::create(builder, loc, blocks, 2),
                      "layer index", "num_layers");
  OpFoldResult slots =
      params.hasStaticPages()
          ? OpFoldResult(builder.getIndexAttr(params.pageSize))
          : OpFoldResult(memref::DimOp::create(builder, loc, blocks, 3));
  SmallVector<OpFoldResult> offsets = {
      builder.getIndexAttr(0), builder.getIndexAttr(kv), layer,
      builder.getIndexAttr(0), builder.getIndexAttr(0),
      builder.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {
      OpFoldResult(memref::DimOp::create(builder, loc, blocks, 0)),
      builder.getIndexAttr(1),
      builder.getIndexAttr(1),
      slots,
      builder.getIndexAttr(params.numHeads),
      builder.getIndexAttr(params.headSize)};
  SmallVector<OpFoldResult> strides(6, builder.getIndexAttr(1));
  Value view = memref::SubViewOp::create(
      builder, loc, getLoweredBlocksType(params, /*collection=*/false), blocks,
      offsets, sizes, strides);
  // The layer shares the collection's metadata.
  SmallVector<Value> layerValues(lowered);
  layerValues[Blocks] = view;
  if (params.scales)
    layerValues[Scales] =
        buildLayerScales(params, builder, loc, lowered[Scales], layer, kv);
  return layerValues;
}

//===----------------------------------------------------------------------===//
// Methods both kinds share, collection and layer cache alike
//===----------------------------------------------------------------------===//

#define KVCACHE_DEFINE_SHARED_HOOKS(TYPE, COLLECTION)                          \
  void TYPE::getLoweredTypes(SmallVectorImpl<Type> &types) const {            \
    appendLoweredTypes(*this, COLLECTION, types);                              \
  }                                                                            \
  SmallVector<StringRef> TYPE::getLoweredNames() const {                       \
    return getLoweredNamesOf(*this);                                           \
  }                                                                            \
  Value TYPE::buildCacheLength(OpBuilder &builder, Location loc,              \
                               ValueRange lowered, Value batch,                \
                               KVRuntimeChecks *checks) const {               \
    return buildCacheLengthOf(builder, loc, lowered, batch, checks);           \
  }                                                                            \
  Value TYPE::buildMaxSeqLength(OpBuilder &builder, Location loc,             \
                                ValueRange lowered) const {                    \
    return toIndex(builder, loc, lowered[MaxSeqLength]);                       \
  }                                                                            \
  Value TYPE::buildMaxCacheLength(OpBuilder &builder, Location loc,           \
                                  ValueRange lowered) const {                  \
    return toIndex(builder, loc, lowered[MaxCacheLength]);                     \
  }                                                                            \
  Value TYPE::buildNumPages(OpBuilder &builder, Location loc,                 \
                            ValueRange lowered) const {                        \
    return memref::DimOp::create(builder, loc, lowered[Blocks], 0);            \
  }                                                                            \
  Value TYPE::buildNumSequences(OpBuilder &builder, Location loc,             \
                                ValueRange lowered) const {                    \
    return buildNumSequencesOf(builder, loc, lowered);                         \
  }                                                                            \
  Value TYPE::buildCapacity(OpBuilder &builder, Location loc,                 \
                            ValueRange lowered, Value) const {                 \
    return buildCapacityOf(*this, COLLECTION, builder, loc, lowered);          \
  }

KVCACHE_DEFINE_SHARED_HOOKS(PagedCollectionType, true)
KVCACHE_DEFINE_SHARED_HOOKS(PagedCacheType, false)
KVCACHE_DEFINE_SHARED_HOOKS(ContinuousCollectionType, true)
KVCACHE_DEFINE_SHARED_HOOKS(ContinuousCacheType, false)

#undef KVCACHE_DEFINE_SHARED_HOOKS

SmallVector<Value> PagedCollectionType::buildLayerCache(
    OpBuilder &builder, Location loc, ValueRange lowered, Value layer,
    int64_t kv, KVRuntimeChecks *checks) const {
  return buildLayerOf(*this, builder, loc, lowered, layer, kv, checks);
}

SmallVector<Value> ContinuousCollectionType::buildLayerCache(
    OpBuilder &builder, Location loc, ValueRange lowered, Value layer,
    int64_t kv, KVRuntimeChecks *checks) const {
  return buildLayerOf(*this, builder, loc, lowered, layer, kv, checks);
}

Value PagedCollectionType::buildNumLayers(OpBuilder &builder, Location loc,
                                          ValueRange lowered) const {
  return memref::DimOp::create(builder, loc, lowered[Blocks], 2);
}

Value ContinuousCollectionType::buildNumLayers(OpBuilder &builder,
                                               Location loc,
                                               ValueRange lowered) const {
  return memref::DimOp::create(builder, loc, lowered[Blocks], 2);
}

Value PagedCacheType::getBlocks(ValueRange lowered) const {
  return lowered[Blocks];
}

Value ContinuousCacheType::getBlocks(ValueRange lowered) const {
  return lowered[Blocks];
}

//===----------------------------------------------------------------------===//
// Lookups
//===----------------------------------------------------------------------===//

/// `lookup_table[batch, token / P]` and `token mod P`, as indices.
std::pair<Value, Value>
PagedCacheType::buildLookup(OpBuilder &builder, Location loc,
                            ValueRange lowered, Value batch, Value token,
                            KVRuntimeChecks *checks) const {
  // Token positions fit in i32 (cache lengths are i32): divide in 32 bits,
  // which is a shift and a mask for a power-of-two page size and a 32-bit
  // multiply-high sequence otherwise.
  Type i32 = builder.getI32Type();
  int64_t pageSize = getPageSize();
  if (checks)
    checks->checkLess(token, int64_t(1) << 32, "token position",
                      "2^32 (positions are unsigned 32-bit)");
  Value token32 = arith::IndexCastUIOp::create(builder, loc, i32, token);
  Value column32, slot32;
  if (llvm::isPowerOf2_64(pageSize)) {
    Value shift = arith::ConstantIntOp::create(builder, loc, i32,
                                               llvm::Log2_64(pageSize));
    Value mask = arith::ConstantIntOp::create(builder, loc, i32, pageSize - 1);
    column32 = arith::ShRUIOp::create(builder, loc, token32, shift);
    slot32 = arith::AndIOp::create(builder, loc, token32, mask);
  } else {
    Value size = arith::ConstantIntOp::create(builder, loc, i32, pageSize);
    column32 = arith::DivUIOp::create(builder, loc, token32, size);
    slot32 = arith::RemUIOp::create(builder, loc, token32, size);
  }
  Value column = toIndex(builder, loc, column32);
  Value table = lowered[LookupTable];
  if (checks) {
    checks->checkLess(batch, memref::DimOp::create(builder, loc, table, 0),
                      "batch index", "the number of lookup_table rows");
    checks->checkLess(column, memref::DimOp::create(builder, loc, table, 1),
                      "logical page (token / page_size)",
                      "the number of lookup_table columns");
  }
  Value page = toIndex(builder, loc,
                       memref::LoadOp::create(builder, loc, table,
                                              ValueRange{batch, column}));
  if (checks)
    checks->checkLess(page,
                      memref::DimOp::create(builder, loc, lowered[Blocks], 0),
                      "physical page (lookup_table entry)", "num_pages");
  return {page, toIndex(builder, loc, slot32)};
}

/// `lookup_table[batch]` and `token`: every sequence owns one block.
std::pair<Value, Value>
ContinuousCacheType::buildLookup(OpBuilder &builder, Location loc,
                                 ValueRange lowered, Value batch, Value token,
                                 KVRuntimeChecks *checks) const {
  Value table = lowered[LookupTable];
  Value blocks = lowered[Blocks];
  if (checks) {
    checks->checkLess(batch, memref::DimOp::create(builder, loc, table, 0),
                      "batch index", "the size of lookup_table");
    checks->checkLess(token, memref::DimOp::create(builder, loc, blocks, 1),
                      "token position", "block_tokens");
  }
  Value block =
      toIndex(builder, loc, memref::LoadOp::create(builder, loc, table, batch));
  if (checks)
    checks->checkLess(block, memref::DimOp::create(builder, loc, blocks, 0),
                      "block (lookup_table entry)", "num_blocks");
  return {block, token};
}
