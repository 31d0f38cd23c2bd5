//===- Rope.cpp - rope_ragged's rotation, for every target -------------===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "Rope.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>

using namespace mlir;
using namespace mlir::kvcache;

LogicalResult RopeEmitter::checkStrides(RopeRaggedOp op) {
  if (hasUnitInnerStride({op.getQ(), op.getQOut(), op.getCosSin()}))
    return success();
  return op.emitOpError("cannot be lowered: 'q', 'q_out' and 'cos_sin' "
                        "need a unit innermost stride (copy them into "
                        "contiguous buffers)");
}

RopeEmitter::RopeEmitter(KernelBuilder &k, RopeRaggedOp op,
                         int64_t vectorBytes)
    : k(k), half(op.getRotaryDims() / 2),
      offset(op.getQ().getType().getDimSize(2) - op.getRotaryDims()),
      halfStyle(op.isHalfStyle()) {
  MemRefType qType = op.getQ().getType();
  int64_t divides = std::gcd(offset, half);
  int64_t elementBytes = llvm::divideCeil(qType.getElementTypeBitWidth(), 8);
  width = std::max<int64_t>(vectorBytes / elementBytes, 1);
  width = std::min<int64_t>(llvm::bit_floor(uint64_t(width)), 64);
  while (divides % width != 0)
    width /= 2;
}

Type RopeEmitter::chunkType(Type elementType) {
  if (width == 1)
    return elementType;
  return VectorType::get({width}, elementType);
}

llvm::Align RopeEmitter::chunkAlignment(Type type) {
  auto memref = cast<MemRefType>(type);
  KVCacheParams params{};
  params.elementType = memref.getElementType();
  params.headSize = memref.getShape().back();
  int64_t elementBytes =
      llvm::divideCeil(params.elementType.getIntOrFloatBitWidth(), 8);
  int64_t bytes = width * elementBytes;
  // The width divides the rows' (or the table's) last dim: it divides R
  // and head_size - R.
  if (getRowVectorWidth(params, memref, bytes) < width)
    return llvm::Align(elementBytes);
  return llvm::Align(getAccessAlignment(bytes, bytes));
}

std::pair<Value, Value> RopeEmitter::loadCosSin(Value table, Value position,
                                                Value pair) {
  // The chunk's (cos, sin) pairs: table elements [2 pair, 2 pair + 2w).
  Value first = k.add(pair, pair);
  auto load = [&](Value element) -> Value {
    SmallVector<Value, 2> at = {position, element};
    if (width == 1)
      return memref::LoadOp::create(k.b, k.loc, table, at);
    return vector::LoadOp::create(
        k.b, k.loc, cast<VectorType>(chunkType(k.b.getF32Type())), table, at,
        /*nontemporal=*/false, chunkAlignment(table.getType()));
  };
  return deinterleave(load(first), load(k.add(first, k.index(width))));
}

void RopeEmitter::rotateChunk(const RotatedRows &rows, Value head, Value pair,
                              Value cos, Value sin) {
  Value first, second;
  if (halfStyle) {
    first = k.add(k.index(offset), pair);
    second = k.add(first, k.index(half));
  } else {
    first = k.add(k.index(offset), k.add(pair, pair));
    second = k.add(first, k.index(width));
  }
  Value a = rows.load(head, first), b = rows.load(head, second);
  auto [x, y] = halfStyle ? std::pair{a, b} : deinterleave(a, b);
  Value rotatedX = k.fsub(k.fmul(x, cos), k.fmul(y, sin));
  Value rotatedY = k.fadd(k.fmul(x, sin), k.fmul(y, cos));
  auto [outA, outB] = halfStyle ? std::pair{rotatedX, rotatedY}
                                : interleave(rotatedX, rotatedY);
  rows.store(outA, head, first);
  rows.store(outB, head, second);
}

