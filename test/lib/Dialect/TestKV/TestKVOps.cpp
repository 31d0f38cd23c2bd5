//===- TestKVOps.cpp - test_kv operations -----------------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
//===----------------------------------------------------------------------===//

#include "TestKVDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::test_kv;

#define GET_OP_CLASSES
#include "TestKVOps.cpp.inc"

/// `blocks` against the collection type (ODS checked the rank): element
/// type, memory space, the static dims kv_dim, page_size, num_heads and
/// head_size, contiguous inner dims and head rows that keep the alignment
/// of `blocks`, as for kvcache.paged_collection.
LogicalResult CSRCollectionOp::verify() {
  CSRCollectionType type = getType();
  MemRefType blocks = getBlocks().getType();
  if (blocks.getElementType() != type.getElementType())
    return emitOpError("expects 'blocks' element type ")
           << blocks.getElementType()
           << " to match the collection element type " << type.getElementType();
  if (blocks.getMemorySpace())
    return emitOpError("expects 'blocks' in the default memory space, got ")
           << blocks;
  struct StaticDim {
    unsigned dim;
    StringRef name;
    int64_t size;
  };
  for (StaticDim expected : {StaticDim{1, "kv_dim", type.getKVDim()},
                             {3, "page_size", type.getPageSize()},
                             {4, "num_heads", type.getNumHeads()},
                             {5, "head_size", type.getHeadSize()}})
    if (blocks.getDimSize(expected.dim) != expected.size)
      return emitOpError("expects 'blocks' dim ")
             << expected.dim << " (" << expected.name << ") to be static and "
             << expected.size << " as the collection type says, got " << blocks;
  SmallVector<int64_t> strides;
  int64_t offset;
  int64_t headSize = type.getHeadSize();
  if (failed(blocks.getStridesAndOffset(strides, offset)) ||
      strides[3] != type.getRowElements() || strides[4] != headSize ||
      strides[5] != 1)
    return emitOpError("expects the inner dims [page_size, num_heads, "
                       "head_size] of 'blocks' to be contiguous, got ")
           << blocks;
  for (int64_t value : {offset, strides[0], strides[1], strides[2]})
    if (ShapedType::isStatic(value) && value % headSize != 0)
      return emitOpError("expects the offset and outer strides of 'blocks' "
                         "to be multiples of head_size = ")
             << headSize << ", got " << blocks;
  return success();
}

std::optional<int64_t> CSRCollectionOp::getStaticNumLayers() {
  MemRefType blocks = getBlocks().getType();
  if (blocks.isDynamicDim(2))
    return std::nullopt;
  return blocks.getDimSize(2);
}
