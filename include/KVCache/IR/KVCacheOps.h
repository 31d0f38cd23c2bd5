//===- KVCacheOps.h - kvcache dialect operations ----------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHEOPS_H
#define KVCACHE_IR_KVCACHEOPS_H

#include "KVCache/IR/ArgumentChecks.h"
#include "KVCache/IR/KVCacheDialect.h"
#include "KVCache/IR/KVCacheTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "KVCache/IR/KVCacheInterfaces.h.inc"

#define GET_OP_CLASSES
#include "KVCache/IR/KVCacheOps.h.inc"

namespace mlir::kvcache {

/// Fails, with an error that names `passName` and says to bufferize first,
/// when a kernel op under `root` is in the tensor form (docs/Contract.md
/// section 3.5): the passes that read the kernel ops' buffers take the
/// memref form.
LogicalResult verifyKernelOpsInMemRefForm(Operation *root, StringRef passName);

} // namespace mlir::kvcache

#endif // KVCACHE_IR_KVCACHEOPS_H
