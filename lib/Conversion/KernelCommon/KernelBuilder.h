//===- KernelBuilder.h - the vocabulary kernel lowerings build with -*- C++ -*-//
//
// Part of the kvcache-mlir project.
//
// One builder for every kernel-op lowering (CPU loops, GPU kernels): index
// and f32 arithmetic, loops and conditionals, vector helpers, the ragged-
// offset reads and the cache accesses (through kvcache access ops: page
// addressing stays in convert-kvcache-to-memref), all bound to one location.
// It builds target-neutral IR only; what differs per target (the
// transcendental functions of the common formulas, host or device code) is
// a virtual hook that a target's builder overrides (the GPU kernels'
// GPUKernelBuilder, in the GPU lowering).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_KERNELBUILDER_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_KERNELBUILDER_H

#include "KernelLowering.h"
#include "Quantization.h"
#include "RuntimeChecks.h"

#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::kvcache {

/// Which way a row chunk moves.
enum class RowCopyDirection { ToCache, FromCache };

/// Where a chunk of a token row is, on both sides of a ragged copy:
/// `rows[row, head, element]` and (`page`, `slot`, `head`, `element`) of the
/// cache.
struct RowChunkPosition {
  Value row, page, slot, head, element;
};

/// log2(e) and ln(2) as f32: the common formulas keep scores in the log2
/// domain.
inline constexpr float kLog2E = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

