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
#include "../KernelCommon/KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
#define GEN_PASS_DEF_CONVERTKVCACHETOSCF
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;
using namespace mlir::kvcache;

/// Emits `for (head, element) in [0, H) x [0, D) step width` calling
/// `body(head, element)`.
static void emitRowLoops(OpBuilder &builder, Location loc,
                         const PagedCacheParams &params, int64_t width,
                         function_ref<void(OpBuilder &, Value, Value)> body) {
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value numHeads = arith::ConstantIndexOp::create(builder, loc, params.numHeads);
  Value headSize = arith::ConstantIndexOp::create(builder, loc, params.headSize);
  Value step = arith::ConstantIndexOp::create(builder, loc, width);
  scf::ForOp::create(
      builder, loc, zero, numHeads, one, ValueRange{},
      [&](OpBuilder &b, Location l, Value head, ValueRange) {
        scf::ForOp::create(b, l, zero, headSize, step, ValueRange{},
                           [&](OpBuilder &bb, Location ll, Value element,
                               ValueRange) {
                             body(bb, head, element);
                             scf::YieldOp::create(bb, ll);
                           });
        scf::YieldOp::create(b, l);
      });
}

/// store_ragged and gather_ragged: for each sequence b, for each of its rows
/// r, the token row at position `base(b) + r - offsets[b]` moves between
/// `rows[r]` and the cache, where base is cache_length(b) for store_ragged
/// and 0 for gather_ragged.
template <typename OpTy>
static void lowerRaggedCopy(OpTy op, PatternRewriter &rewriter, Value rows,
                            Value offsets, RowCopyDirection direction,
                            int64_t vectorBytes) {
  Location loc = getKernelLoc(op);
  Value cache = op.getCache();
  auto params = PagedCacheParams::get(cache.getType());
  int64_t width =
      getRowVectorWidth(params, cast<MemRefType>(rows.getType()), vectorBytes);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  Value numSequences = getNumSequences(rewriter, loc, offsets);
  scf::ForOp::create(
      rewriter, loc, zero, numSequences, one, ValueRange{},
      [&](OpBuilder &b, Location l, Value batch, ValueRange) {
        Value first = loadOffset(b, l, offsets, batch);
        Value next = arith::AddIOp::create(b, l, batch, one);
        Value end = loadOffset(b, l, offsets, next);
        Value base = direction == RowCopyDirection::ToCache
                         ? createWriteCacheLength(b, l, cache, batch)
                         : zero;
        scf::ForOp::create(
            b, l, first, end, one, ValueRange{},
            [&](OpBuilder &rb, Location rl, Value row, ValueRange) {
              Value delta = arith::SubIOp::create(rb, rl, row, first);
              Value token = arith::AddIOp::create(rb, rl, base, delta);
              Value slot;
              Value page = createLookup(
                  rb, rl, cache, batch, token,
                  direction == RowCopyDirection::ToCache, &slot);
              emitRowLoops(rb, rl, params, width,
                           [&](OpBuilder &eb, Value head, Value element) {
                             emitRowChunkCopy(eb, rl, cache, rows, row, page,
                                              slot, head, element, width,
                                              direction);
                           });
              scf::YieldOp::create(rb, rl);
            });
        scf::YieldOp::create(b, l);
      });
  rewriter.eraseOp(op);
}

namespace {

/// Base of the data-movement patterns: knows the vector size.
template <typename OpTy>
struct DataMovementPattern : OpRewritePattern<OpTy> {
  DataMovementPattern(MLIRContext *ctx, int64_t vectorBytes)
      : OpRewritePattern<OpTy>(ctx), vectorBytes(vectorBytes) {}
  int64_t vectorBytes;
};

struct StoreRaggedToSCF : DataMovementPattern<StoreRaggedOp> {
  using DataMovementPattern::DataMovementPattern;
  LogicalResult matchAndRewrite(StoreRaggedOp op,
                                PatternRewriter &rewriter) const override {
    lowerRaggedCopy(op, rewriter, op.getValues(), op.getRowOffsets(),
                    RowCopyDirection::ToCache, vectorBytes);
    return success();
  }
};

struct GatherRaggedToSCF : DataMovementPattern<GatherRaggedOp> {
  using DataMovementPattern::DataMovementPattern;
  LogicalResult matchAndRewrite(GatherRaggedOp op,
                                PatternRewriter &rewriter) const override {
    lowerRaggedCopy(op, rewriter, op.getOut(), op.getCtxOffsets(),
                    RowCopyDirection::FromCache, vectorBytes);
    return success();
  }
};

/// copy_pages: for each pair, each layer, K (and V): the page's
/// [page_size, num_heads, head_size] block, chunk by chunk.
struct CopyPagesToSCF : DataMovementPattern<CopyPagesOp> {
  using DataMovementPattern::DataMovementPattern;
  LogicalResult matchAndRewrite(CopyPagesOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = getKernelLoc(op);
    Value collection = op.getCollection();
    auto params = PagedCacheParams::get(collection.getType());
    int64_t width = getRowVectorWidth(params, /*rows=*/nullptr, vectorBytes);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value pageSize = arith::ConstantIndexOp::create(rewriter, loc,
                                                    params.pageSize);
    Value pairs = op.getPairs();
    Value numPairs = memref::DimOp::create(rewriter, loc, pairs, 0);
    Value numLayers = NumLayersOp::create(rewriter, loc, collection);
    scf::ForOp::create(
        rewriter, loc, zero, numPairs, one, ValueRange{},
        [&](OpBuilder &b, Location l, Value pair, ValueRange) {
          Value src = loadOffset(b, l, pairs, ValueRange{pair, zero});
          Value dst = loadOffset(b, l, pairs, ValueRange{pair, one});
          scf::ForOp::create(
              b, l, zero, numLayers, one, ValueRange{},
              [&](OpBuilder &lb, Location ll, Value layer, ValueRange) {
                SmallVector<Value> caches = {
                    GetKeyCacheOp::create(lb, ll, collection, layer)};
                if (!params.mla)
                  caches.push_back(
                      GetValueCacheOp::create(lb, ll, collection, layer));
                for (Value cache : caches)
                  scf::ForOp::create(
                      lb, ll, zero, pageSize, one, ValueRange{},
                      [&](OpBuilder &sb, Location sl, Value slot,
                          ValueRange) {
                        emitRowLoops(sb, sl, params, width,
                                     [&](OpBuilder &eb, Value head,
                                         Value element) {
                                       emitPageChunkCopy(eb, sl, cache, src,
                                                         dst, slot, head,
                                                         element, width);
                                     });
                        scf::YieldOp::create(sb, sl);
                      });
                scf::YieldOp::create(lb, ll);
              });
          scf::YieldOp::create(b, l);
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
    if (failed(rejectCachesWithoutLowering(getOperation())))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateKVCacheToSCFConversionPatterns(patterns, vectorBytes);
    // One walk, no folding: folding would rewrite the kernels' cache operands
    // (cache_length of a layer cache folds to its collection), changing what
    // outlined kernels capture.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    WalkResult result = getOperation()->walk([](AttentionRaggedOp op) {
      op.emitOpError("cannot be lowered: q and out need a unit innermost "
                     "stride (copy them into contiguous buffers)");
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

void mlir::kvcache::populateKVCacheToSCFConversionPatterns(
    RewritePatternSet &patterns, int64_t vectorBytes) {
  patterns.add<StoreRaggedToSCF, GatherRaggedToSCF, CopyPagesToSCF>(
      patterns.getContext(), vectorBytes);
  populateAttentionToSCFConversionPatterns(patterns);
}