void RopeEmitter::copyChunk(Value from, Value to, Value row, Value head,
                            Value element) {
  SmallVector<Value, 3> at = {row, head, element};
  Type type = chunkType(cast<MemRefType>(from.getType()).getElementType());
  if (width == 1) {
    memref::StoreOp::create(
        k.b, k.loc, memref::LoadOp::create(k.b, k.loc, from, at), to, at);
    return;
  }
  Value chunk =
      vector::LoadOp::create(k.b, k.loc, cast<VectorType>(type), from, at,
                             /*nontemporal=*/false,
                             chunkAlignment(from.getType()));
  vector::StoreOp::create(k.b, k.loc, chunk, to, at, /*nontemporal=*/false,
                          chunkAlignment(to.getType()));
}

RotatedRows RopeEmitter::queries(Value q, Value qOut, Value row) {
  auto qType = cast<MemRefType>(q.getType());
  Type f32 = chunkType(k.b.getF32Type());
  Type chunk = chunkType(qType.getElementType());
  llvm::Align loadAlign = chunkAlignment(q.getType());
  llvm::Align storeAlign = chunkAlignment(qOut.getType());
  KernelBuilder &kb = k;
  return {
      [=, &kb](Value head, Value element) -> Value {
        SmallVector<Value, 3> at = {row, head, element};
        if (auto vector = dyn_cast<VectorType>(chunk))
          return kb.widen(vector::LoadOp::create(kb.b, kb.loc, vector, q, at,
                                                 /*nontemporal=*/false,
                                                 loadAlign),
                          f32);
        return kb.widen(memref::LoadOp::create(kb.b, kb.loc, q, at), f32);
      },
      [=, &kb](Value values, Value head, Value element) {
        SmallVector<Value, 3> at = {row, head, element};
        Value narrow = kb.narrow(values, chunk);
        if (isa<VectorType>(chunk))
          vector::StoreOp::create(kb.b, kb.loc, narrow, qOut, at,
                                  /*nontemporal=*/false, storeAlign);
        else
          memref::StoreOp::create(kb.b, kb.loc, narrow, qOut, at);
      },
      qType.getDimSize(1)};
}

RotatedRows RopeEmitter::keys(Value cache, Value row, Value page, Value slot,
                              bool checked) {
  KVCacheParams params = KVCacheParams::get(cache.getType());
  Type f32 = chunkType(k.b.getF32Type());
  Type stored = chunkType(params.elementType);
  // A cache with a per-layer scale reads dequantized values (a float
  // page_load) and writes them quantized with that scale again.
  Value scale;
  if (params.scales)
    scale = PageLoadScaleOp::create(k.b, k.loc, cache, page, slot, k.index(0),
                                    k.index(0));
  KernelBuilder &kb = k;
  return {
      [=, &kb](Value head, Value element) -> Value {
        return kb.widen(PageLoadOp::create(kb.b, kb.loc, scale ? f32 : stored,
                                           cache, page, slot, head, element,
                                           /*serves_write=*/true),
                        f32);
      },
      [=, &kb](Value values, Value head, Value element) {
        if (scale)
          return kb.storeQuantized(values, scale, cache,
                                   {row, page, slot, head, element}, checked);
        PageStoreOp::create(kb.b, kb.loc, kb.narrow(values, stored), cache,
                            page, slot, head, element);
      },
      params.numHeads};
}

std::pair<Value, Value> RopeEmitter::deinterleave(Value a, Value b) {
  if (width == 1)
    return {a, b};
  SmallVector<int64_t> even, odd;
  for (int64_t i = 0; i < width; ++i) {
    even.push_back(2 * i);
    odd.push_back(2 * i + 1);
  }
  return {vector::ShuffleOp::create(k.b, k.loc, a, b, even),
          vector::ShuffleOp::create(k.b, k.loc, a, b, odd)};
}

std::pair<Value, Value> RopeEmitter::interleave(Value x, Value y) {
  if (width == 1)
    return {x, y};
  SmallVector<int64_t> low, high;
  for (int64_t i = 0; i < width / 2; ++i) {
    low.append({i, width + i});
    high.append({width / 2 + i, width + width / 2 + i});
  }
  return {vector::ShuffleOp::create(k.b, k.loc, x, y, low),
          vector::ShuffleOp::create(k.b, k.loc, x, y, high)};
}
