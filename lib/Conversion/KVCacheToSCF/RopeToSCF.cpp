//===- RopeToSCF.cpp - rope_ragged to loops ---------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache.rope_ragged on the CPU, one pass over the step's rows: per row
// one lookup, then, chunk of pairs by chunk of pairs, the chunk's cos and
// sin read once from the row's table row and applied to every query head
// (q -> q_out) and every key head of the cached row (in place), in f32,
// rounded once (docs/Contract.md 3.3).
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/KernelBuilder.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

#include <functional>
#include <numeric>

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// One side of the rotation, in chunks of `width` elements as f32: the
/// queries (`q` read, `q_out` written) or a cached key row (in place).
struct RotatedRows {
  std::function<Value(Value head, Value element)> load;
  std::function<void(Value chunk, Value head, Value element)> store;
  int64_t numHeads;
};

/// Emits the rotation of one row. Pairs are processed `width` at a time
/// (a power of two dividing the rotary offset and R/2, so that every chunk
/// access is aligned to its width); pair i is (o + 2i, o + 2i + 1)
/// (interleaved) or (o + i, o + i + R/2) (half).
class RopeRowEmitter {
public:
  RopeRowEmitter(KernelBuilder &k, RopeRaggedOp op, int64_t width)
      : k(k), width(width), half(op.getRotaryDims() / 2),
        offset(op.getQ().getType().getDimSize(2) - op.getRotaryDims()),
        halfStyle(op.isHalfStyle()), table(op.getCosSin()) {}

  /// Copies the `offset` elements of each head of `row` that do not rotate
  /// from `from` to `to` (`[T, heads, head_size]` memrefs), as they are.
  void copyUnrotated(Value from, Value to, Value row) {
    auto type = cast<MemRefType>(from.getType());
    Value zero = k.index(0);
    k.forLoop(zero, k.index(type.getDimSize(1)), k.index(1), [&](Value head) {
      k.forLoop(zero, k.index(offset), k.index(width), [&](Value element) {
        SmallVector<Value> at = {row, head, element};
        if (width == 1) {
          memref::StoreOp::create(
              k.b, k.loc, memref::LoadOp::create(k.b, k.loc, from, at), to,
              at);
          return;
        }
        Value chunk = vector::LoadOp::create(
            k.b, k.loc, VectorType::get({width}, type.getElementType()), from,
            at);
        vector::StoreOp::create(k.b, k.loc, chunk, to, at);
      });
    });
  }

