//===- Rope.h - rope_ragged's rotation, for every target --------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The rotation of kvcache.rope_ragged (docs/Contract.md 3.3) in chunks of
// pairs, built with a KernelBuilder: the CPU loops (convert-kvcache-to-scf)
// and the GPU kernel (convert-kvcache-to-gpu) arrange the same chunks
// differently.
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

/// Emits rope_ragged's rotation. Pairs go `width` at a time, a power of two
/// dividing R/2 and the rotary offset o = head_size - R (so every chunk
/// access is aligned to its width) whose elements fit `vectorBytes`; pair i
/// is (o + 2i, o + 2i + 1) (interleaved) or (o + i, o + i + R/2) (half).
class RopeEmitter {
public:
  RopeEmitter(KernelBuilder &k, RopeRaggedOp op, int64_t vectorBytes);

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
  /// (x, y) -> (x cos - y sin, x sin + y cos), in f32 without fused
  /// multiply-adds, for the chunk of pairs at `pair` of `head`.
  void rotateChunk(const RotatedRows &rows, Value head, Value pair, Value cos,
                   Value sin);
  /// Copies the chunk at `element` of `head` of row `row` from `from` to
  /// `to` ([T, heads, head_size] memrefs of one type), as it is.
  void copyChunk(Value from, Value to, Value row, Value head, Value element);

  /// Row `row` of `q`, written rotated to `qOut`.
  RotatedRows queries(Value q, Value qOut, Value row);
  /// The key row at (`page`, `slot`) of `cache`, rotated in place; on a
  /// cache with a tensor scale read dequantized and quantized again (with
  /// `checked`, a NaN into an i8 cache stops the program). `row` is the
  /// ragged row, for messages.
  RotatedRows keys(Value cache, Value row, Value page, Value slot,
                   bool checked);

private:
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

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KERNELCOMMON_ROPE_H
