//===- EmulateNVVM.cpp - NVVM kernels to GPU-emulator calls -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// `kvcache-emulate-nvvm`: the kernels of every `gpu.module` (already in the
// NVVM/LLVM dialects, exactly what `gpu-module-to-binary` would turn into
// PTX) move into the host module as ordinary LLVM functions. Every GPU
// operation in them becomes a call of the emulator runtime
// (lib/ExecutionEngine/GPUEmulator), every memory access is preceded by a
// call that lets the runtime check it and count it, and every host
// `gpu.launch_func` becomes `__kvemu_launch`. The runtime runs the threads
// of a block as fibers.
//
// Runtime interface (C, declared here as the pass emits it):
//   void    __kvemu_launch(ptr entry, ptr name, ptr shared_sizes,
//                          i32 num_shared, i64 gx, gy, gz, bx, by, bz,
//                          i32 dynamic_shared_bytes, ptr params, ptr site)
//   ptr     __kvemu_shared(i32 index)
//   i32     __kvemu_sreg(i32 register)
//   void    __kvemu_barrier(ptr site)
//   i64     __kvemu_shfl(i32 kind, i32 mask, i32 value, i32 lane_or_offset,
//                        i32 mask_and_clamp, ptr site)   // value | valid<<32
//   void    __kvemu_access(ptr address, i64 bytes, i32 flags, ptr site)
//   void    __kvemu_cp_async(ptr dst, ptr src, i32 bytes, i32 src_bytes,
//                            ptr site)
//   void    __kvemu_cp_async_commit()
//   void    __kvemu_cp_async_wait(i32 pending, ptr site)
//   void    __kvemu_ldmatrix(ptr row, i32 matrices, i32 transpose,
//                            ptr fragments, ptr site)  // i32[matrices]
//   void    __kvemu_mma(i32 flags, i32 a0, a1, a2, a3, b0, b1, c0, c1, c2,
//                       c3, ptr result, ptr site)  // i32[4] (f16 D: [2])
//   i16     __kvemu_cvt_f32x2_to_f8x2(i32 e5m2, f32 high, f32 low)
//   i32     __kvemu_cvt_f8x2_to_f16x2(i32 e5m2, i16 codes)
//                       (EmulateConversions.cpp)
// plus `__kvemu_assertfail`, `__kvemu_vprintf` and `__kvemu_<intrinsic>`
// replacements of device functions (see modelledDeviceFunction).
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/NVVMToEmulator/NVVMToEmulator.h"
#include "KVCache/Conversion/Passes.h"
#include "EmulateConversions.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir {
#define GEN_PASS_DEF_KVCACHEEMULATENVVM
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// NVPTX's shared-memory address space.
constexpr unsigned kSharedAddressSpace = 3;

/// Special registers the runtime answers, by their `nvvm.read.ptx.sreg.`
/// suffix; the index is the runtime's register number.
constexpr StringLiteral kSpecialRegisters[] = {
    "tid.x",       "tid.y",       "tid.z",      "ntid.x",     "ntid.y",
    "ntid.z",      "ctaid.x",     "ctaid.y",    "ctaid.z",    "nctaid.x",
    "nctaid.y",    "nctaid.z",    "laneid",     "warpsize",   "warpid",
    "nwarpid",     "lanemask.eq", "lanemask.le", "lanemask.lt", "lanemask.ge",
    "lanemask.gt", "dynamic.smem.size"};

/// The runtime function that replaces a device function without a body or
/// an `llvm.nvvm.*` intrinsic, or "" when the emulator does not model it.
std::string modelledDeviceFunction(StringRef name) {
  // The runtime's names: `__kvemu_assertfail`, `__kvemu_vprintf`.
  if (name == "__assertfail" || name == "vprintf")
    return ("__kvemu_" + name.ltrim('_')).str();
  static constexpr StringLiteral libdevice[] = {
      "__nv_expf",  "__nv_exp2f", "__nv_logf",  "__nv_log2f",  "__nv_sqrtf",
      "__nv_rsqrtf", "__nv_powf", "__nv_fabsf", "__nv_tanhf", "__nv_sinf",
      "__nv_cosf",  "__nv_erff",  "__nv_fmaxf", "__nv_fminf", "__nv_exp",
      "__nv_log",   "__nv_sqrt",  "__nv_tanh"};
  if (llvm::is_contained(libdevice, name))
    return ("__kvemu" + name.drop_front(1)).str();
  static constexpr StringLiteral intrinsics[] = {
      "llvm.nvvm.ex2.approx.f32",    "llvm.nvvm.ex2.approx.ftz.f32",
      "llvm.nvvm.lg2.approx.f",      "llvm.nvvm.lg2.approx.ftz.f",
      "llvm.nvvm.rcp.approx.ftz.f",  "llvm.nvvm.rsqrt.approx.f",
      "llvm.nvvm.rsqrt.approx.ftz.f", "llvm.nvvm.sqrt.approx.f",
      "llvm.nvvm.fmax.f",            "llvm.nvvm.fmin.f"};
  if (llvm::is_contained(intrinsics, name)) {
    std::string result = "__kvemu_" + name.drop_front(10).str();
    llvm::replace(result, '.', '_');
    return result;
  }
  return "";
}

