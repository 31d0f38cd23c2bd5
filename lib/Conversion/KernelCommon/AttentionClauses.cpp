//===- AttentionClauses.cpp - attention_ragged's optional clauses ---------===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "AttentionClauses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::kvcache;

namespace {
Value minusInfinity(KernelBuilder &k) {
  return k.f32(-std::numeric_limits<float>::infinity());
}

Value isEqual(KernelBuilder &k, Value x, Value y) {
  return arith::CmpFOp::create(k.b, k.loc, arith::CmpFPredicate::OEQ, x, y);
}
} // namespace

float AttentionClauses::queryScale() const {
  float scale = op.getScale().convertToFloat();
  return transformsScores() ? scale : OnlineSoftmax::getLog2Scale(scale);
}

Value AttentionClauses::transformScore(Value dot, Value slope, Value token,
                                       Value position) {
  if (!transformsScores())
    return dot;
  Value score = dot;
  if (std::optional<APFloat> cap = op.getSoftcap()) {
    Value c = k.f32(cap->convertToFloat());
    score = k.fmul(c, k.tanh(k.fdiv(score, c)));
  }
  if (slope) {
    // token - position fits in i32 (both are below 2^31).
    Value distance = arith::SIToFPOp::create(
        k.b, k.loc, k.b.getF32Type(),
        arith::IndexCastOp::create(k.b, k.loc, k.b.getI32Type(),
                                   k.sub(token, position)));
    score = k.fma(slope, distance, score);
  }
  return k.fmul(score, k.f32(kLog2E));
}

Value AttentionClauses::loadSlope(Value head) {
  return slopes ? memref::LoadOp::create(k.b, k.loc, slopes, head).getResult()
                : Value();
}

Value AttentionClauses::loadSinkLogit(Value head) {
  if (!sinks)
    return Value();
  return k.fmul(memref::LoadOp::create(k.b, k.loc, sinks, head),
                k.f32(kLog2E));
}

AttentionClauses::SinkTerms
AttentionClauses::addSinkTerms(OnlineSoftmax &softmax, Value max, Value sum,
                               Value sink) {
  Value total = k.fmax(max, sink);
  // weight() is 0 for an empty state or a -inf sink.
  Value rescale = softmax.weight(max, total);
  return {total, k.fma(sum, rescale, softmax.weight(sink, total)), rescale};
}

SoftmaxState AttentionClauses::addSink(OnlineSoftmax &softmax,
                                       const SoftmaxState &state, Value sink) {
  SinkTerms terms = addSinkTerms(softmax, state.max, state.sum, sink);
  Value rescale = terms.rescale;
  if (auto type = dyn_cast<VectorType>(state.acc.getType()))
    rescale = k.splat(rescale, type);
  return {terms.max, terms.sum, k.fmul(state.acc, rescale)};
}

Value AttentionClauses::normalize(OnlineSoftmax &softmax,
                                  const SoftmaxState &state) {
  Value out = softmax.normalize(state);
  // Only a noncausal row can see no key (its sum is 0 unless a finite sink
  // adds one).
  if (!op.getNoncausal())
    return out;
  Value empty = isEqual(k, state.sum, k.f32(0));
  Value zero = k.f32(0);
  if (auto type = dyn_cast<VectorType>(out.getType()))
    zero = k.splatConstant(type, 0);
  return k.select(empty, zero, out);
}

Value AttentionClauses::logSumExp(Value max, Value sum) {
  return k.fmul(k.fadd(max, k.log2(sum)), k.f32(kLn2));
}

MergedWeights mlir::kvcache::mergeLogSumExps(KernelBuilder &k, Value a,
                                             Value b) {
  Value max = k.fmax(a, b);
  Value empty = isEqual(k, max, minusInfinity(k));
  Value top = k.select(empty, k.f32(0), max);
  Value lse = k.fadd(
      top, k.log(k.fadd(k.exp(k.fsub(a, top)), k.exp(k.fsub(b, top)))));
  return {lse, k.select(empty, k.f32(0), k.exp(k.fsub(a, lse))),
          k.select(empty, k.f32(0), k.exp(k.fsub(b, lse)))};
}
