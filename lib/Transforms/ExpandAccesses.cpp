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

struct ExpandLoad : OpRewritePattern<LoadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LoadOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = getSplitLoc(op);
    // On an assert_write_mode = 1 cache lookups are checked as writes; this
    // one serves a read (and stays apart from the lookups of writes in cse).
    bool readOnly = op.getCache().getType().getAssertWriteMode() == 1;
    auto lookup = LookupOp::create(rewriter, loc, op.getCache(),
                                   op.getBatch(), op.getToken(),
                                   /*read_only=*/readOnly);
    Value value = PageLoadOp::create(rewriter, loc, op.getType(),
                                     op.getCache(), lookup.getPage(),
                                     lookup.getSlot(), op.getHead(),
                                     op.getElement());
    rewriter.replaceOp(op, value);
    return success();
  }
};

struct ExpandStore : OpRewritePattern<StoreOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StoreOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = getSplitLoc(op);
    auto lookup = LookupOp::create(rewriter, loc, op.getCache(),
                                   op.getBatch(), op.getToken());
    PageStoreOp::create(rewriter, loc, op.getValue(), op.getCache(),
                        lookup.getPage(), lookup.getSlot(), op.getHead(),
                        op.getElement());
    rewriter.eraseOp(op);
    return success();
  }
};

struct ExpandLoadScale : OpRewritePattern<LoadScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LoadScaleOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = getSplitLoc(op);
    bool readOnly = op.getCache().getType().getAssertWriteMode() == 1;
    auto lookup = LookupOp::create(rewriter, loc, op.getCache(),
                                   op.getBatch(), op.getToken(),
                                   /*read_only=*/readOnly);
    Value scale = PageLoadScaleOp::create(rewriter, loc, op.getCache(),
                                          lookup.getPage(), lookup.getSlot(),
                                          op.getHead(), op.getElement());
    rewriter.replaceOp(op, scale);
    return success();
  }
};

struct ExpandStoreScale : OpRewritePattern<StoreScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(StoreScaleOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = getSplitLoc(op);
    auto lookup = LookupOp::create(rewriter, loc, op.getCache(),
                                   op.getBatch(), op.getToken());
    PageStoreScaleOp::create(rewriter, loc, op.getValue(), op.getCache(),
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
  patterns.add<ExpandLoad, ExpandStore, ExpandLoadScale, ExpandStoreScale>(
      patterns.getContext());
}
