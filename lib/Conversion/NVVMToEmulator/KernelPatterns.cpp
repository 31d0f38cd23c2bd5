//===- KernelPatterns.cpp - per-thread NVVM ops to runtime calls ----------===//
//
// Part of the kvcache-mlir project.
//
// The patterns of `kvcache-emulate-nvvm` for what one thread does: special
// registers, barriers, cp.async, calls of modelled intrinsics, shared-memory
// addresses, and the instrumentation of every memory access (a call of
// `__kvemu_access` before it, which lets the runtime check and count it).
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kvcache;

namespace {

//===----------------------------------------------------------------------===//
// Special registers, barriers, cp.async
//===----------------------------------------------------------------------===//

/// `nvvm.read.ptx.sreg.<suffix>` -> `__kvemu_sreg(register)`: one pattern
/// per register of EmulatorABI.h's name table, rooted at the op's name.
struct SpecialRegisterPattern final : RewritePattern {
  SpecialRegisterPattern(MLIRContext *context, EmulatorState &state,
                         emulator::SpecialRegister reg, StringRef opName)
      : RewritePattern(opName, /*benefit=*/1, context), state(state),
        reg(reg) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    // Another result type is left for the final check's error.
    if (op->getNumResults() != 1 ||
        !op->getResult(0).getType().isSignlessInteger(32))
      return failure();
    return state.replaceByCall(
        rewriter, op, RuntimeFunction::__kvemu_sreg,
        {createI32Constant(rewriter, op->getLoc(), static_cast<int32_t>(reg))});
  }

  EmulatorState &state;
  emulator::SpecialRegister reg;
};

/// `nvvm.barrier0` and a whole-block `nvvm.barrier` -> `__kvemu_barrier`.
template <typename OpTy>
struct BarrierPattern final : EmulatorPattern<OpTy> {
  using EmulatorPattern<OpTy>::EmulatorPattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if constexpr (std::is_same_v<OpTy, NVVM::BarrierOp>) {
      if (op.getNumberOfThreads() || op.getReductionOp() ||
          op->getNumResults() != 0)
        return this->state.reportError(
            op.emitOpError("(a partial or reducing barrier) is not modelled "
                           "by the GPU emulator"));
    }
    return this->state.replaceByCall(
        rewriter, op, RuntimeFunction::__kvemu_barrier,
        {this->state.siteAddress(rewriter, op.getLoc())});
  }
};

/// `nvvm.cp.async.shared.global` -> `__kvemu_cp_async`.
struct CpAsyncPattern final : EmulatorPattern<NVVM::CpAsyncOp> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(NVVM::CpAsyncOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value bytes = createI32Constant(rewriter, loc, op.getSize());
    Value sourceBytes = op.getCpSize() ? op.getCpSize() : bytes;
    return state.replaceByCall(
        rewriter, op, RuntimeFunction::__kvemu_cp_async,
        {toGenericPointer(rewriter, loc, op.getDst()),
         toGenericPointer(rewriter, loc, op.getSrc()), bytes, sourceBytes,
         state.siteAddress(rewriter, loc)});
  }
};

/// `nvvm.cp.async.commit.group` -> `__kvemu_cp_async_commit`.
struct CpAsyncCommitPattern final
    : EmulatorPattern<NVVM::CpAsyncCommitGroupOp> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(NVVM::CpAsyncCommitGroupOp op,
                                PatternRewriter &rewriter) const override {
    return state.replaceByCall(rewriter, op,
                               RuntimeFunction::__kvemu_cp_async_commit, {});
  }
};

/// `nvvm.cp.async.wait.group` -> `__kvemu_cp_async_wait`.
struct CpAsyncWaitPattern final : EmulatorPattern<NVVM::CpAsyncWaitGroupOp> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(NVVM::CpAsyncWaitGroupOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    return state.replaceByCall(rewriter, op,
                               RuntimeFunction::__kvemu_cp_async_wait,
                               {createI32Constant(rewriter, loc, op.getN()),
                                state.siteAddress(rewriter, loc)});
  }
};

//===----------------------------------------------------------------------===//
// Intrinsics and shared memory
//===----------------------------------------------------------------------===//

