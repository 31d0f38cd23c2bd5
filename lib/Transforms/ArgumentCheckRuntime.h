//===- ArgumentCheckRuntime.h - what the argument checks call ---*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Private to kvcache-generate-argument-checks: the reporter that formats a
// failed check into a message buffer, and the module's failure handling of
// checked mode (capture mode, the recorded message, print and abort).
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_TRANSFORMS_ARGUMENTCHECKRUNTIME_H
#define KVCACHE_LIB_TRANSFORMS_ARGUMENTCHECKRUNTIME_H

#include "KVCache/IR/ArgumentChecks.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::kvcache {

/// Bytes of the message buffers of checked mode and of the recorded
/// message: every message fits (the docs promise 1024 is enough).
constexpr int64_t kMessageBytes = 1024;

/// A reporter that, on the first failed check, formats the message into
/// `message` (a memref<?xi8>, truncated to its size, NUL-terminated) with
/// snprintf and sets `flag` (a memref<i1>); every later check and guarded
/// region is skipped while the flag is set. The message starts with
/// "<function>: <op> at <file:line:col>: ".
class MessageReporter final : public KVCheckReporter {
public:
  MessageReporter(ModuleOp module, StringRef function, Value message,
                  Value flag)
      : module(module), function(function.str()), message(message),
        flag(flag) {}

  /// The op whose checks come next (it names the messages).
  void setOp(Operation *op);
  /// Checks emitted since `setOp`.
  unsigned getNumChecks() const { return numChecks; }

  void check(OpBuilder &builder, Location loc, Value failed, StringRef format,
             ValueRange values) override;
  /// Only when a check was emitted since the last guard (nesting nothing
  /// else).
  void guard(OpBuilder &builder, Location loc) override;

private:
  ModuleOp module;
  std::string function;
  std::string prefix;
  Value message, flag;
  unsigned numChecks = 0;
};

/// The i8 data pointer (`!llvm.ptr`) of the memref<?xi8> or
/// memref<Nxi8> `buffer`.
Value getBufferPointer(OpBuilder &builder, Location loc, Value buffer);

/// The symbols checked mode defines (its functions, handlers and globals):
/// a module that has one of them cannot be checked, and no function's check
/// routine may take one of their names.
ArrayRef<StringRef> getCheckedModeSymbols();

/// Defines (once) what checked mode calls: the public
/// `kvcache_check_capture(i32)` and `kvcache_check_failure() -> !llvm.ptr`,
/// the private handlers `__kvcache_check_fail(!llvm.ptr)` and
/// `__kvcache_check_abort(!llvm.ptr)` and the globals
/// they share.
void defineCheckedModeRuntime(OpBuilder &builder, ModuleOp module);

/// Calls the handler with the message in `buffer`: it records the message
/// (capture mode) or prints it to stderr and aborts.
/// Without `mayReturn` (a function that cannot return early) it prints and
/// aborts in capture mode too.
void emitFailureCall(OpBuilder &builder, Location loc, Value buffer,
                     bool mayReturn = true);

/// Whether a failure is recorded (capture mode), as an i1.
Value emitFailureRecorded(OpBuilder &builder, Location loc);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_TRANSFORMS_ARGUMENTCHECKRUNTIME_H
