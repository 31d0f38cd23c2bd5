//===- MPIToLLVMPass.cpp - kvcache-mpi-to-llvm ------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// MLIR's mpi-to-llvm patterns as a pass of the CPU pipeline, with the DLTI
// entry they read the MPI implementation from. For OpenMPI two of MLIR 22's
// lowerings are wrong, and fixed here: the reduction ops' symbols (MPI_SUM is
// &ompi_mpi_op_sum in OpenMPI's mpi.h, not ompi_mpi_sum) and the
// communicator mpi.comm_split returns (a pointer, read back as MPICH's i32
// handle). The shard dialect's collectives (convert-shard-to-mpi) use both.
// MLIR 22 does not lower the non-blocking mpi.isend, mpi.irecv and mpi.wait,
// which the page transfers use: they are lowered here, for messages of bytes.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/Passes.h"
#include "../KernelCommon/RuntimeChecks.h"

#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MPIToLLVM/MPIToLLVM.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

namespace mlir {
#define GEN_PASS_DEF_KVCACHEMPITOLLVM
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;

namespace {

/// The handles of the two C ABIs of the MPI library: OpenMPI's MPI_Comm,
/// MPI_Datatype and MPI_Request are pointers (MPI_INT8_T is
/// &ompi_mpi_int8_t, MPI_STATUS_IGNORE null); MPICH's are ints (MPI_INT8_T
/// 0x4c000137, MPI_STATUS_IGNORE (MPI_Status *)1). A communicator or a
/// request is an i64 in the converted IR (!mpi.comm, !mpi.request).
struct MPIHandles {
  bool openMPI;

  Type handleType(MLIRContext *ctx) const {
    if (openMPI)
      return LLVM::LLVMPointerType::get(ctx);
    return IntegerType::get(ctx, 32);
  }
  /// The library's handle from its i64 form.
  Value fromI64(OpBuilder &b, Location loc, Value value) const {
    Type type = handleType(b.getContext());
    if (openMPI)
      return LLVM::IntToPtrOp::create(b, loc, type, value);
    return LLVM::TruncOp::create(b, loc, type, value);
  }
  /// The i64 form of a handle.
  Value toI64(OpBuilder &b, Location loc, Value handle) const {
    Type i64 = b.getI64Type();
    if (openMPI)
      return LLVM::PtrToIntOp::create(b, loc, i64, handle);
    return LLVM::ZExtOp::create(b, loc, i64, handle);
  }
  /// MPI_INT8_T, the datatype MLIR's lowering gives messages of i8.
  Value int8Type(OpBuilder &b, Location loc, ModuleOp module) const {
    MLIRContext *ctx = b.getContext();
    if (!openMPI)
      return LLVM::ConstantOp::create(b, loc, b.getI32Type(), 0x4c000137);
    StringRef name = "ompi_mpi_int8_t";
    if (!module.lookupSymbol<LLVM::GlobalOp>(name)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      // Opaque, as MLIR's lowering declares it.
      auto type = LLVM::LLVMStructType::getIdentified(
          ctx, "ompi_predefined_datatype_t");
      LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/false,
                             LLVM::Linkage::External, name, Attribute());
    }
    return LLVM::AddressOfOp::create(b, loc, LLVM::LLVMPointerType::get(ctx),
                                     name);
  }
  Value statusIgnore(OpBuilder &b, Location loc) const {
    Value address =
        LLVM::ConstantOp::create(b, loc, b.getI64Type(), openMPI ? 0 : 1);
    return LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), address);
  }
  /// A slot for one handle in the entry block of the allocation scope
  /// around `op` (its function, or an OpenMP parallel region: one slot per
  /// thread): the library writes requests there, once per op, not per
  /// loop iteration.
  Value entrySlot(OpBuilder &b, Operation *op) const {
    OpBuilder::InsertionGuard guard(b);
    // A loop body is an allocation scope that LLVM does not keep: its
    // allocas would grow the stack every iteration.
    Operation *scope = op->getParentOp();
    while (!scope->hasTrait<OpTrait::AutomaticAllocationScope>() ||
           isa<LoopLikeOpInterface>(scope))
      scope = scope->getParentOp();
    b.setInsertionPointToStart(&scope->getRegion(0).front());
    Location loc = op->getLoc();
    Value one = LLVM::ConstantOp::create(b, loc, b.getI32Type(), 1);
    Type type = handleType(b.getContext());
    return LLVM::AllocaOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), type, one);
  }
};