/// A modelled `llvm.nvvm.*` intrinsic -> its KVEMU_DEVICE_FUNCTIONS
/// replacement. Another `llvm.nvvm.*` one is left for the final check's
/// error; other intrinsics run on the host as they are.
struct IntrinsicCallPattern final : EmulatorPattern<LLVM::CallIntrinsicOp> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(LLVM::CallIntrinsicOp op,
                                PatternRewriter &rewriter) const override {
    StringRef name = op.getIntrin();
    std::optional<RuntimeFunction> function = lookupDeviceFunction(name);
    if (!name.starts_with("llvm.nvvm.") || !function)
      return failure();
    Type result = op.getNumResults()
                      ? op.getResult(0).getType()
                      : LLVM::LLVMVoidType::get(op.getContext());
    auto type = LLVM::LLVMFunctionType::get(
        result, llvm::to_vector(op.getArgs().getTypes()));
    if (failed(state.checkType(op, *function, type,
                               "calls '" + name + "'")))
      return failure();
    return state.replaceByCall(rewriter, op, *function, op.getArgs());
  }
};

/// The address of a shared-memory global -> the calling block's copy of it,
/// `__kvemu_shared(index)`.
struct SharedAddressPattern final : EmulatorPattern<LLVM::AddressOfOp> {
  using EmulatorPattern::EmulatorPattern;

