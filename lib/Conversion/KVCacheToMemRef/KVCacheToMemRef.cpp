//===- KVCacheToMemRef.cpp - kvcache access ops to memref -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The one place where page addressing lives: every other lowering asks for
// addresses through the access ops lowered here.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToMemRef/KVCacheToMemRef.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/Quantization.h"
#include "../KernelCommon/RuntimeChecks.h"
#include "MetadataLowering.h"
#include "PageTransferLowering.h"
#include "StructuralConversion.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/Transforms/StructuralTypeConversions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kvcache;

//===----------------------------------------------------------------------===//
// Type conversion (docs/Contract.md, section 7: kernel ABI)
//===----------------------------------------------------------------------===//

void mlir::kvcache::populateKVCacheToMemRefTypeConversion(
    TypeConverter &typeConverter) {
  // Every kind says what it lowers to.
  typeConverter.addConversion(
      [](KVCollectionTypeInterface type, SmallVectorImpl<Type> &results) {
        type.getLoweredTypes(results);
        return success();
      });
  typeConverter.addConversion(
      [](KVCacheTypeInterface type, SmallVectorImpl<Type> &results) {
        type.getLoweredTypes(results);
        return success();
      });
}

//===----------------------------------------------------------------------===//
// Access lowering
//===----------------------------------------------------------------------===//

/// Where `op` runs: on the device inside a gpu.module or a gpu.launch body
/// (its run-time checks are device assertions), else on the host.
static RunsOn getRunsOn(Operation *op) {
  return op->getParentOfType<gpu::GPUModuleOp>() ||
                 op->getParentOfType<gpu::LaunchOp>()
             ? RunsOn::Device
             : RunsOn::Host;
}

namespace {

/// Emits the address computations of one access op on a layer cache:
/// lookups (through the cache type's hook), element loads and stores, with
/// run-time checks when the op is checked.
class AccessEmitter {
public:
  AccessEmitter(OpBuilder &builder, Operation *op, KVCacheTypeInterface type,
                ValueRange lowered, bool checked)
      : builder(builder), loc(op->getLoc()), type(type),
        params(KVCacheParams::get(type)), lowered(lowered),
        blocks(type.getBlocks(lowered)), checker(builder, op, getRunsOn(op)),
        checked(checked) {}

  /// The (page, slot) of `token` of sequence `batch`.
  std::pair<Value, Value> lookup(Value batch, Value token) {
    return type.buildLookup(builder, loc, lowered, batch, token, checks());
  }

  /// Reads a scalar or vector at a resolved page and slot (`pageChecked`
  /// when they come from `lookup` in this emitter, which checked them).
  Value load(Type resultType, Value page, Value slot, Value head,
             Value element, bool pageChecked);

  /// Writes a scalar or vector at a resolved page and slot.
  void store(Value value, Value page, Value slot, Value head, Value element,
             bool pageChecked);

  /// The scale of element `element` of a cache with scales, at a resolved
  /// page and slot (docs/Contract.md, section 2.2).
  Value loadScale(Value page, Value slot, Value head, Value element,
                  bool pageChecked);
  void storeScale(Value value, Value page, Value slot, Value head,
                  Value element, bool pageChecked);

  /// Checks a resolved element access: page (unless `lookup` already
  /// checked it), slot, head and element range.
  void checkElementAccess(Type valueType, Value page, Value slot, Value head,
                          Value element, bool pageChecked);

  /// The run-time checks the hooks emit: none unless checked.
  KVRuntimeChecks *checks() { return checked ? &checker : nullptr; }

  Value dim(Value memref, int64_t index) {
    return memref::DimOp::create(builder, loc, memref, index);
  }

  OpBuilder &builder;
  Location loc;
  KVCacheTypeInterface type;
  KVCacheParams params;
  ValueRange lowered;
  /// The layer's [pages, page_slots, num_heads, head_size] view.
  Value blocks;
  RuntimeChecker checker;
  bool checked;
};

} // namespace

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
    checker.checkLess(page, dim(blocks, 0), "physical page", "num_pages");
    if (params.hasStaticPages())
      checker.checkLess(slot, params.pageSize, "slot", "page_size");
    else
      checker.checkLess(slot, dim(blocks, 1), "slot", "the block's token slots");
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
/// multiples of head_size elements (the collection constructors verify it).
static uint64_t getVectorAlignment(const KVCacheParams &params,
                                   int64_t width) {
  uint64_t elementBytes =
      llvm::divideCeil(params.elementType.getIntOrFloatBitWidth(), 8);
  return getAccessAlignment(width * elementBytes,
                            /*rowBytes=*/params.headSize * elementBytes);
}

