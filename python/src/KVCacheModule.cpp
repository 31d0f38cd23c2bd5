//===- KVCacheModule.cpp - the kvcache._kvcache extension -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// A pybind11 module over MLIR's C++ API (Debian ships neither MLIR's Python
// package nor libMLIR-C.so), as Triton binds its compiler:
//
//   Module          parse, verify, print, clone, run a textual pass pipeline,
//                   list functions and describe their arguments as the type
//                   interfaces lower them (ArgumentABI.h), collect the PTX
//                   of gpu.binary ops;
//   describe_type   one type's description (ArgumentABI.h);
//   compile_ptx     the kvcache-to-ptx pipeline, PTX out;
//   lower_to_emulated_gpu  the kvcache-to-emulated-gpu pipeline;
//   JitModule       an LLVM-dialect module compiled in-process by
//                   mlir::ExecutionEngine, functions called through their
//                   packed wrappers with one flat value per LLVM parameter;
//                   optionally linked against the GPU emulator runtime,
//                   whose check failures and device asserts jump back here
//                   and are raised as kvcache.errors.EmulatorError.
//
// MLIR diagnostics are collected and raised as kvcache.errors.CompileError
// (message, diagnostics with locations). The Python side (kvcache/*.py) maps
// numpy arrays and caches to the flat parameter lists by the argument
// descriptions. Test builds (KVCACHE_INCLUDE_TESTS) register the test
// dialects of test/lib, as kvcache-opt does.
//
//===----------------------------------------------------------------------===//

#include "ArgumentABI.h"

#include "KVCache/Tools/ToolRegistration.h"
#include "KVCache/Conversion/Passes.h"
#include "KVCache/ExecutionEngine/GPUEmulator.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/Pipelines/Pipelines.h"
#include "KVCache/Transforms/Passes.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include <dlfcn.h>

namespace py = pybind11;
using namespace mlir;

#ifdef KVCACHE_INCLUDE_TESTS
namespace mlir::test_kv {
void registerTestKVDialect(DialectRegistry &registry);
} // namespace mlir::test_kv
#endif

