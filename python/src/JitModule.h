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
// the call raises kvcache.errors.EmulatorError.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_PYTHON_JITMODULE_H
#define KVCACHE_PYTHON_JITMODULE_H

#include "PyModule.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"

#include <pybind11/pybind11.h>

#include <map>
#include <memory>
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
class JitModule {
public:
  /// Compiles `module` (LLVM dialect) at `optLevel`, resolving external
  /// symbols in `sharedLibs` and, unless empty, `emulatorLibrary`;
  /// CompileError when it does not compile.
  JitModule(const PyModule &module, unsigned optLevel,
            const std::vector<std::string> &sharedLibs,
            const std::string &emulatorLibrary);

  /// Calls `name` with one Python int/float per LLVM parameter; returns its
  /// result (None for void). EmulatorError when the emulator recorded a
  /// failure.
  pybind11::object invoke(const std::string &name,
                          const pybind11::sequence &values);

  /// The functions with a body, sorted.
  std::vector<std::string> functionNames() const;

private:
  /// The LLVM signature of a function; `valid` when every parameter and
  /// the result have a ScalarKind.
  struct Signature {
    std::vector<ScalarKind> params;
    std::optional<ScalarKind> result;
    bool valid = false;
  };

  /// Runs `entry` on the emulator; raises EmulatorError when it recorded a
  /// failure (one that ended a launch, or every one under
  /// KVCACHE_EMU_ON_ERROR=continue).
  void runEmulated(void (*entry)(void **), void **arguments);

  const EmulatorRuntime *emulator = nullptr;
  std::unique_ptr<ExecutionEngine> engine;
  std::map<std::string, Signature> signatures;
};

} // namespace mlir::kvcache::python

#endif // KVCACHE_PYTHON_JITMODULE_H
