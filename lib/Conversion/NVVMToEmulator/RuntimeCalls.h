//===- RuntimeCalls.h - calls of the GPU emulator runtime -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// How `kvcache-emulate-nvvm` calls the GPU emulator runtime. Every entry
// point, its name and its LLVM-dialect type come from the C declarations of
// KVCache/ExecutionEngine/EmulatorABI.h, as MLIR's GPUToLLVM
// `FunctionCallBuilder` declares the `mgpu*` functions, except that the
// compiler derives each type from the declaration instead of a hand-written
// copy. EmulatorState holds what the rewrite patterns of one host module
// share: those declarations, the site and string globals, and the
// shared-memory globals of the kernel module being rewritten.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_NVVMTOEMULATOR_RUNTIMECALLS_H
#define KVCACHE_LIB_CONVERSION_NVVMTOEMULATOR_RUNTIMECALLS_H

#include "KVCache/ExecutionEngine/EmulatorABI.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace mlir::kvcache {

/// An entry point of the emulator runtime, named after its C function:
/// those of KVEMU_RUNTIME_FUNCTIONS, then those of KVEMU_DEVICE_FUNCTIONS.
enum class RuntimeFunction : unsigned {
#define KVEMU_RUNTIME_ENUMERATOR(function) function,
#define KVEMU_DEVICE_ENUMERATOR(function, replaced) function,
  KVEMU_RUNTIME_FUNCTIONS(KVEMU_RUNTIME_ENUMERATOR)
      KVEMU_DEVICE_FUNCTIONS(KVEMU_DEVICE_ENUMERATOR)
#undef KVEMU_DEVICE_ENUMERATOR
#undef KVEMU_RUNTIME_ENUMERATOR
};

/// The C name of `function`.
StringRef getRuntimeFunctionName(RuntimeFunction function);

/// The LLVM-dialect type of `function`, derived from its C declaration.
LLVM::LLVMFunctionType getRuntimeFunctionType(MLIRContext *context,
                                              RuntimeFunction function);

/// The runtime function that replaces device function or `llvm.nvvm.*`
/// intrinsic `name` (KVEMU_DEVICE_FUNCTIONS), or nothing when the emulator
/// does not model it.
std::optional<RuntimeFunction> lookupDeviceFunction(StringRef name);

/// An i32 / i64 `llvm.mlir.constant` at the builder's insertion point.
Value createI32Constant(OpBuilder &builder, Location loc, int64_t value);
Value createI64Constant(OpBuilder &builder, Location loc, int64_t value);

/// `pointer` in the generic address space (an `llvm.addrspacecast` unless it
/// is there already): the runtime takes host addresses.
Value toGenericPointer(OpBuilder &builder, Location loc, Value pointer);

/// What the rewrite patterns of one host module share. The runtime
/// declarations and the globals go to the start of the host module; the
/// shared-memory index is that of the kernel module being rewritten.
class EmulatorState {
public:
  explicit EmulatorState(ModuleOp host) : host(host) {}

  /// A call of `function` with `args` at the builder's insertion point, on
  /// behalf of `op`; declares `function` in the host module on its first
  /// use. Reports an error on `op` when the types of `args` are not those of
  /// the function's C declaration or the host module already has the name
  /// for something else.
  FailureOr<LLVM::CallOp> call(OpBuilder &builder, Operation *op,
                               RuntimeFunction function, ValueRange args);

  /// Replaces `op` by a call of `function` with `args` (its results, if
  /// any, by the call's), as call() does.
  LogicalResult replaceByCall(RewriterBase &rewriter, Operation *op,
                              RuntimeFunction function, ValueRange args);

  /// Reports an error on `op` unless `type` is the C declaration's type of
  /// `function`: `what` describes the mismatching thing ("calls
  /// 'llvm.nvvm.ex2.approx.f32'").
  LogicalResult checkType(Operation *op, RuntimeFunction function,
                          LLVM::LLVMFunctionType type, const Twine &what);

  /// The address of a NUL-terminated constant string global holding `text`
  /// (one global per distinct text).
  Value stringAddress(OpBuilder &builder, Location loc, StringRef text);

  /// The site of one GPU operation: its location as "file:line:col" text, in
  /// a global of its own, so that the runtime tells operations apart by
  /// address.
  Value siteAddress(OpBuilder &builder, Location loc);

  /// Reports `diagnostic`, an error of a rewrite pattern, and returns
  /// failure(): the pass fails once the patterns have run.
  LogicalResult reportError(InFlightDiagnostic &&diagnostic);
  bool hasErrors() const { return errorReported; }

  /// The index of each shared-memory global of the kernel module being
  /// rewritten, by symbol name.
  llvm::StringMap<int32_t> sharedIndex;

private:
  FailureOr<LLVM::LLVMFuncOp> declare(OpBuilder &builder, Operation *op,
                                      RuntimeFunction function);
  void createStringGlobal(OpBuilder &builder, Location loc, StringRef name,
                          StringRef text);

  ModuleOp host;
  llvm::StringMap<std::string> stringGlobals;
  unsigned siteCount = 0;
  bool errorReported = false;
};

/// The patterns of `kvcache-emulate-nvvm`, one per NVVM op (plus the
/// instrumentation of memory ops, the shared-memory addresses and the calls
/// of modelled intrinsics), all rewriting into runtime calls through
/// `state`. They run with walkAndApplyPatterns: each op is visited once.
void populateEmulateNVVMPatterns(RewritePatternSet &patterns,
                                 EmulatorState &state);

/// The parts of populateEmulateNVVMPatterns, by file: special registers,
/// barriers, cp.async, intrinsic calls and memory accesses
/// (KernelPatterns.cpp); shfl.sync, ldmatrix and mma.sync
/// (WarpPatterns.cpp); the fp8 conversions (EmulateConversions.cpp).
void populateKernelOpPatterns(RewritePatternSet &patterns,
                              EmulatorState &state);
void populateWarpCollectivePatterns(RewritePatternSet &patterns,
                                    EmulatorState &state);
void populateFp8ConversionPatterns(RewritePatternSet &patterns,
                                   EmulatorState &state);

/// A pattern rewriting `OpTy` into calls of the runtime through `state`.
template <typename OpTy>
struct EmulatorPattern : OpRewritePattern<OpTy> {
  EmulatorPattern(MLIRContext *context, EmulatorState &state)
      : OpRewritePattern<OpTy>(context), state(state) {}

protected:
  EmulatorState &state;
};

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_NVVMTOEMULATOR_RUNTIMECALLS_H
