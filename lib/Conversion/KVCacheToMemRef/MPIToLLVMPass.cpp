//===- MPIToLLVMPass.cpp - kvcache-mpi-to-llvm ------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// MLIR's mpi-to-llvm patterns as a pass of the CPU pipeline, with the DLTI
// entry they read the MPI implementation from.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MPIToLLVM/MPIToLLVM.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
#define GEN_PASS_DEF_KVCACHEMPITOLLVM
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;

namespace {
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
    ConversionTarget target(*ctx);
    target.addIllegalDialect<mpi::MPIDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    LogicalResult converted =
        applyPartialConversion(module, target, std::move(patterns));
    if (added)
      module->removeAttr(mapName);
    if (failed(converted))
      signalPassFailure();
  }
};
} // namespace