/// "file:line:col" of the first file location inside `loc`, or "unknown".
std::string describeLocation(Location loc) {
  std::string result = "unknown";
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      result = (file.getFilename().getValue() + ":" +
                Twine(file.getLine()) + ":" + Twine(file.getColumn()))
                   .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result;
}

/// Rewrites one module: state shared by the kernel and launch rewrites.
class EmulatorLowering {
public:
  explicit EmulatorLowering(ModuleOp module)
      : module(module), builder(module.getContext()),
        ptrType(LLVM::LLVMPointerType::get(module.getContext())),
        i32Type(builder.getI32Type()), i64Type(builder.getI64Type()) {}

  LogicalResult run();

private:
  /// Per `gpu.module`: its shared-memory globals (in index order) and the
  /// table of their sizes the launches pass to the runtime.
  struct DeviceModule {
    SmallVector<int64_t> sharedSizes;
    llvm::StringMap<int32_t> sharedIndex;
    std::string sharedTableName;
  };

  LogicalResult lowerDeviceModule(gpu::GPUModuleOp gpuModule);
  LogicalResult collectSharedMemory(gpu::GPUModuleOp gpuModule,
                                    DeviceModule &device);
  LogicalResult rewriteDeviceFunction(LLVM::LLVMFuncOp func,
                                      const DeviceModule &device);
  LogicalResult rewriteDeviceOp(Operation *op, const DeviceModule &device);
  LogicalResult instrumentMemoryOp(Operation *op);
  LogicalResult rewriteSharedAddress(LLVM::AddressOfOp addressOf,
                                     const DeviceModule &device);
  LogicalResult rewriteShuffle(NVVM::ShflOp shuffle);
  LogicalResult rewriteLdMatrix(NVVM::LdMatrixOp load);
  LogicalResult rewriteMma(NVVM::MmaOp mma);
  /// Calls warp-collective runtime function `name` with `args`, then a
  /// pointer to `count` i32 registers it writes and the op's site; returns
  /// the registers.
  SmallVector<Value> callWithRegisterResults(Operation *op, StringRef name,
                                             SmallVector<Value> args,
                                             int64_t count);
  /// `registers` (i32) as a value of `type`: one register, or a struct of
  /// them, each bitcast to its member type.
  Value packRegisters(Location loc, ArrayRef<Value> registers, Type type);
  LogicalResult rewriteNVVMOp(Operation *op);
  LogicalResult rewriteIntrinsic(Operation *op);
  void instrumentAccess(Operation *op, Value address, Value bytes,
                        int32_t flags);
  LLVM::LLVMFuncOp createEntry(LLVM::LLVMFuncOp kernel, StringRef entryName);
  LogicalResult lowerLaunch(gpu::LaunchFuncOp launch);

  /// Declares (once) runtime function `name` in the host module.
  LLVM::LLVMFuncOp runtimeFunction(StringRef name, Type result,
                                   ArrayRef<Type> params);
  /// A call of runtime function `name` at the builder's insertion point.
  Value callRuntime(Location loc, StringRef name, Type result,
                    ValueRange args);
  /// Adds the NUL-terminated constant string global `name` holding `text`
  /// to the host module.
  void createStringGlobal(Location loc, StringRef name, StringRef text);
  /// The address of a NUL-terminated constant string global (one per
  /// distinct text) in the host module.
  Value stringAddress(Location loc, StringRef text);
  /// The site of one GPU operation: its location as text, in a global of
  /// its own, so that the runtime tells operations apart by address.
  Value siteAddress(Location loc);
  Value i32Constant(Location loc, int64_t value) {
    return LLVM::ConstantOp::create(builder, loc, i32Type,
                                    builder.getI32IntegerAttr(value));
  }
  Value i64Constant(Location loc, int64_t value) {
    return LLVM::ConstantOp::create(builder, loc, i64Type,
                                    builder.getI64IntegerAttr(value));
  }
  Value toGenericPointer(Location loc, Value pointer);
  Value toI64(Location loc, Value value) {
    if (value.getType() == i64Type)
      return value;
    return LLVM::ZExtOp::create(builder, loc, i64Type, value);
  }
  int64_t typeSize(Operation *scope, Type type) {
    return DataLayout::closest(scope).getTypeSize(type).getFixedValue();
  }
  /// The bytes a load or store of `type` touches: LLVM's store size. The
  /// data layout's size of a vector rounds its element count up to a power
  /// of two (vector<5xf32>: 32 bytes), but a store of it writes 20, and
  /// adjacent threads' 20-byte slices must not look like overlapping ones.
  int64_t accessSize(Operation *scope, Type type) {
    if (auto vector = dyn_cast<VectorType>(type); vector && !vector.isScalable()) {
      uint64_t bits = DataLayout::closest(scope).getTypeSizeInBits(
          vector.getElementType());
      return llvm::divideCeil(vector.getNumElements() * bits, 8);
    }
    return typeSize(scope, type);
  }

