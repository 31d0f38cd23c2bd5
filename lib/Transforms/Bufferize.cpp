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
// memory (gpu.alloc). With `dealloc` the functions that bufferization gave
// buffers (or that call one returning a buffer) and that free nothing
// themselves get upstream's ownership-based deallocation (gpu.dealloc for
// gpu.alloc'd buffers). A partitioned module's shard.grid goes first: the
// per-device functions use none.
//
//===----------------------------------------------------------------------===//

#include "CollectionValues.h"

#include "KVCache/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Transforms.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::kvcache {
#define GEN_PASS_DEF_KVCACHEBUFFERIZE
#include "KVCache/Transforms/Passes.h.inc"
} // namespace mlir::kvcache

using namespace mlir;
using namespace mlir::kvcache;

/// Erases the shard.grid ops of `module` that nothing uses: what
/// shard-partition leaves of a head-sharded module (docs/Contract.md
/// section 3.7), which no lowering takes. A grid still used, by a collective
/// not lowered yet, is an error; one whose uses are unknown stays.
static LogicalResult eraseUnusedGrids(ModuleOp module) {
  for (auto grid : llvm::make_early_inc_range(module.getOps<shard::GridOp>())) {
    std::optional<SymbolTable::UseRange> uses =
        SymbolTable::getSymbolUses(grid, module);
    if (!uses)
      continue;
    if (uses->empty()) {
      grid.erase();
      continue;
    }
    Operation *user = uses->begin()->getUser();
    return user->emitError("kvcache-bufferize: '")
           << user->getName() << "' uses shard.grid @" << grid.getSymName()
           << ", which no lowering takes: lower the shard dialect's "
              "collectives first (convert-shard-to-mpi)";
  }
  return success();
}

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

/// Makes `options` create device memory: gpu.alloc for buffers, gpu.memcpy
/// for copies, in the synchronous form, which ownership-based deallocation
/// takes (makeAsynchronous then gives them the form gpu-to-llvm lowers).
static void
allocateOnTheGPU(bufferization::OneShotBufferizationOptions &options) {
  options.allocationFn = [](OpBuilder &builder, Location loc, MemRefType type,
                            ValueRange dynamicSizes,
                            unsigned /*alignment*/) -> FailureOr<Value> {
    return gpu::AllocOp::create(builder, loc, type, /*asyncToken=*/Type(),
                                /*asyncDependencies=*/ValueRange(),
                                dynamicSizes, /*symbolOperands=*/ValueRange())
        .getMemref();
  };
  options.memCpyFn = [](OpBuilder &builder, Location loc, Value from,
                        Value to) {
    gpu::MemcpyOp::create(builder, loc, /*asyncToken=*/Type(),
                          /*asyncDependencies=*/ValueRange(), to, from);
    return success();
  };
}

/// Replaces the synchronous gpu.alloc, gpu.memcpy and gpu.dealloc ops of
/// `module` not in `before` (kvcache-bufferize's) by their asynchronous form
/// on a new stream, then waits for it: synchronous code in the form
/// gpu-to-llvm lowers (its memory ops need one dependency).
static void makeAsynchronous(ModuleOp module,
                             const llvm::DenseSet<Operation *> &before) {
  SmallVector<Operation *> ops;
  module->walk([&](Operation *op) {
    if (isa<gpu::AllocOp, gpu::MemcpyOp, gpu::DeallocOp>(op) &&
        !before.contains(op) &&
        !cast<gpu::AsyncOpInterface>(op).getAsyncToken())
      ops.push_back(op);
  });
  Type tokenType = gpu::AsyncTokenType::get(module.getContext());
  for (Operation *op : ops) {
    OpBuilder builder(op);
    Location loc = op->getLoc();
    Value stream = gpu::WaitOp::create(builder, loc, tokenType, ValueRange())
                       .getAsyncToken();
    Operation *async;
    if (auto alloc = dyn_cast<gpu::AllocOp>(op))
      async = gpu::AllocOp::create(builder, loc, alloc.getType(), tokenType,
                                   stream, alloc.getDynamicSizes(),
                                   alloc.getSymbolOperands());
    else if (auto copy = dyn_cast<gpu::MemcpyOp>(op))
      async = gpu::MemcpyOp::create(builder, loc, tokenType, stream,
                                    copy.getDst(), copy.getSrc());
    else
      async = gpu::DeallocOp::create(builder, loc, tokenType, stream,
                                     cast<gpu::DeallocOp>(op).getMemref());
    gpu::WaitOp::create(builder, loc, Type(),
                        cast<gpu::AsyncOpInterface>(async).getAsyncToken());
    if (auto alloc = dyn_cast<gpu::AllocOp>(op))
      alloc.getMemref().replaceAllUsesWith(
          cast<gpu::AllocOp>(async).getMemref());
    op->erase();
  }
}

