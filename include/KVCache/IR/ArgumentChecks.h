//===- ArgumentChecks.h - reporter of the argument checks -------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_ARGUMENTCHECKS_H
#define KVCACHE_IR_ARGUMENTCHECKS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::kvcache {

/// Receives the checks an op with `ArgumentChecksOpInterface` emits and
/// decides what a failed one does: kvcache-generate-argument-checks formats
/// the message of the first failed check into a buffer and makes every
/// later check a no-op (the check routine returns 1; checked mode stops the
/// call). The ops say what to check; the reporter says the rest of the
/// message (the function, the op and its location).
class KVCheckReporter {
public:
  virtual ~KVCheckReporter();

  /// Emits a check at the builder's insertion point that fails when the i1
  /// `failed` holds and no earlier check failed. The message is the printf
  /// format `format` with one `%lld` for each of `values` (index values),
  /// in order; it names the operands and both extents, e.g. "'out' has %lld
  /// rows, but row_offsets[%lld] (the rows of the batch) is %lld".
  virtual void check(OpBuilder &builder, Location loc, Value failed,
                     StringRef format, ValueRange values) = 0;

  /// Moves the builder's insertion point into a region that runs only when
  /// every check emitted so far held, so that the checks emitted next may
  /// read what those made sure is in bounds.
  virtual void guard(OpBuilder &builder, Location loc) = 0;
};

} // namespace mlir::kvcache

#endif // KVCACHE_IR_ARGUMENTCHECKS_H