/// The indices of the scale of [page, slot, head, element] in a layer's
/// scales view: none (`tensor`, a 0-D memref), [page, slot, head]
/// (`token_head`), [page, slot, head, element / G] (`block<G>`).
static SmallVector<Value> getScaleIndices(OpBuilder &builder, Location loc,
                                          const KVScales &scales, Value page,
                                          Value slot, Value head,
                                          Value element) {
  switch (scales.getKind()) {
  case KVScales::Kind::None:
  case KVScales::Kind::Tensor:
    return {};
  case KVScales::Kind::TokenHead:
    return {page, slot, head};
  case KVScales::Kind::Block:
    return {page, slot, head,
            arith::DivUIOp::create(
                builder, loc, element,
                arith::ConstantIndexOp::create(builder, loc,
                                               scales.getGroup()))};
  }
  llvm_unreachable("unknown scales kind");
}

Value AccessEmitter::loadScale(Value page, Value slot, Value head,
                               Value element, bool pageChecked) {
  if (checked)
    checkElementAccess(builder.getF32Type(), page, slot, head, element,
                       pageChecked);
  // The sixth lowered value (docs/Contract.md, section 7.1).
  return memref::LoadOp::create(
      builder, loc, lowered[5],
      getScaleIndices(builder, loc, params.scales, page, slot, head, element));
}

void AccessEmitter::storeScale(Value value, Value page, Value slot,
                               Value head, Value element, bool pageChecked) {
  if (checked)
    checkElementAccess(value.getType(), page, slot, head, element,
                       pageChecked);
  memref::StoreOp::create(
      builder, loc, value, lowered[5],
      getScaleIndices(builder, loc, params.scales, page, slot, head, element));
}

Value AccessEmitter::load(Type resultType, Value page, Value slot, Value head,
                          Value element, bool pageChecked) {
  Type resultElement = getElementTypeOrSelf(resultType);
  if (resultElement != params.elementType) {
    // Dequantizing: the codes, as f32 times the scale of the vector (one:
    // the verifier keeps a vector within a scale group), rounded to
    // nearest even to f16/bf16.
    Type codesType = resultType;
    if (auto vector = dyn_cast<VectorType>(resultType))
      codesType = vector.clone(params.elementType);
    else
      codesType = params.elementType;
    Value codes = load(codesType, page, slot, head, element, pageChecked);
    Value values = decodeStorageToF32(builder, loc, codes);
    Value scale = loadScale(page, slot, head, element, /*pageChecked=*/true);
    if (isa<VectorType>(values.getType()))
      scale = vector::BroadcastOp::create(builder, loc, values.getType(), scale);
    values = arith::MulFOp::create(builder, loc, values, scale);
    if (!resultElement.isF32())
      values = arith::TruncFOp::create(builder, loc, resultType, values);
    return values;
  }
  if (checked)
    checkElementAccess(resultType, page, slot, head, element, pageChecked);
  SmallVector<Value> indices = {page, slot, head, element};
  if (auto vectorType = dyn_cast<VectorType>(resultType))
    return vector::LoadOp::create(
        builder, loc, vectorType, blocks, indices,
        /*nontemporal=*/false,
        llvm::Align(getVectorAlignment(params, vectorType.getNumElements())));
  return memref::LoadOp::create(builder, loc, blocks, indices);
}

void AccessEmitter::store(Value value, Value page, Value slot, Value head,
                          Value element, bool pageChecked) {
  if (checked)
    checkElementAccess(value.getType(), page, slot, head, element,
                       pageChecked);
  SmallVector<Value> indices = {page, slot, head, element};
  if (auto vectorType = dyn_cast<VectorType>(value.getType())) {
    vector::StoreOp::create(
        builder, loc, value, blocks, indices, /*nontemporal=*/false,
        llvm::Align(getVectorAlignment(params, vectorType.getNumElements())));
    return;
  }
  memref::StoreOp::create(builder, loc, value, blocks, indices);
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
           (isWrite && KVCacheParams::get(cacheType).assertWriteMode == 1);
  }

  AccessEmitter emitter(ConversionPatternRewriter &rewriter, OpTy op,
                        KVCacheTypeInterface cacheType, ValueRange lowered,
                        bool isWrite) const {
    return AccessEmitter(rewriter, op, cacheType, lowered,
                         isChecked(cacheType, isWrite));
  }

  KVCacheToMemRefOptions options;
};