  /// Rotates every head of each of `sides` at table row `position`.
  void rotate(Value position, ArrayRef<RotatedRows> sides) {
    k.forLoop(k.index(0), k.index(half), k.index(width), [&](Value pair) {
      // The chunk's (cos, sin) pairs: table elements [2 pair, 2 pair + 2w).
      Value twoPair = k.add(pair, pair);
      Value cos, sin;
      std::tie(cos, sin) =
          deinterleave(loadTable(position, twoPair),
                       loadTable(position, k.add(twoPair, k.index(width))));
      for (const RotatedRows &rows : sides)
        k.forLoop(k.index(0), k.index(rows.numHeads), k.index(1),
                  [&](Value head) { rotateChunk(rows, head, pair, cos, sin); });
    });
  }

private:
  /// (x, y) -> (x cos - y sin, x sin + y cos) for the chunk of pairs at
  /// `pair` of `head`.
  void rotateChunk(const RotatedRows &rows, Value head, Value pair, Value cos,
                   Value sin) {
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

  /// `width` f32 of the table at [position, element].
  Value loadTable(Value position, Value element) {
    if (width == 1)
      return memref::LoadOp::create(k.b, k.loc, table,
                                    ValueRange{position, element});
    return vector::LoadOp::create(
        k.b, k.loc, VectorType::get({width}, k.b.getF32Type()), table,
        ValueRange{position, element});
  }

  /// The even and the odd elements of the concatenation of `a` and `b`.
  std::pair<Value, Value> deinterleave(Value a, Value b) {
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

  /// The inverse of deinterleave: x0 y0 x1 y1 ... in two halves.
  std::pair<Value, Value> interleave(Value x, Value y) {
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

  KernelBuilder &k;
  int64_t width, half, offset;
  bool halfStyle;
  Value table;
};

/// The chunk width: the largest power of two that divides the rotary
/// offset and R/2 (every access aligned to it) and whose elements fit
/// `vectorBytes`.
static int64_t getRopeChunkWidth(RopeRaggedOp op, int64_t vectorBytes) {
  MemRefType qType = op.getQ().getType();
  int64_t half = op.getRotaryDims() / 2;
  int64_t divides = std::gcd(qType.getDimSize(2) - op.getRotaryDims(), half);
  int64_t elementBytes =
      llvm::divideCeil(qType.getElementTypeBitWidth(), 8);
  int64_t width = std::max<int64_t>(vectorBytes / elementBytes, 1);
  width = std::min<int64_t>(llvm::bit_floor(uint64_t(width)), 64);
  while (divides % width != 0)
    width /= 2;
  return width;
}

struct RopeRaggedToSCF : OpRewritePattern<RopeRaggedOp> {
  RopeRaggedToSCF(MLIRContext *ctx, int64_t vectorBytes, bool checked)
      : OpRewritePattern(ctx), vectorBytes(vectorBytes), checked(checked) {}

  LogicalResult matchAndRewrite(RopeRaggedOp op,
                                PatternRewriter &rewriter) const override {
    if (!hasUnitInnerStride({op.getQ(), op.getQOut(), op.getCosSin()}))
      return op.emitOpError("cannot be lowered: 'q', 'q_out' and 'cos_sin' "
                            "need a unit innermost stride (copy them into "
                            "contiguous buffers)");
    KernelBuilder k{rewriter, getKernelLoc(op)};
    int64_t width = getRopeChunkWidth(op, vectorBytes);
    Value cache = op.getKeyCache();
    auto params = KVCacheParams::get(cache.getType());
    Value offsets = op.getRowOffsets();
    Value tableRows = memref::DimOp::create(k.b, k.loc, op.getCosSin(), 0);
    Value zero = k.index(0), one = k.index(1);
    // Sequences are independent (each rotates its own rows).
    k.parallelLoop(zero, k.numSequences(offsets), [&](Value batch) {
      Value first = k.loadOffset(offsets, batch);
      Value end = k.loadOffset(offsets, k.add(batch, one));
      Value length = k.writeCacheLength(cache, batch);
      k.forLoop(first, end, one, [&](Value row) {
        Value token = k.rowPosition(length, row, first);
        Value position = token;
        if (Value positions = op.getPositions())
          position = k.loadOffset(positions, row);
        if (checked)
          RuntimeChecker(k.b, op, k.runsOn())
              .checkLess(position, tableRows, "rotary position",
                         "max_positions (the rows of cos_sin)");
        auto [page, slot] =
            k.lookup(cache, batch, token, /*servesWrite=*/true);
        emitRow(k, op, params, width, row, page, slot, position);
      });
    });
    rewriter.eraseOp(op);
    return success();
  }

  /// Rotates q's row `row` into q_out and the key row at (`page`, `slot`).
  void emitRow(KernelBuilder &k, RopeRaggedOp op, const KVCacheParams &params,
               int64_t width, Value row, Value page, Value slot,
               Value position) const {
    MemRefType qType = op.getQ().getType();
    Type f32 = k.b.getF32Type();
    Type chunkF32 = width == 1 ? f32 : VectorType::get({width}, f32);
    Type qChunk = width == 1 ? qType.getElementType()
                             : VectorType::get({width}, qType.getElementType());
    Value q = op.getQ(), qOut = op.getQOut(), cache = op.getKeyCache();
    RotatedRows queries{
        [&](Value head, Value element) -> Value {
          SmallVector<Value> at = {row, head, element};
          if (width == 1)
            return k.widen(memref::LoadOp::create(k.b, k.loc, q, at), f32);
          return k.widen(vector::LoadOp::create(k.b, k.loc, qChunk, q, at),
                         chunkF32);
        },
        [&](Value chunk, Value head, Value element) {
          SmallVector<Value> at = {row, head, element};
          Value narrow = k.narrow(chunk, qChunk);
          if (width == 1)
            memref::StoreOp::create(k.b, k.loc, narrow, qOut, at);
          else
            vector::StoreOp::create(k.b, k.loc, narrow, qOut, at);
        },
        qType.getDimSize(1)};
    // A cache with a per-layer scale reads dequantized values (a float
    // page_load) and writes them quantized with that scale again.
    Value scale;
    if (params.scales)
      scale = PageLoadScaleOp::create(k.b, k.loc, cache, page, slot,
                                      k.index(0), k.index(0));
    Type keyChunk = getChunkType(params, width);
    RotatedRows keys{
        [&](Value head, Value element) -> Value {
          Type type = scale ? chunkF32 : keyChunk;
          return k.widen(PageLoadOp::create(k.b, k.loc, type, cache, page,
                                            slot, head, element,
                                            /*serves_write=*/true),
                         chunkF32);
        },
        [&](Value chunk, Value head, Value element) {
          if (scale)
            return k.storeQuantized(chunk, scale, cache,
                                    {row, page, slot, head, element},
                                    checked);
          PageStoreOp::create(k.b, k.loc, k.narrow(chunk, keyChunk), cache,
                              page, slot, head, element);
        },
        params.numHeads};
    RopeRowEmitter emitter(k, op, width);
    if (qOut != q)
      emitter.copyUnrotated(q, qOut, row);
    emitter.rotate(position, {queries, keys});
  }

  int64_t vectorBytes;
  bool checked;
};

} // namespace

void mlir::kvcache::populateRopeToSCFConversionPatterns(
    RewritePatternSet &patterns, int64_t vectorBytes, bool checked) {
  patterns.add<RopeRaggedToSCF>(patterns.getContext(), vectorBytes, checked);
}
