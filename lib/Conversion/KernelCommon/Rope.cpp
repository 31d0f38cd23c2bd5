//===- Rope.cpp - rope_ragged's rotation, for every target -------------===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "Rope.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/TypeUtilities.h"
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
      offset(cast<ShapedType>(op.getQ().getType()).getDimSize(2) -
             op.getRotaryDims()),
      halfStyle(op.isHalfStyle()) {
  auto qType = cast<MemRefType>(op.getQ().getType());
  int64_t divides = std::gcd(offset, half);
  int64_t elementBytes = llvm::divideCeil(qType.getElementTypeBitWidth(), 8);
  width = std::max<int64_t>(vectorBytes / elementBytes, 1);
  width = std::min<int64_t>(llvm::bit_floor(uint64_t(width)), 64);
  while (divides % width != 0)
    width /= 2;
}

RopeEmitter::RopeEmitter(KernelBuilder &k, const RowRope &rope,
                         int64_t headSize, int64_t width)
    : k(k), width(width), half(rope.rotaryDims / 2),
      offset(headSize - rope.rotaryDims), halfStyle(rope.halfStyle) {}

int64_t RopeEmitter::fitWidth(int64_t width, int64_t rotaryDims,
                              int64_t headSize) {
  // The largest power of two dividing their greatest common divisor: a
  // chunk of whole interleaved pairs has an even width (q's rows of 18
  // elements, all rotary, gave chunks of 9: found by the fuzzer).
  int64_t divisor =
      std::gcd(width, std::gcd(headSize - rotaryDims, rotaryDims / 2));
  return divisor & -divisor;
}

