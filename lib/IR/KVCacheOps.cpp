//===- KVCacheOps.cpp - kvcache dialect operations --------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheOps.h"
#include "VerifierHelpers.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::opverify;

#include "KVCache/IR/KVCacheInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "KVCache/IR/KVCacheOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared verification helpers
//===----------------------------------------------------------------------===//

/// The constant value of an index operand, if it is one.
static std::optional<int64_t> getConstantIndex(Value value) {
  return getConstantIntValue(OpFoldResult(value));
}

LogicalResult opverify::verifyDataOperand(Operation *op, StringRef what,
                                          Value value, int64_t rank,
                                          Type elementType, StringRef shape) {
  auto type = cast<ShapedType>(value.getType());
  auto memref = dyn_cast<MemRefType>(type);
  if (type.getRank() != rank || type.getElementType() != elementType)
    return op->emitOpError("expects '")
           << what << "' to be a " << rank << "-D "
           << (memref ? "memref" : "tensor") << " of " << elementType << " "
           << shape << ", got " << type;
  if (memref && memref.getMemorySpace())
    return op->emitOpError("expects '")
           << what << "' in the default memory space, got " << type;
  return success();
}

/// Checks that dimension `dim` of `type` is static and equal to `expected`.
LogicalResult opverify::verifyStaticDim(Operation *op, StringRef what,
                                      ShapedType type, unsigned dim,
                                      StringRef dimName, int64_t expected) {
  if (type.isDynamicDim(dim))
    return op->emitOpError("expects '")
           << what << "' dim " << dim << " (" << dimName
           << ") to be static, got " << type;
  if (type.getDimSize(dim) != expected)
    return op->emitOpError("expects '")
           << what << "' dim " << dim << " (" << dimName << ") to be "
           << expected << " as the cache type says, got "
           << type.getDimSize(dim);
  return success();
}

/// Checks that the memref or tensor `what` of a kernel op holds elements of
/// the cache element type `elementType`.
LogicalResult opverify::verifyCacheElementType(Operation *op, StringRef what,
                                             ShapedType type,
                                             Type elementType) {
  if (type.getElementType() != elementType)
    return op->emitOpError("expects '")
           << what << "' to have the cache element type " << elementType
           << ", got " << type;
  return success();
}

/// Whether `type` is a float type quantized caches convert to and from:
/// f32, f16, bf16.
bool opverify::isDequantizedType(Type type) {
  return type.isF32() || type.isF16() || type.isBF16();
}

/// Checks the element type `type` of the rows or values `what` of an op on
/// a cache: the cache element type, or (a cache with scales) f32, f16 or
/// bf16, which the op quantizes or dequantizes.
static LogicalResult verifyRowElementType(Operation *op, StringRef what,
                                          ShapedType rows,
                                          const KVCacheParams &params) {
  Type type = rows.getElementType();
  if (type == params.elementType ||
      (params.scales && isDequantizedType(type)))
    return success();
  InFlightDiagnostic diag = op->emitOpError("expects '")
                            << what << "' to have the cache element type "
                            << params.elementType;
  if (params.scales)
    diag << " (raw) or f32, f16, bf16 (quantized with the cache's scales)";
  return diag << ", got " << rows;
}

/// Checks token rows `[tokens, num_heads, head_size]` (a 3-D memref in the
/// default memory space or a 3-D tensor, as ODS checked) against the cache:
/// its element type and static dims.
LogicalResult opverify::verifyTokenRows(Operation *op, StringRef what,
                                      ShapedType type,
                                      const KVCacheParams &params) {
  if (failed(verifyRowElementType(op, what, type, params)) ||
      failed(verifyStaticDim(op, what, type, 1, "num_heads",
                             params.numHeads)) ||
      failed(verifyStaticDim(op, what, type, 2, "head_size",
                             params.headSize)))
    return failure();
  return success();
}

LogicalResult opverify::verifyQueryRows(Operation *op, ShapedType qType,
                                       const KVCacheParams &params) {
  if (params.scales) {
    if (!isDequantizedType(qType.getElementType()))
      return op->emitOpError("expects 'q' of f32, f16 or bf16 over a "
                             "quantized cache, got ")
             << qType;
  } else if (failed(verifyCacheElementType(op, "q", qType,
                                           params.elementType))) {
    return failure();
  }
  if (failed(verifyStaticDim(op, "q", qType, 2, "head_size",
                             params.headSize)))
    return failure();
  if (qType.isDynamicDim(1) || qType.getDimSize(1) <= 0 ||
      qType.getDimSize(1) % params.numHeads != 0)
    return op->emitOpError("expects 'q' dim 1 (q_heads) to be a static "
                           "multiple of num_heads = ")
           << params.numHeads << ", got " << qType;
  return success();
}

