//===- Softmax.cpp - the online softmax and the split workspace -----------===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "Softmax.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::kvcache;

SmallVector<Value> mlir::kvcache::flattenStates(ArrayRef<SoftmaxState> states) {
  SmallVector<Value> values;
  for (const SoftmaxState &state : states)
    values.append({state.max, state.sum, state.acc});
  return values;
}

SmallVector<SoftmaxState> mlir::kvcache::unflattenStates(ValueRange values) {
  assert(values.size() % 3 == 0 && "not a list of softmax states");
  SmallVector<SoftmaxState> states;
  for (size_t i = 0; i < values.size(); i += 3)
    states.push_back({values[i], values[i + 1], values[i + 2]});
  return states;
}

SmallVector<Type> mlir::kvcache::getFlatStateTypes(ArrayRef<SoftmaxState> states) {
  SmallVector<Type> types;
  for (Value value : flattenStates(states))
    types.push_back(value.getType());
  return types;
}

float OnlineSoftmax::getLog2Scale(float scale) {
  return scale / std::log(2.0f);
}

Value OnlineSoftmax::exp2(Value x) {
  return k.softmaxExp2(x);
}

Value OnlineSoftmax::scaleBy(Value acc, Value factor) {
  if (auto type = dyn_cast<VectorType>(acc.getType()))
    factor = k.splat(factor, type);
  return k.fmul(acc, factor);
}

SoftmaxState OnlineSoftmax::empty(Type accType) {
  Value zeroAcc = isa<VectorType>(accType)
                      ? k.splatConstant(cast<VectorType>(accType), 0)
                      : k.f32(0);
  return {k.f32(-std::numeric_limits<float>::infinity()), k.f32(0), zeroAcc};
}

SoftmaxState OnlineSoftmax::update(const SoftmaxState &state, Value score,
                                   Value value, Value valueScale) {
  Value max = k.fmax(state.max, score);
  Value rescale = weight(state.max, max);
  Value w = exp2(k.fsub(score, max));
  Value sum = k.fma(state.sum, rescale, w);
  Value rescaled = scaleBy(state.acc, rescale);
  if (valueScale)
    w = k.fmul(w, valueScale);
  Value acc = isa<VectorType>(value.getType())
                  ? k.vectorFma(k.splat(w, cast<VectorType>(value.getType())),
                                value, rescaled)
                  : k.fma(w, value, rescaled);
  return {max, sum, acc};
}

OnlineSoftmax::BlockTerms OnlineSoftmax::weighBlock(const SoftmaxState &state,
                                                    Value scores) {
  assert(k.runsOn() == RunsOn::Host && "a block update runs on the CPU");
  auto scoresType = cast<VectorType>(scores.getType());
  Value blockMax = vector::ReductionOp::create(
      k.b, k.loc, vector::CombiningKind::MAXIMUMF, scores);
  Value max = k.fmax(state.max, blockMax);
  Value rescale = weight(state.max, max);
  Value weights =
      k.exp2Inline(k.fsub(scores, k.splat(max, scoresType)));
  Value sum = k.fma(state.sum, rescale, k.sum(weights));
  return {max, sum, rescale, weights};
}

SoftmaxState OnlineSoftmax::updateBlock(const SoftmaxState &state,
                                        Value scores, ArrayRef<Value> values,
                                        Value valueScales) {
  BlockTerms terms = weighBlock(state, scores);
  Value acc = scaleBy(state.acc, terms.rescale);
  Value weights = terms.weights;
  if (valueScales)
    weights = k.fmul(weights, valueScales);
  auto accType = cast<VectorType>(acc.getType());
  for (auto [j, value] : llvm::enumerate(values)) {
    Value w = vector::ExtractOp::create(k.b, k.loc, weights,
                                        ArrayRef<int64_t>{int64_t(j)});
    acc = k.vectorFma(k.splat(w, accType), value, acc);
  }
  return {terms.max, terms.sum, acc};
}

SoftmaxState OnlineSoftmax::select(Value valid, const SoftmaxState &x,
                                   const SoftmaxState &y) {
  return {k.select(valid, x.max, y.max), k.select(valid, x.sum, y.sum),
          k.select(valid, x.acc, y.acc)};
}

Value OnlineSoftmax::weight(Value max, Value combinedMax) {
  Value isEmpty = arith::CmpFOp::create(
      k.b, k.loc, arith::CmpFPredicate::OEQ, max,
      k.f32(-std::numeric_limits<float>::infinity()));
  return k.select(isEmpty, k.f32(0), exp2(k.fsub(max, combinedMax)));
}

SoftmaxState OnlineSoftmax::addPartial(const SoftmaxState &total, Value max,
                                       Value sum, Value acc) {
  return addWeighted(total, weight(max, total.max), sum, acc);
}

SoftmaxState OnlineSoftmax::addWeighted(const SoftmaxState &total, Value w,
                                        Value sum, Value acc) {
  SoftmaxState next = total;
  if (sum)
    next.sum = k.fadd(total.sum, k.fmul(w, sum));
  if (acc)
    next.acc = isa<VectorType>(acc.getType())
                   ? k.vectorFma(k.splat(w, cast<VectorType>(acc.getType())),
                                 acc, total.acc)
                   : k.fma(w, acc, total.acc);
  return next;
}

Value OnlineSoftmax::normalize(const SoftmaxState &state) {
  Value sum = state.sum;
  if (auto type = dyn_cast<VectorType>(state.acc.getType()))
    sum = k.splat(sum, type);
  return k.fdiv(state.acc, sum);
}

Value SplitWorkspace::floatsPerSplit(KernelBuilder &k, Value rows) const {
  return k.mul(rows, k.index(qHeads * recordFloats()));
}

Value SplitWorkspace::rowHeadOffset(KernelBuilder &k, Value row, Value head,
                                    Value splits) const {
  return k.mul(k.add(k.mul(row, k.index(qHeads)), head), splits);
}

Value SplitWorkspace::recordOffset(KernelBuilder &k, Value first,
                                   Value split) const {
  return k.mul(k.add(first, split), k.index(recordFloats()));
}