  ModuleOp module;
  OpBuilder builder;
  Type ptrType, i32Type, i64Type;
  llvm::StringMap<std::string> stringGlobals;
  unsigned siteCount = 0;
  /// Entry function of each kernel, by `module::kernel`.
  llvm::StringMap<std::string> entries;
  llvm::StringMap<DeviceModule> deviceModules;
};

LLVM::LLVMFuncOp EmulatorLowering::runtimeFunction(StringRef name,
                                                   Type result,
                                                   ArrayRef<Type> params) {
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(module.getBody());
  return LLVM::LLVMFuncOp::create(
      builder, module.getLoc(), name,
      LLVM::LLVMFunctionType::get(
          result ? result : LLVM::LLVMVoidType::get(module.getContext()),
          params));
}

Value EmulatorLowering::callRuntime(Location loc, StringRef name,
                                    Type result, ValueRange args) {
  LLVM::LLVMFuncOp func =
      runtimeFunction(name, result, llvm::to_vector(args.getTypes()));
  auto call = LLVM::CallOp::create(builder, loc, func, args);
  return result ? call.getResult() : Value();
}

void EmulatorLowering::createStringGlobal(Location loc, StringRef name,
                                          StringRef text) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(module.getBody());
  std::string data = text.str();
  data.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), data.size());
  LLVM::GlobalOp::create(builder, loc, type, /*isConstant=*/true,
                         LLVM::Linkage::Internal, name,
                         builder.getStringAttr(data));
}

Value EmulatorLowering::stringAddress(Location loc, StringRef text) {
  std::string &name = stringGlobals[text];
  if (name.empty()) {
    name = "__kvemu_str_" + std::to_string(stringGlobals.size() - 1);
    createStringGlobal(loc, name, text);
  }
  return LLVM::AddressOfOp::create(builder, loc, ptrType, name);
}

Value EmulatorLowering::siteAddress(Location loc) {
  std::string name = "__kvemu_site_" + std::to_string(siteCount++);
  createStringGlobal(loc, name, describeLocation(loc));
  return LLVM::AddressOfOp::create(builder, loc, ptrType, name);
}

Value EmulatorLowering::toGenericPointer(Location loc, Value pointer) {
  if (cast<LLVM::LLVMPointerType>(pointer.getType()).getAddressSpace() == 0)
    return pointer;
  return LLVM::AddrSpaceCastOp::create(builder, loc, ptrType, pointer);
}

