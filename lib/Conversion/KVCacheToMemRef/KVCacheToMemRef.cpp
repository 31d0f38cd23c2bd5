//===- KVCacheToMemRef.cpp - kvcache access ops to memref -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The one place where page addressing lives: every other lowering asks for
// addresses through the access ops lowered here.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToMemRef/KVCacheToMemRef.h"
#include "KVCache/Conversion/KVCacheToMemRef/LoweredCache.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/IR/KVCacheOps.h"
#include "RuntimeChecks.h"
#include "StructuralConversion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/Transforms/StructuralTypeConversions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kvcache;

//===----------------------------------------------------------------------===//
// Type conversion (docs/Contract.md, section 7: kernel ABI)
//===----------------------------------------------------------------------===//

/// The lowered `blocks` of a collection, `memref<? x kv x ? x P x H x D x elt,
/// strided<[?, ?, ?, H*D, D, 1], offset: ?>>`, or of a layer cache,
/// `memref<? x P x H x D x elt, strided<[?, H*D, D, 1], offset: ?>>`.
static MemRefType getLoweredBlocksType(const PagedCacheParams &params,
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

SmallVector<Type, LoweredCache::kNumValues>
LoweredCache::getTypes(Type cacheType) {
  PagedCacheParams params = PagedCacheParams::get(cacheType);
  Type i32 = IntegerType::get(cacheType.getContext(), 32);
  int64_t dyn = ShapedType::kDynamic;
  SmallVector<Type, kNumValues> types(kNumValues);
  types[Blocks] =
      getLoweredBlocksType(params, isa<PagedCollectionType>(cacheType));
  types[CacheLengths] = MemRefType::get({dyn}, i32);
  types[LookupTable] = MemRefType::get({dyn, dyn}, i32);
  types[MaxSeqLength] = i32;
  types[MaxCacheLength] = i32;
  return types;
}

LoweredCache::LoweredCache(ValueRange values)
    : blocks(values[Blocks]), cacheLengths(values[CacheLengths]),
      lookupTable(values[LookupTable]), maxSeqLength(values[MaxSeqLength]),
      maxCacheLength(values[MaxCacheLength]) {
  assert(values.size() == kNumValues && "not the values of one cache");
}

SmallVector<Value, LoweredCache::kNumValues> LoweredCache::getValues() const {
  SmallVector<Value, kNumValues> values(kNumValues);
  values[Blocks] = blocks;
  values[CacheLengths] = cacheLengths;
  values[LookupTable] = lookupTable;
  values[MaxSeqLength] = maxSeqLength;
  values[MaxCacheLength] = maxCacheLength;
  return values;
}

void mlir::kvcache::populateKVCacheToMemRefTypeConversion(
    TypeConverter &typeConverter) {
  typeConverter.addConversion(
      [](PagedCollectionType type, SmallVectorImpl<Type> &results) {
        llvm::append_range(results, LoweredCache::getTypes(type));
        return success();
      });
  typeConverter.addConversion(
      [](PagedCacheType type, SmallVectorImpl<Type> &results) {
        llvm::append_range(results, LoweredCache::getTypes(type));
        return success();
      });
}

//===----------------------------------------------------------------------===//
// Access lowering
//===----------------------------------------------------------------------===//

namespace {

/// Emits the address computations of one access op: lookups, element loads
/// and stores, with run-time checks when the op is checked.
class AccessEmitter {
public:
  AccessEmitter(OpBuilder &builder, Operation *op, PagedCacheParams params,
                ValueRange lowered, bool checked)
      : builder(builder), loc(op->getLoc()), params(params), cache(lowered),
        checker(builder, op), checked(checked) {}

  /// `lookup_table[batch, token / P]` and `token mod P`, as indices.
  std::pair<Value, Value> lookup(Value batch, Value token);

  /// Reads a scalar or vector at a resolved page and slot (`pageChecked`
  /// when they come from `lookup` in this emitter, which checked them).
  Value load(Type resultType, Value page, Value slot, Value head,
             Value element, bool pageChecked);

  /// Writes a scalar or vector at a resolved page and slot.
  void store(Value value, Value page, Value slot, Value head, Value element,
             bool pageChecked);

  /// `cache_lengths[batch]` as an index.
  Value cacheLength(Value batch);

  /// Checks a resolved element access: page (unless `lookup` already
  /// checked it), slot, head and element range.
  void checkElementAccess(Type valueType, Value page, Value slot, Value head,
                          Value element, bool pageChecked);

  Value dim(Value memref, int64_t index) {
    return memref::DimOp::create(builder, loc, memref, index);
  }
  Value toIndex(Value i32Value) {
    return arith::IndexCastUIOp::create(builder, loc, builder.getIndexType(),
                                        i32Value);
  }

  OpBuilder &builder;
  Location loc;
  PagedCacheParams params;
  LoweredCache cache;
  RuntimeChecker checker;
  bool checked;
};

} // namespace

std::pair<Value, Value> AccessEmitter::lookup(Value batch, Value token) {
  // Token positions fit in i32 (cache lengths are i32): divide in 32 bits,
  // which is a shift and a mask for a power-of-two page size and a 32-bit
  // multiply-high sequence otherwise.
  Type i32 = builder.getI32Type();
  if (checked)
    checker.checkLess(token, int64_t(1) << 32, "token position",
                      "2^32 (positions are unsigned 32-bit)");
  Value token32 = arith::IndexCastUIOp::create(builder, loc, i32, token);
  Value column32, slot32;
  if (llvm::isPowerOf2_64(params.pageSize)) {
    Value shift = arith::ConstantIntOp::create(
        builder, loc, i32, llvm::Log2_64(params.pageSize));
    Value mask =
        arith::ConstantIntOp::create(builder, loc, i32, params.pageSize - 1);
    column32 = arith::ShRUIOp::create(builder, loc, token32, shift);
    slot32 = arith::AndIOp::create(builder, loc, token32, mask);
  } else {
    Value pageSize =
        arith::ConstantIntOp::create(builder, loc, i32, params.pageSize);
    column32 = arith::DivUIOp::create(builder, loc, token32, pageSize);
    slot32 = arith::RemUIOp::create(builder, loc, token32, pageSize);
  }
  Value column = toIndex(column32);
  if (checked) {
    checker.checkLess(batch, dim(cache.lookupTable, 0), "batch index",
                      "the number of lookup_table rows");
    checker.checkLess(column, dim(cache.lookupTable, 1),
                      "logical page (token / page_size)",
                      "the number of lookup_table columns");
  }
  Value page = toIndex(memref::LoadOp::create(builder, loc, cache.lookupTable,
                                              ValueRange{batch, column}));
  if (checked)
    checker.checkLess(page, dim(cache.blocks, 0),
                      "physical page (lookup_table entry)", "num_pages");
  return {page, toIndex(slot32)};
}

/// Number of elements a load or store of `type` moves.
static int64_t getAccessWidth(Type type) {
  if (auto vectorType = dyn_cast<VectorType>(type))
    return vectorType.getNumElements();
  return 1;
}

void AccessEmitter::checkElementAccess(Type valueType, Value page, Value slot,
                                       Value head, Value element,
                                       bool pageChecked) {
  int64_t width = getAccessWidth(valueType);
  if (!pageChecked) {
    checker.checkLess(page, dim(cache.blocks, 0), "physical page",
                      "num_pages");
    checker.checkLess(slot, params.pageSize, "slot", "page_size");
  }
  checker.checkLess(head, params.numHeads, "head index", "num_heads");
  // element + width <= head_size, as element < head_size - width + 1.
  checker.checkLess(element, params.headSize - width + 1,
                    "first element index",
                    "head_size - vector width + 1");
  if (width > 1)
    checker.checkMultiple(element, width, "first element index");
}

/// The alignment a vector access of `width` elements may claim: its whole
/// width in bytes (docs/Contract.md, section 3.2), as far as the row layout
/// and the 16-byte alignment of `blocks` guarantee it. The access starts at
/// a multiple of its width within a head row, and head rows start at
/// multiples of head_size elements (the paged_collection verifier).
static uint64_t getVectorAlignment(const PagedCacheParams &params,
                                   int64_t width) {
  uint64_t elementBytes =
      llvm::divideCeil(params.elementType.getIntOrFloatBitWidth(), 8);
  return getAccessAlignment(width * elementBytes,
                            /*rowBytes=*/params.headSize * elementBytes);
}

Value AccessEmitter::load(Type resultType, Value page, Value slot, Value head,
                          Value element, bool pageChecked) {
  if (checked)
    checkElementAccess(resultType, page, slot, head, element, pageChecked);
  SmallVector<Value> indices = {page, slot, head, element};
  if (auto vectorType = dyn_cast<VectorType>(resultType))
    return vector::LoadOp::create(
        builder, loc, vectorType, cache.blocks, indices,
        /*nontemporal=*/false,
        llvm::Align(getVectorAlignment(params, vectorType.getNumElements())));
  return memref::LoadOp::create(builder, loc, cache.blocks, indices);
}

void AccessEmitter::store(Value value, Value page, Value slot, Value head,
                          Value element, bool pageChecked) {
  if (checked)
    checkElementAccess(value.getType(), page, slot, head, element,
                       pageChecked);
  SmallVector<Value> indices = {page, slot, head, element};
  if (auto vectorType = dyn_cast<VectorType>(value.getType())) {
    vector::StoreOp::create(
        builder, loc, value, cache.blocks, indices, /*nontemporal=*/false,
        llvm::Align(getVectorAlignment(params, vectorType.getNumElements())));
    return;
  }
  memref::StoreOp::create(builder, loc, value, cache.blocks, indices);
}

Value AccessEmitter::cacheLength(Value batch) {
  if (checked)
    checker.checkLess(batch, dim(cache.cacheLengths, 0), "batch index",
                      "the size of cache_lengths");
  return toIndex(
      memref::LoadOp::create(builder, loc, cache.cacheLengths, batch));
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

namespace {

/// Base of the access-op patterns: knows whether an op is checked.
template <typename OpTy>
struct AccessPattern : OpConversionPattern<OpTy> {
  AccessPattern(const TypeConverter &typeConverter, MLIRContext *ctx,
                const KVCacheToMemRefOptions &options)
      : OpConversionPattern<OpTy>(typeConverter, ctx), options(options) {}

  /// Reads are checked with `checked=true`; writes also when the cache has
  /// `assert_write_mode = 1`. Lookups count as writes there (a store is a
  /// lookup plus a page_store once accesses are expanded) unless marked
  /// `read_only`.
  bool isChecked(Type cacheType, bool isWrite) const {
    return options.checked ||
           (isWrite && PagedCacheParams::get(cacheType).assertWriteMode == 1);
  }

  AccessEmitter emitter(ConversionPatternRewriter &rewriter, OpTy op,
                        Type cacheType, ValueRange lowered,
                        bool isWrite) const {
    return AccessEmitter(rewriter, op, PagedCacheParams::get(cacheType),
                         lowered, isChecked(cacheType, isWrite));
  }

  KVCacheToMemRefOptions options;
};

struct PagedCollectionLowering : AccessPattern<PagedCollectionOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(PagedCollectionOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // The operands are the lowered values, in field order.
    SmallVector<Type, LoweredCache::kNumValues> types =
        LoweredCache::getTypes(op.getType());
    SmallVector<Value> values;
    for (auto [operands, type] :
         llvm::zip_equal(adaptor.getOperands(), types)) {
      Value value = operands.front();
      if (value.getType() != type) {
        if (!memref::CastOp::areCastCompatible(value.getType(), type))
          return rewriter.notifyMatchFailure(
              op, "operand cannot be cast to its lowered type");
        value = memref::CastOp::create(rewriter, op.getLoc(), type, value);
      }
      values.push_back(value);
    }
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// get_key_cache / get_value_cache: the subview `blocks[*, kv, layer, *, *, *]`.
template <typename OpTy, int64_t KV>
struct GetCacheLowering : AccessPattern<OpTy> {
  using AccessPattern<OpTy>::AccessPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::template GenericAdaptor<
                               ArrayRef<ValueRange>> adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ValueRange collection = adaptor.getCollection();
    Value layer = adaptor.getLayer().front();
    LoweredCache lowered(collection);
    AccessEmitter emitter = this->emitter(rewriter, op, op.getResult().getType(),
                                          collection, /*isWrite=*/false);
    if (emitter.checked)
      emitter.checker.checkLess(layer, emitter.dim(lowered.blocks, 2),
                                "layer index", "num_layers");
    PagedCacheParams params = PagedCacheParams::get(op.getResult().getType());
    SmallVector<OpFoldResult> offsets = {
        rewriter.getIndexAttr(0), rewriter.getIndexAttr(KV), layer,
        rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
        rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {
        emitter.dim(lowered.blocks, 0),        rewriter.getIndexAttr(1),
        rewriter.getIndexAttr(1),              rewriter.getIndexAttr(params.pageSize),
        rewriter.getIndexAttr(params.numHeads), rewriter.getIndexAttr(params.headSize)};
    SmallVector<OpFoldResult> strides(6, rewriter.getIndexAttr(1));
    Value view = memref::SubViewOp::create(
        rewriter, loc, getLoweredBlocksType(params, /*collection=*/false),
        lowered.blocks, offsets, sizes, strides);
    // The layer shares the collection's metadata.
    LoweredCache layerCache = lowered;
    layerCache.blocks = view;
    rewriter.replaceOpWithMultiple(op, {layerCache.getValues()});
    return success();
  }
};

struct CacheLengthLowering : AccessPattern<CacheLengthOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(CacheLengthOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AccessEmitter emitter = this->emitter(rewriter, op, op.getCache().getType(),
                                          adaptor.getCache(),
                                          op.getServesWrite());
    rewriter.replaceOp(op, emitter.cacheLength(adaptor.getBatch().front()));
    return success();
  }
};

/// max_seq_length / max_cache_length: the lowered i32 `Field`,
/// zero-extended.
template <typename OpTy, Value LoweredCache::*Field>
struct MaxLengthLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op,
                  typename OpTy::template GenericAdaptor<ArrayRef<ValueRange>>
                      adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::IndexCastUIOp>(
        op, rewriter.getIndexType(), LoweredCache(adaptor.getCache()).*Field);
    return success();
  }
};

/// num_pages / num_layers: a dimension of the lowered `blocks`.
template <typename OpTy, int64_t Dim>
struct BlocksDimLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op,
                  typename OpTy::template GenericAdaptor<ArrayRef<ValueRange>>
                      adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value blocks = LoweredCache(adaptor.getOperands().front()).blocks;
    rewriter.replaceOpWithNewOp<memref::DimOp>(op, blocks, Dim);
    return success();
  }
};

