//===- consumer.cpp - embed kvcache-mlir through its C++ API ----*- C++ -*-===//
//
// kvcache-consumer FILE.mlir PTX-FILE [--registration=all|dialects|extensions]
//
// Registers with registerAllDialectsAndPasses (KVCache/InitAll.h), parses
// the kvcache IR in FILE, runs convert-kvcache-to-scf and
// convert-kvcache-to-memref built with the C++ API and prints the result, then runs kvcache-to-cpu, kvcache-to-ptx and
// kvcache-to-emulated-gpu from textual pipelines, each on a fresh parse, and
// says whether each lowered everything; the PTX goes to PTX-FILE.
//
// --registration registers less, as embedders did before the one call:
// `dialects` the kvcache dialect, func and our passes; `extensions` also
// MLIR's registerAllExtensions (the emulated pipeline then runs, the PTX one
// lacks the LLVM IR translations). A pipeline must then fail with a
// diagnostic that names the call, never crash.
//
//===----------------------------------------------------------------------===//

#include "KVCache/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <string>

using namespace mlir;

/// Registers what `mode` says on `registry`; false for an unknown mode.
static bool registerFor(llvm::StringRef mode, DialectRegistry &registry) {
  if (mode == "all") {
    kvcache::registerAllDialectsAndPasses(registry);
    return true;
  }
  if (mode != "dialects" && mode != "extensions")
    return false;
  registry.insert<func::FuncDialect>();
  kvcache::registerAllDialects(registry);
  kvcache::registerAllPasses();
  if (mode == "extensions")
    registerAllExtensions(registry);
  return true;
}

/// The ops of `module` that are not LLVM dialect (or the module, or the
/// gpu.binary and gpu.launch_func ops of kvcache-to-ptx's host code), by
/// name: what a pipeline left unlowered.
static std::string findUnlowered(ModuleOp module) {
  std::set<std::string> left;
  module->walk([&](Operation *op) {
    StringRef dialect = op->getName().getDialectNamespace();
    if (op != module && dialect != "llvm" && !isa<gpu::BinaryOp, gpu::LaunchFuncOp>(op))
      left.insert(op->getName().getStringRef().str());
  });
  return left.empty() ? "lowered" : "left " + llvm::join(left, ", ");
}

/// Writes the PTX of every gpu.binary of `module` to `path`; the number of
/// kernel binaries.
static int writePTX(ModuleOp module, StringRef path) {
  std::error_code error;
  llvm::raw_fd_ostream os(path, error, llvm::sys::fs::OF_Text);
  int binaries = 0;
  module->walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects()) {
      os << cast<gpu::ObjectAttr>(object).getObject().getValue();
      ++binaries;
    }
  });
  return error ? -1 : binaries;
}

/// Runs the textual `pipeline` on a fresh parse of `file` and prints one
/// line on what it gave; false when it failed.
static bool runPipeline(MLIRContext &context, const char *file,
                        StringRef pipeline, StringRef ptxPath) {
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(file, &context);
  PassManager pm(&context);
  if (!module || failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    return false;
  StringRef name = pipeline.split('{').first;
  if (failed(pm.run(*module))) {
    llvm::outs() << "// " << name << ": failed\n";
    return false;
  }
  llvm::outs() << "// " << name << ": " << findUnlowered(*module);
  if (name == "kvcache-to-ptx")
    llvm::outs() << ", " << writePTX(*module, ptxPath) << " binary";
  llvm::outs() << "\n";
  return true;
}

int main(int argc, char **argv) {
  StringRef mode = "all";
  if (argc == 4 && StringRef(argv[3]).starts_with("--registration="))
    mode = StringRef(argv[3]).drop_front(strlen("--registration="));
  DialectRegistry registry;
  if ((argc != 3 && argc != 4) || !registerFor(mode, registry)) {
    llvm::errs() << "usage: kvcache-consumer FILE.mlir PTX-FILE "
                    "[--registration=all|dialects|extensions]\n";
    return 2;
  }
  MLIRContext context(registry);

  // The C++ API: passes of ours, built and run directly.
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  PassManager pm(&context);
  pm.addPass(createConvertKVCacheToSCF());
  pm.addPass(createConvertKVCacheToMemRef());
  if (failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());

  // The pass registry, as a user's textual pipelines: every pipeline runs,
  // so that each failure is reported.
  bool ok = true;
  for (StringRef pipeline :
       {"kvcache-to-cpu", "kvcache-to-ptx{chip=sm_80}",
        "kvcache-to-emulated-gpu{chip=sm_80}"})
    ok &= runPipeline(context, argv[1], pipeline, argv[2]);
  return ok ? 0 : 1;
}
