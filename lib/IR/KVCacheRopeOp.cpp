//===- KVCacheRopeOp.cpp - kvcache.rope_ragged ------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The verifier of kvcache.rope_ragged (KVCacheKernelOps.td): the rotary
// embedding of a step's queries and of the keys it stored.
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheOps.h"
#include "VerifierHelpers.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::opverify;

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
              "they are stored (the rope(...) clause of "
              "kvcache.store_ragged, not implemented yet)";
  if (isStorageElementType(params.elementType) && !params.scales)
    return op.emitOpError("needs values, not raw stored codes: the ")
           << params.elementType
           << " cache has no 'scales'; give its type 'scales = tensor'";
  return success();
}

LogicalResult RopeRaggedOp::verify() {
  KVCacheParams params = KVCacheParams::get(getKeyCache().getType());
  if (failed(verifyRotatableCache(*this, params)))
    return failure();
  MemRefType qType = getQ().getType();
  if (qType != getQOut().getType())
    return emitOpError("expects 'q' and 'q_out' to have one type, got ")
           << qType << " and " << getQOut().getType();
  if (failed(verifyQueryRows(*this, qType, params)))
    return failure();
  int64_t rotaryDims = getRotaryDims();
  if (rotaryDims % 2 != 0 || rotaryDims > params.headSize)
    return emitOpError("expects 'rotary_dims' to be even and at most "
                       "head_size = ")
           << params.headSize << " (the last elements of each head rotate, "
           << "in pairs), got " << rotaryDims;
  MemRefType table = getCosSin().getType();
  if (table.getDimSize(1) != rotaryDims)
    return emitOpError("expects 'cos_sin' to be [max_positions, rotary_dims "
                       "= ")
           << rotaryDims << "] (a static dim 1), got " << table;
  return success();
}
