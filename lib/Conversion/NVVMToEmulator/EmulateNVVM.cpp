//===- EmulateNVVM.cpp - NVVM kernels to GPU-emulator calls -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// `kvcache-emulate-nvvm`: the kernels of every `gpu.module` (already in the
// NVVM/LLVM dialects, exactly what `gpu-module-to-binary` would turn into
// PTX) move into the host module as ordinary LLVM functions, every GPU
// operation in them becomes a call of the emulator runtime
// (libKVCacheGPUEmulator.so, which runs the threads of a block as fibers),
// and every host `gpu.launch_func` becomes `__kvemu_launch`. The runtime's
// interface is KVCache/ExecutionEngine/EmulatorABI.h.
//
// The pass is a sequence of named module-level steps; the rewrite of the
// ops inside the kernels is a set of patterns, one per op
// (populateEmulateNVVMPatterns), applied once to each op by
// walkAndApplyPatterns, after which nothing the emulator cannot run may be
// left.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/NVVMToEmulator/NVVMToEmulator.h"
#include "KVCache/Conversion/Passes.h"
#include "RuntimeCalls.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir {
#define GEN_PASS_DEF_KVCACHEEMULATENVVM
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;
using namespace mlir::kvcache;

/// The op names of the special-register reads.
static constexpr StringLiteral kSpecialRegisterPrefix = "nvvm.read.ptx.sreg.";

/// Reports the first op of `func` that the patterns left and the emulator
/// cannot run: an NVVM op (the patterns rewrote every one it models), an
/// `llvm.nvvm.*` intrinsic, inline assembly, or a memory op whose accesses
/// are not instrumented.
static LogicalResult checkFullyRewritten(LLVM::LLVMFuncOp func) {
  WalkResult result = func.walk([](Operation *op) {
    StringRef name = op->getName().getStringRef();
    if (name.starts_with(kSpecialRegisterPrefix))
      op->emitOpError("reads a special register the GPU emulator does not "
                      "model");
    else if (isa<NVVM::NVVMDialect>(op->getDialect()))
      op->emitOpError("is not modelled by the GPU emulator");
    else if (auto call = dyn_cast<LLVM::CallIntrinsicOp>(op);
             call && call.getIntrin().starts_with("llvm.nvvm."))
      op->emitOpError() << "calls '" << call.getIntrin()
                        << "', which the GPU emulator does not model";
    else if (isa<LLVM::InlineAsmOp>(op))
      op->emitOpError("(inline assembly) is not modelled by the GPU "
                      "emulator");
    else if (isa<LLVM::MemmoveOp, LLVM::MemcpyInlineOp, LLVM::MemsetInlineOp>(
                 op))
      op->emitOpError("is not supported by the GPU emulator");
    else
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

namespace {

/// Per `gpu.module`: the sizes of its shared-memory globals in index order
/// and the name of the host global that holds them for the launches.
struct DeviceModule {
  SmallVector<int64_t> sharedSizes;
  std::string sharedTableName;
};

/// Rewrites one host module.
class EmulatorLowering {
public:
  explicit EmulatorLowering(ModuleOp module)
      : module(module), builder(module.getContext()), state(module),
        ptrType(LLVM::LLVMPointerType::get(module.getContext())) {
    RewritePatternSet set(module.getContext());
    populateEmulateNVVMPatterns(set, state);
    patterns = FrozenRewritePatternSet(std::move(set));
  }

  LogicalResult run();

private:
  // The steps for one `gpu.module`, in order.
  LogicalResult lowerDeviceModule(gpu::GPUModuleOp gpuModule);
  LogicalResult collectSharedMemory(gpu::GPUModuleOp gpuModule,
                                    DeviceModule &device);
  LogicalResult renameSymbols(gpu::GPUModuleOp gpuModule, StringRef prefix);
  LogicalResult rewriteFunctions(gpu::GPUModuleOp gpuModule);
  void createSharedSizeTable(gpu::GPUModuleOp gpuModule, DeviceModule &device,
                             StringRef prefix);
  FailureOr<SmallVector<LLVM::LLVMFuncOp>>
  moveToHost(gpu::GPUModuleOp gpuModule);
  void createEntries(StringRef moduleName, StringRef prefix,
                     ArrayRef<LLVM::LLVMFuncOp> kernels);
  LLVM::LLVMFuncOp createEntry(LLVM::LLVMFuncOp kernel, StringRef entryName);

  // The steps for the host code.
  LogicalResult lowerLaunch(gpu::LaunchFuncOp launch);
  LogicalResult checkNoGPUOpsLeft();

  Value toI64(Location loc, Value value) {
    if (value.getType().isInteger(64))
      return value;
    return LLVM::ZExtOp::create(builder, loc, builder.getI64Type(), value);
  }

  ModuleOp module;
  OpBuilder builder;
  EmulatorState state;
  FrozenRewritePatternSet patterns;
  Type ptrType;
  /// Entry function of each kernel, by `module::kernel`.
  llvm::StringMap<std::string> entries;
  llvm::StringMap<DeviceModule> deviceModules;
};

} // namespace

LogicalResult EmulatorLowering::run() {
  for (auto gpuModule :
       llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>()))
    if (failed(lowerDeviceModule(gpuModule)))
      return failure();
  WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
    return failed(lowerLaunch(launch)) ? WalkResult::interrupt()
                                       : WalkResult::advance();
  });
  if (result.wasInterrupted() || failed(checkNoGPUOpsLeft()))
    return failure();
  module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  return success();
}

