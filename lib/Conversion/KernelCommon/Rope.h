//===- Rope.h - rope_ragged's rotation, for every target --------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The rotation of kvcache.rope_ragged, of store_ragged's rope clause and of
// the attention ops' rope clause on q (docs/Contract.md 3.3) in chunks, built
// with a KernelBuilder: the CPU loops (convert-kvcache-to-scf) and the GPU
// kernels (convert-kvcache-to-gpu) arrange the same chunks differently.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KERNELCOMMON_ROPE_H
#define KVCACHE_LIB_CONVERSION_KERNELCOMMON_ROPE_H

#include "KernelBuilder.h"

#include <functional>

namespace mlir::kvcache {

/// One side of the rotation, in chunks of the emitter's width as f32: the
/// queries (read from q, written to q_out) or a cached key row (in place).
struct RotatedRows {
  std::function<Value(Value head, Value element)> load;
  std::function<void(Value chunk, Value head, Value element)> store;
  int64_t numHeads;
};

/// Emits the rotation. Pairs go `width` at a time, a power of two dividing
/// R/2 and the rotary offset o = head_size - R (so every chunk access is
/// aligned to its width) whose elements fit `vectorBytes`; pair i is
/// (o + 2i, o + 2i + 1) (interleaved) or (o + i, o + i + R/2) (half).
class RopeEmitter {
public:
  RopeEmitter(KernelBuilder &k, RopeRaggedOp op, int64_t vectorBytes);
  /// The rotation of store_ragged's rope clause on rows of `headSize`
  /// elements, in chunks of `width` (from fitWidth).
  RopeEmitter(KernelBuilder &k, const RowRope &rope, int64_t headSize,
              int64_t width);

  /// The largest power of two dividing `width` whose chunks each lie in the
  /// unrotated or the rotary part of a head and go in whole chunks of pairs
  /// (rotateChunk, rotateRowChunk): it divides o and R/2.
  static int64_t fitWidth(int64_t width, int64_t rotaryDims,
                          int64_t headSize);

  /// The rotary position of ragged row `row`, whose storage position is
  /// `token`: positions[row] (with `positions`), else `token`. With
  /// `checked`, a position past the rows of `table` stops the program (a
  /// run-time check reported at `op`).
  static Value rotaryPosition(KernelBuilder &k, Operation *op, Value table,
                              Value positions, Value row, Value token,
                              bool checked);

  /// Fails with an error on `op` unless q, q_out and cos_sin have a unit
  /// innermost stride (both lowerings read them in vectors).
  static LogicalResult checkStrides(RopeRaggedOp op);

  int64_t getWidth() const { return width; }
  /// Chunks of pairs of one head: R/2 / width.
  int64_t getPairChunks() const { return half / width; }
  /// Chunks of the elements of one head that do not rotate: o / width.
  int64_t getUnrotatedChunks() const { return offset / width; }

  /// The (cos, sin) of the chunk of pairs at `pair` (a multiple of the
  /// width) from `table` row `position`, deinterleaved.
  std::pair<Value, Value> loadCosSin(Value table, Value position, Value pair);
  /// The elements of a head where the chunk of pairs at `pair` (a multiple
  /// of the width) lies: its two chunks, (x of half pairs, y of half pairs)
  /// or (interleaved pairs' first half, second half).
  std::pair<Value, Value> getPairElements(Value pair);
  /// The chunks `a` and `b` (as f32) at getPairElements of a chunk of
  /// pairs, rotated: (x, y) -> (x cos - y sin, x sin + y cos) in f32
  /// without fused multiply-adds, returned as f32 chunks in their places.
  std::pair<Value, Value> rotatePair(Value a, Value b, Value cos, Value sin);
  /// rotatePair on the chunk of pairs at `pair` of `head` of `rows`.
  void rotateChunk(const RotatedRows &rows, Value head, Value pair, Value cos,
                   Value sin);
  /// The cos and sin of each lane of a chunk of whole interleaved pairs
  /// (width > 1) at element `j` of the rotary part, from `table` row
  /// `position`: the sin negated in the pairs' first lanes
  /// (rotateInterleavedChunk).
  std::pair<Value, Value> loadInterleavedCosSin(Value table, Value position,
                                                Value j);
  /// `chunk` (f32), a chunk of whole interleaved pairs, rotated with the
  /// lanes' `cos` and `sin` from loadInterleavedCosSin: the products and
  /// sums of rotatePair.
  Value rotateInterleavedChunk(Value chunk, Value cos, Value sin);
  /// `chunk`, a row's elements at `element` (a multiple of the width; of
  /// the rows' element type), rotated at table row `position` and rounded
  /// once to that type where they lie in the rotary part, as they are
  /// elsewhere (decided at compile time for a constant `element`).
  /// `readAt(e)` reads the row's chunk at element e: the partner
  /// chunk of half pairs, and of interleaved pairs in chunks of one element.
  Value rotateRowChunk(Value chunk, Value element, Value table, Value position,
                       function_ref<Value(Value)> readAt);
  /// Copies the chunk at `element` of `head` of row `row` from `from` to
  /// row `toRow` (default `row`) of `to` ([T, heads, head_size] memrefs of
  /// one element type), as it is.
  void copyChunk(Value from, Value to, Value row, Value head, Value element,
                 Value toRow = nullptr);
  /// The CPU's loops over a row: `copy(head, element)` for each chunk of
  /// the `heads` heads' unrotated elements, then, chunk of pairs by chunk
  /// of pairs, the chunk's cos and sin read once from table row `position`
  /// and applied to every head of each of `sides` (interleaved pairs in
  /// vectors: chunks of whole pairs, rotateInterleavedChunk).
  void emitRowLoops(int64_t heads, function_ref<void(Value, Value)> copy,
                    ArrayRef<RotatedRows> sides, Value table, Value position);