/// Checks the value type, head and element range of an element access;
/// `read`: a load, which may dequantize.
static LogicalResult verifyElementAccess(Operation *op,
                                         KVCacheTypeInterface cache,
                                         Type valueType, Value head,
                                         Value element, Value slot,
                                         bool read = false) {
  Type elementType = valueType;
  int64_t width = 1;
  if (auto vectorType = dyn_cast<VectorType>(valueType)) {
    if (vectorType.getRank() != 1 || vectorType.isScalable())
      return op->emitOpError("expects a scalar or a 1-D fixed-size vector, "
                             "got ")
             << valueType;
    elementType = vectorType.getElementType();
    width = vectorType.getNumElements();
  }
  KVScales scales = cache.getScales();
  bool dequantizing = read && scales && isDequantizedType(elementType);
  if (elementType != cache.getElementType() && !dequantizing) {
    InFlightDiagnostic diag = op->emitOpError("expects the accessed element "
                                              "type to be the cache element "
                                              "type ")
                              << cache.getElementType();
    if (read && scales)
      diag << " (raw) or f32, f16, bf16 (dequantized)";
    else if (scales)
      diag << " (stores take stored values; kvcache.store_ragged quantizes)";
    return diag << ", got " << valueType;
  }
  if (dequantizing && scales.getKind() == KVScales::Kind::Block &&
      scales.getGroup() % width != 0)
    return op->emitOpError("expects the width of a dequantizing vector to "
                           "divide the scale group G = ")
           << scales.getGroup() << " of 'scales = " << scales
           << "' (one scale per vector), got " << width;
  if (width > cache.getHeadSize())
    return op->emitOpError("expects a vector width <= head_size = ")
           << cache.getHeadSize() << ", got " << width;
  if (std::optional<int64_t> h = getConstantIndex(head))
    if (*h < 0 || *h >= cache.getNumHeads())
      return op->emitOpError("head index ")
             << *h << " is out of range for num_heads = "
             << cache.getNumHeads();
  if (slot && !ShapedType::isDynamic(cache.getPageSize()))
    if (std::optional<int64_t> s = getConstantIndex(slot))
      if (*s < 0 || *s >= cache.getPageSize())
        return op->emitOpError("slot ")
               << *s << " is out of range for page_size = "
               << cache.getPageSize();
  if (std::optional<int64_t> d = getConstantIndex(element)) {
    if (*d < 0 || *d > cache.getHeadSize() - width) {
      // The end, printed without overflowing for a constant near INT64_MAX.
      std::string end = *d < 0 ? std::to_string(*d + width)
                               : std::to_string(uint64_t(*d) + uint64_t(width));
      return op->emitOpError("element range [")
             << *d << ", " << end << ") exceeds head_size = "
             << cache.getHeadSize();
    }
    if (*d % width != 0)
      return op->emitOpError("element index ")
             << *d << " is not a multiple of the vector width " << width
             << " (vector accesses are aligned to their width)";
  }
  return success();
}

/// The collection a layer cache was taken from, if visible; null for a
/// collection.
static Value getSourceCollection(Value cache) {
  if (isa<KVCollectionTypeInterface>(cache.getType()))
    return {};
  return getOwningCollection(cache);
}

/// Folds a metadata query on a layer cache to the same query on its
/// collection: all layers share the metadata.
template <typename OpTy>
static OpFoldResult foldToCollection(OpTy op) {
  Value collection = getSourceCollection(op.getCache());
  if (!collection)
    return {};
  op.getCacheMutable().assign(collection);
  return op.getResult();
}

//===----------------------------------------------------------------------===//
// GetKeyCacheOp / GetValueCacheOp
//===----------------------------------------------------------------------===//

/// The layer cache type of a `get_*_cache` collection operand.
static LogicalResult inferLayerCacheType(std::optional<Location> location,
                                         Type collectionType,
                                         SmallVectorImpl<Type> &results) {
  auto collection = dyn_cast<KVCollectionTypeInterface>(collectionType);
  if (!collection)
    return emitOptionalError(location,
                             "expected a KV cache collection operand, got ",
                             collectionType);
  results.push_back(collection.getLayerCacheType());
  return success();
}

