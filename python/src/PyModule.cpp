//===- PyModule.cpp - MLIR modules owned by Python --------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The shared context (every dialect and pass the tools register) and the
// operations of kvcache.Module on it, each under a DiagnosticCollector so
// that MLIR's diagnostics reach Python as kvcache.errors.CompileError.
//
//===----------------------------------------------------------------------===//

#include "PyModule.h"

#include "ArgumentABI.h"
#include "Diagnostics.h"

#include "KVCache/Pipelines/Pipelines.h"
#include "KVCache/Tools/ToolRegistration.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/SourceMgr.h"

#include <mutex>

namespace py = pybind11;

#ifdef KVCACHE_INCLUDE_TESTS
namespace mlir::test_kv {
void registerTestKVDialect(DialectRegistry &registry);
} // namespace mlir::test_kv
#endif

namespace mlir::kvcache::python {

//===----------------------------------------------------------------------===//
// The shared context
//===----------------------------------------------------------------------===//

void registerPassesOnce() {
  static std::once_flag once;
  std::call_once(once, [] { registerToolPasses(); });
}

std::shared_ptr<MLIRContext> getSharedContext() {
  static std::shared_ptr<MLIRContext> context = [] {
    DialectRegistry registry;
    registerToolDialects(registry);
#ifdef KVCACHE_INCLUDE_TESTS
    test_kv::registerTestKVDialect(registry);
#endif
    auto context = std::make_shared<MLIRContext>(registry);
    // Small modules, called from Python: no thread pool.
    context->disableMultithreading();
    return context;
  }();
  return context;
}

//===----------------------------------------------------------------------===//
// PyModule
//===----------------------------------------------------------------------===//

PyModule::PyModule(std::shared_ptr<MLIRContext> context,
                   OwningOpRef<ModuleOp> module)
    : context(std::move(context)), module(std::move(module)) {}

PyModule PyModule::parse(const std::string &text,
                         const std::string &filename) {
  std::shared_ptr<MLIRContext> context = getSharedContext();
  DiagnosticCollector diagnostics(context.get());
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, filename), llvm::SMLoc());
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(sourceMgr, context.get());
  if (!module)
    diagnostics.fail("");
  diagnostics.forwardWarnings();
  return PyModule(context, std::move(module));
}

std::string PyModule::print(bool generic, bool debugInfo) const {
  OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  if (debugInfo)
    flags.enableDebugInfo();
  std::string text;
  llvm::raw_string_ostream os(text);
  module.get()->print(os, flags);
  return text;
}

void PyModule::verify() const {
  DiagnosticCollector diagnostics(context.get());
  if (failed(mlir::verify(*module)))
    diagnostics.fail("");
  diagnostics.forwardWarnings();
}

PyModule PyModule::clone() const {
  return PyModule(context, OwningOpRef<ModuleOp>(module.get().clone()));
}

void PyModule::runPipeline(const std::string &pipeline) {
  registerPassesOnce();
  StringRef text = StringRef(pipeline).trim();
  std::string anchored = text.starts_with("builtin.module(")
                             ? text.str()
                             : "builtin.module(" + text.str() + ")";
  std::string parseErrors;
  llvm::raw_string_ostream errorStream(parseErrors);
  // The FailureOr overload: the OpPassManager& one nests an anchored
  // pipeline once more, and its passes then silently do nothing.
  FailureOr<OpPassManager> parsed = parsePassPipeline(anchored, errorStream);
  if (failed(parsed)) {
    CompileFailure failure;
    failure.summary = "invalid pass pipeline '" + pipeline +
                      "': " + StringRef(parseErrors).trim().str();
    failure.diagnostics.push_back(
        {"error", "<pass pipeline>", failure.summary, {}});
    throw failure;
  }
  PassManager pm(context.get());
  static_cast<OpPassManager &>(pm) = std::move(*parsed);
  run(pm, "pass pipeline '" + pipeline + "' failed");
}

void PyModule::lowerToPTX(const std::string &chip, unsigned optLevel,
                          bool checked, bool linalgToGPU) {
  runGPUPipeline(buildKVCacheToPTXPipeline, "kvcache-to-ptx", chip, optLevel,
                 checked, linalgToGPU);
}

void PyModule::lowerToEmulatedGPU(const std::string &chip, unsigned optLevel,
                                  bool checked, bool linalgToGPU) {
  runGPUPipeline(buildKVCacheToEmulatedGPUPipeline, "kvcache-to-emulated-gpu",
                 chip, optLevel, checked, linalgToGPU);
}

std::string PyModule::collectPTX() const {
  std::string ptx;
  module.get()->walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      ptx += cast<gpu::ObjectAttr>(object).getObject().getValue();
  });
  return ptx;
}

py::list PyModule::functions() const {
  py::list result;
  auto typeStrings = [](auto types) {
    py::list strings;
    for (Type type : types) {
      std::string text;
      llvm::raw_string_ostream os(text);
      type.print(os);
      strings.append(text);
    }
    return strings;
  };
  for (Operation &op : module.get().getBody()->getOperations()) {
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      result.append(py::make_tuple(func.getName().str(), "func.func",
                                   typeStrings(func.getArgumentTypes()),
                                   typeStrings(func.getResultTypes())));
    } else if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op)) {
      LLVM::LLVMFunctionType type = func.getFunctionType();
      SmallVector<Type> results;
      if (!isa<LLVM::LLVMVoidType>(type.getReturnType()))
        results.push_back(type.getReturnType());
      result.append(py::make_tuple(func.getName().str(), "llvm.func",
                                   typeStrings(type.getParams()),
                                   typeStrings(results)));
    }
  }
  return result;
}

py::list PyModule::describeArguments() const {
  return describeFunctions(module.get());
}

ModuleOp PyModule::get() const { return module.get(); }

MLIRContext *PyModule::getContext() const { return context.get(); }

void PyModule::runGPUPipeline(GPUPipelineBuilder build,
                              const std::string &name,
                              const std::string &chip, unsigned optLevel,
                              bool checked, bool linalgToGPU) {
  PassManager pm(context.get());
  KVCacheToPTXOptions options;
  options.chip = chip;
  options.optLevel = optLevel;
  options.checked = checked;
  options.linalgToGPU = linalgToGPU;
  build(pm, options);
  run(pm, name + " failed");
}

void PyModule::run(PassManager &pm, const std::string &fallback) {
  DiagnosticCollector diagnostics(context.get());
  if (failed(pm.run(*module)))
    diagnostics.fail(fallback);
  diagnostics.forwardWarnings();
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

py::dict describeType(const std::string &text) {
  std::shared_ptr<MLIRContext> context = getSharedContext();
  DiagnosticCollector diagnostics(context.get());
  Type type = parseType(StringRef(text).trim(), context.get());
  if (!type)
    diagnostics.fail("");
  diagnostics.forwardWarnings();
  return describeArgument(type);
}

} // namespace mlir::kvcache::python
