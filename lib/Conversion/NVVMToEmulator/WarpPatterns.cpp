//===- WarpPatterns.cpp - warp-collective NVVM ops to runtime calls -------===//
//
// Part of the kvcache-mlir project.
//
// The patterns of `kvcache-emulate-nvvm` for the warp collectives
// `nvvm.shfl.sync`, `nvvm.ldmatrix` and `nvvm.mma.sync`: each lane calls the
// runtime, which runs the collective once every lane of the warp arrived,
// with PTX's register layouts.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::kvcache;

/// The runtime's code of shfl.sync mode `kind`.
static emulator::ShuffleKind getShuffleKind(NVVM::ShflKind kind) {
  switch (kind) {
  case NVVM::ShflKind::bfly:
    return emulator::ShuffleKind::Bfly;
  case NVVM::ShflKind::up:
    return emulator::ShuffleKind::Up;
  case NVVM::ShflKind::down:
    return emulator::ShuffleKind::Down;
  case NVVM::ShflKind::idx:
    return emulator::ShuffleKind::Idx;
  }
  llvm_unreachable("unknown shfl.sync mode");
}

/// Calls warp-collective runtime `function` for `op` with `args`, then a
/// pointer to `count` i32 registers it writes and the op's site; returns the
/// registers.
static FailureOr<SmallVector<Value>>
callWithRegisterResults(PatternRewriter &rewriter, EmulatorState &state,
                        Operation *op, RuntimeFunction function,
                        SmallVector<Value> args, int64_t count) {
  Location loc = op->getLoc();
  Type i32Type = rewriter.getI32Type();
  auto ptrType = LLVM::LLVMPointerType::get(rewriter.getContext());
  // The registers live at the function's entry: a collective in a loop must
  // not grow the stack.
  Value registers;
  {
    OpBuilder::InsertionGuard guard(rewriter);
    auto func = op->getParentOfType<LLVM::LLVMFuncOp>();
    rewriter.setInsertionPointToStart(&func.getBody().front());
    registers = LLVM::AllocaOp::create(
        rewriter, loc, ptrType, LLVM::LLVMArrayType::get(i32Type, count),
        createI64Constant(rewriter, loc, 1));
  }
  args.push_back(registers);
  args.push_back(state.siteAddress(rewriter, loc));
  if (failed(state.call(rewriter, op, function, args)))
    return failure();
  SmallVector<Value> values;
  for (int64_t index = 0; index < count; ++index) {
    Value slot = LLVM::GEPOp::create(rewriter, loc, ptrType, i32Type, registers,
                                     ArrayRef<LLVM::GEPArg>{int32_t(index)});
    values.push_back(LLVM::LoadOp::create(rewriter, loc, i32Type, slot));
  }
  return values;
}

/// `registers` (i32) as a value of `type`: one register, or a struct of
/// them, each bitcast to its member type.
static Value packRegisters(OpBuilder &builder, Location loc,
                           ArrayRef<Value> registers, Type type) {
  auto fromBits = [&](Value bits, Type member) -> Value {
    if (member == bits.getType())
      return bits;
    return LLVM::BitcastOp::create(builder, loc, member, bits);
  };
  auto structType = dyn_cast<LLVM::LLVMStructType>(type);
  if (!structType)
    return fromBits(registers.front(), type);
  Value result = LLVM::UndefOp::create(builder, loc, structType);
  for (auto [index, bits] : llvm::enumerate(registers))
    result = LLVM::InsertValueOp::create(
        builder, loc, result, fromBits(bits, structType.getBody()[index]),
        ArrayRef<int64_t>{int64_t(index)});
  return result;
}

