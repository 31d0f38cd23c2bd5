//===- CheckRegistrations.cpp - kvcache-check-registrations -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The GPU pipelines lower through interfaces that dialect extensions attach
// when the context's registry has them: without them a later pass fails far
// from the cause ("type mismatch for bb argument" when cf's lowering to LLVM
// is missing) or crashes (gpu-module-to-binary without the NVVM target or
// the LLVM IR translations). This pass, first in those pipelines, names what
// is missing and the call that registers all of it.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Transforms/Passes.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Target/LLVMIR/LLVMTranslationInterface.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::kvcache {
#define GEN_PASS_DEF_KVCACHECHECKREGISTRATIONS
#include "KVCache/Transforms/Passes.h.inc"
} // namespace mlir::kvcache

using namespace mlir;

namespace {

/// A dialect interface a pipeline needs: on which dialect, and the upstream
/// function that registers it.
struct DialectNeed {
  StringLiteral dialect;
  StringLiteral registration;
};

/// The lowerings to LLVM that convert-gpu-to-nvvm and gpu-to-llvm apply
/// through ConvertToLLVMPatternInterface (the pass's dependent dialects).
constexpr DialectNeed kLoweringNeeds[] = {
    {"arith", "mlir::arith::registerConvertArithToLLVMInterface"},
    {"cf", "mlir::cf::registerConvertControlFlowToLLVMInterface"},
    {"func", "mlir::registerConvertFuncToLLVMInterface"},
    {"math", "mlir::registerConvertMathToLLVMInterface"},
    {"memref", "mlir::registerConvertMemRefToLLVMInterface"},
    {"nvvm", "mlir::registerConvertNVVMToLLVMInterface"},
    {"ub", "mlir::ub::registerConvertUBToLLVMInterface"},
    {"vector", "mlir::vector::registerConvertVectorToLLVMInterface"},
};

/// The LLVM IR translations gpu-module-to-binary translates kernels with.
constexpr DialectNeed kTranslationNeeds[] = {
    {"builtin", "mlir::registerBuiltinDialectTranslation"},
    {"gpu", "mlir::registerGPUDialectTranslation"},
    {"llvm", "mlir::registerLLVMDialectTranslation"},
    {"nvvm", "mlir::registerNVVMDialectTranslation"},
};

/// Whether the loaded dialect `name` has the interface `InterfaceT`. One it
/// promised and no extension implemented is missing too (asking a dialect
/// for it directly is a fatal error in builds with assertions).
template <typename InterfaceT>
bool hasDialectInterface(MLIRContext *context, StringRef name) {
  Dialect *dialect = context->getLoadedDialect(name);
  if (!dialect || dialect->hasPromisedInterface(dialect->getTypeID(),
                                                InterfaceT::getInterfaceID()))
    return false;
  return dialect->getRegisteredInterface<InterfaceT>() != nullptr;
}

/// Appends to `missing` the interfaces `InterfaceT` of `needs` that the
/// context lacks, described as `what` of each dialect.
template <typename InterfaceT>
void findMissing(MLIRContext *context, ArrayRef<DialectNeed> needs,
                 StringRef what, SmallVectorImpl<std::string> &missing) {
  for (const DialectNeed &need : needs)
    if (!hasDialectInterface<InterfaceT>(context, need.dialect))
      missing.push_back((what + " of '" + need.dialect + "' (" +
                         need.registration + ")")
                            .str());
}

struct CheckRegistrationsPass
    : kvcache::impl::KVCacheCheckRegistrationsBase<CheckRegistrationsPass> {
  using Base::Base;

  void runOnOperation() override {
    bool binary = pipeline == "kvcache-to-ptx";
    if (!binary && pipeline != "kvcache-to-emulated-gpu") {
      getOperation().emitError()
          << "kvcache-check-registrations: unknown pipeline '" << pipeline
          << "' (kvcache-to-ptx or kvcache-to-emulated-gpu)";
      return signalPassFailure();
    }
    MLIRContext *context = &getContext();
    SmallVector<std::string> missing;
    findMissing<ConvertToLLVMPatternInterface>(
        context, kLoweringNeeds, "the ConvertToLLVMPatternInterface", missing);
    if (binary) {
      // The attribute gpu-nvvm-attach-target puts on gpu.modules; without
      // its external model, serialization has no target to call.
      auto target = NVVM::NVVMTargetAttr::get(context);
      if (!target.getAbstractAttribute().hasInterface(
              gpu::TargetAttrInterface::getInterfaceID()))
        missing.push_back("the gpu::TargetAttrInterface of #nvvm.target "
                          "(mlir::NVVM::registerNVVMTargetInterfaceExternal"
                          "Models)");
      findMissing<LLVMTranslationDialectInterface>(
          context, kTranslationNeeds, "the LLVM IR translation", missing);
    }
    if (missing.empty())
      return markAllAnalysesPreserved();
    getOperation().emitError()
        << pipeline << " needs, in the MLIRContext's dialect registry: "
        << llvm::join(missing, "; ")
        << "; call mlir::kvcache::registerAllDialectsAndPasses(registry) "
           "(KVCache/InitAll.h) on the registry the context is made with";
    signalPassFailure();
  }
};

} // namespace