namespace {

//===----------------------------------------------------------------------===//
// Diagnostics as Python exceptions
//===----------------------------------------------------------------------===//

/// One MLIR diagnostic, flattened for Python.
struct DiagnosticRecord {
  std::string severity;
  std::string location;
  std::string message;
  std::vector<std::pair<std::string, std::string>> notes; // location, message
};

/// Thrown by the bindings; translated to kvcache.errors.CompileError.
struct CompileFailure {
  std::string summary;
  std::vector<DiagnosticRecord> diagnostics;
};

/// `file:line:col` of the innermost file location in `loc`, else the
/// location as MLIR prints it.
std::string formatLocation(Location loc) {
  if (auto fileLoc = loc->findInstanceOf<FileLineColLoc>())
    return (fileLoc.getFilename().getValue() + ":" +
            llvm::Twine(fileLoc.getLine()) + ":" +
            llvm::Twine(fileLoc.getColumn()))
        .str();
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

/// Collects every diagnostic emitted in its scope, instead of printing them.
class DiagnosticCollector : public ScopedDiagnosticHandler {
public:
  explicit DiagnosticCollector(MLIRContext *context)
      : ScopedDiagnosticHandler(context) {
    setHandler([this](Diagnostic &diagnostic) {
      DiagnosticRecord record;
      record.severity = severityName(diagnostic.getSeverity());
      record.location = formatLocation(diagnostic.getLocation());
      record.message = diagnostic.str();
      for (Diagnostic &note : diagnostic.getNotes())
        record.notes.emplace_back(formatLocation(note.getLocation()),
                                  note.str());
      records.push_back(std::move(record));
      return success();
    });
  }

  /// Raises CompileError with what was collected; `fallback` is the message
  /// when MLIR said nothing (a pass that failed silently, an LLVM error).
  [[noreturn]] void fail(const std::string &fallback) {
    CompileFailure failure;
    std::string text;
    for (const DiagnosticRecord &record : records) {
      if (!text.empty())
        text += "\n";
      text += record.location + ": " + record.severity + ": " + record.message;
      for (const auto &[location, message] : record.notes)
        text += "\n" + location + ": note: " + message;
    }
    if (text.empty() || !fallback.empty()) {
      if (!text.empty())
        text += "\n";
      text += fallback;
    }
    failure.summary = text;
    failure.diagnostics = std::move(records);
    throw failure;
  }

  /// Turns collected warnings into Python warnings (after a success).
  void forwardWarnings() {
    for (const DiagnosticRecord &record : records)
      if (record.severity == "warning" &&
          PyErr_WarnEx(PyExc_RuntimeWarning,
                       (record.location + ": " + record.message).c_str(),
                       1) < 0)
        throw py::error_already_set(); // warnings turned into errors
    records.clear();
  }

private:
  std::vector<DiagnosticRecord> records;
};

void translateCompileFailure(const CompileFailure &failure) {
  py::list diagnostics;
  for (const DiagnosticRecord &record : failure.diagnostics) {
    py::list notes;
    for (const auto &[location, message] : record.notes)
      notes.append(py::make_tuple(location, message));
    diagnostics.append(py::make_tuple(record.severity, record.location,
                                      record.message, notes));
  }
  py::object errorType =
      py::module_::import("kvcache.errors").attr("CompileError");
  py::object error = errorType(failure.summary, diagnostics);
  PyErr_SetObject(errorType.ptr(), error.ptr());
}

//===----------------------------------------------------------------------===//
// Context and modules
//===----------------------------------------------------------------------===//

/// Registers every pass and pipeline with MLIR's global registry, once per
/// process (textual pipelines look passes up there).
void registerPassesOnce() {
  static std::once_flag once;
  std::call_once(once, [] { kvcache::registerToolPasses(); });
}

/// The MLIR context shared by the modules of the process: every upstream
/// dialect, extension and LLVM IR translation, plus kvcache (and in a test
/// build the test dialects).
std::shared_ptr<MLIRContext> getSharedContext() {
  static std::shared_ptr<MLIRContext> context = [] {
    DialectRegistry registry;
    kvcache::registerToolDialects(registry);
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

/// A `builtin.module` owned by Python.
class PyModule {
public:
  PyModule(std::shared_ptr<MLIRContext> context, OwningOpRef<ModuleOp> module)
      : context(std::move(context)), module(std::move(module)) {}

  static PyModule parse(const std::string &text, const std::string &filename) {
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

  std::string print(bool generic, bool debugInfo) const {
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

  void verify() const {
    DiagnosticCollector diagnostics(context.get());
    if (failed(mlir::verify(*module)))
      diagnostics.fail("");
    diagnostics.forwardWarnings();
  }

  PyModule clone() const {
    return PyModule(context, OwningOpRef<ModuleOp>(module.get().clone()));
  }

  /// Runs a textual pipeline in place. `builtin.module(...)` is the anchor;
  /// a pipeline without it (`canonicalize,cse`) is nested in one.
  void runPipeline(const std::string &pipeline) {
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

  /// The kvcache-to-ptx pipeline in place.
  void lowerToPTX(const std::string &chip, unsigned optLevel, bool checked) {
    runGPUPipeline(kvcache::buildKVCacheToPTXPipeline, "kvcache-to-ptx", chip,
                   optLevel, checked);
  }

  /// The kvcache-to-emulated-gpu pipeline in place.
  void lowerToEmulatedGPU(const std::string &chip, unsigned optLevel,
                          bool checked) {
    runGPUPipeline(kvcache::buildKVCacheToEmulatedGPUPipeline,
                   "kvcache-to-emulated-gpu", chip, optLevel, checked);
  }

  /// The PTX of every gpu.binary object, in order.
  std::string collectPTX() const {
    std::string ptx;
    module.get()->walk([&](gpu::BinaryOp binary) {
      for (Attribute object : binary.getObjects())
        ptx += cast<gpu::ObjectAttr>(object).getObject().getValue();
    });
    return ptx;
  }

  /// (name, argument types, result types) of each top-level func.func and
  /// llvm.func, types as MLIR prints them.
  py::list functions() const {
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

  /// (name, [argument descriptions]) of each func.func (ArgumentABI.h).
  py::list describeArguments() const {
    return kvcache::python::describeFunctions(module.get());
  }

  ModuleOp get() const { return module.get(); }
  MLIRContext *getContext() const { return context.get(); }

private:
  using GPUPipelineBuilder = void (*)(OpPassManager &,
                                      const kvcache::KVCacheToPTXOptions &);

  void runGPUPipeline(GPUPipelineBuilder build, const std::string &name,
                      const std::string &chip, unsigned optLevel,
                      bool checked) {
    PassManager pm(context.get());
    kvcache::KVCacheToPTXOptions options;
    options.chip = chip;
    options.optLevel = optLevel;
    options.checked = checked;
    build(pm, options);
    run(pm, name + " failed");
  }

  void run(PassManager &pm, const std::string &fallback) {
    DiagnosticCollector diagnostics(context.get());
    if (failed(pm.run(*module)))
      diagnostics.fail(fallback);
    diagnostics.forwardWarnings();
  }

  std::shared_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};

/// The description (ArgumentABI.h) of the type `text`, parsed in the shared
/// context; CompileError when it does not parse.
py::dict describeType(const std::string &text) {
  std::shared_ptr<MLIRContext> context = getSharedContext();
  DiagnosticCollector diagnostics(context.get());
  Type type = parseType(StringRef(text).trim(), context.get());
  if (!type)
    diagnostics.fail("");
  diagnostics.forwardWarnings();
  return kvcache::python::describeArgument(type);
}

//===----------------------------------------------------------------------===//
// CPU execution
//===----------------------------------------------------------------------===//

/// How one LLVM parameter or result crosses the packed-call boundary.
enum class ScalarKind { Pointer, I1, I8, I16, I32, I64, F32, F64 };

std::optional<ScalarKind> getScalarKind(Type type) {
  if (isa<LLVM::LLVMPointerType>(type))
    return ScalarKind::Pointer;
  if (auto integer = dyn_cast<IntegerType>(type)) {
    switch (integer.getWidth()) {
    case 1:
      return ScalarKind::I1;
    case 8:
      return ScalarKind::I8;
    case 16:
      return ScalarKind::I16;
    case 32:
      return ScalarKind::I32;
    case 64:
      return ScalarKind::I64;
    default:
      return std::nullopt;
    }
  }
  if (type.isF32())
    return ScalarKind::F32;
  if (type.isF64())
    return ScalarKind::F64;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// The GPU emulator runtime
//===----------------------------------------------------------------------===//

/// The control interface (GPUEmulator.h) of a loaded
/// libKVCacheGPUEmulator.so.
struct EmulatorRuntime {
  decltype(&kvcache_emu_set_capture) setCapture = nullptr;
  decltype(&kvcache_emu_reports) reports = nullptr;
  decltype(&kvcache_emu_error_count) errorCount = nullptr;
  decltype(&kvcache_emu_clear_reports) clearReports = nullptr;
};

/// Loads the runtime at `path` into the process, once per path and for good:
/// RTLD_GLOBAL, so that the JIT resolves the `__kvemu_*` and `mgpu*` calls of
/// the emulated code to this copy, whose control functions we hold.
const EmulatorRuntime &loadEmulatorRuntime(const std::string &path) {
  static std::mutex mutex;
  static std::map<std::string, EmulatorRuntime> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(path);
  if (found != loaded.end())
    return found->second;
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle)
    throw std::runtime_error("cannot load the GPU emulator runtime: " +
                             std::string(dlerror()));
  EmulatorRuntime runtime;
  auto lookup = [&](auto &function, const char *name) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
        dlsym(handle, name));
    if (!function)
      throw std::runtime_error(path +
                               " is not the GPU emulator runtime: it has no " +
                               name);
  };
  lookup(runtime.setCapture, "kvcache_emu_set_capture");
  lookup(runtime.reports, "kvcache_emu_reports");
  lookup(runtime.errorCount, "kvcache_emu_error_count");
  lookup(runtime.clearReports, "kvcache_emu_clear_reports");
  return loaded.emplace(path, runtime).first->second;
}

/// The emulator's state (the running launch, capture mode, the reports) is
/// the process's: one emulated call at a time.
std::mutex &emulatorMutex() {
  static std::mutex mutex;
  return mutex;
}

/// Calls `entry(arguments)` in the emulator's capture mode: a check failure
/// or a device assert is recorded and ends its launch, the call's later
/// launches return at once, and the call returns normally. Returns the
/// number of failures recorded and sets `reports` to their lines; the
/// reports are cleared before and after.
int callCapturing(const EmulatorRuntime &runtime, void (*entry)(void **),
                  void **arguments, std::string &reports) {
  runtime.clearReports();
  runtime.setCapture(1);
  entry(arguments);
  runtime.setCapture(0);
  int errors = runtime.errorCount();
  reports = runtime.reports();
  runtime.clearReports();
  return errors;
}

/// Raises kvcache.errors.EmulatorError holding the report lines.
[[noreturn]] void raiseEmulatorError(const std::string &reports) {
  py::list lines;
  for (StringRef line : llvm::split(reports, '\n'))
    if (!line.empty())
      lines.append(line.str());
  py::object errorType =
      py::module_::import("kvcache.errors").attr("EmulatorError");
  py::object error = errorType(lines);
  PyErr_SetObject(errorType.ptr(), error.ptr());
  throw py::error_already_set();
}

//===----------------------------------------------------------------------===//
// In-process execution
//===----------------------------------------------------------------------===//

/// An LLVM-dialect module compiled by mlir::ExecutionEngine. Every function
/// gets a packed wrapper `_mlir_<name>(void **)`; its arguments are the LLVM
/// parameters (memrefs already expanded to their descriptor fields). With
/// an emulator library (code from kvcache-to-emulated-gpu), the library is
/// loaded first and each call runs under its trap.
class JitModule {
public:
  JitModule(const PyModule &module, unsigned optLevel,
            const std::vector<std::string> &sharedLibs,
            const std::string &emulatorLibrary) {
    if (!emulatorLibrary.empty())
      emulator = &loadEmulatorRuntime(emulatorLibrary);
    static std::once_flag once;
    std::call_once(once, [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
    });
    for (auto func : module.get().getOps<LLVM::LLVMFuncOp>()) {
      if (func.isExternal())
        continue;
      Signature &signature = signatures[func.getName().str()];
      signature.valid = true;
      LLVM::LLVMFunctionType type = func.getFunctionType();
      for (Type param : type.getParams()) {
        std::optional<ScalarKind> kind = getScalarKind(param);
        if (!kind) {
          signature.valid = false;
          break;
        }
        signature.params.push_back(*kind);
      }
      if (!isa<LLVM::LLVMVoidType>(type.getReturnType())) {
        signature.result = getScalarKind(type.getReturnType());
        signature.valid &= signature.result.has_value();
      }
    }

    SmallVector<StringRef> libs(sharedLibs.begin(), sharedLibs.end());
    if (emulator)
      libs.push_back(emulatorLibrary);
    auto transformer = makeOptimizingTransformer(optLevel, /*sizeLevel=*/0,
                                                 /*targetMachine=*/nullptr);
    ExecutionEngineOptions options;
    options.transformer = transformer;
    options.sharedLibPaths = libs;
    options.jitCodeGenOptLevel = static_cast<llvm::CodeGenOptLevel>(optLevel);
    DiagnosticCollector diagnostics(module.getContext());
    auto created = ExecutionEngine::create(module.get(), options);
    if (!created)
      diagnostics.fail("cannot compile the module for the CPU: " +
                       llvm::toString(created.takeError()));
    engine = std::move(*created);
    engine->initialize();
  }

  /// Calls `name` with one Python int/float per LLVM parameter.
  py::object invoke(const std::string &name, const py::sequence &values) {
    auto found = signatures.find(name);
    if (found == signatures.end())
      throw py::key_error("no function '" + name +
                          "' with a body in the compiled module");
    const Signature &signature = found->second;
    if (!signature.valid)
      throw py::type_error(
          "function '" + name +
          "' takes or returns a value that is not a pointer, integer, f32 or "
          "f64 after lowering (a struct, vector or half scalar): call it from "
          "an MLIR wrapper function instead");
    if (py::len(values) != signature.params.size())
      throw py::value_error("function '" + name + "' takes " +
                            std::to_string(signature.params.size()) +
                            " LLVM parameters, got " +
                            std::to_string(py::len(values)));

    // One 8-byte slot per parameter (and the result); the packed wrapper
    // reads each through its pointer.
    std::vector<uint64_t> slots(signature.params.size() + 1, 0);
    SmallVector<void *> pointers;
    for (auto [index, kind] : llvm::enumerate(signature.params)) {
      storeScalar(kind, values[index], &slots[index]);
      pointers.push_back(&slots[index]);
    }
    if (signature.result)
      pointers.push_back(&slots.back());

    auto function = engine->lookupPacked(name);
    if (!function)
      throw std::runtime_error("cannot call '" + name + "': " +
                               llvm::toString(function.takeError()));
    if (emulator) {
      runEmulated(*function, pointers.data());
    } else {
      py::gil_scoped_release release;
      (*function)(pointers.data());
    }
    if (!signature.result)
      return py::none();
    return loadScalar(*signature.result, &slots.back());
  }

  std::vector<std::string> functionNames() const {
    std::vector<std::string> names;
    for (const auto &entry : signatures)
      names.push_back(entry.first);
    return names;
  }

private:
  /// Runs `entry` on the emulator; raises EmulatorError when it recorded a
  /// failure (one that ended a launch, or every one under
  /// KVCACHE_EMU_ON_ERROR=continue).
  void runEmulated(void (*entry)(void **), void **arguments) {
    int errors;
    std::string reports;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(emulatorMutex());
      errors = callCapturing(*emulator, entry, arguments, reports);
      std::fflush(stdout); // device printf, before Python prints more
    }
    if (errors > 0)
      raiseEmulatorError(reports);
  }

  struct Signature {
    std::vector<ScalarKind> params;
    std::optional<ScalarKind> result;
    bool valid = false;
  };

  static void storeScalar(ScalarKind kind, py::handle value, uint64_t *slot) {
    auto store = [&](auto scalar) {
      std::memcpy(slot, &scalar, sizeof scalar);
    };
    if (kind == ScalarKind::F32) {
      store(static_cast<float>(py::cast<double>(value)));
      return;
    }
    if (kind == ScalarKind::F64) {
      store(py::cast<double>(value));
      return;
    }
    // Integers and pointers: any Python integer (or numpy integer), taken
    // modulo 2^64 and truncated to the parameter's width.
    py::object index =
        py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
    if (!index)
      throw py::error_already_set();
    unsigned long long bits = PyLong_AsUnsignedLongLongMask(index.ptr());
    if (PyErr_Occurred())
      throw py::error_already_set();
    switch (kind) {
    case ScalarKind::Pointer:
      store(reinterpret_cast<void *>(static_cast<uintptr_t>(bits)));
      return;
    case ScalarKind::I1:
      store(static_cast<uint8_t>(bits & 1));
      return;
    case ScalarKind::I8:
      store(static_cast<uint8_t>(bits));
      return;
    case ScalarKind::I16:
      store(static_cast<uint16_t>(bits));
      return;
    case ScalarKind::I32:
      store(static_cast<uint32_t>(bits));
      return;
    default:
      store(static_cast<uint64_t>(bits));
      return;
    }
  }

  static py::object loadScalar(ScalarKind kind, const uint64_t *slot) {
    auto load = [&](auto scalar) {
      std::memcpy(&scalar, slot, sizeof scalar);
      return scalar;
    };
    switch (kind) {
    case ScalarKind::Pointer:
      return py::int_(reinterpret_cast<uintptr_t>(load((void *)nullptr)));
    case ScalarKind::I1:
      return py::bool_(load(uint8_t()) & 1);
    case ScalarKind::I8:
      return py::int_(load(int8_t()));
    case ScalarKind::I16:
      return py::int_(load(int16_t()));
    case ScalarKind::I32:
      return py::int_(load(int32_t()));
    case ScalarKind::I64:
      return py::int_(load(int64_t()));
    case ScalarKind::F32:
      return py::float_(load(float()));
    case ScalarKind::F64:
      return py::float_(load(double()));
    }
    return py::none();
  }

  const EmulatorRuntime *emulator = nullptr;
  std::unique_ptr<ExecutionEngine> engine;
  std::map<std::string, Signature> signatures;
};

} // namespace

PYBIND11_MODULE(_kvcache, m) {
  m.doc() = "kvcache-mlir compiler bindings (use the kvcache package)";
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer)
        std::rethrow_exception(pointer);
    } catch (const CompileFailure &failure) {
      translateCompileFailure(failure);
    }
  });

