//===- ExpandAccesses.cpp - kvcache-expand-accesses -------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheOps.h"
#include "KVCache/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::kvcache {
#define GEN_PASS_DEF_KVCACHEEXPANDACCESSES
#include "KVCache/Transforms/Passes.h.inc"
} // namespace mlir::kvcache

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// The location of an op split off `op`: named after `op`, so run-time check
/// messages still name the access the user wrote.
static Location getSplitLoc(Operation *op) {
  return NameLoc::get(op->getName().getIdentifier(), op->getLoc());
}

/// load -> lookup + page_load, load_scale -> lookup + page_load_scale.
template <typename OpTy, typename PageOpTy>
struct ExpandRead : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = getSplitLoc(op);
    // On an assert_write_mode = 1 cache lookups are checked as writes; this
    // one serves a read (and stays apart from the lookups of writes in cse).
    bool readOnly = op.getCache().getType().getAssertWriteMode() == 1;
    auto lookup = LookupOp::create(rewriter, loc, op.getCache(),
                                   op.getBatch(), op.getToken(),
                                   /*read_only=*/readOnly);
    Value value = PageOpTy::create(rewriter, loc, op.getType(), op.getCache(),
                                   lookup.getPage(), lookup.getSlot(),
                                   op.getHead(), op.getElement());
    rewriter.replaceOp(op, value);
    return success();
  }
};

/// store -> lookup + page_store, store_scale -> lookup + page_store_scale.
template <typename OpTy, typename PageOpTy>
struct ExpandWrite : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = getSplitLoc(op);
    auto lookup = LookupOp::create(rewriter, loc, op.getCache(),
                                   op.getBatch(), op.getToken());
    PageOpTy::create(rewriter, loc, op.getValue(), op.getCache(),
                     lookup.getPage(), lookup.getSlot(), op.getHead(),
                     op.getElement());
    rewriter.eraseOp(op);
    return success();
  }
};

struct KVCacheExpandAccessesPass
    : kvcache::impl::KVCacheExpandAccessesBase<KVCacheExpandAccessesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateExpandAccessesPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void mlir::kvcache::populateExpandAccessesPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ExpandRead<LoadOp, PageLoadOp>,
               ExpandRead<LoadScaleOp, PageLoadScaleOp>,
               ExpandWrite<StoreOp, PageStoreOp>,
               ExpandWrite<StoreScaleOp, PageStoreScaleOp>>(
      patterns.getContext());
}