LogicalResult EmulatorLowering::run() {
  for (auto gpuModule :
       llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>()))
    if (failed(lowerDeviceModule(gpuModule)))
      return failure();
  WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
    return failed(lowerLaunch(launch)) ? WalkResult::interrupt()
                                       : WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  WalkResult leftover = module.walk([&](Operation *op) {
    if (isa<gpu::GPUDialect>(op->getDialect()) ||
        isa<NVVM::NVVMDialect>(op->getDialect())) {
      op->emitOpError("is not supported by the GPU emulator on the host: "
                      "lower host GPU operations with gpu-to-llvm first");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (leftover.wasInterrupted())
    return failure();
  module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  return success();
}

LogicalResult
EmulatorLowering::collectSharedMemory(gpu::GPUModuleOp gpuModule,
                                      DeviceModule &device) {
  for (auto global : gpuModule.getOps<LLVM::GlobalOp>()) {
    if (global.getAddrSpace() != kSharedAddressSpace)
      continue;
    Attribute initial = global.getValueOrNull();
    if ((initial && !isa<LLVM::UndefAttr>(initial)) ||
        !global.getInitializerRegion().empty())
      return global.emitOpError(
          "shared memory with an initial value is not supported by the GPU "
          "emulator (shared memory starts uninitialized)");
    device.sharedIndex[global.getSymName()] = device.sharedSizes.size();
    // A zero-sized array is the dynamic shared memory of the launch.
    device.sharedSizes.push_back(typeSize(global, global.getType()));
  }
  return success();
}

LogicalResult EmulatorLowering::lowerDeviceModule(gpu::GPUModuleOp gpuModule) {
  StringRef moduleName = gpuModule.getSymName();
  for (Operation &op : *gpuModule.getBody())
    if (!isa<LLVM::LLVMDialect>(op.getDialect()))
      return op.emitOpError(
          "must be lowered to the NVVM/LLVM dialects before "
          "kvcache-emulate-nvvm (kvcache-to-emulated-gpu does that)");
  DeviceModule &device = deviceModules[moduleName];
  if (failed(collectSharedMemory(gpuModule, device)))
    return failure();

  // Give every symbol its host name first, so uses follow.
  SymbolTable deviceSymbols(gpuModule);
  std::string prefix = ("__kvemu_" + moduleName + "_").str();
  for (Operation &op : llvm::make_early_inc_range(*gpuModule.getBody())) {
    auto symbol = dyn_cast<SymbolOpInterface>(&op);
    if (!symbol)
      continue;
    StringRef name = symbol.getName();
    if (auto func = dyn_cast<LLVM::LLVMFuncOp>(&op); func && func.isExternal()) {
      std::string replacement = modelledDeviceFunction(name);
      if (replacement.empty()) {
        if (SymbolTable::symbolKnownUseEmpty(func, gpuModule))
          continue;
        return func.emitOpError()
               << "'" << name
               << "' has no body and is not modelled by the GPU emulator: "
                  "calls of it cannot be emulated";
      }
      if (failed(deviceSymbols.rename(func, replacement)))
        return failure();
      continue;
    }
    if (device.sharedIndex.count(name))
      continue;
    if (failed(deviceSymbols.rename(&op, prefix + name.str())))
      return failure();
  }
  for (auto func : gpuModule.getOps<LLVM::LLVMFuncOp>())
    if (!func.isExternal() && failed(rewriteDeviceFunction(func, device)))
      return failure();

  // The table of shared-memory sizes the launches pass.
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    device.sharedTableName = prefix + "shared_sizes";
    size_t count = std::max<size_t>(device.sharedSizes.size(), 1);
    SmallVector<int64_t> sizes(device.sharedSizes);
    sizes.resize(count, 0);
    auto type = LLVM::LLVMArrayType::get(i64Type, count);
    LLVM::GlobalOp::create(
        builder, gpuModule.getLoc(), type, /*isConstant=*/true,
        LLVM::Linkage::Internal, device.sharedTableName,
        DenseElementsAttr::get(
            RankedTensorType::get({static_cast<int64_t>(count)}, i64Type),
            ArrayRef<int64_t>(sizes)));
  }

  // Move everything but shared memory and runtime declarations to the host.
  SmallVector<LLVM::LLVMFuncOp> kernels;
  for (Operation &op : llvm::make_early_inc_range(*gpuModule.getBody())) {
    if (auto global = dyn_cast<LLVM::GlobalOp>(&op);
        global && device.sharedIndex.count(global.getSymName())) {
      continue;
    }
    auto symbol = dyn_cast<SymbolOpInterface>(&op);
    if (!symbol)
      continue;
    if (auto func = dyn_cast<LLVM::LLVMFuncOp>(&op); func && func.isExternal()) {
      if (!module.lookupSymbol(func.getName()))
        op.moveBefore(module.getBody(), module.getBody()->end());
      continue;
    }
    if (module.lookupSymbol(symbol.getName()))
      return op.emitOpError() << "symbol '" << symbol.getName()
                              << "' is already defined in the host module";
    op.moveBefore(module.getBody(), module.getBody()->end());
    if (auto func = dyn_cast<LLVM::LLVMFuncOp>(&op)) {
      bool isKernel = func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
                      func->hasAttr(gpu::GPUDialect::getKernelFuncAttrName());
      if (isKernel)
        kernels.push_back(func);
    }
  }
  for (LLVM::LLVMFuncOp kernel : kernels) {
    StringRef kernelName = StringRef(kernel.getName()).drop_front(prefix.size());
    std::string entryName = ("__kvemu_entry_" + moduleName + "_" + kernelName).str();
    createEntry(kernel, entryName);
    entries[(moduleName + "::" + kernelName).str()] = entryName;
    // Drop the GPU-only attributes: on the host it is an ordinary function.
    for (StringRef attr : {"nvvm.kernel", "nvvm.maxntid", "nvvm.reqntid",
                           "nvvm.minctasm", "nvvm.maxnreg", "gpu.kernel",
                           "gpu.known_block_size", "gpu.known_grid_size"})
      kernel->removeAttr(attr);
  }
  gpuModule.erase();
  return success();
}

LogicalResult
EmulatorLowering::rewriteDeviceFunction(LLVM::LLVMFuncOp func,
                                        const DeviceModule &device) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops)
    if (failed(rewriteDeviceOp(op, device)))
      return failure();
  return success();
}

void EmulatorLowering::instrumentAccess(Operation *op, Value address,
                                        Value bytes, int32_t flags) {
  Location loc = op->getLoc();
  unsigned space =
      cast<LLVM::LLVMPointerType>(address.getType()).getAddressSpace();
  flags |= static_cast<int32_t>(space) << kEmulatorAccessSpaceShift;
  Value generic = toGenericPointer(loc, address);
  callRuntime(loc, "__kvemu_access", Type(),
              {generic, bytes, i32Constant(loc, flags), siteAddress(loc)});
}

