//===- consumer.cpp - embed kvcache-mlir through its C++ API ----*- C++ -*-===//
//
// Parses the kvcache IR in argv[1], runs convert-kvcache-to-memref (built
// with the C++ API and, once more, from a textual pipeline) and prints it.
//
//===----------------------------------------------------------------------===//

#include "KVCache/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: kvcache-consumer FILE.mlir\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect>();
  mlir::kvcache::registerAllDialects(registry);
  mlir::kvcache::registerAllPasses();
  mlir::MLIRContext context(registry);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;

  mlir::PassManager pm(&context);
  pm.addPass(mlir::createConvertKVCacheToMemRef());
  if (mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());

  // The same through the pass registry, as a user's textual pipeline.
  mlir::OwningOpRef<mlir::ModuleOp> again =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  auto textual = mlir::parsePassPipeline("builtin.module(kvcache-to-cpu)");
  if (!again || mlir::failed(textual))
    return 1;
  mlir::PassManager cpu(&context);
  static_cast<mlir::OpPassManager &>(cpu) = *textual;
  if (mlir::failed(cpu.run(*again)))
    return 1;
  llvm::outs() << "// kvcache-to-cpu: "
               << ((*again)->walk([](mlir::Operation *op) {
                      return op->getDialect() &&
                                     op->getDialect()->getNamespace() ==
                                         "kvcache"
                                 ? mlir::WalkResult::interrupt()
                                 : mlir::WalkResult::advance();
                    }).wasInterrupted()
                       ? "kvcache ops left"
                       : "lowered")
               << "\n";
  return 0;
}
