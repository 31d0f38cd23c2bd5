//===- KVCacheToMemRefPass.cpp - convert-kvcache-to-memref ------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/Passes.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/KernelLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
#define GEN_PASS_DEF_CONVERTKVCACHETOMEMREF
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;
using namespace mlir::kvcache;

/// Kernel ops are lowered by their own passes, before this one.
static LogicalResult rejectKernelOps(ModuleOp module) {
  WalkResult result = module.walk([](Operation *op) {
    if (!isa<KernelOpInterface>(op))
      return WalkResult::advance();
    op->emitOpError("is a kernel op: lower it with convert-kvcache-to-scf "
                    "(CPU) or convert-kvcache-to-gpu (GPU) before "
                    "convert-kvcache-to-memref");
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

namespace {
struct ConvertKVCacheToMemRefPass
    : impl::ConvertKVCacheToMemRefBase<ConvertKVCacheToMemRefPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(rejectKernelOps(module)))
      return signalPassFailure();

    if (transferDirectBytes < 1) {
      module.emitError("convert-kvcache-to-memref: transfer-direct-bytes "
                       "must be at least 1, got ")
          << static_cast<int64_t>(transferDirectBytes);
      return signalPassFailure();
    }
    // A run shorter than transfer-direct-bytes must fit in one message.
    if (transferStagingBytes < transferDirectBytes) {
      module.emitError("convert-kvcache-to-memref: transfer-staging-bytes "
                       "must be at least transfer-direct-bytes (")
          << static_cast<int64_t>(transferDirectBytes) << "), got "
          << static_cast<int64_t>(transferStagingBytes);
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    TypeConverter typeConverter;
    typeConverter.addConversion([](Type type) { return type; });
    populateKVCacheToMemRefTypeConversion(typeConverter);

    ConversionTarget target(*ctx);
    configureKVCacheToMemRefConversionLegality(target, typeConverter);

    // Kept parseable for pipelines that set it; the choice of fp8
    // instructions moved to kvcache-fp8-to-nvvm, a GPU-side pass.
    if (nvvmFp8Conversions)
      emitWarning(module.getLoc(),
                  "convert-kvcache-to-memref: nvvm-fp8-conversions is "
                  "deprecated and has no effect: fp8 codes are decoded by "
                  "arith.extf; run kvcache-fp8-to-nvvm{chip=...} after this "
                  "pass to decode them with the sm_89+ conversion "
                  "instructions");

    RewritePatternSet patterns(ctx);
    KVCacheToMemRefOptions options;
    options.checked = checked;
    options.transferDirectBytes = transferDirectBytes;
    options.transferStagingBytes = transferStagingBytes;
    populateKVCacheToMemRefConversionPatterns(typeConverter, patterns,
                                              options);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
