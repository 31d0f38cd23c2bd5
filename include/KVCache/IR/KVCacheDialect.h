//===- KVCacheDialect.h - kvcache dialect -----------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHEDIALECT_H
#define KVCACHE_IR_KVCACHEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "KVCache/IR/KVCacheOpsDialect.h.inc"

#endif // KVCACHE_IR_KVCACHEDIALECT_H
