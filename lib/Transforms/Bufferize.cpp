//===- Bufferize.cpp - kvcache-bufferize ------------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// A tensor-level module to the memref form the kernel lowerings take:
// one-shot-bufferize with identity layouts at function boundaries, then the
// results of destination-style functions (an argument's buffer returned)
// dropped, public functions included, so callers supply the outputs. A
// program in which that would copy a cache is rejected before (the checks
// of CollectionValues.h). With `gpu-alloc` the buffers it creates are device
// memory (gpu.alloc).
//
//===----------------------------------------------------------------------===//

#include "CollectionValues.h"

#include "KVCache/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::kvcache {
#define GEN_PASS_DEF_KVCACHEBUFFERIZE
#include "KVCache/Transforms/Passes.h.inc"
} // namespace mlir::kvcache

using namespace mlir;
using namespace mlir::kvcache;

/// Whether any value in `module` has a tensor type.
static bool hasTensorValues(ModuleOp module) {
  auto isTensor = [](Value value) { return isa<TensorType>(value.getType()); };
  WalkResult result = module->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        if (llvm::any_of(block.getArguments(), isTensor))
          return WalkResult::interrupt();
    if (llvm::any_of(op->getOperands(), isTensor) ||
        llvm::any_of(op->getResults(), isTensor))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// The number of the entry-block argument of `func` that `value` is, if it
/// is one.
static std::optional<unsigned> getArgumentNumber(func::FuncOp func,
                                                 Value value) {
  auto argument = dyn_cast<BlockArgument>(value);
  if (!argument || argument.getOwner() != &func.front())
    return std::nullopt;
  return argument.getArgNumber();
}

/// For each result of `func`, the entry-block argument every return gives
/// for it, if there is one.
static SmallVector<std::optional<unsigned>>
getReturnedArguments(func::FuncOp func) {
  SmallVector<func::ReturnOp> returns;
  func.walk([&](func::ReturnOp ret) { returns.push_back(ret); });
  SmallVector<std::optional<unsigned>> returned(func.getNumResults());
  if (returns.empty())
    return returned;
  for (unsigned index = 0; index < func.getNumResults(); ++index) {
    returned[index] = getArgumentNumber(func, returns[0].getOperand(index));
    for (func::ReturnOp ret : ArrayRef(returns).drop_front())
      if (getArgumentNumber(func, ret.getOperand(index)) != returned[index])
        returned[index] = std::nullopt;
  }
  return returned;
}

/// Drops the results of `func` that return an argument, and of its calls in
/// `module`, whose uses take the call's operand instead.
static void dropReturnedArguments(func::FuncOp func, ModuleOp module) {
  SmallVector<std::optional<unsigned>> returned = getReturnedArguments(func);
  llvm::BitVector dropped(func.getNumResults());
  for (auto [index, argument] : llvm::enumerate(returned))
    if (argument)
      dropped.set(index);
  if (dropped.none())
    return;
  func.walk([&](func::ReturnOp ret) { ret->eraseOperands(dropped); });
  if (failed(func.eraseResults(dropped)))
    return;
  std::optional<SymbolTable::UseRange> uses = func.getSymbolUses(module);
  if (!uses)
    return;
  for (SymbolTable::SymbolUse use : *uses) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    if (!call)
      continue;
    OpBuilder builder(call);
    auto newCall = func::CallOp::create(builder, call.getLoc(), func,
                                        call.getOperands());
    unsigned kept = 0;
    for (auto [index, result] : llvm::enumerate(call.getResults()))
      result.replaceAllUsesWith(
          returned[index] ? call.getOperand(*returned[index])
                          : newCall.getResult(kept++));
    call.erase();
  }
}

/// Creates the asynchronous GPU op `create(tokenType, dependency)` on a new
/// stream and waits for it: synchronous code in the form gpu-to-llvm lowers
/// (its gpu.alloc and gpu.memcpy need one dependency).
template <typename CreateFn>
static Operation *createAndWait(OpBuilder &builder, Location loc,
                                CreateFn create) {
  Type tokenType = gpu::AsyncTokenType::get(builder.getContext());
  Value stream =
      gpu::WaitOp::create(builder, loc, tokenType, ValueRange()).getAsyncToken();
  Operation *op = create(tokenType, stream);
  gpu::WaitOp::create(builder, loc, Type(),
                      cast<gpu::AsyncOpInterface>(op).getAsyncToken());
  return op;
}

/// Makes `options` create device memory: gpu.alloc for buffers, gpu.memcpy
/// for copies.
static void allocateOnTheGPU(bufferization::OneShotBufferizationOptions &options) {
  options.allocationFn = [](OpBuilder &builder, Location loc, MemRefType type,
                            ValueRange dynamicSizes,
                            unsigned /*alignment*/) -> FailureOr<Value> {
    Operation *alloc =
        createAndWait(builder, loc, [&](Type tokenType, Value stream) {
          return gpu::AllocOp::create(builder, loc, type, tokenType, stream,
                                      dynamicSizes,
                                      /*symbolOperands=*/ValueRange());
        });
    return cast<gpu::AllocOp>(alloc).getMemref();
  };
  options.memCpyFn = [](OpBuilder &builder, Location loc, Value from,
                        Value to) {
    createAndWait(builder, loc, [&](Type tokenType, Value stream) {
      return gpu::MemcpyOp::create(builder, loc, tokenType, stream, to, from);
    });
    return success();
  };
}

namespace {

struct KVCacheBufferize
    : public kvcache::impl::KVCacheBufferizeBase<KVCacheBufferize> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!hasTensorValues(module))
      return;
    bufferization::OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(
        bufferization::LayoutMapOption::IdentityLayoutMap);
    if (gpuAlloc)
      allocateOnTheGPU(options);
    // runOneShotModuleBufferize's steps, with the checks between the
    // analysis and the copies it decides.
    if (failed(verifyCollectionValues(module)))
      return signalPassFailure();
    bufferization::OneShotAnalysisState analysis(module, options);
    bufferization::BufferizationState state;
    if (failed(bufferization::analyzeModuleOp(module, analysis)) ||
        failed(verifyCachesInPlace(module, analysis)) ||
        failed(bufferization::insertTensorCopies(module, analysis, state)) ||
        failed(bufferization::bufferizeModuleOp(module, options, state)))
      return signalPassFailure();
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        dropReturnedArguments(func, module);
  }
};

} // namespace
