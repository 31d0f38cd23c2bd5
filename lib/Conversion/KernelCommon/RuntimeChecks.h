//===- RuntimeChecks.h - run-time bound checks ------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_RUNTIMECHECKS_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_RUNTIMECHECKS_H

#include "KVCache/IR/KVCacheTypes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kvcache {

/// Where the code being built runs.
enum class RunsOn {
  /// The host (the CPU): a failed check prints and aborts.
  Host,
  /// A GPU kernel: there is no stderr, a failed check is a device assertion.
  Device,
};

/// Emits run-time checks for one kvcache op. A failed check stops the
/// program with a message naming the op, its source location, the checked
/// quantity and the bound: in host code the message goes to stderr (through
/// `dprintf(2, ...)`, so it is not lost in a buffer) and the program aborts;
/// in device code a `cf.assert` fails the device-side assertion. The caller
/// says which (`where`).
class RuntimeChecker final : public KVRuntimeChecks {
public:
  RuntimeChecker(OpBuilder &builder, Operation *op, RunsOn where);

  /// Checks `0 <= value < bound` (one unsigned comparison). `what` names the
  /// value, `boundName` the bound, e.g. ("physical page", "num_pages").
  void checkLess(Value value, Value bound, StringRef what,
                 StringRef boundName) override;
  void checkLess(Value value, int64_t bound, StringRef what,
                 StringRef boundName) override;

  /// Checks `value % divisor == 0`.
  void checkMultiple(Value value, int64_t divisor, StringRef what);

  /// Checks that `hasNaN` (i1) is false: a NaN written into an i8 cache
  /// (stored as 0). `row` and `element` (index) locate it.
  void checkNoNaNForI8(Value hasNaN, Value row, Value element);

  /// Stops the program when `ok` is false. Host code prints `hostFormat`
  /// with the index `value` and `bound` (two %lld); device code, which cannot
  /// format, reports `deviceText`.
  void emitFailure(Value ok, StringRef hostFormat, StringRef deviceText,
                   Value value, Value bound);

private:
  OpBuilder &builder;
  Operation *op;
  Location loc;
  bool onDevice;
};

/// "file:line:col" of `loc`, or "" when it has none.
std::string describeLocation(Location loc);

/// Returns the `llvm.func` named `name` of type `type` in `module`,
/// declaring it first (libc functions of host checks: dprintf, abort,
/// snprintf; the MPI library's functions of kvcache-mpi-to-llvm).
LLVM::LLVMFuncOp getOrDeclareFunction(OpBuilder &builder, ModuleOp module,
                                      StringRef name,
                                      LLVM::LLVMFunctionType type);

/// Returns the address of a private constant NUL-terminated string in
/// `module` (one global per distinct text).
Value getStringAddress(OpBuilder &builder, Location loc, ModuleOp module,
                       StringRef text);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_RUNTIMECHECKS_H
