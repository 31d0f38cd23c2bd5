//===- KernelBuilder.cpp - the vocabulary kernel lowerings build with -----===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "Quantization.h"
#include "RuntimeChecks.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::kvcache;

Value KernelBuilder::fma(Value x, Value y, Value z) {
  // llvm.fmuladd: one fma where the target has one (NVPTX always for f32),
  // a multiply and an add where it has not (no libm fmaf call on CPUs
  // without FMA).
  return LLVM::FMulAddOp::create(b, loc, x, y, z);
}

Value KernelBuilder::dot(Value x, Value y) {
  auto at = [&](Value v, int64_t i) -> Value {
    return vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{i});
  };
  int64_t n = cast<VectorType>(x.getType()).getNumElements();
  Value sum = fmul(at(x, 0), at(y, 0));
  for (int64_t i = 1; i < n; ++i)
    sum = fma(at(x, i), at(y, i), sum);
  return sum;
}

Value KernelBuilder::exp(Value x) { return math::ExpOp::create(b, loc, x); }

Value KernelBuilder::log(Value x) { return math::LogOp::create(b, loc, x); }

Value KernelBuilder::log2(Value x) { return math::Log2Op::create(b, loc, x); }

Value KernelBuilder::tanh(Value x) { return math::TanhOp::create(b, loc, x); }

Value KernelBuilder::exp2Inline(Value x) {
  // ln(2)^i / i!: the Taylor series of 2^f, whose truncation error at
  // |f| = 1/2 is (ln(2) / 2)^8 / 8! < 1e-8.
  static constexpr double kCoefficients[] = {
      1.0,
      0.6931471805599453,
      0.2402265069591007,
      0.05550410866482158,
      0.009618129107628477,
      0.0013333558146428443,
      0.00015403530393381608,
      1.525273380405984e-05};
  // Constants of x's shape (an f32 scalar or vector) and its i32 twin.
  auto vector = dyn_cast<VectorType>(x.getType());
  auto constant = [&](double v) -> Value {
    return vector ? splatConstant(vector, v) : f32(v);
  };
  Type i32Type = vector ? Type(vector.clone(b.getI32Type())) : b.getI32Type();
  auto integer = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(
        b, loc, vector ? TypedAttr(DenseElementsAttr::get(
                             cast<ShapedType>(i32Type), b.getI32IntegerAttr(v)))
                       : TypedAttr(b.getI32IntegerAttr(v)));
  };
  Value clamped = arith::MinimumFOp::create(
      b, loc, arith::MaximumFOp::create(b, loc, x, constant(-127.0)),
      constant(127.0));
  Value n = math::RoundEvenOp::create(b, loc, clamped);
  Value f = fsub(clamped, n);
  Value p = constant(kCoefficients[7]);
  for (int i = 6; i >= 0; --i)
    p = vector ? vectorFma(p, f, constant(kCoefficients[i]))
               : fma(p, f, constant(kCoefficients[i]));
  // 2^n as the bits (n + 127) << 23: 0.0 for n = -127.
  Value exponent = arith::FPToSIOp::create(b, loc, i32Type, n);
  Value bits = arith::ShLIOp::create(
      b, loc, arith::AddIOp::create(b, loc, exponent, integer(127)),
      integer(23));
  return fmul(p, arith::BitcastOp::create(b, loc, x.getType(), bits));
}

void KernelBuilder::forLoop(Value lower, Value upper, Value step,
                            function_ref<void(Value)> body) {
  forLoop(lower, upper, step, ValueRange{},
          [&](Value iv, ValueRange) -> SmallVector<Value> {
            body(iv);
            return {};
          });
}

SmallVector<Value>
KernelBuilder::forLoop(Value lower, Value upper, Value step, ValueRange init,
                       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(b, loc, lower, upper, step, init);
  OpBuilder::InsertionGuard guard(b);
  if (init.empty()) {
    // A loop without iteration arguments comes with its scf.yield.
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar(), ValueRange{});
    return {};
  }
  b.setInsertionPointToStart(loop.getBody());
  scf::YieldOp::create(b, loc,
                       body(loop.getInductionVar(), loop.getRegionIterArgs()));
  return SmallVector<Value>(loop.getResults());
}