/// mpi.isend and mpi.irecv of a 1-D memref of i8: MPI_Isend or MPI_Irecv
/// (buffer, count, MPI_INT8_T, peer, tag, comm, &request), the request
/// returned in its i64 form. Other element types are left to fail: the
/// page transfers send bytes only.
template <typename OpTy>
struct NonBlockingLowering : public ConvertOpToLLVMPattern<OpTy> {
  NonBlockingLowering(const LLVMTypeConverter &converter, MPIHandles handles,
                      StringRef function)
      : ConvertOpToLLVMPattern<OpTy>(converter), handles(handles),
        function(function) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<MemRefType>(op.getRef().getType());
    if (type.getRank() != 1 || !type.getElementType().isInteger(8))
      return rewriter.notifyMatchFailure(op, "not a 1-D memref of i8");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type ptr = LLVM::LLVMPointerType::get(ctx), i32 = rewriter.getI32Type();
    Type handle = handles.handleType(ctx);
    auto module = op->template getParentOfType<ModuleOp>();
    // int MPI_Isend(const void *buf, int count, MPI_Datatype datatype,
    //               int dest, int tag, MPI_Comm comm, MPI_Request *request),
    // and MPI_Irecv alike.
    auto callee = kvcache::getOrDeclareFunction(
        rewriter, module, function,
        LLVM::LLVMFunctionType::get(i32,
                                    {ptr, i32, handle, i32, i32, handle, ptr}));
    MemRefDescriptor descriptor(adaptor.getRef());
    Value buffer =
        LLVM::GEPOp::create(rewriter, loc, ptr, rewriter.getI8Type(),
                            descriptor.alignedPtr(rewriter, loc),
                            ValueRange{descriptor.offset(rewriter, loc)});
    Value count = LLVM::TruncOp::create(rewriter, loc, i32,
                                        descriptor.size(rewriter, loc, 0));
    Value request = handles.entrySlot(rewriter, op);
    auto call = LLVM::CallOp::create(
        rewriter, loc, callee,
        ValueRange{buffer, count, handles.int8Type(rewriter, loc, module),
                   peer(adaptor), adaptor.getTag(),
                   handles.fromI64(rewriter, loc, adaptor.getComm()), request});
    Value loaded = LLVM::LoadOp::create(rewriter, loc, handle, request);
    SmallVector<Value> results;
    if (op.getRetval())
      results.push_back(call.getResult());
    results.push_back(handles.toI64(rewriter, loc, loaded));
    rewriter.replaceOp(op, results);
    return success();
  }

  static Value peer(typename OpTy::Adaptor adaptor) {
    if constexpr (std::is_same_v<OpTy, mpi::ISendOp>)
      return adaptor.getDest();
    else
      return adaptor.getSource();
  }

  MPIHandles handles;
  StringRef function;
};

/// mpi.wait: MPI_Wait(&request, MPI_STATUS_IGNORE).
struct WaitLowering : public ConvertOpToLLVMPattern<mpi::Wait> {
  WaitLowering(const LLVMTypeConverter &converter, MPIHandles handles)
      : ConvertOpToLLVMPattern(converter), handles(handles) {}

  LogicalResult
  matchAndRewrite(mpi::Wait op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type ptr = LLVM::LLVMPointerType::get(rewriter.getContext());
    // int MPI_Wait(MPI_Request *request, MPI_Status *status)
    auto wait = kvcache::getOrDeclareFunction(
        rewriter, op->getParentOfType<ModuleOp>(), "MPI_Wait",
        LLVM::LLVMFunctionType::get(rewriter.getI32Type(), {ptr, ptr}));
    Value request = handles.entrySlot(rewriter, op);
    LLVM::StoreOp::create(rewriter, loc,
                          handles.fromI64(rewriter, loc, adaptor.getReq()),
                          request);
    auto call = LLVM::CallOp::create(
        rewriter, loc, wait,
        ValueRange{request, handles.statusIgnore(rewriter, loc)});
    if (op.getRetval())
      rewriter.replaceOp(op, call.getResult());
    else
      rewriter.eraseOp(op);
    return success();
  }

  MPIHandles handles;
};