/// The memory operations whose accesses the runtime checks and counts.
static bool isMemoryOp(Operation *op) {
  return isa<LLVM::LoadOp, LLVM::StoreOp, LLVM::AtomicRMWOp,
             LLVM::AtomicCmpXchgOp, LLVM::MemcpyOp, LLVM::MemsetOp,
             LLVM::MemmoveOp, LLVM::MemcpyInlineOp, LLVM::MemsetInlineOp>(op);
}

LogicalResult EmulatorLowering::rewriteDeviceOp(Operation *op,
                                                const DeviceModule &device) {
  builder.setInsertionPoint(op);
  if (isMemoryOp(op))
    return instrumentMemoryOp(op);
  if (auto addressOf = dyn_cast<LLVM::AddressOfOp>(op))
    return rewriteSharedAddress(addressOf, device);
  if (auto shuffle = dyn_cast<NVVM::ShflOp>(op))
    return rewriteShuffle(shuffle);
  if (auto load = dyn_cast<NVVM::LdMatrixOp>(op))
    return rewriteLdMatrix(load);
  if (auto mma = dyn_cast<NVVM::MmaOp>(op))
    return rewriteMma(mma);
  bool handled = false;
  auto call = [&](Location loc, StringRef name, Type result,
                  ValueRange args) {
    return callRuntime(loc, name, result, args);
  };
  LogicalResult converted = rewriteFp8Conversion(op, builder, call, handled);
  if (handled)
    return converted;
  if (isa<NVVM::NVVMDialect>(op->getDialect()))
    return rewriteNVVMOp(op);
  if (isa<LLVM::CallIntrinsicOp, LLVM::InlineAsmOp>(op))
    return rewriteIntrinsic(op);
  return success();
}

/// Whether the emulator models NVPTX address space `space`: generic (0),
/// global (1), shared (3), constant (4), local (5).
static bool isModelledAddressSpace(unsigned space) {
  return space <= 1 || (space >= 3 && space <= 5);
}

LogicalResult EmulatorLowering::instrumentMemoryOp(Operation *op) {
  Location loc = op->getLoc();
  for (Value operand : op->getOperands())
    if (auto pointer = dyn_cast<LLVM::LLVMPointerType>(operand.getType()))
      if (!isModelledAddressSpace(pointer.getAddressSpace()))
        return op->emitOpError("accesses address space ")
               << pointer.getAddressSpace()
               << ", which the GPU emulator does not model (0 generic, 1 "
                  "global, 3 shared, 4 constant, 5 local)";
  if (auto load = dyn_cast<LLVM::LoadOp>(op)) {
    int32_t flags = load.getOrdering() != LLVM::AtomicOrdering::not_atomic
                        ? kEmulatorAccessAtomic
                        : 0;
    instrumentAccess(op, load.getAddr(),
                     i64Constant(loc, accessSize(op, load.getType())), flags);
    return success();
  }
  if (auto store = dyn_cast<LLVM::StoreOp>(op)) {
    int32_t flags = kEmulatorAccessWrite;
    if (store.getOrdering() != LLVM::AtomicOrdering::not_atomic)
      flags |= kEmulatorAccessAtomic;
    instrumentAccess(
        op, store.getAddr(),
        i64Constant(loc, accessSize(op, store.getValue().getType())), flags);
    return success();
  }
  if (auto rmw = dyn_cast<LLVM::AtomicRMWOp>(op)) {
    instrumentAccess(op, rmw.getPtr(),
                     i64Constant(loc, accessSize(op, rmw.getVal().getType())),
                     kEmulatorAccessWrite | kEmulatorAccessAtomic);
    return success();
  }
  if (auto cmpxchg = dyn_cast<LLVM::AtomicCmpXchgOp>(op)) {
    instrumentAccess(
        op, cmpxchg.getPtr(),
        i64Constant(loc, accessSize(op, cmpxchg.getVal().getType())),
        kEmulatorAccessWrite | kEmulatorAccessAtomic);
    return success();
  }
  if (auto copy = dyn_cast<LLVM::MemcpyOp>(op)) {
    Value bytes = toI64(loc, copy.getLen());
    instrumentAccess(op, copy.getSrc(), bytes, 0);
    instrumentAccess(op, copy.getDst(), bytes, kEmulatorAccessWrite);
    return success();
  }
  if (auto set = dyn_cast<LLVM::MemsetOp>(op)) {
    Value bytes = toI64(loc, set.getLen());
    instrumentAccess(op, set.getDst(), bytes, kEmulatorAccessWrite);
    return success();
  }
  return op->emitOpError("is not supported by the GPU emulator");

}