struct LookupLowering : AccessPattern<LookupOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(LookupOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AccessEmitter emitter = this->emitter(rewriter, op, op.getCache().getType(),
                                          adaptor.getCache(),
                                          /*isWrite=*/!op.getReadOnly());
    auto [page, slot] = emitter.lookup(adaptor.getBatch().front(),
                                       adaptor.getToken().front());
    rewriter.replaceOp(op, {page, slot});
    return success();
  }
};

struct LoadLowering : AccessPattern<LoadOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(LoadOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AccessEmitter emitter = this->emitter(rewriter, op, op.getCache().getType(),
                                          adaptor.getCache(), false);
    auto [page, slot] = emitter.lookup(adaptor.getBatch().front(),
                                       adaptor.getToken().front());
    rewriter.replaceOp(op, emitter.load(op.getType(), page, slot,
                                        adaptor.getHead().front(),
                                        adaptor.getElement().front(),
                                        /*pageChecked=*/true));
    return success();
  }
};

struct StoreLowering : AccessPattern<StoreOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(StoreOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AccessEmitter emitter = this->emitter(rewriter, op, op.getCache().getType(),
                                          adaptor.getCache(), true);
    auto [page, slot] = emitter.lookup(adaptor.getBatch().front(),
                                       adaptor.getToken().front());
    emitter.store(adaptor.getValue().front(), page, slot,
                  adaptor.getHead().front(), adaptor.getElement().front(),
                  /*pageChecked=*/true);
    rewriter.eraseOp(op);
    return success();
  }
};