/// mpi.comm_split for OpenMPI, whose MPI_Comm is a pointer: the new
/// communicator is read back whole (as the i64 that !mpi.comm converts to),
/// from a slot like the requests'. Preferred, by its benefit, to MLIR 22's
/// pattern, which reads an i32.
struct OpenMPICommSplitLowering
    : public ConvertOpToLLVMPattern<mpi::CommSplitOp> {
  explicit OpenMPICommSplitLowering(const LLVMTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(mpi::CommSplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MPIHandles handles{/*openMPI=*/true};
    Type ptr = LLVM::LLVMPointerType::get(rewriter.getContext());
    Type i32 = rewriter.getI32Type();
    // int MPI_Comm_split(MPI_Comm comm, int color, int key,
    //                    MPI_Comm *newcomm)
    auto split = kvcache::getOrDeclareFunction(
        rewriter, op->getParentOfType<ModuleOp>(), "MPI_Comm_split",
        LLVM::LLVMFunctionType::get(i32, {ptr, i32, i32, ptr}));
    Value newComm = handles.entrySlot(rewriter, op);
    auto call = LLVM::CallOp::create(
        rewriter, loc, split,
        ValueRange{handles.fromI64(rewriter, loc, adaptor.getComm()),
                   adaptor.getColor(), adaptor.getKey(), newComm});
    Value loaded = LLVM::LoadOp::create(rewriter, loc, ptr, newComm);
    SmallVector<Value> results;
    if (op.getRetval())
      results.push_back(call.getResult());
    results.push_back(handles.toI64(rewriter, loc, loaded));
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Renames the globals of OpenMPI's predefined reduction ops that MLIR 22's
/// lowering declares as ompi_mpi_<op> to OpenMPI's ompi_mpi_op_<op>.
LogicalResult renameOpenMPIReductionOps(ModuleOp module) {
  for (auto global :
       llvm::make_early_inc_range(module.getOps<LLVM::GlobalOp>())) {
    auto type = dyn_cast<LLVM::LLVMStructType>(global.getGlobalType());
    StringRef op = global.getSymName();
    if (!type || !type.isIdentified() ||
        type.getName() != "ompi_predefined_op_t" ||
        op.starts_with("ompi_mpi_op_") || !op.consume_front("ompi_mpi_"))
      continue;
    auto name = StringAttr::get(module.getContext(), "ompi_mpi_op_" + op);
    if (failed(SymbolTable::replaceAllSymbolUses(global, name, module)))
      return failure();
    global.setSymName(name);
  }
  return success();
}

struct KVCacheMPIToLLVMPass : impl::KVCacheMPIToLLVMBase<KVCacheMPIToLLVMPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool hasMPI = module
                      .walk([](Operation *op) {
                        return isa<mpi::MPIDialect>(op->getDialect())
                                   ? WalkResult::interrupt()
                                   : WalkResult::advance();
                      })
                      .wasInterrupted();
    if (!hasMPI)
      return;
    if (implementation != "OpenMPI" && implementation != "MPICH") {
      module.emitError("kvcache-mpi-to-llvm: implementation must be OpenMPI "
                       "or MPICH, got '")
          << implementation << "'";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    StringAttr mapName = StringAttr::get(ctx, DLTIDialect::kMapAttrName);
    // The upstream patterns look the implementation up in the module's
    // DLTI map; mlir-runner cannot parse DLTI, so ours goes again.
    bool added = !module->hasAttr(mapName);
    if (added)
      module->setAttr(
          mapName,
          MapAttr::get(ctx, {DataLayoutEntryInterface(DataLayoutEntryAttr::get(
                                StringAttr::get(ctx, "MPI:Implementation"),
                                StringAttr::get(ctx, implementation)))}));
    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    mpi::populateMPIToLLVMConversionPatterns(converter, patterns);
    bool openMPI = implementation == "OpenMPI";
    if (openMPI)
      patterns.add<OpenMPICommSplitLowering>(converter);
    converter.addConversion([](mpi::RequestType type) {
      return IntegerType::get(type.getContext(), 64);
    });
    MPIHandles handles{openMPI};
    patterns.add<NonBlockingLowering<mpi::ISendOp>>(converter, handles,
                                                    "MPI_Isend");
    patterns.add<NonBlockingLowering<mpi::IRecvOp>>(converter, handles,
                                                    "MPI_Irecv");
    patterns.add<WaitLowering>(converter, handles);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<mpi::MPIDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    LogicalResult converted =
        applyPartialConversion(module, target, std::move(patterns));
    if (added)
      module->removeAttr(mapName);
    if (failed(converted) ||
        (openMPI && failed(renameOpenMPIReductionOps(module))))
      signalPassFailure();
  }
};
} // namespace
