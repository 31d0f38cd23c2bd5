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
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MPIToLLVM/MPIToLLVM.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
#define GEN_PASS_DEF_KVCACHEMPITOLLVM
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;

namespace {

/// mpi.comm_split for OpenMPI, whose MPI_Comm is a pointer: the new
/// communicator is read back whole (as the i64 that !mpi.comm converts to).
/// Preferred, by its benefit, to MLIR 22's pattern, which reads an i32.
struct OpenMPICommSplitLowering
    : public ConvertOpToLLVMPattern<mpi::CommSplitOp> {
  explicit OpenMPICommSplitLowering(const LLVMTypeConverter &converter)
      : ConvertOpToLLVMPattern(converter, /*benefit=*/2) {}

  LogicalResult
  matchAndRewrite(mpi::CommSplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type ptr = LLVM::LLVMPointerType::get(rewriter.getContext());
    Type i32 = rewriter.getI32Type();
    auto module = op->getParentOfType<ModuleOp>();
    auto split = module.lookupSymbol<LLVM::LLVMFuncOp>("MPI_Comm_split");
    if (!split) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      // int MPI_Comm_split(MPI_Comm comm, int color, int key,
      //                    MPI_Comm *newcomm)
      split = LLVM::LLVMFuncOp::create(
          rewriter, loc, "MPI_Comm_split",
          LLVM::LLVMFunctionType::get(i32, {ptr, i32, i32, ptr}));
    }
    Value comm =
        LLVM::IntToPtrOp::create(rewriter, loc, ptr, adaptor.getComm());
    Value one = LLVM::ConstantOp::create(rewriter, loc, i32, 1);
    Value newComm = LLVM::AllocaOp::create(rewriter, loc, ptr, ptr, one);
    auto call = LLVM::CallOp::create(
        rewriter, loc, split,
        ValueRange{comm, adaptor.getColor(), adaptor.getKey(), newComm});
    Value loaded = LLVM::LoadOp::create(rewriter, loc, ptr, newComm);
    SmallVector<Value> results;
    if (op.getRetval())
      results.push_back(call.getResult());
    results.push_back(LLVM::PtrToIntOp::create(
        rewriter, loc,
        getTypeConverter()->convertType(op.getNewcomm().getType()), loaded));
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