  LogicalResult matchAndRewrite(LLVM::AddressOfOp op,
                                PatternRewriter &rewriter) const override {
    auto it = state.sharedIndex.find(op.getGlobalName());
    if (it == state.sharedIndex.end())
      return failure();
    Location loc = op.getLoc();
    FailureOr<LLVM::CallOp> base =
        state.call(rewriter, op, RuntimeFunction::__kvemu_shared,
                   {createI32Constant(rewriter, loc, it->second)});
    if (failed(base))
      return failure();
    rewriter.replaceOpWithNewOp<LLVM::AddrSpaceCastOp>(op, op.getType(),
                                                       base->getResult());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Memory accesses
//===----------------------------------------------------------------------===//

/// One access the runtime checks: its pointer, its bytes (i64) and its
/// emulator::AccessFlags.
struct Access {
  Value pointer;
  Value bytes;
  int32_t flags;
};

/// The bytes a load or store of `type` touches: LLVM's store size. The data
/// layout's size of a vector rounds its element count up to a power of two
/// (vector<5xf32>: 32 bytes), but a store of it writes 20, and adjacent
/// threads' 20-byte slices must not look like overlapping ones.
static int64_t getAccessSize(Operation *scope, Type type) {
  const DataLayout &layout = DataLayout::closest(scope);
  if (auto vector = dyn_cast<VectorType>(type);
      vector && !vector.isScalable()) {
    uint64_t bits = layout.getTypeSizeInBits(vector.getElementType());
    return llvm::divideCeil(vector.getNumElements() * bits, 8);
  }
  return layout.getTypeSize(type).getFixedValue();
}

/// A constant access size of `type`'s store size, at `op`.
static Value createAccessSize(OpBuilder &builder, Operation *op, Type type) {
  return createI64Constant(builder, op->getLoc(), getAccessSize(op, type));
}

/// `value` (an integer length) as i64.
static Value toI64(OpBuilder &builder, Location loc, Value value) {
  if (value.getType().isInteger(64))
    return value;
  return LLVM::ZExtOp::create(builder, loc, builder.getI64Type(), value);
}

/// kAccessAtomic for an atomic load or store.
static int32_t atomicFlag(LLVM::AtomicOrdering ordering) {
  return ordering != LLVM::AtomicOrdering::not_atomic ? emulator::kAccessAtomic
                                                      : 0;
}

/// The accesses of each memory op, in the order the runtime checks them.
/// Their sizes are built here, at the op, before the calls.
static SmallVector<Access> getAccesses(LLVM::LoadOp op, OpBuilder &builder) {
  return {{op.getAddr(), createAccessSize(builder, op, op.getType()),
           atomicFlag(op.getOrdering())}};
}
static SmallVector<Access> getAccesses(LLVM::StoreOp op, OpBuilder &builder) {
  return {{op.getAddr(),
           createAccessSize(builder, op, op.getValue().getType()),
           emulator::kAccessWrite | atomicFlag(op.getOrdering())}};
}
static SmallVector<Access> getAccesses(LLVM::AtomicRMWOp op,
                                       OpBuilder &builder) {
  return {{op.getPtr(), createAccessSize(builder, op, op.getVal().getType()),
           emulator::kAccessWrite | emulator::kAccessAtomic}};
}
static SmallVector<Access> getAccesses(LLVM::AtomicCmpXchgOp op,
                                       OpBuilder &builder) {
  return {{op.getPtr(), createAccessSize(builder, op, op.getVal().getType()),
           emulator::kAccessWrite | emulator::kAccessAtomic}};
}
static SmallVector<Access> getAccesses(LLVM::MemcpyOp op, OpBuilder &builder) {
  Value bytes = toI64(builder, op.getLoc(), op.getLen());
  return {{op.getSrc(), bytes, 0},
          {op.getDst(), bytes, emulator::kAccessWrite}};
}
static SmallVector<Access> getAccesses(LLVM::MemsetOp op, OpBuilder &builder) {
  return {{op.getDst(), toI64(builder, op.getLoc(), op.getLen()),
           emulator::kAccessWrite}};
}

/// Whether the emulator models NVPTX address space `space`.
static bool isModelledAddressSpace(unsigned space) {
  using emulator::AddressSpace;
  return llvm::is_contained({AddressSpace::Generic, AddressSpace::Global,
                             AddressSpace::Shared, AddressSpace::Constant,
                             AddressSpace::Local},
                            static_cast<AddressSpace>(space));
}

/// A memory op: a `__kvemu_access` call before it for each of its accesses,
/// with the address space of its pointer in the flags.
template <typename OpTy>
struct MemoryAccessPattern final : EmulatorPattern<OpTy> {
  using EmulatorPattern<OpTy>::EmulatorPattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    for (Value operand : op->getOperands())
      if (auto pointer = dyn_cast<LLVM::LLVMPointerType>(operand.getType()))
        if (!isModelledAddressSpace(pointer.getAddressSpace()))
          return this->state.reportError(
              op.emitOpError("accesses address space ")
              << pointer.getAddressSpace()
              << ", which the GPU emulator does not model (0 generic, 1 "
                 "global, 3 shared, 4 constant, 5 local)");
    for (const Access &access : getAccesses(op, rewriter))
      if (failed(instrument(rewriter, op, access)))
        return failure();
    return success();
  }

  LogicalResult instrument(PatternRewriter &rewriter, OpTy op,
                           const Access &access) const {
    Location loc = op.getLoc();
    unsigned space =
        cast<LLVM::LLVMPointerType>(access.pointer.getType()).getAddressSpace();
    int32_t flags = access.flags | static_cast<int32_t>(space)
                                       << emulator::kAccessSpaceShift;
    return this->state.call(
        rewriter, op, RuntimeFunction::__kvemu_access,
        {toGenericPointer(rewriter, loc, access.pointer), access.bytes,
         createI32Constant(rewriter, loc, flags),
         this->state.siteAddress(rewriter, loc)});
  }
};

} // namespace

void mlir::kvcache::populateKernelOpPatterns(RewritePatternSet &patterns,
                                             EmulatorState &state) {
  MLIRContext *context = patterns.getContext();
  for (auto [index, suffix] : llvm::enumerate(emulator::kSpecialRegisterNames))
    patterns.add<SpecialRegisterPattern>(
        context, state, static_cast<emulator::SpecialRegister>(index),
        (Twine("nvvm.read.ptx.sreg.") + suffix).str());
  patterns.add<BarrierPattern<NVVM::Barrier0Op>, BarrierPattern<NVVM::BarrierOp>,
               CpAsyncPattern, CpAsyncCommitPattern, CpAsyncWaitPattern,
               IntrinsicCallPattern, SharedAddressPattern,
               MemoryAccessPattern<LLVM::LoadOp>,
               MemoryAccessPattern<LLVM::StoreOp>,
               MemoryAccessPattern<LLVM::AtomicRMWOp>,
               MemoryAccessPattern<LLVM::AtomicCmpXchgOp>,
               MemoryAccessPattern<LLVM::MemcpyOp>,
               MemoryAccessPattern<LLVM::MemsetOp>>(context, state);
}
