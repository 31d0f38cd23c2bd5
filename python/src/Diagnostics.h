//===- Diagnostics.h - MLIR diagnostics as Python exceptions ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The bindings collect the MLIR diagnostics emitted while they parse, verify
// or lower a module instead of printing them, and raise them as
// kvcache.errors.CompileError (a message and the diagnostics with their
// locations); warnings of a success become Python warnings.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_PYTHON_DIAGNOSTICS_H
#define KVCACHE_PYTHON_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir::kvcache::python {

/// One MLIR diagnostic, flattened for Python.
struct DiagnosticRecord {
  std::string severity;
  std::string location;
  std::string message;
  std::vector<std::pair<std::string, std::string>> notes; // location, message
};

/// Thrown by the bindings; translated to kvcache.errors.CompileError by
/// translateCompileFailure.
struct CompileFailure {
  std::string summary;
  std::vector<DiagnosticRecord> diagnostics;
};

/// Collects every diagnostic emitted in its scope, instead of printing them.
class DiagnosticCollector : public ScopedDiagnosticHandler {
public:
  explicit DiagnosticCollector(MLIRContext *context);

  /// Raises CompileError with what was collected; `fallback` is the message
  /// when MLIR said nothing (a pass that failed silently, an LLVM error).
  [[noreturn]] void fail(const std::string &fallback);

  /// Turns collected warnings into Python warnings (after a success).
  void forwardWarnings();

private:
  std::vector<DiagnosticRecord> records;
};

/// Sets the Python error to the kvcache.errors.CompileError of `failure`
/// (the extension's exception translator calls it).
void translateCompileFailure(const CompileFailure &failure);

} // namespace mlir::kvcache::python

#endif // KVCACHE_PYTHON_DIAGNOSTICS_H
