//===- KernelBuilders.cpp - shared pieces of kernel-op lowerings -*- C++ -*-=//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"

#include "KVCache/IR/KVCacheOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::kvcache;

Location mlir::kvcache::getKernelLoc(Operation *op) {
  return NameLoc::get(op->getName().getIdentifier(), op->getLoc());
}

int64_t mlir::kvcache::getRowVectorWidth(const PagedCacheParams &params,
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

Value mlir::kvcache::createWriteCacheLength(OpBuilder &builder, Location loc,
                                            Value cache, Value batch) {
  return CacheLengthOp::create(builder, loc, cache, batch,
                               /*serves_write=*/true);
}

Value mlir::kvcache::loadOffset(OpBuilder &builder, Location loc,
                                Value memref, ValueRange indices) {
  Value value = memref::LoadOp::create(builder, loc, memref, indices);
  return arith::IndexCastUIOp::create(builder, loc, builder.getIndexType(),
                                      value);
}

Value mlir::kvcache::getNumSequences(OpBuilder &builder, Location loc,
                                     Value offsets) {
  Value size = memref::DimOp::create(builder, loc, offsets, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value isEmpty = arith::CmpIOp::create(builder, loc,
                                        arith::CmpIPredicate::eq, size, zero);
  Value minusOne = arith::SubIOp::create(builder, loc, size, one);
  return arith::SelectOp::create(builder, loc, isEmpty, zero, minusOne);
}

Value mlir::kvcache::emitSequenceSearch(OpBuilder &builder, Location loc,
                                        Value offsets, Value numSequences,
                                        Value row) {
  // Invariant: offsets[low] <= row < offsets[high] (high = numSequences
  // stands for +infinity).
  Type indexType = builder.getIndexType();
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  auto search = scf::WhileOp::create(
      builder, loc, TypeRange{indexType, indexType},
      ValueRange{zero, numSequences},
      [&](OpBuilder &b, Location l, ValueRange bounds) {
        Value span = arith::SubIOp::create(b, l, bounds[1], bounds[0]);
        Value more = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt,
                                           span, one);
        scf::ConditionOp::create(b, l, more, bounds);
      },
      [&](OpBuilder &b, Location l, ValueRange bounds) {
        Value sum = arith::AddIOp::create(b, l, bounds[0], bounds[1]);
        Value mid = arith::ShRUIOp::create(b, l, sum, one);
        Value start = loadOffset(b, l, offsets, mid);
        Value goRight = arith::CmpIOp::create(
            b, l, arith::CmpIPredicate::ule, start, row);
        Value low = arith::SelectOp::create(b, l, goRight, mid, bounds[0]);
        Value high = arith::SelectOp::create(b, l, goRight, bounds[1], mid);
        scf::YieldOp::create(b, l, ValueRange{low, high});
      });
  return search.getResult(0);
}

Value mlir::kvcache::createLookup(OpBuilder &builder, Location loc,
                                  Value cache, Value batch, Value token,
                                  bool servesWrite, Value *slot) {
  auto lookup = LookupOp::create(builder, loc, cache, batch, token,
                                 /*read_only=*/!servesWrite);
  *slot = lookup.getSlot();
  return lookup.getPage();
}

/// Whether `type` is a cache type no lowering supports yet.
static bool isCacheWithoutLowering(Type type) {
  if (!isa<PagedCollectionType, PagedCacheType>(type))
    return false;
  return isa<Float8E4M3FNType>(PagedCacheParams::get(type).elementType);
}

LogicalResult mlir::kvcache::rejectCachesWithoutLowering(Operation *root) {
  WalkResult result = root->walk([](Operation *op) {
    auto check = [&](TypeRange types) {
      for (Type type : types)
        if (isCacheWithoutLowering(type)) {
          op->emitOpError("uses an f8E4M3FN cache, which no lowering "
                          "supports until its scales are modeled; use an "
                          "f16, bf16 or f32 cache");
          return false;
        }
      return true;
    };
    bool ok = check(op->getOperandTypes()) && check(op->getResultTypes());
    if (auto function = dyn_cast<FunctionOpInterface>(op))
      ok = ok && check(function.getArgumentTypes()) &&
           check(function.getResultTypes());
    return ok ? WalkResult::advance() : WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

LogicalResult mlir::kvcache::applyKernelLoweringPatterns(
    Operation *root, RewritePatternSet &&patterns, StringRef passName) {
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

Type mlir::kvcache::getChunkType(const PagedCacheParams &params,
                                 int64_t width) {
  if (width == 1)
    return params.elementType;
  return VectorType::get({width}, params.elementType);
}

/// The alignment a vector access of `type` on a row memref may claim:
/// getRowVectorWidth keeps the strides and the offset of the rows multiples
/// of the access width.
static llvm::Align getChunkAlignment(VectorType type) {
  uint64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
  return llvm::Align(getAccessAlignment(bytes, /*rowBytes=*/bytes));
}

/// Reads `width` elements of `rows` at [row, head, element], aligned to
/// their width.
static Value loadRowChunk(OpBuilder &builder, Location loc, Value rows,
                          ValueRange indices, Type chunkType) {
  if (auto vectorType = dyn_cast<VectorType>(chunkType))
    return vector::LoadOp::create(builder, loc, vectorType, rows, indices,
                                  /*nontemporal=*/false,
                                  getChunkAlignment(vectorType));
  return memref::LoadOp::create(builder, loc, rows, indices);
}

static void storeRowChunk(OpBuilder &builder, Location loc, Value value,
                          Value rows, ValueRange indices) {
  if (auto vectorType = dyn_cast<VectorType>(value.getType())) {
    vector::StoreOp::create(builder, loc, value, rows, indices,
                            /*nontemporal=*/false,
                            getChunkAlignment(vectorType));
    return;
  }
  memref::StoreOp::create(builder, loc, value, rows, indices);
}

void mlir::kvcache::emitRowChunkCopy(OpBuilder &builder, Location loc,
                                     Value cache, Value rows, Value row,
                                     Value page, Value slot, Value head,
                                     Value element, int64_t width,
                                     RowCopyDirection direction) {
  auto params = PagedCacheParams::get(cache.getType());
  Type chunkType = getChunkType(params, width);
  SmallVector<Value> rowIndices = {row, head, element};
  if (direction == RowCopyDirection::ToCache) {
    Value chunk = loadRowChunk(builder, loc, rows, rowIndices, chunkType);
    PageStoreOp::create(builder, loc, chunk, cache, page, slot, head,
                        element);
    return;
  }
  Value chunk = PageLoadOp::create(builder, loc, chunkType, cache, page, slot,
                                   head, element);
  storeRowChunk(builder, loc, chunk, rows, rowIndices);
}

void mlir::kvcache::emitPageChunkCopy(OpBuilder &builder, Location loc,
                                      Value cache, Value src, Value dst,
                                      Value slot, Value head, Value element,
                                      int64_t width) {
  auto params = PagedCacheParams::get(cache.getType());
  // The source page is part of the copy: checked like the write.
  auto chunk = PageLoadOp::create(builder, loc, getChunkType(params, width),
                                  cache, src, slot, head, element,
                                  /*serves_write=*/true);
  PageStoreOp::create(builder, loc, chunk, cache, dst, slot, head, element);
}