  py::class_<PyModule>(m, "Module")
      .def_static("parse", &PyModule::parse, py::arg("text"),
                  py::arg("filename") = "<string>",
                  "Parses and verifies a module from MLIR text.")
      .def("to_string", &PyModule::print, py::arg("generic") = false,
           py::arg("debug_info") = false)
      .def("__str__",
           [](const PyModule &module) { return module.print(false, false); })
      .def("verify", &PyModule::verify)
      .def("clone", &PyModule::clone)
      .def("run_pipeline", &PyModule::runPipeline, py::arg("pipeline"),
           "Runs a textual pass pipeline on the module, in place.")
      .def("lower_to_ptx", &PyModule::lowerToPTX, py::arg("chip"),
           py::arg("opt_level"), py::arg("checked"),
           "Runs the kvcache-to-ptx pipeline on the module, in place.")
      .def("lower_to_emulated_gpu", &PyModule::lowerToEmulatedGPU,
           py::arg("chip"), py::arg("opt_level"), py::arg("checked"),
           "Runs the kvcache-to-emulated-gpu pipeline on the module, in "
           "place.")
      .def("collect_ptx", &PyModule::collectPTX)
      .def("functions", &PyModule::functions)
      .def("abi", &PyModule::describeArguments,
           "(name, [argument descriptions]) of each func.func: for a kvcache "
           "type the values its type interfaces lower it to "
           "(kvcache.abi.ArgumentABI).");

  m.def("describe_type", &describeType, py::arg("text"),
        "The description of one argument of type `text` (as Module.abi).");
#ifdef KVCACHE_INCLUDE_TESTS
  m.attr("HAS_TEST_DIALECTS") = true;
#else
  m.attr("HAS_TEST_DIALECTS") = false;
#endif

  py::class_<JitModule>(m, "JitModule")
      .def(py::init<const PyModule &, unsigned,
                    const std::vector<std::string> &, const std::string &>(),
           py::arg("module"), py::arg("opt_level"), py::arg("shared_libs"),
           py::arg("emulator_library") = "")
      .def("invoke", &JitModule::invoke, py::arg("name"), py::arg("values"))
      .def("function_names", &JitModule::functionNames);

  // Where kvcache.emulator looks for libKVCacheGPUEmulator.so.
  m.attr("EMULATOR_LIBRARY_NAME") = KVCACHE_EMULATOR_LIBRARY_NAME;
  m.attr("EMULATOR_BUILD_DIR") = KVCACHE_EMULATOR_BUILD_DIR;
  m.attr("INSTALL_LIBDIR") = KVCACHE_INSTALL_LIBDIR;
}
