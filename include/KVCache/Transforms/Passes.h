//===- Passes.h - kvcache dialect transforms --------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_TRANSFORMS_PASSES_H
#define KVCACHE_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace kvcache {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "KVCache/Transforms/Passes.h.inc"

/// Patterns of kvcache-expand-accesses: load/store to lookup +
/// page_load/page_store.
void populateExpandAccessesPatterns(RewritePatternSet &patterns);

} // namespace kvcache
} // namespace mlir

#endif // KVCACHE_TRANSFORMS_PASSES_H
