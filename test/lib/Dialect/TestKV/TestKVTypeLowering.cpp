//===- TestKVTypeLowering.cpp - lowering hooks of the CSR kind --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// What convert-kvcache-to-memref asks of the CSR kind: its six lowered
// values and where a token lives. Everything that knows the CSR layout is
// here; no kvcache lowering names this kind.
//
//===----------------------------------------------------------------------===//

#include "TestKVDialect.h"

using namespace mlir;
using namespace mlir::test_kv;

namespace {

/// The lowered values, in the order of the constructor's operands.
enum LoweredField : unsigned {
  Blocks,
  KVIndptr,
  KVIndices,
  CacheLengths,
  MaxSeqLength,
  MaxCacheLength,
  NumLoweredFields
};

/// The names of the lowered fields (FlashInfer's), indexed by LoweredField.
constexpr StringLiteral loweredNames[NumLoweredFields] = {
    "blocks",        "kv_indptr",      "kv_indices",
    "cache_lengths", "max_seq_length", "max_cache_length"};

} // namespace

/// `blocks` of a collection, `memref<? x kv x ? x P x H x D x elt,
/// strided<[?, ?, ?, H*D, D, 1], offset: ?>>`, or its layer view,
/// `memref<? x P x H x D x elt, strided<[?, H*D, D, 1], offset: ?>>`.
static MemRefType getLoweredBlocksType(Type type, bool collection) {
  auto params = kvcache::KVCacheParams::get(type);
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<int64_t> shape = {dyn};
  SmallVector<int64_t> strides = {dyn};
  if (collection) {
    shape.append({params.kvDim(), dyn});
    strides.append({dyn, dyn});
  }
  shape.append({params.pageSize, params.numHeads, params.headSize});
  strides.append({params.rowElements(), params.headSize, 1});
  return MemRefType::get(
      shape, params.elementType,
      StridedLayoutAttr::get(type.getContext(), dyn, strides));
}

static void appendLoweredTypes(Type type, bool collection,
                               SmallVectorImpl<Type> &types) {
  Type i32 = IntegerType::get(type.getContext(), 32);
  Type indexVector = MemRefType::get({ShapedType::kDynamic}, i32);
  types.push_back(getLoweredBlocksType(type, collection));
  types.append({indexVector, indexVector, indexVector, i32, i32});
}

static Value toIndex(OpBuilder &builder, Location loc, Value i32Value) {
  return arith::IndexCastUIOp::create(builder, loc, builder.getIndexType(),
                                      i32Value);
}

static Value dim(OpBuilder &builder, Location loc, Value memref,
                 int64_t index) {
  return memref::DimOp::create(builder, loc, memref, index);
}

/// `memref[index]` of an i32 page-table memref, as an index.
static Value loadIndex(OpBuilder &builder, Location loc, Value memref,
                       Value index) {
  return toIndex(builder, loc,
                 memref::LoadOp::create(builder, loc, memref, index));
}

static Value buildCacheLengthOf(OpBuilder &builder, Location loc,
                                ValueRange lowered, Value batch,
                                KVRuntimeChecks *checks) {
  Value lengths = lowered[CacheLengths];
  if (checks)
    checks->checkLess(batch, dim(builder, loc, lengths, 0), "batch index",
                      "the size of cache_lengths");
  return loadIndex(builder, loc, lengths, batch);
}

/// `a - b`, or 0 when `b > a` (unsigned).
static Value subClamped(OpBuilder &builder, Location loc, Value a, Value b) {
  return arith::SubIOp::create(builder, loc, a,
                               arith::MinUIOp::create(builder, loc, a, b));
}

/// The sequences kv_indptr describes (its size - 1, none when it is empty),
/// at most the size of cache_lengths.
static Value buildNumSequencesOf(OpBuilder &builder, Location loc,
                                 ValueRange lowered) {
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value entries = dim(builder, loc, lowered[KVIndptr], 0);
  return arith::MinUIOp::create(builder, loc,
                                subClamped(builder, loc, entries, one),
                                dim(builder, loc, lowered[CacheLengths], 0));
}

/// The pages of sequence `batch` (kv_indptr[b+1] - kv_indptr[b], none when
/// they decrease) that kv_indices holds (its entries from kv_indptr[b] on),
/// times page_size: every lookup below it reads kv_indices in bounds.
static Value buildCapacityOf(int64_t pageSize, OpBuilder &builder,
                             Location loc, ValueRange lowered, Value batch) {
  Value indptr = lowered[KVIndptr];
  Value next = arith::AddIOp::create(
      builder, loc, batch, arith::ConstantIndexOp::create(builder, loc, 1));
  Value first = loadIndex(builder, loc, indptr, batch);
  Value pages = subClamped(builder, loc, loadIndex(builder, loc, indptr, next),
                           first);
  Value held = subClamped(builder, loc,
                          dim(builder, loc, lowered[KVIndices], 0), first);
  return arith::MulIOp::create(
      builder, loc, arith::MinUIOp::create(builder, loc, pages, held),
      arith::ConstantIndexOp::create(builder, loc, pageSize));
}

