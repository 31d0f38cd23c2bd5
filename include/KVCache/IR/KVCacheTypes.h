//===- KVCacheTypes.h - kvcache dialect types -------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_IR_KVCACHETYPES_H
#define KVCACHE_IR_KVCACHETYPES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/ValueRange.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <utility>

namespace mlir::kvcache {

/// What the lowering hooks of a collection or cache type
/// (KVCacheTypeInterface, KVCollectionTypeInterface) use to emit run-time
/// checks: convert-kvcache-to-memref passes one when an access is checked
/// (`checked=true`, or a write to an `assert_write_mode = 1` cache), null
/// otherwise. A failed check stops the program with a message naming the
/// op, `what` and `boundName`.
class KVRuntimeChecks {
public:
  virtual ~KVRuntimeChecks();
  /// Checks `0 <= value < bound` (one unsigned comparison of indices).
  virtual void checkLess(Value value, Value bound, StringRef what,
                         StringRef boundName) = 0;
  virtual void checkLess(Value value, int64_t bound, StringRef what,
                         StringRef boundName) = 0;
};

/// The `scales` parameter of a cache type (docs/Contract.md, section 8):
/// none (a float cache, or a raw storage cache), one scale per layer and
/// K/V (`tensor`), per token and head (`token_head`), or per `group`
/// consecutive elements of a head (`block<G>`).
class KVScales {
public:
  enum class Kind { None, Tensor, TokenHead, Block };

  KVScales() = default;
  static KVScales tensor() { return KVScales(Kind::Tensor, 0); }
  static KVScales tokenHead() { return KVScales(Kind::TokenHead, 0); }
  static KVScales block(int64_t group) { return KVScales(Kind::Block, group); }

  Kind getKind() const { return kind; }
  /// G of `block<G>`; 0 for the other kinds.
  int64_t getGroup() const { return group; }
  bool isNone() const { return kind == Kind::None; }
  explicit operator bool() const { return !isNone(); }
  /// Whether the scales live in pages, next to the tokens they scale
  /// (`token_head`, `block<G>`), rather than one per layer (`tensor`).
  bool isPaged() const {
    return kind == Kind::TokenHead || kind == Kind::Block;
  }
  /// Scales per token and head: 1 for `token_head`, head_size / G for
  /// `block<G>`.
  int64_t scalesPerHead(int64_t headSize) const {
    return kind == Kind::Block ? headSize / group : 1;
  }
  /// Consecutive elements of a head that one scale covers: G for
  /// `block<G>`, the whole head otherwise.
  int64_t groupSize(int64_t headSize) const {
    return kind == Kind::Block ? group : headSize;
  }

  bool operator==(const KVScales &other) const {
    return kind == other.kind && group == other.group;
  }
  bool operator!=(const KVScales &other) const { return !(*this == other); }

private:
  KVScales(Kind kind, int64_t group) : kind(kind), group(group) {}
  Kind kind = Kind::None;
  int64_t group = 0;
};

llvm::hash_code hash_value(const KVScales &scales);
/// Prints `tensor`, `token_head` or `block<G>` (nothing for none).
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const KVScales &scales);
Diagnostic &operator<<(Diagnostic &diag, const KVScales &scales);

/// Whether `type` is one of the storage element types of quantized caches:
/// f8E4M3FN, f8E5M2, i8.
bool isStorageElementType(Type type);

} // namespace mlir::kvcache

#include "KVCache/IR/KVCacheTypeInterfaces.h.inc"

#define GET_TYPEDEF_CLASSES
#include "KVCache/IR/KVCacheOpsTypes.h.inc"

namespace mlir::kvcache {

/// The static parameters of a collection or layer cache type of any kind,
/// read through its interface.
struct KVCacheParams {
  Type elementType;
  int64_t numHeads;
  int64_t headSize;
  /// Token slots of one page; ShapedType::kDynamic when the kind has no
  /// pages of a static size (continuous batching).
  int64_t pageSize;
  bool mla;
  int64_t assertWriteMode;
  KVScales scales;

  /// Returns the parameters of `cacheType`, which implements
  /// KVCollectionTypeInterface or KVCacheTypeInterface.
  static KVCacheParams get(Type cacheType);
  /// Whether `type` is a collection or a layer cache of any kind.
  static bool isCacheType(Type type);
  int64_t kvDim() const { return mla ? 1 : 2; }
  int64_t rowElements() const { return numHeads * headSize; }
  bool hasStaticPages() const { return !ShapedType::isDynamic(pageSize); }
};

/// The alignment (bytes) a load or store of `accessBytes` bytes may claim
/// when it sits at a multiple of `accessBytes` within a row that starts at a
/// multiple of `rowBytes` from the start of a 16-byte aligned buffer (the
/// alignment docs/Contract.md, section 1, guarantees for `blocks` and every
/// memref a kernel op takes): the largest power of two dividing both, at
/// most 16. Pass `rowBytes = accessBytes` when the rows are aligned to the
/// access. `accessBytes` must be positive.
uint64_t getAccessAlignment(uint64_t accessBytes, uint64_t rowBytes);

} // namespace mlir::kvcache

#endif // KVCACHE_IR_KVCACHETYPES_H
