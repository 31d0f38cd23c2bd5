//===- KVCacheRopeOp.cpp - kvcache.rope_ragged ------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The verifiers of rotary embedding (KVCacheRopeOps.td, KVCacheKernelOps.td):
// kvcache.rope_ragged (a step's queries and the keys it stored) and the
// rope(...) clauses of kvcache.store_ragged (the keys, before they are
// stored) and of the attention ops (their queries, where the kernels load
// them).
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheOps.h"
#include "VerifierHelpers.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::opverify;

/// The checks rope_ragged and store_ragged's rope clause share: R =
/// `rotaryDims` even and at most `headSize`, and the table `[max_positions,
/// R]`.
static LogicalResult verifyRotary(Operation *op, int64_t rotaryDims,
                                  int64_t headSize, ShapedType table) {
  if (rotaryDims % 2 != 0 || rotaryDims > headSize)
    return op->emitOpError("expects 'rotary_dims' to be even and at most "
                           "head_size = ")
           << headSize << " (the last elements of each head rotate, "
           << "in pairs), got " << rotaryDims;
  if (table.getDimSize(1) != rotaryDims)
    return op->emitOpError("expects 'cos_sin' to be [max_positions, "
                           "rotary_dims = ")
           << rotaryDims << "] (a static dim 1), got " << table;
  return success();
}

/// The cache kinds the op rotates in place: a float cache, or one with a
/// per-layer scale (re-encoded with that scale). Per-group scales would
/// change with the rotated elements, and so would the codes of the others.
static LogicalResult verifyRotatableCache(RopeRaggedOp op,
                                          const KVCacheParams &params) {
  if (params.scales.isPaged())
    return op.emitOpError("cannot rotate keys in place on a cache with "
                          "per-token or per-block scales (")
           << op.getKeyCache().getType()
           << "): re-encoding would change the scale, and so the codes, of "
              "the elements that do not rotate; rotate the keys before "
              "they are stored (kvcache.store_ragged's clause "
              "rope(%cos_sin) {rotary_dims, style})";
  if (isStorageElementType(params.elementType) && !params.scales)
    return op.emitOpError("needs values, not raw stored codes: the ")
           << params.elementType
           << " cache has no 'scales'; give its type 'scales = tensor'";
  return success();
}

LogicalResult RopeRaggedOp::verify() {
  if (failed(verifyOneForm(*this)) || failed(verifyCacheWriter(*this)))
    return failure();
  KVCacheParams params = KVCacheParams::get(getKeyCache().getType());
  if (failed(verifyRotatableCache(*this, params)))
    return failure();
  auto qType = cast<ShapedType>(getQ().getType());
  if (qType != getQOut().getType())
    return emitOpError("expects 'q' and 'q_out' to have one type, got ")
           << qType << " and " << getQOut().getType();
  if (failed(verifyQueryRows(*this, qType, params)))
    return failure();
  return verifyRotary(*this, getRotaryDims(), params.headSize,
                      cast<ShapedType>(getCosSin().getType()));
}

LogicalResult opverify::verifyRopeClause(Operation *op, Value cosSin,
                                         bool hasPositions,
                                         std::optional<uint64_t> rotaryDims,
                                         bool hasStyle, Type rowsElement,
                                         int64_t headSize) {
  if (!cosSin) {
    if (hasPositions || rotaryDims || hasStyle)
      return op->emitOpError("has 'positions', 'rotary_dims' or 'style' "
                             "without the rope(%cos_sin) clause they belong "
                             "to");
    return success();
  }
  if (!rotaryDims || !hasStyle)
    return op->emitOpError("expects the attributes 'rotary_dims' and 'style' "
                           "with its rope(...) clause");
  if (!isDequantizedType(rowsElement))
    return op->emitOpError("rotates f32, f16 or bf16 rows (rope clause), "
                           "not stored ")
           << rowsElement << " codes";
  return verifyRotary(op, int64_t(*rotaryDims), headSize,
                      cast<ShapedType>(cosSin.getType()));
}
