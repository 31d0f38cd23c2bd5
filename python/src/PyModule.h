//===- PyModule.h - MLIR modules owned by Python ----------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The MLIR context that the extension shares across the process and the
// `builtin.module` that kvcache.Module wraps: parse, verify, print, clone,
// run a textual pass pipeline or a kvcache lowering, list the functions and
// describe their arguments as the type interfaces lower them
// (ArgumentABI.h), collect the PTX of gpu.binary ops.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_PYTHON_PYMODULE_H
#define KVCACHE_PYTHON_PYMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

namespace mlir {
class OpPassManager;
class PassManager;
namespace kvcache {
struct KVCacheToPTXOptions;
} // namespace kvcache
} // namespace mlir

namespace mlir::kvcache::python {

/// Registers every pass and pipeline with MLIR's global registry, once per
/// process (textual pipelines look passes up there).
void registerPassesOnce();

/// The MLIR context shared by the modules of the process: every upstream
/// dialect, extension and LLVM IR translation, plus kvcache (and in a test
/// build, KVCACHE_INCLUDE_TESTS, the test dialects of test/lib, as
/// kvcache-opt registers them).
std::shared_ptr<MLIRContext> getSharedContext();

/// A `builtin.module` owned by Python (kvcache.Module). Failures raise
/// kvcache.errors.CompileError with MLIR's diagnostics (Diagnostics.h).
class PyModule {
public:
  PyModule(std::shared_ptr<MLIRContext> context, OwningOpRef<ModuleOp> module);

  /// Parses (and verifies) the module in `text`, in the shared context;
  /// `filename` names the buffer in locations.
  static PyModule parse(const std::string &text, const std::string &filename);

  /// The module as MLIR prints it, in generic form and with locations on
  /// request.
  std::string print(bool generic, bool debugInfo) const;

  /// Verifies the module.
  void verify() const;

  /// A deep copy, in the same context.
  PyModule clone() const;

  /// Runs a textual pipeline in place. `builtin.module(...)` is the anchor;
  /// a pipeline without it (`canonicalize,cse`) is nested in one.
  void runPipeline(const std::string &pipeline);

  /// The kvcache-to-ptx pipeline in place.
  void lowerToPTX(const std::string &chip, unsigned optLevel, bool checked,
                  bool linalgToGPU);

  /// The kvcache-to-emulated-gpu pipeline in place.
  void lowerToEmulatedGPU(const std::string &chip, unsigned optLevel,
                          bool checked, bool linalgToGPU);

  /// The PTX of every gpu.binary object, in order.
  std::string collectPTX() const;

  /// (name, "func.func" or "llvm.func", argument types, result types) of
  /// each top-level func.func and llvm.func, types as MLIR prints them.
  pybind11::list functions() const;

  /// (name, [argument descriptions]) of each func.func (ArgumentABI.h).
  pybind11::list describeArguments() const;

  /// The module.
  ModuleOp get() const;
  /// The context the module lives in.
  MLIRContext *getContext() const;

private:
  using GPUPipelineBuilder = void (*)(OpPassManager &,
                                      const KVCacheToPTXOptions &);

  /// Builds the pipeline `name` with `build` and runs it in place.
  void runGPUPipeline(GPUPipelineBuilder build, const std::string &name,
                      const std::string &chip, unsigned optLevel,
                      bool checked, bool linalgToGPU);

  /// Runs `pm` on the module; CompileError (message `fallback` when MLIR
  /// said nothing) when it fails.
  void run(PassManager &pm, const std::string &fallback);

  std::shared_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};

/// The description (ArgumentABI.h) of the type `text`, parsed in the shared
/// context; CompileError when it does not parse.
pybind11::dict describeType(const std::string &text);

} // namespace mlir::kvcache::python

#endif // KVCACHE_PYTHON_PYMODULE_H