/// The allocations (host and device) and GPU copies and frees of `module`.
static llvm::DenseSet<Operation *> getMemoryOps(ModuleOp module) {
  llvm::DenseSet<Operation *> ops;
  module->walk([&](Operation *op) {
    if (isa<memref::AllocOp, gpu::AllocOp, gpu::MemcpyOp, gpu::DeallocOp>(op))
      ops.insert(op);
  });
  return ops;
}

/// Whether some op in `func` frees memory.
static bool freesMemory(func::FuncOp func) {
  WalkResult result = func.walk([](Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    return effects && effects.hasEffect<MemoryEffects::Free>()
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// The functions of `module` to free the buffers of: those with an
/// allocation not in `before` (bufferization's) or a call that returns a
/// buffer (which the caller owns), and no free of their own, which
/// upstream's ownership-based deallocation rejects. The others with
/// bufferization's allocations get a warning: their buffers stay unfreed.
static SmallVector<func::FuncOp>
getFunctionsToFree(ModuleOp module, const llvm::DenseSet<Operation *> &before) {
  SmallVector<func::FuncOp> functions;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto returnsBuffer = [](func::CallOp call) {
      return llvm::any_of(call.getResultTypes(), llvm::IsaPred<MemRefType>);
    };
    WalkResult allocates = func.walk([&](Operation *op) {
      auto call = dyn_cast<func::CallOp>(op);
      return (isa<memref::AllocOp, gpu::AllocOp>(op) && !before.contains(op)) ||
                     (call && returnsBuffer(call))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    if (!allocates.wasInterrupted())
      continue;
    if (!freesMemory(func))
      functions.push_back(func);
    else
      func.emitWarning("kvcache-bufferize: the buffers bufferization "
                       "allocates in this function are not freed: it frees "
                       "memory itself, which ownership-based deallocation "
                       "does not support");
  }
  return functions;
}

/// The gpu.alloc or memref.alloc whose buffer `value` views, if any: through
/// views, and into the callee of a call (the allocation all its returns
/// give, `depth` calls deep at most).
static Operation *getAllocation(Value value, unsigned depth = 8) {
  while (Operation *op = value.getDefiningOp()) {
    if (isa<memref::AllocOp, gpu::AllocOp>(op))
      return op;
    if (auto metadata = dyn_cast<memref::ExtractStridedMetadataOp>(op)) {
      value = metadata.getSource();
    } else if (auto view = dyn_cast<ViewLikeOpInterface>(op)) {
      value = view.getViewSource();
    } else if (auto call = dyn_cast<func::CallOp>(op); call && depth) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (!callee || callee.isExternal())
        return nullptr;
      unsigned index = cast<OpResult>(value).getResultNumber();
      Operation *allocation = nullptr;
      WalkResult result = callee.walk([&](func::ReturnOp ret) {
        Operation *given = getAllocation(ret.getOperand(index), depth - 1);
        if (!given || (allocation && given->getName() != allocation->getName()))
          return WalkResult::interrupt();
        allocation = given;
        return WalkResult::advance();
      });
      return result.wasInterrupted() ? nullptr : allocation;
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

/// Replaces the memref.dealloc of each gpu.alloc'd buffer in `func` by a
/// gpu.dealloc. Fails on a memref.dealloc or bufferization.clone whose
/// buffer may be device memory but is not known to be: the deallocation
/// would free or copy it on the host.
static LogicalResult freeOnTheGPU(func::FuncOp func) {
  WalkResult result = func.walk([](Operation *op) {
    if (isa<bufferization::CloneOp>(op)) {
      op->emitError("kvcache-bufferize: cannot free device buffers that "
                    "need a copy (use dealloc=false)");
      return WalkResult::interrupt();
    }
    auto dealloc = dyn_cast<memref::DeallocOp>(op);
    if (!dealloc)
      return WalkResult::advance();
    Operation *allocation = getAllocation(dealloc.getMemref());
    if (isa_and_nonnull<memref::AllocOp>(allocation))
      return WalkResult::advance();
    if (!allocation) {
      op->emitError("kvcache-bufferize: cannot tell whether this buffer is "
                    "device memory (use dealloc=false)");
      return WalkResult::interrupt();
    }
    OpBuilder builder(dealloc);
    gpu::DeallocOp::create(builder, dealloc.getLoc(), /*asyncToken=*/Type(),
                           /*asyncDependencies=*/ValueRange(),
                           dealloc.getMemref());
    dealloc.erase();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {

struct KVCacheBufferize
    : public kvcache::impl::KVCacheBufferizeBase<KVCacheBufferize> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(eraseUnusedGrids(module)))
      return signalPassFailure();
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
    llvm::DenseSet<Operation *> inputMemoryOps = getMemoryOps(module);
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
    if (dealloc && failed(freeBuffers(module, inputMemoryOps)))
      return signalPassFailure();
    if (gpuAlloc)
      makeAsynchronous(module, inputMemoryOps);
  }

  /// Frees the buffers of getFunctionsToFree(module, before): upstream's
  /// ownership-based deallocation, its simplification and lowering (to
  /// memref.dealloc), canonicalized (the conditions known at compile time
  /// folded), then, with `gpu-alloc`, gpu.dealloc for device buffers.
  LogicalResult freeBuffers(ModuleOp module,
                            const llvm::DenseSet<Operation *> &before) {
    SmallVector<func::FuncOp> functions = getFunctionsToFree(module, before);
    if (functions.empty())
      return success();
    SymbolTableCollection symbolTables;
    for (func::FuncOp func : functions)
      if (failed(bufferization::deallocateBuffersOwnershipBased(
              func, bufferization::DeallocationOptions(), symbolTables)))
        return failure();
    // The simplification only rewrites bufferization.dealloc ops, which are
    // all in `functions`. Its buffer-origin analysis is computed once, before
    // its rewrites, and MLIR 22 reads it after the rewriter's folding erased
    // ops it tracks (a use after free: a segfault on a function calling one
    // that returns a buffer twice, with constants to deduplicate).
    // Canonicalized and CSE'd first, one function at a time, the function
    // leaves the rewriter nothing to fold but the deallocations.
    OpPassManager simplify(func::FuncOp::getOperationName());
    simplify.addPass(createCanonicalizerPass());
    simplify.addPass(createCSEPass());
    simplify.addPass(
        bufferization::createBufferDeallocationSimplificationPass());
    for (func::FuncOp func : functions)
      if (failed(runPipeline(simplify, func)))
        return failure();
    OpPassManager pm(ModuleOp::getOperationName());
    pm.addPass(bufferization::createLowerDeallocationsPass());
    if (failed(runPipeline(pm, module)))
      return failure();
    OpPassManager canonicalize(func::FuncOp::getOperationName());
    canonicalize.addPass(createCanonicalizerPass());
    for (func::FuncOp func : functions)
      if (failed(runPipeline(canonicalize, func)) ||
          (gpuAlloc && failed(freeOnTheGPU(func))))
        return failure();
    return success();
  }
};

} // namespace