/// The `__kvemu_mma` flags of `mma`, or nothing when the emulator does not
/// model it: m16n8k16 or m16n8k8, row.col, f16 or bf16 multiplicands, f16
/// or f32 accumulator and result (bf16: f32 only), with the PTX register
/// counts (A: k/4, B: k/8, C: 4 f32 or 2 f16x2).
static std::optional<int32_t> getMmaFlags(NVVM::MmaOp mma) {
  NVVM::MMAShapeAttr shape = mma.getShape();
  std::optional<NVVM::MMATypes> typeA = mma.getMultiplicandAPtxType();
  if (shape.getM() != 16 || shape.getN() != 8 ||
      (shape.getK() != 16 && shape.getK() != 8) || !typeA ||
      typeA != mma.getMultiplicandBPtxType() ||
      (*typeA != NVVM::MMATypes::f16 && *typeA != NVVM::MMATypes::bf16) ||
      mma.getLayoutA() != NVVM::MMALayout::row ||
      mma.getLayoutB() != NVVM::MMALayout::col || mma.getB1Op() ||
      mma.getIntOverflowBehavior())
    return std::nullopt;
  auto isHalfOrFloat = [](NVVM::MMATypes type) {
    return type == NVVM::MMATypes::f16 || type == NVVM::MMATypes::f32;
  };
  NVVM::MMATypes accumulator = mma.accumPtxType();
  NVVM::MMATypes result = mma.resultPtxType();
  bool bf16 = *typeA == NVVM::MMATypes::bf16;
  if (!isHalfOrFloat(accumulator) || !isHalfOrFloat(result) ||
      (bf16 &&
       (accumulator != NVVM::MMATypes::f32 || result != NVVM::MMATypes::f32)))
    return std::nullopt;
  bool accumulatorF16 = accumulator == NVVM::MMATypes::f16;
  int64_t k = shape.getK();
  if (int64_t(mma.getOperandA().size()) != k / 4 ||
      int64_t(mma.getOperandB().size()) != k / 8 ||
      mma.getOperandC().size() != (accumulatorF16 ? 2u : 4u))
    return std::nullopt;
  return (k == 16 ? emulator::kMmaK16 : 0) | (bf16 ? emulator::kMmaBF16 : 0) |
         (accumulatorF16 ? emulator::kMmaAccumulatorF16 : 0) |
         (result == NVVM::MMATypes::f16 ? emulator::kMmaResultF16 : 0);
}