LogicalResult
EmulatorLowering::rewriteSharedAddress(LLVM::AddressOfOp addressOf,
                                       const DeviceModule &device) {
  Location loc = addressOf.getLoc();
  auto it = device.sharedIndex.find(addressOf.getGlobalName());
  if (it == device.sharedIndex.end())
    return success();
  Value base = callRuntime(loc, "__kvemu_shared", ptrType,
                           {i32Constant(loc, it->second)});
  Value shared =
      LLVM::AddrSpaceCastOp::create(builder, loc, addressOf.getType(), base);
  addressOf.replaceAllUsesWith(shared);
  addressOf.erase();
  return success();
}

LogicalResult EmulatorLowering::rewriteShuffle(NVVM::ShflOp shuffle) {
  Location loc = shuffle.getLoc();
  Value bits = shuffle.getVal();
  bool isFloat = isa<Float32Type>(bits.getType());
  if (isFloat)
    bits = LLVM::BitcastOp::create(builder, loc, i32Type, bits);
  Value packed = callRuntime(
      loc, "__kvemu_shfl", i64Type,
      {i32Constant(loc, static_cast<int32_t>(shuffle.getKind())),
       shuffle.getThreadMask(), bits, shuffle.getOffset(),
       shuffle.getMaskAndClamp(), siteAddress(loc)});
  Value value = LLVM::TruncOp::create(builder, loc, i32Type, packed);
  if (isFloat)
    value = LLVM::BitcastOp::create(builder, loc, builder.getF32Type(), value);
  Value result = value;
  if (shuffle.getReturnValueAndIsValid()) {
    Value shifted = LLVM::LShrOp::create(builder, loc, packed,
                                         i64Constant(loc, 32));
    Value valid =
        LLVM::TruncOp::create(builder, loc, builder.getI1Type(), shifted);
    Type structType = shuffle.getType();
    result = LLVM::UndefOp::create(builder, loc, structType);
    result = LLVM::InsertValueOp::create(builder, loc, result, value, ArrayRef<int64_t>{0});
    result = LLVM::InsertValueOp::create(builder, loc, result, valid, ArrayRef<int64_t>{1});
  }
  shuffle.replaceAllUsesWith(result);
  shuffle.erase();
  return success();
}

SmallVector<Value> EmulatorLowering::callWithRegisterResults(
    Operation *op, StringRef name, SmallVector<Value> args, int64_t count) {
  Location loc = op->getLoc();
  // The registers live at the function's entry: a collective in a loop must
  // not grow the stack.
  Value registers;
  {
    OpBuilder::InsertionGuard guard(builder);
    auto func = op->getParentOfType<LLVM::LLVMFuncOp>();
    builder.setInsertionPointToStart(&func.getBody().front());
    registers = LLVM::AllocaOp::create(builder, loc, ptrType,
                                       LLVM::LLVMArrayType::get(i32Type, count),
                                       i64Constant(loc, 1));
  }
  args.push_back(registers);
  args.push_back(siteAddress(loc));
  callRuntime(loc, name, Type(), args);
  SmallVector<Value> values;
  for (int64_t index = 0; index < count; ++index) {
    Value slot = LLVM::GEPOp::create(builder, loc, ptrType, i32Type, registers,
                                     ArrayRef<LLVM::GEPArg>{int32_t(index)});
    values.push_back(LLVM::LoadOp::create(builder, loc, i32Type, slot));
  }
  return values;
}

Value EmulatorLowering::packRegisters(Location loc, ArrayRef<Value> registers,
                                      Type type) {
  auto fromBits = [&](Value bits, Type member) -> Value {
    if (member == i32Type)
      return bits;
    return LLVM::BitcastOp::create(builder, loc, member, bits);
  };
  auto structType = dyn_cast<LLVM::LLVMStructType>(type);
  if (!structType)
    return fromBits(registers.front(), type);
  Value result = LLVM::UndefOp::create(builder, loc, structType);
  for (auto [index, bits] : llvm::enumerate(registers))
    result = LLVM::InsertValueOp::create(
        builder, loc, result, fromBits(bits, structType.getBody()[index]),
        ArrayRef<int64_t>{int64_t(index)});
  return result;
}

