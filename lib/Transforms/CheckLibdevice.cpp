//===- CheckLibdevice.cpp - kvcache-check-libdevice -------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//
//
// gpu-module-to-binary links libdevice only from the CUDA toolkit it finds
// through the environment (CUDA_ROOT, CUDA_HOME, CUDA_PATH); with none set
// it links nothing and says nothing, so a kernel that calls a libdevice
// function (math.sin becomes __nv_sinf) gives PTX with an external call that
// ptxas rejects far from the cause. This pass, right before
// gpu-module-to-binary in kvcache-to-ptx, names the call and what to set.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Target/LLVM/NVVM/Utils.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace mlir::kvcache {
#define GEN_PASS_DEF_KVCACHECHECKLIBDEVICE
#include "KVCache/Transforms/Passes.h.inc"
} // namespace mlir::kvcache

using namespace mlir;

/// Where gpu-module-to-binary would read libdevice from: `toolkit`, or the
/// toolkit the environment names; empty when neither names one.
static std::string libdevicePath(StringRef toolkit) {
  if (toolkit.empty())
    toolkit = NVVM::getCUDAToolkitPath();
  if (toolkit.empty())
    return "";
  SmallString<256> path(toolkit);
  llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
  return std::string(path);
}

/// Whether a target of `module` links bitcode of the user's own (which may
/// define the __nv_ functions: nothing to check then).
static bool linksOwnLibraries(gpu::GPUModuleOp module) {
  ArrayAttr targets = module.getTargetsAttr();
  return targets && llvm::any_of(targets, [](Attribute target) {
           auto nvvm = dyn_cast<NVVM::NVVMTargetAttr>(target);
           return nvvm && nvvm.getLink() && !nvvm.getLink().empty();
         });
}

namespace {
struct CheckLibdevice
    : kvcache::impl::KVCacheCheckLibdeviceBase<CheckLibdevice> {
  using Base::Base;

  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    if (linksOwnLibraries(module))
      return;
    std::string path = libdevicePath(toolkit);
    if (!path.empty() && llvm::sys::fs::is_regular_file(path))
      return;
    // The first call of a libdevice function, at the op it came from.
    WalkResult walk = module.walk([&](LLVM::CallOp call) {
      std::optional<StringRef> callee = call.getCallee();
      if (!callee || !callee->starts_with("__nv_"))
        return WalkResult::advance();
      InFlightDiagnostic diag =
          call.emitError() << "this op became a call of the libdevice "
                              "function '"
                           << *callee << "', and ";
      if (path.empty())
        diag << "no CUDA toolkit is named to link libdevice from: set "
                "CUDA_HOME to a CUDA toolkit that has "
                "nvvm/libdevice/libdevice.10.bc";
      else
        diag << "'" << path
             << "' does not exist: set CUDA_HOME to a CUDA toolkit that "
                "has it";
      diag << " (only for PTX: the emulated GPU needs none), or use the "
              "math ops that kvcache-lower-gpu-math lowers without libdevice";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
