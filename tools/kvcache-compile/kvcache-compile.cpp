//===- kvcache-compile.cpp - kvcache IR to one PTX file ---------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache-compile INPUT.mlir -o OUT.ptx [--chip sm_90] [--opt-level 3]
//                 [--checked] [--linalg-to-gpu] [--cubin]
//
// Runs the kvcache-to-ptx pipeline and writes the PTX of every kernel to one
// file; --cubin also assembles it with NVIDIA's ptxas when that is installed.
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"
#include "KVCache/Pipelines/Pipelines.h"
#include "KVCache/InitAll.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("kvcache-compile options");
static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<input .mlir>"),
                                          cl::init("-"), cl::cat(category));
static cl::opt<std::string> outputFilename("o", cl::desc("Output PTX file"),
                                           cl::value_desc("filename"),
                                           cl::init("-"), cl::cat(category));
static cl::opt<std::string> chip("chip", cl::desc("GPU architecture (sm_XX)"),
                                 cl::init("sm_90"), cl::cat(category));
static cl::opt<unsigned> optLevel("opt-level",
                                  cl::desc("LLVM optimization level (0-3)"),
                                  cl::init(3), cl::cat(category));
static cl::opt<bool> checked("checked",
                             cl::desc("Check every cache access at run time"),
                             cl::init(false), cl::cat(category));
static cl::opt<bool>
    linalgToGPU("linalg-to-gpu",
                cl::desc("Map the input's linalg ops to GPU kernels too "
                         "(kvcache-to-ptx{linalg-to-gpu=true})"),
                cl::init(false), cl::cat(category));
static cl::opt<bool> cubin("cubin",
                           cl::desc("Also assemble OUT.cubin with ptxas"),
                           cl::init(false), cl::cat(category));

/// Finds NVIDIA's assembler on PATH or in the default CUDA location.
static std::optional<std::string> findPtxas() {
  if (auto path = llvm::sys::findProgramByName("ptxas"))
    return *path;
  if (auto path =
          llvm::sys::findProgramByName("ptxas", {"/usr/local/cuda/bin"}))
    return *path;
  return std::nullopt;
}

/// Assembles `ptxPath` into `cubinPath` for `chip`.
static LogicalResult assembleCubin(StringRef ptxPath, StringRef cubinPath) {
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas) {
    llvm::errs() << "kvcache-compile: --cubin needs NVIDIA's ptxas, which is "
                    "not on PATH nor in /usr/local/cuda/bin; install the CUDA "
                    "toolkit or drop --cubin (the PTX was written to "
                 << ptxPath << ")\n";
    return failure();
  }
  std::string arch = "-arch=" + chip;
  SmallVector<StringRef> args = {*ptxas, arch, "-o", cubinPath, ptxPath};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*ptxas, args, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0) {
    llvm::errs() << "kvcache-compile: ptxas failed on " << ptxPath
                 << (message.empty() ? "" : ": ") << message << "\n";
    return failure();
  }
  return success();
}

/// The PTX of every gpu.binary object in `module`, in order.
static FailureOr<std::string> collectPTX(ModuleOp module) {
  std::string ptx;
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      ptx += cast<gpu::ObjectAttr>(object).getObject().getValue();
  });
  if (ptx.empty()) {
    llvm::errs() << "kvcache-compile: " << inputFilename
                 << ": error: no GPU kernels to compile: the input has no "
                    "gpu.module, gpu.launch or kvcache kernel op\n";
    return failure();
  }
  return ptx;
}

static LogicalResult compile(MLIRContext &context) {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << "kvcache-compile: " << errorMessage << "\n";
    return failure();
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failure();

  // The options first: a bad one must not reach LLVM's code generator.
  if (optLevel > 3) {
    llvm::errs() << "kvcache-compile: error: --opt-level must be 0, 1, 2 or 3, not "
                 << optLevel << "\n";
    return failure();
  }
  {
    // A message about the flag, not about a location in the input.
    ScopedDiagnosticHandler flagErrors(&context, [](Diagnostic &diag) {
      llvm::errs() << "kvcache-compile: error: --chip " << diag.str() << "\n";
      return success();
    });
    if (failed(kvcache::verifyChip(
            chip, [&] { return mlir::emitError(UnknownLoc::get(&context)); })))
      return failure();
  }

  PassManager pm(&context);
  kvcache::KVCacheToPTXOptions options;
  options.chip = chip;
  options.optLevel = optLevel;
  options.checked = checked;
  options.linalgToGPU = linalgToGPU;
  kvcache::buildKVCacheToPTXPipeline(pm, options);
  if (failed(pm.run(*module)))
    return failure();

  FailureOr<std::string> ptx = collectPTX(*module);
  if (failed(ptx))
    return failure();
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << "kvcache-compile: " << errorMessage << "\n";
    return failure();
  }
  output->os() << *ptx;
  output->keep();
  if (!cubin)
    return success();
  if (outputFilename == "-") {
    llvm::errs() << "kvcache-compile: --cubin needs an output file (-o)\n";
    return failure();
  }
  SmallString<128> cubinPath(outputFilename);
  llvm::sys::path::replace_extension(cubinPath, "cubin");
  output->os().flush();
  return assembleCubin(outputFilename, cubinPath);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "kvcache-compile: kvcache IR to one PTX file with every kernel\n");

  // What an embedder registers, and no more: every kvcache-compile run
  // checks that registerAllDialectsAndPasses is all kvcache-to-ptx needs.
  DialectRegistry registry;
  kvcache::registerAllDialectsAndPasses(registry);
  MLIRContext context(registry);
  return failed(compile(context)) ? 1 : 0;
}