/// Builds the ops of a kernel at one location.
struct KernelBuilder {
  KernelBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}
  // A copy would lose a target's overrides.
  KernelBuilder(const KernelBuilder &) = delete;
  virtual ~KernelBuilder() = default;

  OpBuilder &b;
  Location loc;

  //===--- target hooks ---------------------------------------------------===//
  // The transcendental functions of the common formulas (the online softmax,
  // attention's clauses and log-sum-exp merge) and where the code runs.
  // These defaults are target-neutral, what the CPU lowering builds: the
  // math dialect (libm) and exp2Inline. GPUKernelBuilder overrides them.

  /// 2^x of an f32 scalar for the online softmax's weights: exp2Inline (no
  /// libm call in a key loop).
  virtual Value softmaxExp2(Value x) { return exp2Inline(x); }
  /// e^x, ln(x), log2(x) and tanh(x) of an f32 scalar: math.exp, math.log,
  /// math.log2 and math.tanh.
  virtual Value exp(Value x);
  virtual Value log(Value x);
  virtual Value log2(Value x);
  virtual Value tanh(Value x);
  /// Where the code built runs, for its run-time checks: the host.
  virtual RunsOn runsOn() const { return RunsOn::Host; }

  //===--- constants and index arithmetic --------------------------------===//
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  /// A vector of `type` with every element `v`.
  Value splatConstant(VectorType type, double v) {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(
                                                 type.getElementType(), v)));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divu(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value remu(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value minu(Value x, Value y) { return arith::MinUIOp::create(b, loc, x, y); }
  Value maxu(Value x, Value y) { return arith::MaxUIOp::create(b, loc, x, y); }
  Value ceilDiv(Value x, Value y) {
    return arith::CeilDivUIOp::create(b, loc, x, y);
  }
  /// `index` truncated to i32 (its value must fit in 32 bits unsigned), for
  /// device divisions of quantities bounded by an i32 (key counts: at most
  /// max_cache_length): a division of i32 is one div.u32 in PTX, one of
  /// index a div.u64 (a long software sequence) behind a 32-bit bypass.
  Value toI32(Value index) {
    return arith::IndexCastUIOp::create(b, loc, b.getI32Type(), index);
  }
  /// An unsigned i32 as an index.
  Value toIndex(Value i32) {
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), i32);
  }
  Value cmp(arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, predicate, x, y);
  }
  Value ult(Value x, Value y) { return cmp(arith::CmpIPredicate::ult, x, y); }
  Value uge(Value x, Value y) { return cmp(arith::CmpIPredicate::uge, x, y); }
  Value eq(Value x, Value y) { return cmp(arith::CmpIPredicate::eq, x, y); }
  Value andi(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }

  //===--- f32 arithmetic -------------------------------------------------===//
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fdiv(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value fmax(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  /// x * y + z on f32 scalars, fused (one rounding) where the target has a
  /// fused multiply-add (llvm.fmuladd).
  Value fma(Value x, Value y, Value z);
  /// x * y + z, fused, on f32 vectors.
  Value vectorFma(Value x, Value y, Value z) {
    return vector::FMAOp::create(b, loc, x, y, z);
  }
  /// The dot product of two f32 vectors as a chain of fused multiply-adds
  /// (a product and a vector.reduction would be separate multiplies and
  /// adds: arith carries no contraction flag by default).
  Value dot(Value x, Value y);
  /// The sum of the elements of an f32 vector, in any order (reassoc: a
  /// tree of vector adds; an ordered sum of 128 elements is a chain of 128
  /// dependent scalar adds on the CPU).
  Value sum(Value v) {
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, v,
                                       arith::FastMathFlags::reassoc);
  }
  /// 2^x of an f32 scalar or vector inline, without a call (the CPU's key loops,
  /// where a libm call would spill every live vector register): 2^n by the
  /// exponent bits times 2^f, |f| <= 1/2, by a degree-7 polynomial
  /// (relative error below 1e-7); 0 for x <= -127.5 (and -inf), x clamped
  /// at 127.
  Value exp2Inline(Value x);

  //===--- vectors --------------------------------------------------------===//
  Value splat(Value scalar, VectorType type) {
    return vector::BroadcastOp::create(b, loc, type, scalar);
  }
  /// `v` (a vector, or a scalar) extended to `type`'s element width.
  Value widen(Value v, Type type) {
    return v.getType() == type ? v : arith::ExtFOp::create(b, loc, type, v);
  }
  /// `v` rounded to `type` (same shape, narrower floats).
  Value narrow(Value v, Type type) {
    return v.getType() == type ? v : arith::TruncFOp::create(b, loc, type, v);
  }

  //===--- ragged offsets -------------------------------------------------===//
  /// `memref[indices]` (an unsigned i32) as an index.
  Value loadOffset(Value memref, ValueRange indices);
  /// The number of sequences of a ragged offsets memref `[batch + 1]`:
  /// max(size - 1, 0).
  Value numSequences(Value offsets);
  /// The sequence of ragged row `row`: the largest b < numSequences with
  /// offsets[b] <= row, by binary search (log2(batch) loads, no host reads).
  Value sequenceOf(Value offsets, Value numSequences, Value row);
  /// The absolute position of ragged row `row` of a sequence whose rows
  /// start at `start` and whose cache held `cacheLength` tokens before them:
  /// `cacheLength + row - start` (a query row sees keys [0, position]).
  Value rowPosition(Value cacheLength, Value row, Value start) {
    return add(cacheLength, sub(row, start));
  }

  //===--- the cache, through access ops ----------------------------------===//
  /// `cache_length(batch)` as the base position of a write (store_ragged):
  /// checked with the write on an `assert_write_mode = 1` cache.
  Value writeCacheLength(Value cache, Value batch);
  /// (page, slot) of `token` of sequence `batch` (`kvcache.lookup`); a
  /// lookup that only serves reads is marked `read_only`, so an
  /// `assert_write_mode = 1` cache does not check it.
  std::pair<Value, Value> lookup(Value cache, Value batch, Value token,
                                 bool servesWrite);
  /// Reads the `width` elements at `at` that a copy in `direction` moves:
  /// from `rows` to the cache (ToCache) or back (FromCache).
  Value readRowChunk(Value cache, Value rows, const RowChunkPosition &at,
                     int64_t width, RowCopyDirection direction);
  /// Writes `values` (an f32 scalar or vector) at `at` of a cache with
  /// scales, quantized with the f32 `scale` of their group:
  /// saturate(rne(value / scale)), the correctly rounded division
  /// (encodeF32ToStorage: target-neutral fp8 conversions). With `checked`,
  /// a NaN into an i8 cache stops the program (run-time check).
  void storeQuantized(Value values, Value scale, Value cache,
                      const RowChunkPosition &at, bool checked);
  /// Writes `chunk`, read by readRowChunk, to the other side of the copy.
  void writeRowChunk(Value chunk, Value cache, Value rows,
                     const RowChunkPosition &at, RowCopyDirection direction);
  /// Copies `width` elements at `at` between `rows` and the cache.
  void copyRowChunk(Value cache, Value rows, const RowChunkPosition &at,
                    int64_t width, RowCopyDirection direction) {
    writeRowChunk(readRowChunk(cache, rows, at, width, direction), cache,
                  rows, at, direction);
  }
  /// Copies `width` elements of (`slot`, `head`, `element`) from page `src`
  /// to page `dst` of `cache` (the read is checked like the write).
  void copyPageChunk(Value cache, Value src, Value dst, Value slot,
                     Value head, Value element, int64_t width);

  //===--- control flow ---------------------------------------------------===//
  /// `for (iv = lower; iv < upper; iv += step) body(iv)`.
  void forLoop(Value lower, Value upper, Value step,
               function_ref<void(Value)> body);
  /// The iterations `iv` in [lower, upper) of `body(iv)` are independent
  /// (scf.parallel, step 1): the outer loop of a kernel op, which runs
  /// on every core under kvcache-to-cpu{parallel=true} and in order
  /// otherwise.
  void parallelLoop(Value lower, Value upper, function_ref<void(Value)> body);
  /// A loop carrying `init`: `body(iv, carried)` returns the next values;
  /// returns the final ones.
  SmallVector<Value>
  forLoop(Value lower, Value upper, Value step, ValueRange init,
          function_ref<SmallVector<Value>(Value, ValueRange)> body);
  /// `if (cond) body()`.
  void ifThen(Value cond, function_ref<void()> body);
  /// `cond ? thenBody() : elseBody()` for values of `types`.
  SmallVector<Value> ifThenElse(Value cond, TypeRange types,
                                function_ref<SmallVector<Value>()> thenBody,
                                function_ref<SmallVector<Value>()> elseBody);
};

