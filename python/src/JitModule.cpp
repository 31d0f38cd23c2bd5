//===- JitModule.cpp - LLVM-dialect modules run in-process ------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The packed calls of JitModule (Python values to 8-byte slots and back)
// and the GPU emulator runtime's control interface: the runtime is loaded
// with dlopen (RTLD_GLOBAL, so that the JIT resolves the emulated code's
// calls to it), each emulated call runs in its capture mode, and the
// failures it recorded are raised as kvcache.errors.EmulatorError once the
// call has returned. The compiler's check routines run before the functions
// they check, on the same packed values; their failures, and those that
// code lowered with checked=true records in its capture mode, are raised as
// kvcache.errors.CheckError.
//
//===----------------------------------------------------------------------===//

#include "JitModule.h"

#include "Diagnostics.h"

#include "KVCache/ExecutionEngine/GPUEmulator.h"
#include "KVCache/Pipelines/Pipelines.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"

#include "llvm/Support/TargetSelect.h"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include <dlfcn.h>

namespace py = pybind11;

namespace mlir::kvcache::python {

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

namespace {

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

/// Raises kvcache.errors.CheckError: a check of `function` failed with
/// `message`.
[[noreturn]] void raiseCheckError(const std::string &function,
                                  const std::string &message) {
  py::object errorType =
      py::module_::import("kvcache.errors").attr("CheckError");
  py::object error = errorType(function, message);
  PyErr_SetObject(errorType.ptr(), error.ptr());
  throw py::error_already_set();
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
// Packed-call values
//===----------------------------------------------------------------------===//

/// The ScalarKind of an LLVM parameter or result type; none for a struct,
/// a vector, a half scalar or an integer of another width.
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

/// Stores the Python value `value` into `slot` as a `kind`.
void storeScalar(ScalarKind kind, py::handle value, uint64_t *slot) {
  auto store = [&](auto scalar) { std::memcpy(slot, &scalar, sizeof scalar); };
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

/// The `kind` in `slot` as a Python value.
py::object loadScalar(ScalarKind kind, const uint64_t *slot) {
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

//===----------------------------------------------------------------------===//
// The compiler's run-time checks
//===----------------------------------------------------------------------===//

/// The prefix of a check routine's name: `kvcache_check_<function>`.
constexpr llvm::StringLiteral kCheckPrefix = "kvcache_check_";

/// The size of the message buffer a check routine gets (the compiler's
/// messages fit, truncated if need be).
constexpr size_t kCheckMessageSize = 1024;

/// The LLVM parameters a check routine takes after its function's: the
/// expanded descriptor of its `memref<?xi8>` message buffer.
constexpr ScalarKind kMessageParams[] = {ScalarKind::Pointer,
                                         ScalarKind::Pointer, ScalarKind::I64,
                                         ScalarKind::I64, ScalarKind::I64};

/// Runs the check routine `check` on the packed arguments `arguments` of
/// the function it checks (one pointer per parameter); returns the message
/// of a failure, or "" when every check held.
std::string runCheck(void (*check)(void **), ArrayRef<void *> arguments) {
  alignas(16) char message[kCheckMessageSize] = {};
  uint64_t descriptor[] = {reinterpret_cast<uintptr_t>(message),
                           reinterpret_cast<uintptr_t>(message), 0,
                           kCheckMessageSize, 1};
  uint64_t result = 0;
  SmallVector<void *> pointers(arguments.begin(), arguments.end());
  for (uint64_t &field : descriptor)
    pointers.push_back(&field);
  pointers.push_back(&result);
  check(pointers.data());
  int32_t failed;
  std::memcpy(&failed, &result, sizeof failed);
  if (!failed)
    return "";
  message[kCheckMessageSize - 1] = 0;
  return *message ? std::string(message) : "a run-time check failed";
}

} // namespace

//===----------------------------------------------------------------------===//
// JitModule
//===----------------------------------------------------------------------===//

JitModule::JitModule(const PyModule &module, unsigned optLevel,
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
  // The engine has loaded the shared libraries: a missing OpenMP runtime is
  // named before the first lookup, which would only fail to materialize.
  if (failed(verifyOpenMPRuntimeLoaded(module.get())))
    diagnostics.fail("cannot run the module on the CPU");
  engine = std::move(*created);
  engine->initialize();
  findChecks();
}

void JitModule::findChecks() {
  auto lookup = [&](StringRef name) -> PackedFunction {
    auto function = engine->lookupPacked(name);
    if (!function)
      throw std::runtime_error("cannot find '" + name.str() + "': " +
                               llvm::toString(function.takeError()));
    return *function;
  };
  for (const auto &[name, signature] : signatures) {
    auto checked = signatures.find((kCheckPrefix + name).str());
    if (!signature.valid || checked == signatures.end())
      continue;
    // The routine takes the function's parameters and the message buffer,
    // and returns an i32: anything else is not a check routine.
    SmallVector<ScalarKind> expected(signature.params.begin(),
                                     signature.params.end());
    expected.append(std::begin(kMessageParams), std::end(kMessageParams));
    if (checked->second.valid &&
        ArrayRef<ScalarKind>(checked->second.params) ==
            ArrayRef<ScalarKind>(expected) &&
        checked->second.result == ScalarKind::I32)
      checks[name] = lookup(checked->first);
  }
  auto capture = signatures.find((kCheckPrefix + "capture").str());
  auto failure = signatures.find((kCheckPrefix + "failure").str());
  if (capture == signatures.end() || failure == signatures.end())
    return;
  if (capture->second.params != std::vector<ScalarKind>{ScalarKind::I32} ||
      failure->second.result != ScalarKind::Pointer)
    throw std::runtime_error("kvcache_check_capture and kvcache_check_failure "
                             "do not have the checked mode's signatures");
  setCheckCapture = lookup(capture->first);
  checkFailure = lookup(failure->first);
  // Record failures instead of aborting the process (this clears the
  // recorded message too).
  uint64_t on = 1;
  void *pointers[] = {&on};
  setCheckCapture(pointers);
}

std::string JitModule::takeCheckFailure() {
  uint64_t result = 0;
  void *pointers[] = {&result};
  checkFailure(pointers);
  const char *message = reinterpret_cast<const char *>(result);
  if (!message || !*message)
    return "";
  std::string text(message);
  uint64_t on = 1;
  void *capture[] = {&on};
  setCheckCapture(capture); // clears the message
  return text;
}

py::object JitModule::invoke(const std::string &name,
                             const py::sequence &values, bool check) {
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
  auto routine = checks.find(name);
  if (check && routine != checks.end()) {
    std::string message = runCheck(
        routine->second, ArrayRef<void *>(pointers).take_front(
                             signature.params.size()));
    if (!message.empty())
      raiseCheckError(name, message);
  }
  CallOutcome outcome = call(*function, pointers.data());
  if (outcome.emulatorFailed)
    raiseEmulatorError(outcome.reports);
  if (!outcome.checkFailure.empty())
    raiseCheckError(name, outcome.checkFailure);
  if (!signature.result)
    return py::none();
  return loadScalar(*signature.result, &slots.back());
}

std::vector<std::string> JitModule::functionNames() const {
  std::vector<std::string> names;
  for (const auto &entry : signatures)
    names.push_back(entry.first);
  return names;
}

std::vector<std::string> JitModule::checkedFunctions() const {
  std::vector<std::string> names;
  for (const auto &entry : checks)
    names.push_back(entry.first);
  return names;
}

JitModule::CallOutcome JitModule::call(PackedFunction entry,
                                       void **arguments) {
  CallOutcome outcome;
  py::gil_scoped_release release;
  std::unique_lock<std::mutex> captured(captureMutex, std::defer_lock);
  if (capturesChecks())
    captured.lock();
  if (!emulator) {
    entry(arguments);
  } else {
    std::lock_guard<std::mutex> lock(emulatorMutex());
    outcome.emulatorFailed =
        callCapturing(*emulator, entry, arguments, outcome.reports) > 0;
    std::fflush(stdout); // device printf, before Python prints more
  }
  if (capturesChecks())
    outcome.checkFailure = takeCheckFailure();
  return outcome;
}

} // namespace mlir::kvcache::python
