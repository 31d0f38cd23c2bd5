//===- RopeToSCF.cpp - rope_ragged to loops ---------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache.rope_ragged on the CPU, one pass over the step's rows: per row
// one lookup, then, chunk of pairs by chunk of pairs, the chunk's cos and
// sin read once from the row's table row and applied to every query head
// (q -> q_out) and every key head of the cached row (in place), in f32,
// rounded once (docs/Contract.md 3.3; the chunks: RopeEmitter).
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/Rope.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::kvcache;

namespace {

struct RopeRaggedToSCF : OpRewritePattern<RopeRaggedOp> {
  RopeRaggedToSCF(MLIRContext *ctx, int64_t vectorBytes, bool checked)
      : OpRewritePattern(ctx), vectorBytes(vectorBytes), checked(checked) {}

  LogicalResult matchAndRewrite(RopeRaggedOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(RopeEmitter::checkStrides(op)))
      return failure();
    KernelBuilder k{rewriter, getKernelLoc(op)};
    RopeEmitter rope(k, op, vectorBytes);
    Value cache = op.getKeyCache(), offsets = op.getRowOffsets();
    Value zero = k.index(0), one = k.index(1);
    // Sequences are independent (each rotates its own rows).
    k.parallelLoop(zero, k.numSequences(offsets), [&](Value batch) {
      Value first = k.loadOffset(offsets, batch);
      Value end = k.loadOffset(offsets, k.add(batch, one));
      Value length = k.writeCacheLength(cache, batch);
      k.forLoop(first, end, one, [&](Value row) {
        Value token = k.rowPosition(length, row, first);
        Value position =
            RopeEmitter::rotaryPosition(k, op, op.getCosSin(),
                                        op.getPositions(), row, token,
                                        checked);
        auto [page, slot] =
            k.lookup(cache, batch, token, /*servesWrite=*/true);
        emitRow(k, rope, op, row, page, slot, position);
      });
    });
    rewriter.eraseOp(op);
    return success();
  }

  /// Rotates q's row `row` into q_out and the key row at (`page`, `slot`).
  void emitRow(KernelBuilder &k, RopeEmitter &rope, RopeRaggedOp op,
               Value row, Value page, Value slot, Value position) const {
    Value q = op.getQ(), qOut = op.getQOut();
    RotatedRows sides[] = {
        rope.queries(q, qOut, row),
        rope.keys(op.getKeyCache(), row, page, slot, checked)};
    // In place, the unrotated elements are already where they belong.
    rope.emitRowLoops(
        qOut == q ? 0 : cast<ShapedType>(q.getType()).getDimSize(1),
        [&](Value head, Value element) {
          rope.copyChunk(q, qOut, row, head, element);
        },
        sides, op.getCosSin(), position);
  }

  int64_t vectorBytes;
  bool checked;
};

} // namespace

void mlir::kvcache::populateRopeToSCFConversionPatterns(
    RewritePatternSet &patterns, int64_t vectorBytes, bool checked) {
  patterns.add<RopeRaggedToSCF>(patterns.getContext(), vectorBytes, checked);
}
