//===- MergeGPUModules.cpp - kvcache-merge-gpu-modules ----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::kvcache {
#define GEN_PASS_DEF_KVCACHEMERGEGPUMODULES
#include "KVCache/Transforms/Passes.h.inc"
} // namespace mlir::kvcache

using namespace mlir;

/// Returns `name`, or `name_N` with the smallest N free in both tables.
static StringAttr getUniqueName(StringAttr name, SymbolTable &source,
                                SymbolTable &target) {
  if (!target.lookup(name))
    return name;
  for (unsigned suffix = 0;; ++suffix) {
    auto candidate = StringAttr::get(name.getContext(),
                                     name.getValue() + "_" + Twine(suffix));
    if (!target.lookup(candidate) && !source.lookup(candidate))
      return candidate;
  }
}

/// Moves every symbol of `source` into `target`, renaming definitions whose
/// names are taken and dropping declarations `target` already has. Records
/// the new name of each moved symbol in `renamed`.
static LogicalResult mergeInto(gpu::GPUModuleOp target,
                               gpu::GPUModuleOp source,
                               DenseMap<StringAttr, StringAttr> &renamed) {
  // Module attributes (targets, data layout) carry over; conflicting ones
  // cannot be merged.
  for (NamedAttribute attr : source->getAttrs()) {
    if (attr.getName() == SymbolTable::getSymbolAttrName())
      continue;
    Attribute existing = target->getAttr(attr.getName());
    if (existing && existing != attr.getValue())
      return source.emitError("cannot merge gpu.module @")
             << source.getName() << " into @" << target.getName()
             << ": their '" << attr.getName().getValue()
             << "' attributes differ; give every gpu.module the same one";
    target->setAttr(attr.getName(), attr.getValue());
  }
  SymbolTable targetTable(target);
  SymbolTable sourceTable(source);
  for (Operation &op : llvm::make_early_inc_range(*source.getBody())) {
    auto symbol = dyn_cast<SymbolOpInterface>(&op);
    if (!symbol) {
      op.moveBefore(target.getBody(), target.getBody()->end());
      continue;
    }
    StringAttr name = symbol.getNameAttr();
    if (symbol.isDeclaration() && targetTable.lookup(name)) {
      renamed[name] = name;
      op.erase();
      continue;
    }
    StringAttr newName = getUniqueName(name, sourceTable, targetTable);
    if (newName != name) {
      // Uses inside `source` are rewritten; a failure here means an op
      // holds a symbol reference the symbol table cannot walk.
      if (failed(SymbolTable::replaceAllSymbolUses(&op, newName, source)))
        return op.emitError("cannot rename @")
               << name.getValue() << " while merging gpu.modules: a symbol "
               << "use in @" << source.getName() << " cannot be rewritten";
      symbol.setName(newName);
    }
    renamed[name] = newName;
    op.moveBefore(target.getBody(), target.getBody()->end());
    targetTable.insert(&op);
  }
  return success();
}

namespace {
struct KVCacheMergeGPUModulesPass
    : kvcache::impl::KVCacheMergeGPUModulesBase<KVCacheMergeGPUModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> gpuModules(
        module.getOps<gpu::GPUModuleOp>());
    if (gpuModules.size() < 2)
      return;
    gpu::GPUModuleOp target = gpuModules.front();
    // Kernel references `@source::@name`, by source module.
    DenseMap<StringAttr, DenseMap<StringAttr, StringAttr>> renamedBySource;
    for (gpu::GPUModuleOp source : llvm::drop_begin(gpuModules)) {
      if (failed(mergeInto(target, source,
                           renamedBySource[source.getNameAttr()])))
        return signalPassFailure();
      source.erase();
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = renamedBySource.find(launch.getKernelModuleName());
      if (it == renamedBySource.end())
        return;
      StringAttr kernel = it->second.lookup(launch.getKernelName());
      launch.setKernelAttr(SymbolRefAttr::get(
          target.getNameAttr(), {FlatSymbolRefAttr::get(kernel)}));
    });
  }
};
} // namespace