LogicalResult EmulatorLowering::rewriteLdMatrix(NVVM::LdMatrixOp load) {
  Location loc = load.getLoc();
  int32_t matrices = load.getNum();
  NVVM::LdStMatrixShapeAttr shape = load.getShape();
  if (shape.getM() != 8 || shape.getN() != 8 ||
      load.getEltType() != NVVM::LdStMatrixEltType::B16 ||
      !llvm::is_contained({1, 2, 4}, matrices))
    return load.emitOpError("(shape m")
           << shape.getM() << "n" << shape.getN() << ", "
           << NVVM::stringifyLdStMatrixEltType(load.getEltType()) << ", "
           << matrices
           << " matrices) is not modelled by the GPU emulator: it models "
              "m8n8 b16 with 1, 2 or 4 matrices";
  bool transpose = load.getLayout() == NVVM::MMALayout::col;
  SmallVector<Value> fragments = callWithRegisterResults(
      load, "__kvemu_ldmatrix",
      {toGenericPointer(loc, load.getPtr()), i32Constant(loc, matrices),
       i32Constant(loc, transpose)},
      matrices);
  load.replaceAllUsesWith(packRegisters(loc, fragments, load.getType()));
  load.erase();
  return success();
}

/// The `__kvemu_mma` flags of `mma`, or nothing when the emulator does not
/// model it: m16n8k16 or m16n8k8, row.col, f16 or bf16 multiplicands, f16
/// or f32 accumulator and result (bf16: f32 only), with the PTX register
/// counts (A: k/4, B: k/8, C: 4 f32 or 2 f16x2).
static std::optional<int32_t> mmaFlags(NVVM::MmaOp mma) {
  NVVM::MMAShapeAttr shape = mma.getShape();
  std::optional<NVVM::MMATypes> typeA = mma.getMultiplicandAPtxType();
  if (shape.getM() != 16 || shape.getN() != 8 ||
      (shape.getK() != 16 && shape.getK() != 8) || !typeA ||
      typeA != mma.getMultiplicandBPtxType() ||
      (*typeA != NVVM::MMATypes::f16 && *typeA != NVVM::MMATypes::bf16) ||
      mma.getLayoutA() != NVVM::MMALayout::row ||
      mma.getLayoutB() != NVVM::MMALayout::col || mma.getB1Op() ||
      mma.getIntOverflowBehavior())
    return std::nullopt;
  auto isHalfOrFloat = [](NVVM::MMATypes type) {
    return type == NVVM::MMATypes::f16 || type == NVVM::MMATypes::f32;
  };
  NVVM::MMATypes accumulator = mma.accumPtxType();
  NVVM::MMATypes result = mma.resultPtxType();
  bool bf16 = *typeA == NVVM::MMATypes::bf16;
  if (!isHalfOrFloat(accumulator) || !isHalfOrFloat(result) ||
      (bf16 &&
       (accumulator != NVVM::MMATypes::f32 || result != NVVM::MMATypes::f32)))
    return std::nullopt;
  bool accumulatorF16 = accumulator == NVVM::MMATypes::f16;
  int64_t k = shape.getK();
  if (int64_t(mma.getOperandA().size()) != k / 4 ||
      int64_t(mma.getOperandB().size()) != k / 8 ||
      mma.getOperandC().size() != (accumulatorF16 ? 2u : 4u))
    return std::nullopt;
  return (k == 16 ? kEmulatorMmaK16 : 0) | (bf16 ? kEmulatorMmaBF16 : 0) |
         (accumulatorF16 ? kEmulatorMmaAccumulatorF16 : 0) |
         (result == NVVM::MMATypes::f16 ? kEmulatorMmaResultF16 : 0);
}

LogicalResult EmulatorLowering::rewriteMma(NVVM::MmaOp mma) {
  Location loc = mma.getLoc();
  std::optional<int32_t> flags = mmaFlags(mma);
  if (!flags) {
    NVVM::MMAShapeAttr shape = mma.getShape();
    std::optional<NVVM::MMATypes> typeA = mma.getMultiplicandAPtxType();
    return mma.emitOpError("(m")
           << shape.getM() << "n" << shape.getN() << "k" << shape.getK() << " "
           << NVVM::stringifyMMALayout(mma.getLayoutA()) << "."
           << NVVM::stringifyMMALayout(mma.getLayoutB()) << " "
           << (typeA ? NVVM::stringifyMMATypes(*typeA) : "?") << ", "
           << NVVM::stringifyMMATypes(mma.accumPtxType())
           << " accumulator) is not modelled by the GPU emulator: it models "
              "m16n8k16 and m16n8k8 row.col with f16 or bf16 multiplicands "
              "and f16 or f32 accumulators (bf16: f32)";
  }
  // A's, B's and C's registers as i32, each group padded to 4, 2 and 4.
  SmallVector<Value> args = {i32Constant(loc, *flags)};
  Value zero = i32Constant(loc, 0);
  for (auto [operands, size] :
       {std::pair{mma.getOperandA(), 4u}, std::pair{mma.getOperandB(), 2u},
        std::pair{mma.getOperandC(), 4u}}) {
    for (Value operand : operands)
      args.push_back(
          operand.getType() == i32Type
              ? operand
              : LLVM::BitcastOp::create(builder, loc, i32Type, operand));
    args.append(size - operands.size(), zero);
  }
  int64_t resultRegisters = *flags & kEmulatorMmaResultF16 ? 2 : 4;
  SmallVector<Value> result =
      callWithRegisterResults(mma, "__kvemu_mma", args, resultRegisters);
  mma.replaceAllUsesWith(packRegisters(loc, result, mma.getType()));
  mma.erase();
  return success();
}

