//===- AttentionMMASoftmax.cpp - tensor-core attention's softmax ----------===//
//
// Part of the kvcache-mlir project.
//
// The online softmax of the tensor-core attention kernel's key steps
// (AttentionMMA.h): the exponentials of a row use a max that the row takes
// only when the step's max grows past it by more than kRescaleThreshold;
// only then are the lane's row sums and output tiles rescaled, behind a
// branch that the lanes of a warp usually all skip (docs/Design.md, "The
// online softmax of the tensor-core kernels").
//
//===----------------------------------------------------------------------===//

#include "AttentionMMA.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

/// How far (log2 domain) a row's max may grow past the max its
/// exponentials use before the row takes the new max and rescales: each
/// probability is then at most 2^8 = 256, which f16 (65504) and bf16 hold
/// as exactly as any other (the rounding is relative), and the f32 sums and
/// output tiles grow by at most that factor (docs/Design.md).
static constexpr float kRescaleThreshold = 8.0f;

SoftmaxStep
TensorCoreAttention::updateSoftmax(SmallVector<Accumulator> &scores,
                                   const TileState &state, Value log2Scale) {
  // The step's max of each row (the quad's lanes hold the same); past the
  // max the row uses by more than kRescaleThreshold, the row's new max
  // (then above the old one), else the old one.
  SoftmaxStep step;
  step.state = state;
  Value stepMax[2];
  for (int r = 0; r < 2; ++r) {
    Value local = scores[0][2 * r];
    for (const Accumulator &tile : scores)
      for (int i = 0; i < 2; ++i)
        local = k.fmax(local, tile[2 * r + i]);
    stepMax[r] = k.fmul(k.laneMax(local, 4), log2Scale);
    Value keeps = arith::CmpFOp::create(
        k.b, k.loc, arith::CmpFPredicate::ULE, stepMax[r],
        k.fadd(state.max[r], k.f32(kRescaleThreshold)));
    step.keeps = step.keeps ? k.andi(step.keeps, keeps) : keeps;
    if (rescalesLate())
      step.state.max[r] = k.select(keeps, state.max[r], stepMax[r]);
  }
  // Rescaling at once: the new max from the branch (no select), the
  // probabilities' sums from the rescaled ones (rescaleState has nothing
  // left to do); later: the sums from the first probability, added to the
  // old ones that rescaleState rescales.
  if (!rescalesLate()) {
    step.state = rescaled(state, stepMax, step.keeps);
    step.keeps = Value();
  }
  for (int r = 0; r < 2; ++r) {
    Value negativeMax = arith::NegFOp::create(k.b, k.loc, step.state.max[r]);
    Value sum = step.keeps ? Value() : step.state.sum[r];
    for (Accumulator &tile : scores)
      for (int i = 0; i < 2; ++i) {
        Value &s = tile[2 * r + i];
        s = k.exp2Approx(k.fma(s, log2Scale, negativeMax));
        sum = sum ? k.fadd(sum, s) : s;
      }
    step.state.sum[r] = sum;
  }
  return step;
}

TileState TensorCoreAttention::rescaled(const TileState &state,
                                        ArrayRef<Value> maxima, Value keeps) {
  // Only when a row of the lane takes a new max are the lane's sums and
  // output tiles rescaled (by 1 for the other row). The first step always
  // rescales (the initial max is -FLT_MAX); a masked row keeps its max.
  // The condition is the lane's (a quad's lanes agree: they hold the same
  // maxima, so the sums summed across the quad at the end share their
  // max; the warps of a tile compute the same scores and so take the same
  // branches); a warp runs the block when any of its lanes takes it, what
  // a vote.any would decide. The branch is on `keeps`, not on its negation
  // (which LLVM emits as one more instruction, a not.pred).
  SmallVector<Value> kept = state.flatten();
  return TileState::unflatten(k.ifThenElse(
      keeps, ValueRange(kept).getTypes(), [&] { return kept; },
      [&] {
        TileState rescaled = state;
        for (int r = 0; r < 2; ++r) {
          rescaled.max[r] = k.fmax(state.max[r], maxima[r]);
          Value factor = k.exp2Approx(k.fsub(state.max[r], rescaled.max[r]));
          rescaled.sum[r] = k.fmul(state.sum[r], factor);
          for (Accumulator &tile : rescaled.out)
            for (int i = 0; i < 2; ++i)
              tile[2 * r + i] = k.fmul(tile[2 * r + i], factor);
        }
        return rescaled.flatten();
      }));
}

TileState TensorCoreAttention::rescaleState(const TileState &state,
                                            const SoftmaxStep &step) {
  if (!step.keeps)
    return step.state;
  // The max of the select, the branch's equal (ptxas spilled 8 bytes in
  // the i8 block<32> decode kernel with the branch's).
  TileState result = rescaled(state, step.state.max, step.keeps);
  for (int r = 0; r < 2; ++r) {
    result.max[r] = step.state.max[r];
    result.sum[r] = k.fadd(result.sum[r], step.state.sum[r]);
  }
  return result;
}