namespace {

/// `nvvm.shfl.sync` -> `__kvemu_shfl`, whose i64 result holds the value in
/// its low 32 bits and whether the source lane was in range in bit 32.
struct ShufflePattern final : EmulatorPattern<NVVM::ShflOp> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(NVVM::ShflOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i32Type = rewriter.getI32Type();
    Value bits = op.getVal();
    bool isFloat = isa<Float32Type>(bits.getType());
    if (isFloat)
      bits = LLVM::BitcastOp::create(rewriter, loc, i32Type, bits);
    auto kind = static_cast<int32_t>(getShuffleKind(op.getKind()));
    FailureOr<LLVM::CallOp> call = state.call(
        rewriter, op, RuntimeFunction::__kvemu_shfl,
        {createI32Constant(rewriter, loc, kind), op.getThreadMask(), bits,
         op.getOffset(), op.getMaskAndClamp(),
         state.siteAddress(rewriter, loc)});
    if (failed(call))
      return failure();
    Value packed = call->getResult();
    Value value = LLVM::TruncOp::create(rewriter, loc, i32Type, packed);
    if (isFloat)
      value =
          LLVM::BitcastOp::create(rewriter, loc, rewriter.getF32Type(), value);
    if (!op.getReturnValueAndIsValid()) {
      rewriter.replaceOp(op, value);
      return success();
    }
    Value shifted = LLVM::LShrOp::create(rewriter, loc, packed,
                                         createI64Constant(rewriter, loc, 32));
    Value valid =
        LLVM::TruncOp::create(rewriter, loc, rewriter.getI1Type(), shifted);
    Value result = LLVM::UndefOp::create(rewriter, loc, op.getType());
    result = LLVM::InsertValueOp::create(rewriter, loc, result, value,
                                         ArrayRef<int64_t>{0});
    result = LLVM::InsertValueOp::create(rewriter, loc, result, valid,
                                         ArrayRef<int64_t>{1});
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// `nvvm.ldmatrix` (m8n8 b16, 1, 2 or 4 matrices) -> `__kvemu_ldmatrix`.
struct LdMatrixPattern final : EmulatorPattern<NVVM::LdMatrixOp> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(NVVM::LdMatrixOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int32_t matrices = op.getNum();
    NVVM::LdStMatrixShapeAttr shape = op.getShape();
    if (shape.getM() != 8 || shape.getN() != 8 ||
        op.getEltType() != NVVM::LdStMatrixEltType::B16 ||
        !llvm::is_contained({1, 2, 4}, matrices))
      return state.reportError(
          op.emitOpError("(shape m")
          << shape.getM() << "n" << shape.getN() << ", "
          << NVVM::stringifyLdStMatrixEltType(op.getEltType()) << ", "
          << matrices
          << " matrices) is not modelled by the GPU emulator: it models "
             "m8n8 b16 with 1, 2 or 4 matrices");
    bool transpose = op.getLayout() == NVVM::MMALayout::col;
    FailureOr<SmallVector<Value>> fragments = callWithRegisterResults(
        rewriter, state, op, RuntimeFunction::__kvemu_ldmatrix,
        {toGenericPointer(rewriter, loc, op.getPtr()),
         createI32Constant(rewriter, loc, matrices),
         createI32Constant(rewriter, loc, transpose)},
        matrices);
    if (failed(fragments))
      return failure();
    rewriter.replaceOp(op,
                       packRegisters(rewriter, loc, *fragments, op.getType()));
    return success();
  }
};

/// `nvvm.mma.sync` (see getMmaFlags) -> `__kvemu_mma`.
struct MmaPattern final : EmulatorPattern<NVVM::MmaOp> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(NVVM::MmaOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int32_t> flags = getMmaFlags(op);
    if (!flags)
      return reportUnmodelled(op);
    // A's, B's and C's registers as i32, each group padded to 4, 2 and 4.
    Location loc = op.getLoc();
    Type i32Type = rewriter.getI32Type();
    SmallVector<Value> args = {createI32Constant(rewriter, loc, *flags)};
    Value zero = createI32Constant(rewriter, loc, 0);
    for (auto [operands, size] :
         {std::pair{op.getOperandA(), 4u}, std::pair{op.getOperandB(), 2u},
          std::pair{op.getOperandC(), 4u}}) {
      for (Value operand : operands)
        args.push_back(
            operand.getType() == i32Type
                ? operand
                : LLVM::BitcastOp::create(rewriter, loc, i32Type, operand));
      args.append(size - operands.size(), zero);
    }
    int64_t resultRegisters = *flags & emulator::kMmaResultF16 ? 2 : 4;
    FailureOr<SmallVector<Value>> result =
        callWithRegisterResults(rewriter, state, op,
                                RuntimeFunction::__kvemu_mma, args,
                                resultRegisters);
    if (failed(result))
      return failure();
    rewriter.replaceOp(op, packRegisters(rewriter, loc, *result, op.getType()));
    return success();
  }

  LogicalResult reportUnmodelled(NVVM::MmaOp op) const {
    NVVM::MMAShapeAttr shape = op.getShape();
    std::optional<NVVM::MMATypes> typeA = op.getMultiplicandAPtxType();
    return state.reportError(
        op.emitOpError("(m")
        << shape.getM() << "n" << shape.getN() << "k" << shape.getK() << " "
        << NVVM::stringifyMMALayout(op.getLayoutA()) << "."
        << NVVM::stringifyMMALayout(op.getLayoutB()) << " "
        << (typeA ? NVVM::stringifyMMATypes(*typeA) : "?") << ", "
        << NVVM::stringifyMMATypes(op.accumPtxType())
        << " accumulator) is not modelled by the GPU emulator: it models "
           "m16n8k16 and m16n8k8 row.col with f16 or bf16 multiplicands "
           "and f16 or f32 accumulators (bf16: f32)");
  }
};

} // namespace

void mlir::kvcache::populateWarpCollectivePatterns(RewritePatternSet &patterns,
                                                   EmulatorState &state) {
  patterns.add<ShufflePattern, LdMatrixPattern, MmaPattern>(
      patterns.getContext(), state);
}