struct PageLoadLowering : AccessPattern<PageLoadOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(PageLoadOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AccessEmitter emitter = this->emitter(rewriter, op, op.getCache().getType(),
                                          adaptor.getCache(),
                                          op.getServesWrite());
    rewriter.replaceOp(op, emitter.load(op.getType(), adaptor.getPage().front(),
                                        adaptor.getSlot().front(),
                                        adaptor.getHead().front(),
                                        adaptor.getElement().front(),
                                        /*pageChecked=*/false));
    return success();
  }
};

struct PageStoreLowering : AccessPattern<PageStoreOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(PageStoreOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    AccessEmitter emitter = this->emitter(rewriter, op, op.getCache().getType(),
                                          adaptor.getCache(), true);
    emitter.store(adaptor.getValue().front(), adaptor.getPage().front(),
                  adaptor.getSlot().front(), adaptor.getHead().front(),
                  adaptor.getElement().front(), /*pageChecked=*/false);
    rewriter.eraseOp(op);
    return success();
  }
};

/// tile: the subview `view[page, slot .. slot+T-1, head, *]`.
struct TileLowering : AccessPattern<TileOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(TileOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto resultType = cast<MemRefType>(op.getType());
    int64_t rows = resultType.getDimSize(0);
    Value token = adaptor.getToken().front();
    Value head = adaptor.getHead().front();
    AccessEmitter emitter = this->emitter(rewriter, op, op.getCache().getType(),
                                          adaptor.getCache(), false);
    if (emitter.checked) {
      emitter.checker.checkMultiple(token, rows, "first token of the tile");
      emitter.checker.checkLess(head, emitter.params.numHeads, "head index",
                                "num_heads");
    }
    auto [page, slot] = emitter.lookup(adaptor.getBatch().front(), token);
    SmallVector<OpFoldResult> offsets = {page, slot, head,
                                         rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {
        rewriter.getIndexAttr(1), rewriter.getIndexAttr(rows),
        rewriter.getIndexAttr(1),
        rewriter.getIndexAttr(emitter.params.headSize)};
    SmallVector<OpFoldResult> strides(4, rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<memref::SubViewOp>(
        op, resultType, emitter.cache.blocks, offsets, sizes, strides);
    return success();
  }
};

} // namespace