  /// Row `row` of `q`, written rotated to row `outRow` (default `row`) of
  /// `qOut`.
  RotatedRows queries(Value q, Value qOut, Value row, Value outRow = nullptr);
  /// Row `row` of float `rows`, written rotated to the key row at (`page`,
  /// `slot`) of `cache`, of the rows' element type.
  RotatedRows stored(Value rows, Value row, Value cache, Value page,
                     Value slot);
  /// The key row at (`page`, `slot`) of `cache`, rotated in place; on a
  /// cache with a tensor scale read dequantized and quantized again (with
  /// `checked`, a NaN into an i8 cache stops the program). `row` is the
  /// ragged row, for messages.
  RotatedRows keys(Value cache, Value row, Value page, Value slot,
                   bool checked);

private:
  /// own cos + partner sin, lane by lane (f32).
  Value rotateWithPartner(Value own, Value partner, Value cos, Value sin);
  std::pair<Value, Value> deinterleave(Value a, Value b);
  std::pair<Value, Value> interleave(Value x, Value y);
  /// The chunk type of `elementType`: a vector of the width, or a scalar.
  Type chunkType(Type elementType);
  /// The alignment a chunk access of the memref `type` may claim: the
  /// chunk's bytes (at most 16) when its strides and offset keep every
  /// chunk at a multiple of the width, else one element's.
  llvm::Align chunkAlignment(Type type);

  KernelBuilder &k;
  int64_t width, half, offset;
  bool halfStyle;
};

/// The rope clause of an attention op on its queries (docs/Contract.md
/// 3.3): each kernel rotates the chunks of q where it loads them, as
/// rope_ragged rotates q into q_out (RopeEmitter::rotateRowChunk: the same
/// pairs and f32 arithmetic, rounded once to q's element type), so the
/// result equals rope_ragged's q_out attended.
class QueryRope {
public:
  /// The clause of `op` (none without one) on the queries `q`, with the
  /// table `table` and the optional `positions`: the values the kernel
  /// reads (the op's operands on the CPU, the kernel's parameters on the
  /// GPU). With `checked`, a rotary position past the table's rows stops
  /// the program.
  QueryRope(KernelBuilder &k, AttentionOpInterface op, Value q, Value table,
            Value positions, bool checked);

  explicit operator bool() const { return static_cast<bool>(rope); }

  /// Fails with an error on `op` unless its rope clause's table, if any,
  /// has a unit innermost stride (the kernels read it in vectors).
  static LogicalResult checkStrides(AttentionOpInterface op);

  /// The rotary position of ragged row `row`, whose key is at `position`:
  /// positions[row], else `position`. Null without the clause.
  Value rotaryPosition(Value row, Value position);

  /// `chunk` (a scalar or vector of q's element type: the elements at
  /// `element` of `head` of q's row `row`) rotated at the rotary position
  /// `rotary` where it lies in the rotary part, in pieces of
  /// RopeEmitter::fitWidth (the partners of half pairs read from q); as it
  /// is without the clause.
  Value rotate(Value chunk, Value row, Value head, Value element,
               Value rotary);

private:
  KernelBuilder &k;
  Operation *op;
  Value q;
  RowRope rope;
  int64_t headSize;
  bool checked;
};

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_ROPE_H