/// A collection constructor (an op implementing CollectionOpInterface, of
/// any kind): its operands are the lowered values, cast to the lowered types
/// the collection type states.
struct CollectionLowering
    : OpInterfaceConversionPattern<CollectionOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;
  LogicalResult
  matchAndRewrite(CollectionOpInterface op, ArrayRef<ValueRange> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (op->getNumResults() != 1)
      return rewriter.notifyMatchFailure(op, "expected one result");
    auto type =
        dyn_cast<KVCollectionTypeInterface>(op->getResult(0).getType());
    if (!type)
      return rewriter.notifyMatchFailure(op, "result is not a collection");
    SmallVector<Type> types;
    type.getLoweredTypes(types);
    if (operands.size() != types.size())
      return op->emitOpError("has ")
             << operands.size() << " operands but its collection type "
             << type << " lowers to " << types.size()
             << " values: a collection constructor takes its lowered "
                "values";
    SmallVector<Value> values;
    for (auto [operand, loweredType] : llvm::zip_equal(operands, types)) {
      if (operand.size() != 1)
        return rewriter.notifyMatchFailure(op, "operand is not one value");
      Value value = operand.front();
      if (value.getType() != loweredType) {
        if (!memref::CastOp::areCastCompatible(value.getType(), loweredType))
          return op->emitOpError("operand of type ")
                 << value.getType() << " cannot be cast to its lowered type "
                 << loweredType;
        value =
            memref::CastOp::create(rewriter, op->getLoc(), loweredType, value);
      }
      values.push_back(value);
    }
    rewriter.replaceOpWithMultiple(op, {values});
    return success();
  }
};

/// get_key_cache / get_value_cache: the collection type's layer hook.
template <typename OpTy, int64_t KV>
struct GetCacheLowering : AccessPattern<OpTy> {
  using AccessPattern<OpTy>::AccessPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::template GenericAdaptor<
                               ArrayRef<ValueRange>> adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<KVCollectionTypeInterface>(op.getCollection().getType());
    RuntimeChecker checker(rewriter, op, getRunsOn(op));
    bool checked = this->isChecked(type, /*isWrite=*/false);
    SmallVector<Value> layer = type.buildLayerCache(
        rewriter, op.getLoc(), adaptor.getCollection(),
        adaptor.getLayer().front(), KV, checked ? &checker : nullptr);
    rewriter.replaceOpWithMultiple(op, {layer});
    return success();
  }
};

struct CacheLengthLowering : AccessPattern<CacheLengthOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(CacheLengthOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = op.getCache().getType();
    RuntimeChecker checker(rewriter, op, getRunsOn(op));
    bool checked = isChecked(type, op.getServesWrite());
    Value length = callMetadataHook(type, [&](auto cache) {
      return cache.buildCacheLength(rewriter, op.getLoc(), adaptor.getCache(),
                                    adaptor.getBatch().front(),
                                    checked ? &checker : nullptr);
    });
    rewriter.replaceOp(op, length);
    return success();
  }
};

struct LookupLowering : AccessPattern<LookupOp> {
  using AccessPattern::AccessPattern;
  LogicalResult
  matchAndRewrite(LookupOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // An argument check's lookup checks its page itself.
    KVCacheTypeInterface type = op.getCache().getType();
    AccessEmitter emitter(
        rewriter, op, type, adaptor.getCache(),
        !op.getUnchecked() && isChecked(type, /*isWrite=*/!op.getReadOnly()));
    auto [page, slot] = emitter.lookup(adaptor.getBatch().front(),
                                       adaptor.getToken().front());
    rewriter.replaceOp(op, {page, slot});
    return success();
  }
};