void mlir::kvcache::populateKVCacheToMemRefConversionPatterns(
    TypeConverter &typeConverter, RewritePatternSet &patterns,
    const KVCacheToMemRefOptions &options) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<PagedCollectionLowering, GetCacheLowering<GetKeyCacheOp, 0>,
               GetCacheLowering<GetValueCacheOp, 1>, CacheLengthLowering,
               LookupLowering, LoadLowering, StoreLowering, PageLoadLowering,
               PageStoreLowering, TileLowering>(typeConverter, ctx, options);
  patterns.add<MaxLengthLowering<MaxSeqLengthOp, &LoweredCache::maxSeqLength>,
               MaxLengthLowering<MaxCacheLengthOp,
                                 &LoweredCache::maxCacheLength>,
               BlocksDimLowering<NumPagesOp, 0>,
               BlocksDimLowering<NumLayersOp, 2>>(typeConverter, ctx);

  populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(
      patterns, typeConverter);
  populateCallOpTypeConversionPattern(patterns, typeConverter);
  populateReturnOpTypeConversionPattern(patterns, typeConverter);
  scf::populateSCFStructuralTypeConversions(typeConverter, patterns);
  cf::populateCFStructuralTypeConversions(typeConverter, patterns);
  populateGPUStructuralTypeConversions(typeConverter, patterns);
}

void mlir::kvcache::configureKVCacheToMemRefConversionLegality(
    ConversionTarget &target, TypeConverter &typeConverter) {
  target.addIllegalDialect<KVCacheDialect>();
  target.addLegalOp<UnrealizedConversionCastOp>();
  // Function-like ops own no operands: judge them by their signatures (the
  // function pattern converts the entry block only).
  target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
    return typeConverter.isSignatureLegal(op.getFunctionType());
  });
  configureGPUStructuralLegality(target, typeConverter);
  target.markUnknownOpDynamicallyLegal(
      [&](Operation *op) { return typeConverter.isLegal(op); });
  scf::populateSCFStructuralTypeConversionTarget(typeConverter, target);
  cf::populateCFStructuralTypeConversionTarget(typeConverter, target);
}
