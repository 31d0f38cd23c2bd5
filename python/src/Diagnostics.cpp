//===- Diagnostics.cpp - MLIR diagnostics as Python exceptions --*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Flattens MLIR diagnostics (severity, `file:line:col`, message, notes) into
// records, joins them into CompileError's message and builds the Python
// exception from them.
//
//===----------------------------------------------------------------------===//

#include "Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace mlir::kvcache::python {
namespace {

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

/// The severity as CompileError's diagnostics name it.
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

} // namespace

DiagnosticCollector::DiagnosticCollector(MLIRContext *context)
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

void DiagnosticCollector::fail(const std::string &fallback) {
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

void DiagnosticCollector::forwardWarnings() {
  for (const DiagnosticRecord &record : records)
    if (record.severity == "warning" &&
        PyErr_WarnEx(PyExc_RuntimeWarning,
                     (record.location + ": " + record.message).c_str(),
                     1) < 0)
      throw py::error_already_set(); // warnings turned into errors
  records.clear();
}

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

} // namespace mlir::kvcache::python