/// The element access ops (load, store, page_load, page_store) and the
/// scale ops (load_scale, ...): a token-addressed op resolves its page and
/// slot with the emitter's lookup (which checks the page), a page-addressed
/// one takes them as given; then one read or write.
template <typename OpTy>
struct ElementAccessLowering : AccessPattern<OpTy> {
  using AccessPattern<OpTy>::AccessPattern;
  static constexpr bool isScale =
      llvm::is_one_of<OpTy, LoadScaleOp, StoreScaleOp, PageLoadScaleOp,
                      PageStoreScaleOp>::value;
  static constexpr bool isWrite =
      llvm::is_one_of<OpTy, StoreOp, PageStoreOp, StoreScaleOp,
                      PageStoreScaleOp>::value;
  static constexpr bool byToken =
      llvm::is_one_of<OpTy, LoadOp, StoreOp, LoadScaleOp,
                      StoreScaleOp>::value;

  LogicalResult
  matchAndRewrite(OpTy op,
                  typename OpConversionPattern<OpTy>::OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool servesWrite = isWrite;
    if constexpr (std::is_same_v<OpTy, PageLoadOp>)
      servesWrite = op.getServesWrite();
    AccessEmitter emitter = this->emitter(rewriter, op, op.getCache().getType(),
                                          adaptor.getCache(), servesWrite);
    Value page, slot;
    if constexpr (byToken)
      std::tie(page, slot) = emitter.lookup(adaptor.getBatch().front(),
                                            adaptor.getToken().front());
    else
      std::tie(page, slot) = std::pair(adaptor.getPage().front(),
                                       adaptor.getSlot().front());
    Value head = adaptor.getHead().front();
    Value element = adaptor.getElement().front();
    if constexpr (isWrite) {
      Value value = adaptor.getValue().front();
      if constexpr (isScale)
        emitter.storeScale(value, page, slot, head, element, byToken);
      else
        emitter.store(value, page, slot, head, element, byToken);
      rewriter.eraseOp(op);
    } else if constexpr (isScale) {
      rewriter.replaceOp(op,
                         emitter.loadScale(page, slot, head, element, byToken));
    } else {
      rewriter.replaceOp(op, emitter.load(op.getType(), page, slot, head,
                                          element, byToken));
    }
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
    // With static pages, T divides the page size and the first row is a
    // multiple of T: the rows stay in the page the lookup checked. A block
    // of run-time size must hold the last row too.
    if (emitter.checked && !emitter.params.hasStaticPages()) {
      Value last = arith::AddIOp::create(
          rewriter, op.getLoc(), slot,
          arith::ConstantIndexOp::create(rewriter, op.getLoc(), rows - 1));
      emitter.checker.checkLess(last, emitter.dim(emitter.blocks, 1),
                                "last token of the tile",
                                "the block's token slots");
    }
    SmallVector<OpFoldResult> offsets = {page, slot, head,
                                         rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {
        rewriter.getIndexAttr(1), rewriter.getIndexAttr(rows),
        rewriter.getIndexAttr(1),
        rewriter.getIndexAttr(emitter.params.headSize)};
    SmallVector<OpFoldResult> strides(4, rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<memref::SubViewOp>(
        op, resultType, emitter.blocks, offsets, sizes, strides);
    return success();
  }
};

} // namespace

void mlir::kvcache::populateKVCacheToMemRefConversionPatterns(
    TypeConverter &typeConverter, RewritePatternSet &patterns,
    const KVCacheToMemRefOptions &options) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<GetCacheLowering<GetKeyCacheOp, 0>,
               GetCacheLowering<GetValueCacheOp, 1>, CacheLengthLowering,
               LookupLowering, ElementAccessLowering<LoadOp>,
               ElementAccessLowering<StoreOp>, ElementAccessLowering<PageLoadOp>,
               ElementAccessLowering<PageStoreOp>, TileLowering,
               ElementAccessLowering<LoadScaleOp>,
               ElementAccessLowering<StoreScaleOp>,
               ElementAccessLowering<PageLoadScaleOp>,
               ElementAccessLowering<PageStoreScaleOp>>(typeConverter, ctx,
                                                       options);
  patterns.add<CollectionLowering>(typeConverter, ctx);
  populateMetadataLoweringPatterns(typeConverter, patterns);
  populatePageTransferLoweringPatterns(typeConverter, patterns,
                                       options.checked,
                                       options.transferDirectBytes,
                                       options.transferStagingBytes);

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
