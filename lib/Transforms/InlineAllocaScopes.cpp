//===- InlineAllocaScopes.cpp - kvcache-inline-alloca-scopes ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// convert-scf-to-openmp wraps each parallel iteration in a
// memref.alloca_scope, a single-block region that convert-scf-to-cf cannot
// lower loops inside. Upstream canonicalization inlines a scope only when
// every op inside declares its memory effects (a call does not), so the
// scopes around the kernel ops' loops, which allocate nothing, are inlined
// here; a scope that allocates is reported.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::kvcache {
#define GEN_PASS_DEF_KVCACHEINLINEALLOCASCOPES
#include "KVCache/Transforms/Passes.h.inc"
} // namespace mlir::kvcache

using namespace mlir;

/// The first memref.alloca of `scope`'s body outside nested scopes, if any.
static memref::AllocaOp findAlloca(memref::AllocaScopeOp scope) {
  memref::AllocaOp found;
  scope.getBodyRegion().walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<memref::AllocaScopeOp>(op))
      return WalkResult::skip();
    if (auto alloca = dyn_cast<memref::AllocaOp>(op)) {
      found = alloca;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

namespace {

struct InlineAllocaScopesPass
    : kvcache::impl::KVCacheInlineAllocaScopesBase<InlineAllocaScopesPass> {
  void runOnOperation() override {
    SmallVector<memref::AllocaScopeOp> scopes;
    getOperation()->walk(
        [&](memref::AllocaScopeOp scope) { scopes.push_back(scope); });
    IRRewriter rewriter(&getContext());
    bool failed = false;
    // Post-order: inner scopes first, so an outer one sees their allocas
    // only where they were kept.
    for (memref::AllocaScopeOp scope : scopes) {
      if (memref::AllocaOp alloca = findAlloca(scope)) {
        InFlightDiagnostic diag = alloca.emitError(
            "kvcache-inline-alloca-scopes: a stack allocation inside a "
            "memref.alloca_scope (the body of a parallel loop under "
            "kvcache-to-cpu{parallel=true}) is not supported; allocate "
            "outside the scf.parallel loop");
        diag.attachNote(scope.getLoc()) << "the scope is here";
        failed = true;
        continue;
      }
      Block *body = &scope.getBodyRegion().front();
      Operation *terminator = body->getTerminator();
      SmallVector<Value> results(terminator->getOperands());
      rewriter.eraseOp(terminator);
      rewriter.inlineBlockBefore(body, scope);
      rewriter.replaceOp(scope, results);
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
