//===- KVCacheModule.cpp - the kvcache._kvcache extension -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// A pybind11 module over MLIR's C++ API (Debian ships neither MLIR's Python
// package nor libMLIR-C.so), as Triton binds its compiler. This file holds
// only the bindings; the extension's files and their roles:
//
//   KVCacheModule.cpp  the bindings: Module (PyModule), describe_type,
//                      HAS_TEST_DIALECTS, JitModule and where
//                      kvcache.emulator looks for the emulator runtime;
//   Diagnostics.h/.cpp MLIR diagnostics collected (DiagnosticCollector)
//                      and raised as kvcache.errors.CompileError (message,
//                      diagnostics with locations);
//   PyModule.h/.cpp    the MLIR context shared by the process (every
//                      dialect and pass the tools register; in a test
//                      build, KVCACHE_INCLUDE_TESTS, the test dialects of
//                      test/lib, as kvcache-opt does) and Module: parse,
//                      verify, print, clone, run a textual pass pipeline,
//                      the kvcache-to-ptx and kvcache-to-emulated-gpu
//                      pipelines, list functions and describe their
//                      arguments, collect the PTX of gpu.binary ops;
//                      describe_type;
//   ArgumentABI.h/.cpp arguments described as the type interfaces lower
//                      them (Module.abi, describe_type);
//   JitModule.h/.cpp   an LLVM-dialect module compiled in-process by
//                      mlir::ExecutionEngine, functions called through
//                      their packed wrappers with one flat value per LLVM
//                      parameter; optionally linked against the GPU
//                      emulator runtime, whose capture mode records its
//                      check failures and device asserts: the launch ends,
//                      the call returns, then the extension raises
//                      kvcache.errors.EmulatorError; the compiler's check
//                      routines run before the functions they check, and
//                      their failures raise kvcache.errors.CheckError.
//
// The Python side (kvcache/*.py) maps numpy arrays and caches to the flat
// parameter lists by the argument descriptions.
//
//===----------------------------------------------------------------------===//

#include "Diagnostics.h"
#include "JitModule.h"
#include "PyModule.h"

#include "llvm/TargetParser/Host.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <exception>

namespace py = pybind11;
using namespace mlir::kvcache::python;

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
           py::arg("linalg_to_gpu") = false,
           "Runs the kvcache-to-ptx pipeline on the module, in place.")
      .def("lower_to_emulated_gpu", &PyModule::lowerToEmulatedGPU,
           py::arg("chip"), py::arg("opt_level"), py::arg("checked"),
           py::arg("linalg_to_gpu") = false,
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
  m.def(
      "host_cpu_features",
      [] {
        std::vector<std::string> names;
        for (const auto &entry : llvm::sys::getHostCPUFeatures())
          if (entry.second)
            names.push_back(entry.first().str());
        std::sort(names.begin(), names.end());
        return names;
      },
      "The features LLVM finds on this CPU (e.g. avx512bf16): what the JIT "
      "compiles for, and what kvcache-to-cpu{cpu-features=host} names.");
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
      .def("invoke", &JitModule::invoke, py::arg("name"), py::arg("values"),
           py::arg("check") = true,
           "Calls function `name` with one value per LLVM parameter, after "
           "its check routine (unless `check` is false).")
      .def("function_names", &JitModule::functionNames)
      .def("checked_functions", &JitModule::checkedFunctions,
           "The functions that have a check routine (kvcache_check_<name>).")
      .def_property_readonly("captures_checks", &JitModule::capturesChecks);

  // Where kvcache.emulator looks for libKVCacheGPUEmulator.so.
  m.attr("EMULATOR_LIBRARY_NAME") = KVCACHE_EMULATOR_LIBRARY_NAME;
  m.attr("EMULATOR_BUILD_DIR") = KVCACHE_EMULATOR_BUILD_DIR;
  m.attr("INSTALL_LIBDIR") = KVCACHE_INSTALL_LIBDIR;
}