/// Rejects a constant layer index past a static `num_layers` of the
/// collection's constructor, seen through the writers of the tensor form
/// (whose results bufferize to the constructor's collection).
static LogicalResult verifyLayerIndex(Operation *op, Value collection,
                                      Value layer) {
  std::optional<int64_t> index = getConstantIndex(layer);
  CollectionOpInterface source = getCollectionConstructor(collection);
  if (!index || !source)
    return success();
  std::optional<int64_t> staticLayers = source.getStaticNumLayers();
  if (!staticLayers)
    return success();
  int64_t numLayers = *staticLayers;
  if (*index < 0 || *index >= numLayers)
    return op->emitOpError("layer index ")
           << *index << " is out of range for a collection of " << numLayers
           << " layers";
  return success();
}

LogicalResult GetKeyCacheOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  return inferLayerCacheType(location, adaptor.getCollection().getType(),
                             inferredReturnTypes);
}

LogicalResult GetKeyCacheOp::verify() {
  return verifyLayerIndex(*this, getCollection(), getLayer());
}

LogicalResult GetValueCacheOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  return inferLayerCacheType(location, adaptor.getCollection().getType(),
                             inferredReturnTypes);
}

LogicalResult GetValueCacheOp::verify() {
  if (getCollection().getType().getMla())
    return emitOpError("an MLA collection (mla = true) has no value cache; "
                       "use kvcache.get_key_cache");
  return verifyLayerIndex(*this, getCollection(), getLayer());
}

//===----------------------------------------------------------------------===//
// Metadata queries
//===----------------------------------------------------------------------===//

OpFoldResult CacheLengthOp::fold(FoldAdaptor) { return foldToCollection(*this); }

OpFoldResult NumPagesOp::fold(FoldAdaptor) { return foldToCollection(*this); }

OpFoldResult NumSequencesOp::fold(FoldAdaptor) {
  return foldToCollection(*this);
}

OpFoldResult CapacityOp::fold(FoldAdaptor) { return foldToCollection(*this); }

/// Checks that the kind of `cacheType` implements the sequence hooks that
/// `num_sequences` and `capacity` lower through.
static LogicalResult verifyDescribesSequences(Operation *op, Type cacheType) {
  bool describes =
      isa<KVCollectionTypeInterface>(cacheType)
          ? cast<KVCollectionTypeInterface>(cacheType).describesSequences()
          : cast<KVCacheTypeInterface>(cacheType).describesSequences();
  if (describes)
    return success();
  return op->emitOpError("needs a kind that describes its sequences "
                         "(describesSequences, buildNumSequences, "
                         "buildCapacity); ")
         << cacheType << " does not";
}

LogicalResult NumSequencesOp::verify() {
  return verifyDescribesSequences(*this, getCache().getType());
}

LogicalResult CapacityOp::verify() {
  return verifyDescribesSequences(*this, getCache().getType());
}

OpFoldResult MaxSeqLengthOp::fold(FoldAdaptor) {
  return foldToCollection(*this);
}

OpFoldResult MaxCacheLengthOp::fold(FoldAdaptor) {
  return foldToCollection(*this);
}

/// Replaces a max_* query on a visible collection constructor with the
/// zero-extended i32 operand it reads.
template <typename OpTy>
static LogicalResult
canonicalizeMaxLength(OpTy op, PatternRewriter &rewriter,
                      function_ref<Value(CollectionOpInterface)> field) {
  auto source = op.getCache().template getDefiningOp<CollectionOpInterface>();
  if (!source)
    return failure();
  rewriter.replaceOpWithNewOp<arith::IndexCastUIOp>(
      op, rewriter.getIndexType(), field(source));
  return success();
}

LogicalResult MaxSeqLengthOp::canonicalize(MaxSeqLengthOp op,
                                           PatternRewriter &rewriter) {
  return canonicalizeMaxLength(op, rewriter, [](CollectionOpInterface source) {
    return source.getMaxSeqLength();
  });
}

LogicalResult MaxCacheLengthOp::canonicalize(MaxCacheLengthOp op,
                                             PatternRewriter &rewriter) {
  return canonicalizeMaxLength(op, rewriter, [](CollectionOpInterface source) {
    return source.getMaxCacheLength();
  });
}