/// The rotation store_ragged's rope clause applies to the rows before it
/// stores them (docs/Contract.md 3.3): none without a table.
struct RowRope {
  Value cosSin, positions;
  int64_t rotaryDims = 0;
  bool halfStyle = false;

  explicit operator bool() const { return static_cast<bool>(cosSin); }
};

/// What store_ragged and gather_ragged share: rows `rows[r]` of sequence b
/// (r in [offsets[b], offsets[b+1])) move to or from token position
/// `base(b) + r - offsets[b]` of `cache` (base: cache_length(b) for a store,
/// 0 for a gather); a store may rotate them first (`rope`).
struct RaggedCopy {
  Value cache, rows, offsets;
  RowCopyDirection direction;
  RowRope rope = {};

  static RaggedCopy get(StoreRaggedOp op) {
    RowRope rope;
    if (op.hasRope())
      rope = {op.getCosSin(), op.getPositions(),
              static_cast<int64_t>(*op.getRotaryDims()), op.isHalfStyle()};
    return {op.getCache(), op.getValues(), op.getRowOffsets(),
            RowCopyDirection::ToCache, rope};
  }
  static RaggedCopy get(GatherRaggedOp op) {
    return {op.getCache(), op.getOut(), op.getCtxOffsets(),
            RowCopyDirection::FromCache};
  }
  bool isStore() const { return direction == RowCopyDirection::ToCache; }
};

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_KERNELBUILDER_H
