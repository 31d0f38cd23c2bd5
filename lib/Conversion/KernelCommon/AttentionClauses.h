//===- AttentionClauses.h - attention_ragged's optional clauses -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// What the CPU loops and the GPU kernels of the attention ops share about
// their optional clauses (docs/Contract.md 3.3): the score transform (soft cap and
// ALiBi, in natural units, then to the log2 domain), the sink as one more
// logit of the softmax's denominator, the log-sum-exp written by `lse`, and
// the log-sum-exp merge of merge_states. Every exponential and logarithm is
// the builder's (KernelBuilder's target hooks: libm's through the math
// dialect on the CPU, NVVM's ex2.approx / lg2.approx in GPU kernels, PTX
// that needs no libdevice).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_ATTENTIONCLAUSES_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_ATTENTIONCLAUSES_H

#include "Softmax.h"
#include "KVCache/IR/KVCacheOps.h"

namespace mlir::kvcache {

/// The clauses of one attention op, for building its arithmetic.
class AttentionClauses {
public:
  /// `sinks` and `slopes` are the memrefs the sinks and alibi clauses
  /// read (a GPU kernel's parameters); null takes the op's operands.
  AttentionClauses(KernelBuilder &k, AttentionOpInterface op, Value sinks = {},
                   Value slopes = {})
      : k(k), op(op), sinks(sinks ? sinks : op.getSinks()),
        slopes(slopes ? slopes : op.getAlibi()) {}

  /// Whether a score needs transformScore after the dot product (softcap or
  /// alibi): q is then scaled by `scale` alone.
  bool transformsScores() const { return op.getSoftcap() || op.getAlibi(); }
  /// The factor q is multiplied by before the dot product: scale * log2(e)
  /// (scores straight in the log2 domain), or `scale` when scores are
  /// transformed.
  float queryScale() const;
  /// The log2-domain score of key `token` for a row at `position` from
  /// `dot` (q, scaled by queryScale(), dotted with the key): soft-capped
  /// (c * tanh(s / c), the builder's tanh), plus `slope` * (token -
  /// position) when `slope` is
  /// not null, times log2(e). `dot` as it is without a transform.
  Value transformScore(Value dot, Value slope, Value token, Value position);
  /// slopes[head] of the alibi clause, or null without one.
  Value loadSlope(Value head);

  /// The sink logit of `head` in the log2 domain, or null without sinks.
  Value loadSinkLogit(Value head);
  /// `state` with one more logit `sink` (log2 domain) of no value: the max
  /// includes it, the sum gains its weight, the output is rescaled.
  SoftmaxState addSink(OnlineSoftmax &softmax, const SoftmaxState &state,
                       Value sink);
  /// What addSink does to a state's max and sum, and the factor its output
  /// is rescaled by.
  struct SinkTerms {
    Value max, sum, rescale;
  };
  SinkTerms addSinkTerms(OnlineSoftmax &softmax, Value max, Value sum,
                         Value sink);
  /// The normalised output of `state`: 0 where the sum is 0 (a noncausal
  /// row of a sequence with no cached tokens and no sink).
  Value normalize(OnlineSoftmax &softmax, const SoftmaxState &state);
  /// ln(2) * (max + log2(sum)): the natural log-sum-exp of a state (-inf
  /// when the sum is 0).
  Value logSumExp(Value max, Value sum);

private:
  KernelBuilder &k;
  mutable AttentionOpInterface op;
  Value sinks, slopes;
};

/// The merged log-sum-exp of `a` and `b` (natural log) and the weights of
/// the two partial results: lse = max + log(e^(a - max) + e^(b - max)),
/// weight_x = e^(x - lse); both -inf give lse -inf and weights 0 (e^x and
/// log(x): `k`'s).
struct MergedWeights {
  Value lse, weightA, weightB;
};
MergedWeights mergeLogSumExps(KernelBuilder &k, Value a, Value b);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_ATTENTIONCLAUSES_H