Speculation::Speculatability LookupOp::getSpeculatability() {
  bool checkedAsWrite = getCache().getType().getAssertWriteMode() == 1 &&
                        !getReadOnly() && !getUnchecked();
  return checkedAsWrite ? Speculation::NotSpeculatable
                        : Speculation::Speculatable;
}

void LookupOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getPage(), "page");
  setNameFn(getSlot(), "slot");
}

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

LogicalResult LoadOp::verify() {
  return verifyElementAccess(*this, getCache().getType(), getType(), getHead(),
                             getElement(), /*slot=*/{}, /*read=*/true);
}

LogicalResult StoreOp::verify() {
  return verifyElementAccess(*this, getCache().getType(),
                             getValue().getType(), getHead(), getElement(),
                             /*slot=*/{});
}

LogicalResult PageLoadOp::verify() {
  return verifyElementAccess(*this, getCache().getType(), getType(), getHead(),
                             getElement(), getSlot(), /*read=*/true);
}

LogicalResult PageStoreOp::verify() {
  return verifyElementAccess(*this, getCache().getType(),
                             getValue().getType(), getHead(), getElement(),
                             getSlot());
}

/// The scale ops: a cache with scales; the indices as for a scalar access.
static LogicalResult verifyScaleAccess(Operation *op,
                                       KVCacheTypeInterface cache, Value head,
                                       Value element, Value slot) {
  if (!cache.getScales())
    return op->emitOpError("needs a cache with 'scales', got ")
           << cache << "; a float or raw cache has no scales";
  return verifyElementAccess(op, cache, cache.getElementType(), head, element,
                             slot);
}

LogicalResult LoadScaleOp::verify() {
  return verifyScaleAccess(*this, getCache().getType(), getHead(),
                           getElement(), /*slot=*/{});
}

LogicalResult StoreScaleOp::verify() {
  return verifyScaleAccess(*this, getCache().getType(), getHead(),
                           getElement(), /*slot=*/{});
}

LogicalResult PageLoadScaleOp::verify() {
  return verifyScaleAccess(*this, getCache().getType(), getHead(),
                           getElement(), getSlot());
}

LogicalResult PageStoreScaleOp::verify() {
  return verifyScaleAccess(*this, getCache().getType(), getHead(),
                           getElement(), getSlot());
}

LogicalResult TileOp::verify() {
  KVCacheTypeInterface cache = getCache().getType();
  auto type = cast<MemRefType>(getType());
  bool hasPages = !ShapedType::isDynamic(cache.getPageSize());
  auto describeExpected = [&](InFlightDiagnostic diag) -> InFlightDiagnostic {
    std::string elementType;
    llvm::raw_string_ostream(elementType) << cache.getElementType();
    diag << "; expected memref<T x " << cache.getHeadSize() << " x "
         << elementType << ", strided<["
         << cache.getNumHeads() * cache.getHeadSize() << ", 1], offset: ?>>";
    if (hasPages)
      diag << " with page_size (" << cache.getPageSize() << ") % T == 0";
    diag << ", got " << type;
    return diag;
  };
  if (type.getRank() != 2 || type.isDynamicDim(0) ||
      type.getElementType() != cache.getElementType() ||
      type.getMemorySpace())
    return describeExpected(emitOpError("has a wrong result type"));
  int64_t rows = type.getDimSize(0);
  if (rows <= 0)
    return describeExpected(emitOpError("expects a positive tile row count, "
                                        "got ")
                            << rows);
  if (hasPages && cache.getPageSize() % rows != 0)
    return describeExpected(emitOpError("expects the tile row count ")
                            << rows << " to divide page_size");
  if (type.getDimSize(1) != cache.getHeadSize())
    return describeExpected(emitOpError("expects tile rows of head_size = ")
                            << cache.getHeadSize() << " elements");
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      strides[0] != cache.getNumHeads() * cache.getHeadSize() ||
      strides[1] != 1 ||
      ShapedType::isStatic(offset))
    return describeExpected(emitOpError("has a wrong result layout"));
  if (std::optional<int64_t> h = getConstantIndex(getHead()))
    if (*h < 0 || *h >= cache.getNumHeads())
      return emitOpError("head index ")
             << *h << " is out of range for num_heads = "
             << cache.getNumHeads();
  return success();
}
