//===- AttentionKernels.h - shared parts of the attention kernels -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Private to lib/Conversion/KVCacheToGPU: the static plan of the attention
// kernel, a builder bound to one location, and the merge kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONKERNELS_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONKERNELS_H

#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

namespace mlir::kvcache::attention {

/// Static shape of the attention kernel.
struct AttentionPlan {
  int64_t headSize, kvHeads, qHeads, group;
  int64_t heads;     // GC: heads of the group that one pass over the keys
                     // handles (G <= 8: all of them; larger groups take
                     // ceil(G / 8) passes of ceil(G / passes) heads, so
                     // registers stay bounded)
  int64_t lanes;     // L: threads per key, a power of two <= 32
  int64_t width;     // W: elements per lane
  int64_t keysPerStep; // NT
  int64_t threads;   // NT * L
  bool asyncCopy;    // W elements are a cp.async size (4, 8 or 16 bytes)
  int64_t rowAlignment; // bytes a q/out slice access may claim
  Type elementType;
  int64_t elementBytes;
};

/// Small builder helpers bound to one location.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divu(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value remu(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value minu(Value x, Value y) { return arith::MinUIOp::create(b, loc, x, y); }
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
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  /// x * y + z, fused (one rounding) on f32 scalars.
  Value fma(Value x, Value y, Value z) {
    return LLVM::FMAOp::create(b, loc, x, y, z);
  }
  /// The dot product of two f32 vectors as a chain of fused multiply-adds
  /// (a product and a vector.reduction would be separate multiplies and
  /// adds: arith carries no contraction flag by default).
  Value dot(Value x, Value y) {
    auto at = [&](Value v, int64_t i) -> Value {
      return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
    };
    int64_t n = cast<VectorType>(x.getType()).getNumElements();
    Value sum = fmul(at(x, 0), at(y, 0));
    for (int64_t i = 1; i < n; ++i)
      sum = fma(at(x, i), at(y, i), sum);
    return sum;
  }
  Value fmax(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  /// 2^x with NVVM's ex2.approx (no libdevice needed).
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, b.getF32Type(),
               b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"), ValueRange{x})
        .getResult(0);
  }
  /// 2^(m - max), or 0 when m is -inf (an empty partial state).
  Value weight(Value m, Value max) {
    Value isEmpty = arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OEQ, m,
        f32(-std::numeric_limits<float>::infinity()));
    return select(isEmpty, f32(0), exp2(fsub(m, max)));
  }
  Value splat(Value scalar, VectorType type) {
    return vector::BroadcastOp::create(b, loc, type, scalar);
  }
  Value widen(Value v, VectorType type) {
    return v.getType() == type ? v : arith::ExtFOp::create(b, loc, type, v);
  }
  Value narrow(Value v, VectorType type) {
    return v.getType() == type ? v : arith::TruncFOp::create(b, loc, type, v);
  }
  /// The sum of `value` over the `lanes` consecutive lanes of a key.
  Value laneSum(Value value, int64_t lanes) {
    for (int64_t offset = lanes / 2; offset >= 1; offset /= 2)
      value = fadd(value, gpu::ShuffleOp::create(b, loc, value, offset, 32,
                                                 gpu::ShuffleMode::XOR)
                              .getShuffleResult());
    return value;
  }
  void forLoop(Value lower, Value upper, Value step,
               function_ref<void(Value)> body) {
    scf::ForOp::create(b, loc, lower, upper, step, ValueRange{},
                       [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPointToStart(nested.getInsertionBlock());
                         body(iv);
                         scf::YieldOp::create(b, loc);
                       });
  }
  void ifThen(Value cond, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    body();
  }
};

/// The workgroup (shared) memory space.
Attribute workgroupSpace(MLIRContext *ctx);

/// Names an outlined kernel `<function>_<suffix>` in module kvcache_kernels.
void nameKernel(gpu::LaunchOp launch, Operation *op, StringRef suffix);

/// Mentions `operands` first in the kernel body so that outlining makes them
/// the first parameters, in this order (dead uses, removed after outlining).
void mentionOperands(OpBuilder &b, Location loc, ValueRange operands);

/// Visits the query rows of `launch`'s grid-stride loop over dim 0 of
/// `rows` (block x, grid x) that belong to the batch (offsets[0] <= row <
/// offsets[num_sequences]); `body` gets the row and the number of sequences.
void forEachBatchRow(KernelBuilder &k, gpu::LaunchOp launch, Value rows,
                     Value offsets, function_ref<void(Value, Value)> body);

/// The merge kernel: block (row, query head) combines the splits' partial
/// states of its row from the workspace.
void emitAttentionMergeKernel(OpBuilder &builder, AttentionRaggedOp op,
                              const AttentionPlan &plan, Value grid,
                              Value splits);

} // namespace mlir::kvcache::attention

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOGPU_ATTENTIONKERNELS_H