Value RopeEmitter::rotaryPosition(KernelBuilder &k, Operation *op,
                                  Value table, Value positions, Value row,
                                  Value token, bool checked) {
  Value position = positions ? k.loadOffset(positions, row) : token;
  if (checked)
    RuntimeChecker(k.b, op, k.runsOn())
        .checkLess(position, memref::DimOp::create(k.b, k.loc, table, 0),
                   "rotary position", "max_positions (the rows of cos_sin)");
  return position;
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

std::pair<Value, Value> RopeEmitter::getPairElements(Value pair) {
  if (halfStyle) {
    Value first = k.add(k.index(offset), pair);
    return {first, k.add(first, k.index(half))};
  }
  Value first = k.add(k.index(offset), k.add(pair, pair));
  return {first, k.add(first, k.index(width))};
}

std::pair<Value, Value> RopeEmitter::rotatePair(Value a, Value b, Value cos,
                                                Value sin) {
  auto [x, y] = halfStyle ? std::pair{a, b} : deinterleave(a, b);
  Value rotatedX = k.fsub(k.fmul(x, cos), k.fmul(y, sin));
  Value rotatedY = k.fadd(k.fmul(x, sin), k.fmul(y, cos));
  return halfStyle ? std::pair{rotatedX, rotatedY}
                   : interleave(rotatedX, rotatedY);
}

void RopeEmitter::rotateChunk(const RotatedRows &rows, Value head, Value pair,
                              Value cos, Value sin) {
  auto [first, second] = getPairElements(pair);
  Value a = rows.load(head, first);
  Value b = rows.load(head, second);
  auto [outA, outB] = rotatePair(a, b, cos, sin);
  rows.store(outA, head, first);
  rows.store(outB, head, second);
}

std::pair<Value, Value>
RopeEmitter::loadInterleavedCosSin(Value table, Value position, Value j) {
  // Table elements [j, j + width) are the chunk's (cos, sin) pairs.
  auto f32 = cast<VectorType>(chunkType(k.b.getF32Type()));
  Value pairs = vector::LoadOp::create(k.b, k.loc, f32, table,
                                       ValueRange{position, j},
                                       /*nontemporal=*/false,
                                       chunkAlignment(table.getType()));
  Value negated = arith::NegFOp::create(k.b, k.loc, pairs);
  SmallVector<int64_t> cosLanes, sinLanes;
  for (int64_t i = 0; i < width; ++i) {
    cosLanes.push_back(i & ~int64_t(1));
    sinLanes.push_back(i % 2 == 0 ? width + i + 1 : i);
  }
  return {vector::ShuffleOp::create(k.b, k.loc, pairs, pairs, cosLanes),
          vector::ShuffleOp::create(k.b, k.loc, pairs, negated, sinLanes)};
}

Value RopeEmitter::rotateInterleavedChunk(Value chunk, Value cos, Value sin) {
  SmallVector<int64_t> partnerLanes;
  for (int64_t i = 0; i < width; ++i)
    partnerLanes.push_back(i ^ 1);
  return rotateWithPartner(
      chunk,
      vector::ShuffleOp::create(k.b, k.loc, chunk, chunk, partnerLanes), cos,
      sin);
}

Value RopeEmitter::rotateWithPartner(Value own, Value partner, Value cos,
                                     Value sin) {
  // Each element is a pair's first (x) or second (y): with its partner p
  // and the pair's (cos, sin), x cos + p (-sin) = x cos - y sin and
  // y cos + p sin = x sin + y cos, rotatePair's products and sums.
  return k.fadd(k.fmul(own, cos), k.fmul(partner, sin));
}

Value RopeEmitter::rotateRowChunk(Value chunk, Value element, Value table,
                                  Value position,
                                  function_ref<Value(Value)> readAt) {
  auto rotate = [&]() -> Value {
    Type f32 = chunkType(k.b.getF32Type());
    Value own = k.widen(chunk, f32);
    Value j = offset ? k.sub(element, k.index(offset)) : element;
    if (!halfStyle && width > 1) {
      // Whole pairs: the partners are neighbouring lanes.
      auto [cos, sin] = loadInterleavedCosSin(table, position, j);
      return k.narrow(rotateInterleavedChunk(own, cos, sin), chunk.getType());
    }
    // The partner chunk lies `distance` elements after (a first) or
    // before (a second).
    Value distance = k.index(halfStyle ? half : 1);
    Value isFirst = halfStyle ? k.ult(j, distance)
                              : k.eq(k.remu(j, k.index(2)), k.index(0));
    Value pair = halfStyle ? k.select(isFirst, j, k.sub(j, distance))
                           : k.divu(j, k.index(2));
    auto [cos, sin] = loadCosSin(table, position, pair);
    sin = k.select(isFirst, arith::NegFOp::create(k.b, k.loc, sin), sin);
    Value partner = k.widen(readAt(k.select(isFirst, k.add(element, distance),
                                            k.sub(element, distance))),
                            f32);
    return k.narrow(rotateWithPartner(own, partner, cos, sin),
                    chunk.getType());
  };
  if (offset == 0)
    return rotate();
  if (std::optional<int64_t> at = getConstantIntValue(element))
    return *at >= offset ? rotate() : chunk;
  return k.ifThenElse(
      k.uge(element, k.index(offset)), chunk.getType(),
      [&]() -> SmallVector<Value> { return {rotate()}; },
      [&]() -> SmallVector<Value> { return {chunk}; })[0];
}

void RopeEmitter::copyChunk(Value from, Value to, Value row, Value head,
                            Value element, Value toRow) {
  SmallVector<Value, 3> at = {row, head, element};
  SmallVector<Value, 3> toAt = {toRow ? toRow : row, head, element};
  Type type = chunkType(cast<MemRefType>(from.getType()).getElementType());
  if (width == 1) {
    memref::StoreOp::create(
        k.b, k.loc, memref::LoadOp::create(k.b, k.loc, from, at), to, toAt);
    return;
  }
  Value chunk =
      vector::LoadOp::create(k.b, k.loc, cast<VectorType>(type), from, at,
                             /*nontemporal=*/false,
                             chunkAlignment(from.getType()));
  vector::StoreOp::create(k.b, k.loc, chunk, to, toAt, /*nontemporal=*/false,
                          chunkAlignment(to.getType()));
}

void RopeEmitter::emitRowLoops(int64_t heads,
                               function_ref<void(Value, Value)> copy,
                               ArrayRef<RotatedRows> sides, Value table,
                               Value position) {
  Value zero = k.index(0), one = k.index(1), step = k.index(width);
  if (offset > 0 && heads > 0)
    k.forLoop(zero, k.index(heads), one, [&](Value head) {
      k.forLoop(zero, k.index(offset), step,
                [&](Value element) { copy(head, element); });
    });
  if (!halfStyle && width > 1) {
    // Chunks of whole interleaved pairs in place: each lane's cos and signed
    // sin read once per chunk for every head, its partner by a swap within
    // the chunk (rotateInterleavedChunk), so no deinterleaving.
    Value rotaryStart = k.index(offset);
    k.forLoop(zero, k.index(2 * half), step, [&](Value j) {
      Value cos, sin;
      std::tie(cos, sin) = loadInterleavedCosSin(table, position, j);
      Value element = k.add(rotaryStart, j);
      for (const RotatedRows &rows : sides)
        k.forLoop(zero, k.index(rows.numHeads), one, [&](Value head) {
          rows.store(rotateInterleavedChunk(rows.load(head, element), cos,
                                            sin),
                     head, element);
        });
    });
    return;
  }
  k.forLoop(zero, k.index(half), step, [&](Value pair) {
    Value cos, sin;
    std::tie(cos, sin) = loadCosSin(table, position, pair);
    for (const RotatedRows &rows : sides)
      k.forLoop(zero, k.index(rows.numHeads), one, [&](Value head) {
        rotateChunk(rows, head, pair, cos, sin);
      });
  });
}

RotatedRows RopeEmitter::stored(Value rows, Value row, Value cache,
                                Value page, Value slot) {
  RotatedRows rotated = queries(rows, rows, row);
  Type chunk = chunkType(cast<MemRefType>(rows.getType()).getElementType());
  KernelBuilder &kb = k;
  rotated.store = [=, &kb](Value values, Value head, Value element) {
    PageStoreOp::create(kb.b, kb.loc, kb.narrow(values, chunk), cache, page,
                        slot, head, element);
  };
  rotated.numHeads = KVCacheParams::get(cache.getType()).numHeads;
  return rotated;
}

RotatedRows RopeEmitter::queries(Value q, Value qOut, Value row,
                                 Value outRow) {
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
        SmallVector<Value, 3> at = {outRow ? outRow : row, head, element};
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

QueryRope::QueryRope(KernelBuilder &k, AttentionOpInterface op, Value q,
                     Value table, Value positions, bool checked)
    : k(k), op(op), q(q), headSize(op.getQ().getType().getDimSize(2)),
      checked(checked) {
  if (op.getCosSin())
    rope = {table, positions, static_cast<int64_t>(*op.getRotaryDims()),
            op.getStyle() == "half"};
}

LogicalResult QueryRope::checkStrides(AttentionOpInterface op) {
  if (!op.getCosSin() || hasUnitInnerStride(op.getCosSin()))
    return success();
  return op->emitOpError("cannot be lowered: the rope clause's 'cos_sin' "
                         "needs a unit innermost stride (copy it into a "
                         "contiguous buffer)");
}

Value QueryRope::rotaryPosition(Value row, Value position) {
  if (!rope)
    return Value();
  return RopeEmitter::rotaryPosition(k, op, rope.cosSin, rope.positions, row,
                                     position, checked);
}

Value QueryRope::rotate(Value chunk, Value row, Value head, Value element,
                        Value rotary) {
  if (!rope)
    return chunk;
  auto vector = dyn_cast<VectorType>(chunk.getType());
  int64_t size = vector ? vector.getNumElements() : 1;
  int64_t width = RopeEmitter::fitWidth(size, rope.rotaryDims, headSize);
  RopeEmitter emitter(k, rope, headSize, width);
  Type elementType = getElementTypeOrSelf(chunk.getType());
  auto readAt = [&](Value at) -> Value {
    SmallVector<Value, 3> indices = {row, head, at};
    if (width == 1)
      return memref::LoadOp::create(k.b, k.loc, q, indices);
    return vector::LoadOp::create(
        k.b, k.loc, VectorType::get({width}, elementType), q, indices);
  };
  // A scalar, or a vector of pieces of the emitter's chunk type.
  if (!vector || (width == size && width > 1))
    return emitter.rotateRowChunk(chunk, element, rope.cosSin, rotary,
                                  readAt);
  // Pieces of whole pairs (or of half pairs' firsts and seconds), each
  // within the unrotated or the rotary part; single elements as scalars.
  Value result = chunk;
  for (int64_t i = 0; i < size; i += width) {
    Value at = k.b.createOrFold<arith::AddIOp>(k.loc, element, k.index(i));
    if (width == 1) {
      Value piece = vector::ExtractOp::create(k.b, k.loc, chunk, i);
      result = vector::InsertOp::create(
          k.b, k.loc,
          emitter.rotateRowChunk(piece, at, rope.cosSin, rotary, readAt),
          result, i);
      continue;
    }
    Value piece = vector::ExtractStridedSliceOp::create(
        k.b, k.loc, chunk, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{width},
        ArrayRef<int64_t>{1});
    result = vector::InsertStridedSliceOp::create(
        k.b, k.loc,
        emitter.rotateRowChunk(piece, at, rope.cosSin, rotary, readAt),
        result, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{1});
  }
  return result;
}
