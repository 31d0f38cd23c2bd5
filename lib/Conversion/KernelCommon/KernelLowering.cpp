//===- KernelLowering.cpp - what kernel-op lowerings share ---------------===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "KVCache/IR/KVCacheOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>

using namespace mlir;
using namespace mlir::kvcache;

Location mlir::kvcache::getKernelLoc(Operation *op) {
  return NameLoc::get(op->getName().getIdentifier(), op->getLoc());
}

bool mlir::kvcache::hasUnitInnerStride(ValueRange memrefs) {
  return llvm::all_of(memrefs, [](Value memref) {
    SmallVector<int64_t> strides;
    int64_t offset;
    return succeeded(cast<MemRefType>(memref.getType())
                         .getStridesAndOffset(strides, offset)) &&
           strides.back() == 1;
  });
}

int64_t mlir::kvcache::getRowVectorWidth(const KVCacheParams &params,
                                         MemRefType rows, int64_t maxBytes) {
  int64_t elementBytes =
      llvm::divideCeil(params.elementType.getIntOrFloatBitWidth(), 8);
  int64_t width = std::max<int64_t>(maxBytes / elementBytes, 1);
  auto fits = [&](int64_t value) { return value % width == 0; };
  while (width > 1 && !fits(params.headSize))
    width /= 2;
  if (!rows)
    return width;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(rows.getStridesAndOffset(strides, offset)) ||
      strides.back() != 1)
    return 1;
  for (;;) {
    bool aligned = ShapedType::isStatic(offset) && fits(offset);
    for (int64_t stride : ArrayRef(strides).drop_back())
      aligned &= ShapedType::isStatic(stride) && fits(stride);
    if (aligned || width == 1)
      return width;
    width /= 2;
  }
}

int64_t mlir::kvcache::getRaggedChunkWidth(const KVCacheParams &cacheParams,
                                           MemRefType rows,
                                           int64_t maxBytes) {
  KVCacheParams params = cacheParams;
  params.elementType = rows.getElementType();
  int64_t width = getRowVectorWidth(params, rows, maxBytes);
  if (params.elementType == cacheParams.elementType)
    return width;
  return std::gcd(width, params.scales.groupSize(params.headSize));
}

LogicalResult mlir::kvcache::applyKernelLoweringPatterns(
    Operation *root, RewritePatternSet &&patterns, StringRef passName) {
  if (failed(verifyKernelOpsInMemRefForm(root, passName)))
    return failure();
  MLIRContext *ctx = root->getContext();
  bool reported = false;
  {
    // Notes errors, leaving them to the handlers already installed.
    ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diagnostic) {
      reported |= diagnostic.getSeverity() == DiagnosticSeverity::Error;
      return failure();
    });
    walkAndApplyPatterns(root, std::move(patterns));
  }
  bool left = false;
  root->walk([&](KernelOpInterface op) {
    left = true;
    if (!reported)
      op->emitOpError("has no lowering in ") << passName;
  });
  return failure(left || reported);
}

Type mlir::kvcache::getChunkType(const KVCacheParams &params,
                                 int64_t width) {
  if (width == 1)
    return params.elementType;
  return VectorType::get({width}, params.elementType);
}
