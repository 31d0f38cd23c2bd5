//===- ToolRegistration.h - what every kvcache tool registers ---*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The one place that says what our tools that take any MLIR (kvcache-opt,
// kvcache-lsp-server, kvcache-reduce, kvcache-fuzz) and the Python module
// load: every upstream dialect, extension, pass and LLVM IR translation, plus
// everything of kvcache-mlir (registerAllDialectsAndPasses,
// KVCache/InitAll.h). Compiled once in MLIRKVCacheToolRegistration: MLIR's
// "register everything" headers are expensive to parse. Not installed and
// not in libKVCacheMLIR.so: embedders call registerAllDialectsAndPasses.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_TOOLS_TOOLREGISTRATION_H
#define KVCACHE_TOOLS_TOOLREGISTRATION_H

namespace mlir {
class DialectRegistry;

namespace kvcache {

/// Adds every upstream dialect and extension, the LLVM IR translations
/// (GPU ones included, for gpu-module-to-binary) and the kvcache dialect,
/// and registers the kvcache passes (registerAllDialectsAndPasses).
void registerToolDialects(DialectRegistry &registry);

/// Registers every upstream pass and every kvcache pass and pipeline with
/// the global registry. Safe to call more than once.
void registerToolPasses();

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_TOOLS_TOOLREGISTRATION_H
