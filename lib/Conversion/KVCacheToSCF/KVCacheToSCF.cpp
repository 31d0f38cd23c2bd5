//===- KVCacheToSCF.cpp - kvcache kernel ops to loops -----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Kernel ops become loop nests over access ops: one lookup per token row
// (outside the head and element loops), 16-byte vectors along head_size.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/Conversion/Passes.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>

namespace mlir {
#define GEN_PASS_DEF_CONVERTKVCACHETOSCF
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;
using namespace mlir::kvcache;

/// Emits `for (head, element) in [0, H) x [0, D) step width` calling
/// `body(head, element)`.
static void emitRowLoops(KernelBuilder &k, const KVCacheParams &params,
                         int64_t width,
                         function_ref<void(Value, Value)> body) {
  Value zero = k.index(0), one = k.index(1);
  Value numHeads = k.index(params.numHeads);
  Value headSize = k.index(params.headSize);
  Value step = k.index(width);
  k.forLoop(zero, numHeads, one, [&](Value head) {
    k.forLoop(zero, headSize, step,
              [&](Value element) { body(head, element); });
  });
}

namespace {

/// Base of the data-movement patterns: knows the vector size.
template <typename OpTy>
struct DataMovementPattern : OpRewritePattern<OpTy> {
  DataMovementPattern(MLIRContext *ctx, int64_t vectorBytes)
      : OpRewritePattern<OpTy>(ctx), vectorBytes(vectorBytes) {}
  int64_t vectorBytes;
};

/// store_ragged and gather_ragged: for each sequence b, for each of its rows
/// r, the token row at position `base(b) + r - offsets[b]` moves between
/// `rows[r]` and the cache, where base is cache_length(b) for store_ragged
/// and 0 for gather_ragged.
template <typename OpTy>
struct RaggedCopyToSCF : DataMovementPattern<OpTy> {
  using DataMovementPattern<OpTy>::DataMovementPattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    RaggedCopy copy = RaggedCopy::get(op);
    KernelBuilder k{rewriter, getKernelLoc(op)};
    auto params = KVCacheParams::get(copy.cache.getType());
    auto rowsType = cast<MemRefType>(copy.rows.getType());
    // Chunks of the rows' element type: float rows of a gather from a
    // quantized cache dequantize (page_load with a float result), each
    // chunk within one scale group.
    KVCacheParams rowParams = params;
    rowParams.elementType = rowsType.getElementType();
    int64_t width = getRowVectorWidth(rowParams, rowsType, this->vectorBytes);
    if (rowParams.elementType != params.elementType &&
        params.scales.getKind() == KVScales::Kind::Block)
      width = std::gcd(width, params.scales.getGroup());
    Value zero = k.index(0), one = k.index(1);
    k.forLoop(zero, k.numSequences(copy.offsets), one, [&](Value batch) {
      Value first = k.loadOffset(copy.offsets, batch);
      Value end = k.loadOffset(copy.offsets, k.add(batch, one));
      Value base = copy.isStore()
                       ? k.writeCacheLength(copy.cache, batch)
                       : zero;
      k.forLoop(first, end, one, [&](Value row) {
        Value token = k.rowPosition(base, row, first);
        Value page, slot;
        std::tie(page, slot) =
            k.lookup(copy.cache, batch, token, copy.isStore());
        emitRowLoops(k, params, width, [&](Value head, Value element) {
          k.copyRowChunk(copy.cache, copy.rows,
                         {row, page, slot, head, element}, width,
                         copy.direction);
        });
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// The scales of (`slot`, every head) of page `src` of `cache` to page
/// `dst`: one per head (`token_head`) or per group of G (`block<G>`).
static void copyPageScales(KernelBuilder &k, const KVCacheParams &params,
                           Value cache, Value src, Value dst, Value slot) {
  int64_t group = params.scales.getKind() == KVScales::Kind::Block
                      ? params.scales.getGroup()
                      : params.headSize;
  k.forLoop(k.index(0), k.index(params.numHeads), k.index(1), [&](Value head) {
    k.forLoop(k.index(0), k.index(params.headSize), k.index(group),
              [&](Value element) {
                Value scale = PageLoadScaleOp::create(k.b, k.loc, cache, src,
                                                      slot, head, element);
                PageStoreScaleOp::create(k.b, k.loc, scale, cache, dst, slot,
                                         head, element);
              });
  });
}

/// copy_pages: for each pair, each layer, K (and V): the page's
/// [page_size, num_heads, head_size] block, chunk by chunk.
struct CopyPagesToSCF : DataMovementPattern<CopyPagesOp> {
  using DataMovementPattern::DataMovementPattern;
  LogicalResult matchAndRewrite(CopyPagesOp op,
                                PatternRewriter &rewriter) const override {
    KernelBuilder k{rewriter, getKernelLoc(op)};
    Value collection = op.getCollection();
    auto params = KVCacheParams::get(collection.getType());
    int64_t width = getRowVectorWidth(params, /*rows=*/nullptr, vectorBytes);
    Value zero = k.index(0), one = k.index(1);
    Value pageSize = k.index(params.pageSize);
    Value pairs = op.getPairs();
    Value numPairs = memref::DimOp::create(rewriter, k.loc, pairs, 0);
    Value numLayers = NumLayersOp::create(rewriter, k.loc, collection);
    k.forLoop(zero, numPairs, one, [&](Value pair) {
      Value src = k.loadOffset(pairs, ValueRange{pair, zero});
      Value dst = k.loadOffset(pairs, ValueRange{pair, one});
      k.forLoop(zero, numLayers, one, [&](Value layer) {
        SmallVector<Value> caches = {
            GetKeyCacheOp::create(k.b, k.loc, collection, layer)};
        if (!params.mla)
          caches.push_back(GetValueCacheOp::create(k.b, k.loc, collection, layer));
        for (Value cache : caches)
          k.forLoop(zero, pageSize, one, [&](Value slot) {
            emitRowLoops(k, params, width, [&](Value head, Value element) {
              k.copyPageChunk(cache, src, dst, slot, head, element, width);
            });
            // Per-page scales (token_head, block<G>) move with the page:
            // one per head, or per group of G elements.
            if (params.scales.isPaged())
              copyPageScales(k, params, cache, src, dst, slot);
          });
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

struct ConvertKVCacheToSCFPass
    : impl::ConvertKVCacheToSCFBase<ConvertKVCacheToSCFPass> {
  using Base::Base;
  void runOnOperation() override {
    if (vectorBytes < 1 || !llvm::isPowerOf2_64(vectorBytes)) {
      getOperation()->emitError("convert-kvcache-to-scf: vector-bytes must "
                                "be a power of two, got ")
          << static_cast<int64_t>(vectorBytes);
      return signalPassFailure();
    }
    if (failed(rejectCachesWithoutLowering(getOperation(), /*gpu=*/false)))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateKVCacheToSCFConversionPatterns(patterns, vectorBytes);
    if (failed(applyKernelLoweringPatterns(getOperation(), std::move(patterns),
                                           getArgument())))
      signalPassFailure();
  }
};

} // namespace

void mlir::kvcache::populateKVCacheToSCFConversionPatterns(
    RewritePatternSet &patterns, int64_t vectorBytes) {
  patterns.add<RaggedCopyToSCF<StoreRaggedOp>, RaggedCopyToSCF<GatherRaggedOp>,
               CopyPagesToSCF>(
      patterns.getContext(), vectorBytes);
  populateAttentionToSCFConversionPatterns(patterns);
}