LogicalResult EmulatorLowering::rewriteNVVMOp(Operation *op) {
  Location loc = op->getLoc();
  StringRef opName = op->getName().getStringRef();
  if (opName.consume_front("nvvm.read.ptx.sreg.")) {
    const auto *it = llvm::find(kSpecialRegisters, opName);
    if (it == std::end(kSpecialRegisters) || op->getNumResults() != 1 ||
        op->getResult(0).getType() != i32Type)
      return op->emitOpError("reads a special register the GPU emulator "
                             "does not model");
    Value value = callRuntime(
        loc, "__kvemu_sreg", i32Type,
        {i32Constant(loc, it - std::begin(kSpecialRegisters))});
    op->getResult(0).replaceAllUsesWith(value);
    op->erase();
    return success();
  }
  if (isa<NVVM::Barrier0Op>(op)) {
    callRuntime(loc, "__kvemu_barrier", Type(), {siteAddress(loc)});
    op->erase();
    return success();
  }
  if (auto barrier = dyn_cast<NVVM::BarrierOp>(op)) {
    if (barrier.getNumberOfThreads() || barrier.getReductionOp() ||
        barrier->getNumResults() != 0)
      return op->emitOpError("(a partial or reducing barrier) is not modelled "
                             "by the GPU emulator");
    callRuntime(loc, "__kvemu_barrier", Type(), {siteAddress(loc)});
    op->erase();
    return success();
  }
  if (auto copy = dyn_cast<NVVM::CpAsyncOp>(op)) {
    Value bytes = i32Constant(loc, copy.getSize());
    Value sourceBytes = copy.getCpSize() ? copy.getCpSize() : bytes;
    callRuntime(loc, "__kvemu_cp_async", Type(),
                {toGenericPointer(loc, copy.getDst()),
                 toGenericPointer(loc, copy.getSrc()), bytes, sourceBytes,
                 siteAddress(loc)});
    op->erase();
    return success();
  }
  if (isa<NVVM::CpAsyncCommitGroupOp>(op)) {
    callRuntime(loc, "__kvemu_cp_async_commit", Type(), {});
    op->erase();
    return success();
  }
  if (auto wait = dyn_cast<NVVM::CpAsyncWaitGroupOp>(op)) {
    callRuntime(loc, "__kvemu_cp_async_wait", Type(),
                {i32Constant(loc, wait.getN()), siteAddress(loc)});
    op->erase();
    return success();
  }
  return op->emitOpError("is not modelled by the GPU emulator");
}

LogicalResult EmulatorLowering::rewriteIntrinsic(Operation *op) {
  Location loc = op->getLoc();
  if (auto intrinsic = dyn_cast<LLVM::CallIntrinsicOp>(op)) {
    StringRef name = intrinsic.getIntrin();
    if (!name.starts_with("llvm.nvvm."))
      return success();
    std::string replacement = modelledDeviceFunction(name);
    if (replacement.empty())
      return op->emitOpError() << "calls '" << name
                               << "', which the GPU emulator does not model";
    Type result = op->getNumResults() ? op->getResult(0).getType() : Type();
    Value value = callRuntime(loc, replacement, result, intrinsic.getArgs());
    if (result)
      op->getResult(0).replaceAllUsesWith(value);
    op->erase();
    return success();
  }
  return op->emitOpError("(inline assembly) is not modelled by the GPU "
                         "emulator");
}

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
    Value one = i64Constant(loc, 1);
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
  auto toI64 = [&](Value value) -> Value {
    if (value.getType() == i64Type)
      return value;
    return LLVM::ZExtOp::create(builder, loc, i64Type, value);
  };
  Value sharedBytes = launch.getDynamicSharedMemorySize();
  if (!sharedBytes)
    sharedBytes = i32Constant(loc, 0);
  Value table = LLVM::AddressOfOp::create(builder, loc, ptrType,
                                          device.sharedTableName);
  Value entryAddress =
      LLVM::AddressOfOp::create(builder, loc, ptrType, entry->second);
  callRuntime(loc, "__kvemu_launch", Type(),
              {entryAddress,
               stringAddress(loc, launch.getKernelName().getValue()), table,
               i32Constant(loc, device.sharedSizes.size()),
               toI64(launch.getGridSizeX()), toI64(launch.getGridSizeY()),
               toI64(launch.getGridSizeZ()), toI64(launch.getBlockSizeX()),
               toI64(launch.getBlockSizeY()), toI64(launch.getBlockSizeZ()),
               sharedBytes, array, siteAddress(loc)});
  launch.erase();
  return success();
}

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