void KernelBuilder::parallelLoop(Value lower, Value upper,
                                 function_ref<void(Value)> body) {
  auto loop = scf::ParallelOp::create(b, loc, ValueRange{lower},
                                      ValueRange{upper}, ValueRange{index(1)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  body(loop.getInductionVars()[0]);
}

void KernelBuilder::ifThen(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  body();
}

SmallVector<Value>
KernelBuilder::ifThenElse(Value cond, TypeRange types,
                          function_ref<SmallVector<Value>()> thenBody,
                          function_ref<SmallVector<Value>()> elseBody) {
  auto ifOp = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  if (types.empty()) {
    // scf.if without results gets an implicit terminator.
    b.setInsertionPoint(ifOp.thenYield());
    thenBody();
    b.setInsertionPoint(ifOp.elseYield());
    elseBody();
    return {};
  }
  scf::YieldOp::create(b, loc, thenBody());
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  scf::YieldOp::create(b, loc, elseBody());
  return SmallVector<Value>(ifOp.getResults());
}

Value KernelBuilder::writeCacheLength(Value cache, Value batch) {
  return CacheLengthOp::create(b, loc, cache, batch,
                               /*serves_write=*/true);
}

Value KernelBuilder::loadOffset(Value memref, ValueRange indices) {
  Value value = memref::LoadOp::create(b, loc, memref, indices);
  return arith::IndexCastUIOp::create(b, loc, b.getIndexType(),
                                      value);
}

Value KernelBuilder::numSequences(Value offsets) {
  Value size = memref::DimOp::create(b, loc, offsets, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value isEmpty = arith::CmpIOp::create(b, loc,
                                        arith::CmpIPredicate::eq, size, zero);
  Value minusOne = arith::SubIOp::create(b, loc, size, one);
  return arith::SelectOp::create(b, loc, isEmpty, zero, minusOne);
}

Value KernelBuilder::sequenceOf(Value offsets, Value numSequences,
                                Value row) {
  // Invariant: offsets[low] <= row < offsets[high] (high = numSequences
  // stands for +infinity).
  Type indexType = b.getIndexType();
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  auto search = scf::WhileOp::create(
      b, loc, TypeRange{indexType, indexType},
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
        Value start = KernelBuilder{b, l}.loadOffset(offsets, mid);
        Value goRight = arith::CmpIOp::create(
            b, l, arith::CmpIPredicate::ule, start, row);
        Value low = arith::SelectOp::create(b, l, goRight, mid, bounds[0]);
        Value high = arith::SelectOp::create(b, l, goRight, bounds[1], mid);
        scf::YieldOp::create(b, l, ValueRange{low, high});
      });
  return search.getResult(0);
}

std::pair<Value, Value> KernelBuilder::lookup(Value cache, Value batch,
                                              Value token, bool servesWrite) {
  auto lookup = LookupOp::create(b, loc, cache, batch, token,
                                 /*read_only=*/!servesWrite);
  return {lookup.getPage(), lookup.getSlot()};
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

Value KernelBuilder::readRowChunk(Value cache, Value rows,
                                  const RowChunkPosition &at, int64_t width,
                                  RowCopyDirection direction) {
  // Of the rows' element type: a gather into float rows from a quantized
  // cache dequantizes (page_load with a float result).
  KVCacheParams params = KVCacheParams::get(cache.getType());
  params.elementType = cast<MemRefType>(rows.getType()).getElementType();
  Type chunkType = getChunkType(params, width);
  if (direction == RowCopyDirection::ToCache)
    return loadRowChunk(b, loc, rows, {at.row, at.head, at.element},
                        chunkType);
  return PageLoadOp::create(b, loc, chunkType, cache, at.page, at.slot,
                            at.head, at.element);
}

void KernelBuilder::storeQuantized(Value values, Value scale, Value cache,
                                   const RowChunkPosition &at, bool checked) {
  Type storage = KVCacheParams::get(cache.getType()).elementType;
  Value divisor = scale;
  if (auto vector = dyn_cast<VectorType>(values.getType()))
    divisor = splat(scale, vector);
  // A division, not a multiply by the reciprocal (div.rn.f32 in PTX).
  Value codes = encodeF32ToStorage(b, loc, fdiv(values, divisor), storage);
  auto store = PageStoreOp::create(b, loc, codes, cache, at.page, at.slot,
                                   at.head, at.element);
  if (checked && storage.isSignlessInteger(8))
    RuntimeChecker(b, store, runsOn())
        .checkNoNaNForI8(anyNaN(b, loc, values), at.row, at.element);
}

void KernelBuilder::writeRowChunk(Value chunk, Value cache, Value rows,
                                  const RowChunkPosition &at,
                                  RowCopyDirection direction) {
  if (direction == RowCopyDirection::ToCache) {
    PageStoreOp::create(b, loc, chunk, cache, at.page, at.slot, at.head,
                        at.element);
    return;
  }
  storeRowChunk(b, loc, chunk, rows, {at.row, at.head, at.element});
}

void KernelBuilder::copyPageChunk(Value cache, Value src, Value dst,
                                  Value slot, Value head, Value element,
                                  int64_t width) {
  auto params = KVCacheParams::get(cache.getType());
  // The source page is part of the copy: checked like the write.
  auto chunk = PageLoadOp::create(b, loc, getChunkType(params, width),
                                  cache, src, slot, head, element,
                                  /*serves_write=*/true);
  PageStoreOp::create(b, loc, chunk, cache, dst, slot, head, element);
}
