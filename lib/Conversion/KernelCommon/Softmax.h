//===- Softmax.h - the online softmax and the split workspace ---*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// What every attention lowering shares: the online-softmax state and its
// update and combination (CPU loops, the GPU kernel's key loop and its merge
// of key groups, the split-merge kernel), and the layout of the split
// workspace. Scores are kept in the log2 domain: q is scaled by
// scale * log2(e) once, so each exponential is one 2^x, the builder's
// (KernelBuilder::softmaxExp2: inline arithmetic on the CPU, ex2.approx in
// GPU kernels).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_SOFTMAX_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_SOFTMAX_H

#include "KernelBuilder.h"

namespace mlir::kvcache {

/// The running state of an online softmax over some keys: the largest score
/// seen (`max`, log2 domain, -inf when no key was seen), the sum of
/// 2^(score - max) (`sum`) and the sum of 2^(score - max) * value (`acc`,
/// unnormalised: an f32 vector of a head slice, or one f32 element).
struct SoftmaxState {
  Value max, sum, acc;
};

/// Softmax states as a flat list of values (loop-carried values), their
/// types, and back.
SmallVector<Value> flattenStates(ArrayRef<SoftmaxState> states);
SmallVector<Type> getFlatStateTypes(ArrayRef<SoftmaxState> states);
SmallVector<SoftmaxState> unflattenStates(ValueRange values);

/// Builds the online softmax's arithmetic in f32.
class OnlineSoftmax {
public:
  /// Each 2^x is `k`'s softmaxExp2.
  explicit OnlineSoftmax(KernelBuilder &k) : k(k) {}

  /// `scale * log2(e)`: the factor applied to q so scores are in the log2
  /// domain.
  static float getLog2Scale(float scale);

  /// The state of no keys, with `acc` of `accType` (a vector or f32).
  SoftmaxState empty(Type accType);
  /// The state after one more key of `score` (log2 domain) and value row
  /// `value` (f32, `acc`'s type), whose elements are multiplied by
  /// `valueScale` when it is not null (a per-row scale folded into the
  /// weight).
  SoftmaxState update(const SoftmaxState &state, Value score, Value value,
                      Value valueScale = {});
  /// The state after a block of keys at once (the CPU loops): `scores`
  /// (an f32 vector, log2 domain) and their value rows `values` (f32, `acc`'s
  /// type): one max, one rescale and one vector 2^x (exp2Inline) for the
  /// block.
  /// `valueScales` (null, or an f32 vector like `scores`) scale the value
  /// rows, as update's `valueScale`.
  SoftmaxState updateBlock(const SoftmaxState &state, Value scores,
                           ArrayRef<Value> values, Value valueScales = {});
  /// What updateBlock does to the max and the sum of a state, and the
  /// factor its output is rescaled by and the block's weights 2^(score -
  /// max) (an f32 vector like `scores`): for a kernel that adds the
  /// weighted value rows itself.
  struct BlockTerms {
    Value max, sum, rescale, weights;
  };
  BlockTerms weighBlock(const SoftmaxState &state, Value scores);
  /// `valid ? x : y`, per field.
  SoftmaxState select(Value valid, const SoftmaxState &x,
                      const SoftmaxState &y);
  /// The weight of a partial state of max `max` in a combination whose
  /// largest max is `combinedMax`: 2^(max - combinedMax), or 0 when the
  /// partial state is empty (max = -inf).
  Value weight(Value max, Value combinedMax);
  /// Adds the partial state (`max`, `sum`, `acc`) to `total`, whose `max` is
  /// already the largest of all partials combined (a two-pass combination:
  /// first the maxima, then the weighted sums). A null `sum` or `acc`
  /// leaves that field of `total` as it is (a combination of one of them).
  SoftmaxState addPartial(const SoftmaxState &total, Value max, Value sum,
                          Value acc);
  /// addPartial with the partial's weight `w` already computed.
  SoftmaxState addWeighted(const SoftmaxState &total, Value w, Value sum,
                           Value acc);
  /// The attention output of a state: acc / sum.
  Value normalize(const SoftmaxState &state);

private:
  Value exp2(Value x);
  Value scaleBy(Value acc, Value factor);

  KernelBuilder &k;
};

/// The f32 workspace of split attention: for query row r, query head h and
/// split s of `splits`, the partial state at
/// `((r * qHeads + h) * splits + s) * (headSize + 2)`: `headSize` floats of
/// unnormalised output, then `max` (log2 domain), then `sum`.
struct SplitWorkspace {
  int64_t headSize, qHeads;

  /// Floats of one partial state.
  int64_t recordFloats() const { return headSize + 2; }
  /// Floats of every split `s` of every row and head: `rows * qHeads *
  /// recordFloats()`.
  Value floatsPerSplit(KernelBuilder &k, Value rows) const;
  /// Offset of the first of the records of (`row`, `head`) (split 0).
  Value rowHeadOffset(KernelBuilder &k, Value row, Value head,
                      Value splits) const;
  /// Offset of the record of split `split` of the records at `first`.
  Value recordOffset(KernelBuilder &k, Value first, Value split) const;
  /// Offsets of a record's output element `element`, its max and its sum.
  Value accOffset(KernelBuilder &k, Value record, Value element) const {
    return k.add(record, element);
  }
  Value maxOffset(KernelBuilder &k, Value record) const {
    return k.add(record, k.index(headSize));
  }
  Value sumOffset(KernelBuilder &k, Value record) const {
    return k.add(record, k.index(headSize + 1));
  }
};

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_SOFTMAX_H