#define TESTKV_DEFINE_SHARED_HOOKS(TYPE, COLLECTION)                           \
  void TYPE::getLoweredTypes(SmallVectorImpl<Type> &types) const {             \
    appendLoweredTypes(*this, COLLECTION, types);                              \
  }                                                                            \
  SmallVector<StringRef> TYPE::getLoweredNames() const {                       \
    return SmallVector<StringRef>(std::begin(loweredNames),                    \
                                  std::end(loweredNames));                     \
  }                                                                            \
  Value TYPE::buildCacheLength(OpBuilder &builder, Location loc,               \
                               ValueRange lowered, Value batch,                \
                               KVRuntimeChecks *checks) const {                \
    return buildCacheLengthOf(builder, loc, lowered, batch, checks);           \
  }                                                                            \
  Value TYPE::buildMaxSeqLength(OpBuilder &builder, Location loc,              \
                                ValueRange lowered) const {                    \
    return toIndex(builder, loc, lowered[MaxSeqLength]);                       \
  }                                                                            \
  Value TYPE::buildMaxCacheLength(OpBuilder &builder, Location loc,            \
                                  ValueRange lowered) const {                  \
    return toIndex(builder, loc, lowered[MaxCacheLength]);                     \
  }                                                                            \
  Value TYPE::buildNumPages(OpBuilder &builder, Location loc,                  \
                            ValueRange lowered) const {                        \
    return dim(builder, loc, lowered[Blocks], 0);                              \
  }                                                                            \
  Value TYPE::buildNumSequences(OpBuilder &builder, Location loc,              \
                                ValueRange lowered) const {                    \
    return buildNumSequencesOf(builder, loc, lowered);                         \
  }                                                                            \
  Value TYPE::buildCapacity(OpBuilder &builder, Location loc,                  \
                            ValueRange lowered, Value batch) const {           \
    return buildCapacityOf(getPageSize(), builder, loc, lowered, batch);       \
  }

TESTKV_DEFINE_SHARED_HOOKS(CSRCollectionType, true)
TESTKV_DEFINE_SHARED_HOOKS(CSRCacheType, false)

#undef TESTKV_DEFINE_SHARED_HOOKS

/// The layer's view `blocks[*, kv, layer, *, *, *]`; the page table and
/// the lengths are shared by every layer.
SmallVector<Value>
CSRCollectionType::buildLayerCache(OpBuilder &builder, Location loc,
                                   ValueRange lowered, Value layer, int64_t kv,
                                   KVRuntimeChecks *checks) const {
  Value blocks = lowered[Blocks];
  if (checks)
    checks->checkLess(layer, dim(builder, loc, blocks, 2), "layer index",
                      "num_layers");
  auto attr = [&](int64_t value) { return builder.getIndexAttr(value); };
  SmallVector<OpFoldResult> offsets = {attr(0), attr(kv), layer,
                                       attr(0), attr(0),  attr(0)};
  SmallVector<OpFoldResult> sizes = {OpFoldResult(dim(builder, loc, blocks, 0)),
                                     attr(1),
                                     attr(1),
                                     attr(getPageSize()),
                                     attr(getNumHeads()),
                                     attr(getHeadSize())};
  SmallVector<OpFoldResult> strides(6, attr(1));
  SmallVector<Value> layerValues(lowered);
  layerValues[Blocks] = memref::SubViewOp::create(
      builder, loc, getLoweredBlocksType(*this, /*collection=*/false), blocks,
      offsets, sizes, strides);
  return layerValues;
}

Value CSRCollectionType::buildNumLayers(OpBuilder &builder, Location loc,
                                        ValueRange lowered) const {
  return dim(builder, loc, lowered[Blocks], 2);
}

Value CSRCacheType::getBlocks(ValueRange lowered) const {
  return lowered[Blocks];
}

/// page = kv_indices[kv_indptr[batch] + token / P], slot = token mod P.
std::pair<Value, Value>
CSRCacheType::buildLookup(OpBuilder &builder, Location loc, ValueRange lowered,
                          Value batch, Value token,
                          KVRuntimeChecks *checks) const {
  Value indptr = lowered[KVIndptr];
  Value indices = lowered[KVIndices];
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  Value one = constant(1);
  Value pageSize = constant(getPageSize());
  if (checks) {
    // batch < size(kv_indptr) - 1, as batch < max(size, 1) - 1 so that an
    // empty kv_indptr (no sequences) rejects every batch index.
    Value entries =
        arith::MaxUIOp::create(builder, loc, dim(builder, loc, indptr, 0), one);
    checks->checkLess(batch, arith::SubIOp::create(builder, loc, entries, one),
                      "batch index", "the size of kv_indptr - 1 (the batch)");
  }
  Value first = loadIndex(builder, loc, indptr, batch);
  Value logicalPage = arith::DivUIOp::create(builder, loc, token, pageSize);
  if (checks) {
    Value next = arith::AddIOp::create(builder, loc, batch, one);
    Value end = loadIndex(builder, loc, indptr, next);
    checks->checkLess(logicalPage,
                      arith::SubIOp::create(builder, loc, end, first),
                      "logical page (token / page_size)",
                      "the sequence's pages (kv_indptr[b+1] - kv_indptr[b])");
  }
  Value entry = arith::AddIOp::create(builder, loc, first, logicalPage);
  if (checks)
    checks->checkLess(entry, dim(builder, loc, indices, 0),
                      "kv_indices position (kv_indptr[b] + token / page_size)",
                      "the size of kv_indices");
  Value page = loadIndex(builder, loc, indices, entry);
  if (checks)
    checks->checkLess(page, dim(builder, loc, lowered[Blocks], 0),
                      "physical page (kv_indices entry)", "num_pages");
  Value slot = arith::RemUIOp::create(builder, loc, token, pageSize);
  return {page, slot};
}
