//===- JitModule.h - LLVM-dialect modules run in-process --------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache._kvcache.JitModule: an LLVM-dialect module compiled in-process by
// mlir::ExecutionEngine, its functions called through their packed wrappers
// with one flat value per LLVM parameter (kvcache.CPUModule and
// kvcache.EmulatedGPUModule map numpy arrays and caches to those). Code from
// kvcache-to-emulated-gpu runs against the GPU emulator runtime
// (libKVCacheGPUEmulator.so) in its capture mode: a check failure or a
// device assert is recorded, its launch ends and the call returns, then
// the call raises kvcache.errors.EmulatorError. A function F with a check
// routine (`kvcache_check_F`, added by the compiler: docs/Contract.md 5) is
// checked before it runs, on the same packed values, and not run when the
// check fails; code lowered with checked=true records the failures of its
// own checks (capture mode) instead of aborting. Both raise
// kvcache.errors.CheckError.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_PYTHON_JITMODULE_H
#define KVCACHE_PYTHON_JITMODULE_H

#include "PyModule.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"

#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mlir::kvcache::python {

/// How one LLVM parameter or result crosses the packed-call boundary.
enum class ScalarKind { Pointer, I1, I8, I16, I32, I64, F32, F64 };

/// The control interface of a loaded GPU emulator runtime (JitModule.cpp).
struct EmulatorRuntime;

/// An LLVM-dialect module compiled by mlir::ExecutionEngine. Every function
/// gets a packed wrapper `_mlir_<name>(void **)`; its arguments are the LLVM
/// parameters (memrefs already expanded to their descriptor fields). With
/// an emulator library (code from kvcache-to-emulated-gpu), the library is
/// loaded first and each call runs in its capture mode, one emulated call
/// of the process at a time.
///
/// The compiler's run-time checks: each function F whose check routine
/// `kvcache_check_F` (F's LLVM parameters, then a `memref<?xi8>` message
/// buffer; returns i32, non-zero on a failure) the module defines is
/// checked before every call, and not called when the check fails. A module
/// lowered with checked=true (it defines `kvcache_check_capture` and
/// `kvcache_check_failure`) runs in the checks' capture mode: a failed
/// check inside a function is recorded and the function returns at once;
/// the call then raises. One such call of the module at a time.
class JitModule {
public:
  /// Compiles `module` (LLVM dialect) at `optLevel`, resolving external
  /// symbols in `sharedLibs` and, unless empty, `emulatorLibrary`;
  /// CompileError when it does not compile.
  JitModule(const PyModule &module, unsigned optLevel,
            const std::vector<std::string> &sharedLibs,
            const std::string &emulatorLibrary);

  /// Calls `name` with one Python int/float per LLVM parameter; returns its
  /// result (None for void). Unless `check` is false, runs its check
  /// routine first, when it has one. CheckError when a check failed (the
  /// function was then not called, or returned before it wrote anything),
  /// EmulatorError when the emulator recorded a failure.
  pybind11::object invoke(const std::string &name,
                          const pybind11::sequence &values, bool check = true);

  /// The functions with a body, sorted.
  std::vector<std::string> functionNames() const;

  /// The functions that have a check routine, sorted.
  std::vector<std::string> checkedFunctions() const;

  /// Whether the module records the failures of its own checks (it was
  /// lowered with checked=true).
  bool capturesChecks() const { return checkFailure != nullptr; }

private:
  /// The LLVM signature of a function; `valid` when every parameter and
  /// the result have a ScalarKind.
  struct Signature {
    std::vector<ScalarKind> params;
    std::optional<ScalarKind> result;
    bool valid = false;
  };

  /// A packed wrapper: `entry(pointers to the arguments and the result)`.
  using PackedFunction = void (*)(void **);

  /// Finds the check routines and the capture interface (after the engine
  /// is built) and turns the capture mode on.
  void findChecks();

  /// What went wrong in a call.
  struct CallOutcome {
    /// The emulator recorded a failure (one that ended a launch, or every
    /// one under KVCACHE_EMU_ON_ERROR=continue); `reports` its lines.
    bool emulatorFailed = false;
    std::string reports;
    /// The message of a check that failed inside the call (capture mode).
    std::string checkFailure;
  };

  /// Calls `entry` without the GIL, on the emulator when there is one.
  CallOutcome call(PackedFunction entry, void **arguments);

  /// Reads and clears the message of a check failed inside the last call.
  std::string takeCheckFailure();

  const EmulatorRuntime *emulator = nullptr;
  std::unique_ptr<ExecutionEngine> engine;
  std::map<std::string, Signature> signatures;
  /// The check routine of each function that has one, by its name.
  std::map<std::string, PackedFunction> checks;
  /// kvcache_check_capture and kvcache_check_failure, when defined.
  PackedFunction setCheckCapture = nullptr;
  PackedFunction checkFailure = nullptr;
  /// The recorded check failure is the module's: one call at a time.
  std::mutex captureMutex;
};

} // namespace mlir::kvcache::python

#endif // KVCACHE_PYTHON_JITMODULE_H