LogicalResult EmulatorLowering::checkNoGPUOpsLeft() {
  WalkResult leftover = module.walk([&](Operation *op) {
    if (isa<gpu::GPUDialect, NVVM::NVVMDialect>(op->getDialect())) {
      op->emitOpError("is not supported by the GPU emulator on the host: "
                      "lower host GPU operations with gpu-to-llvm first");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(leftover.wasInterrupted());
}

LogicalResult EmulatorLowering::lowerDeviceModule(gpu::GPUModuleOp gpuModule) {
  StringRef moduleName = gpuModule.getSymName();
  for (Operation &op : *gpuModule.getBody())
    if (!isa<LLVM::LLVMDialect>(op.getDialect()))
      return op.emitOpError(
          "must be lowered to the NVVM/LLVM dialects before "
          "kvcache-emulate-nvvm (kvcache-to-emulated-gpu does that)");
  DeviceModule &device = deviceModules[moduleName];
  std::string prefix = ("__kvemu_" + moduleName + "_").str();
  if (failed(collectSharedMemory(gpuModule, device)) ||
      failed(renameSymbols(gpuModule, prefix)) ||
      failed(rewriteFunctions(gpuModule)))
    return failure();
  createSharedSizeTable(gpuModule, device, prefix);
  FailureOr<SmallVector<LLVM::LLVMFuncOp>> kernels = moveToHost(gpuModule);
  if (failed(kernels))
    return failure();
  createEntries(moduleName, prefix, *kernels);
  gpuModule.erase();
  return success();
}

/// Shared-memory globals (address space 3) get indices in their order; a
/// zero-sized one is the launch's dynamic shared memory.
LogicalResult
EmulatorLowering::collectSharedMemory(gpu::GPUModuleOp gpuModule,
                                      DeviceModule &device) {
  state.sharedIndex.clear();
  for (auto global : gpuModule.getOps<LLVM::GlobalOp>()) {
    if (global.getAddrSpace() !=
        static_cast<unsigned>(emulator::AddressSpace::Shared))
      continue;
    Attribute initial = global.getValueOrNull();
    if ((initial && !isa<LLVM::UndefAttr>(initial)) ||
        !global.getInitializerRegion().empty())
      return global.emitOpError(
          "shared memory with an initial value is not supported by the GPU "
          "emulator (shared memory starts uninitialized)");
    state.sharedIndex[global.getSymName()] = device.sharedSizes.size();
    device.sharedSizes.push_back(DataLayout::closest(global)
                                     .getTypeSize(global.getType())
                                     .getFixedValue());
  }
  return success();
}

/// Gives every symbol its host name before anything moves, so that uses
/// follow: `<prefix><name>`, except shared memory (which stays behind) and
/// device functions without a body, which become their runtime replacement
/// (KVEMU_DEVICE_FUNCTIONS) once their type is checked against it.
LogicalResult EmulatorLowering::renameSymbols(gpu::GPUModuleOp gpuModule,
                                              StringRef prefix) {
  SymbolTable deviceSymbols(gpuModule);
  for (Operation &op : llvm::make_early_inc_range(*gpuModule.getBody())) {
    auto symbol = dyn_cast<SymbolOpInterface>(&op);
    if (!symbol)
      continue;
    StringRef name = symbol.getName();
    auto func = dyn_cast<LLVM::LLVMFuncOp>(&op);
    if (func && func.isExternal()) {
      std::optional<RuntimeFunction> replacement = lookupDeviceFunction(name);
      if (!replacement) {
        if (SymbolTable::symbolKnownUseEmpty(func, gpuModule))
          continue;
        return func.emitOpError()
               << "'" << name
               << "' has no body and is not modelled by the GPU emulator: "
                  "calls of it cannot be emulated";
      }
      if (failed(state.checkType(func, *replacement, func.getFunctionType(),
                                 "'" + name + "' is declared")) ||
          failed(deviceSymbols.rename(
              func, getRuntimeFunctionName(*replacement))))
        return failure();
      continue;
    }
    if (state.sharedIndex.count(name))
      continue;
    if (failed(deviceSymbols.rename(&op, (prefix + name).str())))
      return failure();
  }
  return success();
}

/// Applies the patterns to every function with a body. Unreachable blocks
/// go first: walkAndApplyPatterns does not visit them, and what it does not
/// rewrite must not stay.
LogicalResult EmulatorLowering::rewriteFunctions(gpu::GPUModuleOp gpuModule) {
  IRRewriter rewriter(module.getContext());
  for (auto func : gpuModule.getOps<LLVM::LLVMFuncOp>()) {
    if (func.isExternal())
      continue;
    (void)eraseUnreachableBlocks(rewriter, func->getRegions());
    walkAndApplyPatterns(func, patterns);
    if (state.hasErrors() || failed(checkFullyRewritten(func)))
      return failure();
  }
  return success();
}

/// The host's table of the module's shared-memory sizes (one 0 if it has
/// none), which its launches pass to the runtime.
void EmulatorLowering::createSharedSizeTable(gpu::GPUModuleOp gpuModule,
                                             DeviceModule &device,
                                             StringRef prefix) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(module.getBody());
  device.sharedTableName = (prefix + "shared_sizes").str();
  size_t count = std::max<size_t>(device.sharedSizes.size(), 1);
  SmallVector<int64_t> sizes(device.sharedSizes);
  sizes.resize(count, 0);
  Type i64Type = builder.getI64Type();
  auto type = LLVM::LLVMArrayType::get(i64Type, count);
  LLVM::GlobalOp::create(
      builder, gpuModule.getLoc(), type, /*isConstant=*/true,
      LLVM::Linkage::Internal, device.sharedTableName,
      DenseElementsAttr::get(
          RankedTensorType::get({static_cast<int64_t>(count)}, i64Type),
          ArrayRef<int64_t>(sizes)));
}

/// Moves everything but shared memory to the end of the host module (a
/// declaration only if the host has none of that name yet); returns the
/// kernels.
FailureOr<SmallVector<LLVM::LLVMFuncOp>>
EmulatorLowering::moveToHost(gpu::GPUModuleOp gpuModule) {
  SmallVector<LLVM::LLVMFuncOp> kernels;
  for (Operation &op : llvm::make_early_inc_range(*gpuModule.getBody())) {
    auto symbol = dyn_cast<SymbolOpInterface>(&op);
    if (!symbol || state.sharedIndex.count(symbol.getName()))
      continue;
    auto func = dyn_cast<LLVM::LLVMFuncOp>(&op);
    if (func && func.isExternal()) {
      if (!module.lookupSymbol(func.getName()))
        op.moveBefore(module.getBody(), module.getBody()->end());
      continue;
    }
    if (module.lookupSymbol(symbol.getName()))
      return op.emitOpError() << "symbol '" << symbol.getName()
                              << "' is already defined in the host module";
    op.moveBefore(module.getBody(), module.getBody()->end());
    if (func && (func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
                 func->hasAttr(gpu::GPUDialect::getKernelFuncAttrName())))
      kernels.push_back(func);
  }
  return kernels;
}

/// Gives each kernel its entry `__kvemu_entry_<module>_<kernel>` and drops
/// its GPU-only attributes: on the host it is an ordinary function.
void EmulatorLowering::createEntries(StringRef moduleName, StringRef prefix,
                                     ArrayRef<LLVM::LLVMFuncOp> kernels) {
  for (LLVM::LLVMFuncOp kernel : kernels) {
    StringRef kernelName =
        StringRef(kernel.getName()).drop_front(prefix.size());
    std::string entryName =
        ("__kvemu_entry_" + moduleName + "_" + kernelName).str();
    createEntry(kernel, entryName);
    entries[(moduleName + "::" + kernelName).str()] = entryName;
    for (StringRef attr : {"nvvm.kernel", "nvvm.maxntid", "nvvm.reqntid",
                           "nvvm.minctasm", "nvvm.maxnreg", "gpu.kernel",
                           "gpu.known_block_size", "gpu.known_grid_size"})
      kernel->removeAttr(attr);
  }
}

/// `void entry(ptr params)`: loads each argument through the CUDA-style
/// array of argument pointers and calls the kernel.
LLVM::LLVMFuncOp EmulatorLowering::createEntry(LLVM::LLVMFuncOp kernel,
                                               StringRef entryName) {
  Location loc = kernel.getLoc();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfter(kernel);
  auto entry = LLVM::LLVMFuncOp::create(
      builder, loc, entryName,
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(builder.getContext()),
                                  {ptrType}));
  Block *body = entry.addEntryBlock(builder);
  builder.setInsertionPointToStart(body);
  Value params = body->getArgument(0);
  SmallVector<Value> args;
  for (auto [index, type] :
       llvm::enumerate(kernel.getFunctionType().getParams())) {
    Value slot = LLVM::GEPOp::create(builder, loc, ptrType, ptrType, params,
                                     ArrayRef<LLVM::GEPArg>{int32_t(index)});
    Value pointer = LLVM::LoadOp::create(builder, loc, ptrType, slot);
    args.push_back(LLVM::LoadOp::create(builder, loc, type, pointer));
  }
  LLVM::CallOp::create(builder, loc, kernel, args);
  LLVM::ReturnOp::create(builder, loc, ValueRange());
  return entry;
}

/// `gpu.launch_func` -> `__kvemu_launch` with the kernel's entry, its
/// module's shared-memory table and an array of pointers to the arguments.
LogicalResult EmulatorLowering::lowerLaunch(gpu::LaunchFuncOp launch) {
  Location loc = launch.getLoc();
  std::string key = (launch.getKernelModuleName().getValue() + "::" +
                     launch.getKernelName().getValue())
                        .str();
  auto entry = entries.find(key);
  if (entry == entries.end())
    return launch.emitOpError() << "launches '" << key
                                << "', which is not a kernel of a gpu.module "
                                   "in this module";
  for (Value operand : launch.getOperands())
    if (!LLVM::isCompatibleType(operand.getType()) &&
        !isa<gpu::AsyncTokenType>(operand.getType()))
      return launch.emitOpError(
          "has operands that are not LLVM values yet: lower the host code to "
          "the LLVM dialect (gpu-to-llvm) before kvcache-emulate-nvvm");
  const DeviceModule &device =
      deviceModules[launch.getKernelModuleName().getValue()];

  // Argument slots at the function's entry: a launch in a loop must not
  // grow the stack.
  auto parent = launch->getParentOfType<LLVM::LLVMFuncOp>();
  if (!parent)
    return launch.emitOpError("must be inside an llvm.func");
  ValueRange kernelOperands = launch.getKernelOperands();
  SmallVector<Value> slots;
  Value array;
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&parent.getBody().front());
    Value one = createI64Constant(builder, loc, 1);
    for (Value operand : kernelOperands)
      slots.push_back(LLVM::AllocaOp::create(builder, loc, ptrType,
                                             operand.getType(), one));
    auto arrayType = LLVM::LLVMArrayType::get(
        ptrType, std::max<size_t>(kernelOperands.size(), 1));
    array = LLVM::AllocaOp::create(builder, loc, ptrType, arrayType, one);
  }
  builder.setInsertionPoint(launch);
  for (auto [index, operand] : llvm::enumerate(kernelOperands)) {
    LLVM::StoreOp::create(builder, loc, operand, slots[index]);
    Value slot = LLVM::GEPOp::create(builder, loc, ptrType, ptrType, array,
                                     ArrayRef<LLVM::GEPArg>{int32_t(index)});
    LLVM::StoreOp::create(builder, loc, slots[index], slot);
  }
  Value sharedBytes = launch.getDynamicSharedMemorySize();
  if (!sharedBytes)
    sharedBytes = createI32Constant(builder, loc, 0);
  Value table = LLVM::AddressOfOp::create(builder, loc, ptrType,
                                          device.sharedTableName);
  Value entryAddress =
      LLVM::AddressOfOp::create(builder, loc, ptrType, entry->second);
  if (failed(state.call(
          builder, launch, RuntimeFunction::__kvemu_launch,
          {entryAddress,
           state.stringAddress(builder, loc, launch.getKernelName().getValue()),
           table, createI32Constant(builder, loc, device.sharedSizes.size()),
           toI64(loc, launch.getGridSizeX()), toI64(loc, launch.getGridSizeY()),
           toI64(loc, launch.getGridSizeZ()), toI64(loc, launch.getBlockSizeX()),
           toI64(loc, launch.getBlockSizeY()),
           toI64(loc, launch.getBlockSizeZ()), sharedBytes, array,
           state.siteAddress(builder, loc)})))
    return failure();
  launch.erase();
  return success();
}

namespace {
struct KVCacheEmulateNVVMPass
    : impl::KVCacheEmulateNVVMBase<KVCacheEmulateNVVMPass> {
  void runOnOperation() override {
    if (failed(emulateNVVMKernels(getOperation())))
      signalPassFailure();
  }
};
} // namespace

LogicalResult mlir::kvcache::emulateNVVMKernels(ModuleOp module) {
  return EmulatorLowering(module).run();
}
