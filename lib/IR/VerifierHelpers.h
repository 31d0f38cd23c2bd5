//===- VerifierHelpers.h - checks shared by the op verifiers ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Private to lib/IR: the verification helpers the access ops
// (KVCacheOps.cpp), the collection constructors (KVCacheCollectionOps.cpp)
// and the kernel ops (KVCacheKernelOps.cpp) share, the argument checks of
// the attention ops, and the custom assembly directive of the attention ops'
// optional operand types.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_IR_VERIFIERHELPERS_H
#define KVCACHE_LIB_IR_VERIFIERHELPERS_H

#include "KVCache/IR/KVCacheOps.h"
#include "mlir/IR/OpImplementation.h"

namespace mlir::kvcache {
namespace opverify {

/// Checks that `value`, a memref in the default memory space or a ranked
/// tensor, has the given rank and element type. `what` names the operand,
/// `shape` spells the expected shape for the message.
LogicalResult verifyDataOperand(Operation *op, StringRef what, Value value,
                                int64_t rank, Type elementType,
                                StringRef shape);

/// Checks that dimension `dim` of `type` is static and equal to `expected`.
LogicalResult verifyStaticDim(Operation *op, StringRef what, ShapedType type,
                              unsigned dim, StringRef dimName,
                              int64_t expected);

/// Checks that the memref or tensor `what` of a kernel op holds elements of
/// the cache element type `elementType`.
LogicalResult verifyCacheElementType(Operation *op, StringRef what,
                                     ShapedType type, Type elementType);

/// Whether `type` is a float type quantized caches convert to and from:
/// f32, f16, bf16.
bool isDequantizedType(Type type);

/// Checks token rows `[tokens, num_heads, head_size]` (a 3-D memref in the
/// default memory space or a 3-D tensor, as ODS checked) against the cache:
/// its element type and static dims.
LogicalResult verifyTokenRows(Operation *op, StringRef what, ShapedType type,
                              const KVCacheParams &params);

/// Checks that the data operands of a kernel op (its memref and tensor
/// operands but `workspace`, which is scratch and a memref in both forms) are
/// all memrefs or all tensors, and that only the tensor form has results.
LogicalResult verifyOneForm(Operation *op, OpOperand *workspace = nullptr);

/// Checks the queries `q` `[tokens, q_heads, head_size]` of attention and
/// rotary embedding against the cache: the cache's element type (f32, f16
/// or bf16 over a quantized cache), head_size, and q_heads a static
/// multiple of num_heads.
LogicalResult verifyQueryRows(Operation *op, ShapedType qType,
                              const KVCacheParams &params);

/// Checks a rope clause (store_ragged's on its rows, the attention ops' on
/// q): all of it or none (the table `cosSin`, then `rotary_dims` and
/// `style`; `positions` only with the table), rows of a float
/// `rowsElement`, and the rotary dims and the table against `headSize`.
LogicalResult verifyRopeClause(Operation *op, Value cosSin, bool hasPositions,
                               std::optional<uint64_t> rotaryDims,
                               bool hasStyle, Type rowsElement,
                               int64_t headSize);

/// The argument checks of an attention op (docs/Contract.md section 5.1):
/// q, out and lse against the row offsets, each sequence's rows and keys
/// against the key cache and a value cache that is not the key cache, the
/// batch's maxima against the key cache's (KVCacheArgumentChecks.cpp).
void emitAttentionChecks(AttentionOpInterface op, OpBuilder &builder,
                         const IRMapping &operands, KVCheckReporter &reporter);

} // namespace opverify

/// `out`'s type, then the types of the optional operands, each present
/// exactly when its operand is (`, type` in operand order): the end of
/// attention_ragged's types list.
ParseResult parseOptionalOperandTypes(
    OpAsmParser &parser, Type &outType,
    std::optional<OpAsmParser::UnresolvedOperand> workspace,
    Type &workspaceType, std::optional<OpAsmParser::UnresolvedOperand> sinks,
    Type &sinksType, std::optional<OpAsmParser::UnresolvedOperand> alibi,
    Type &alibiType, std::optional<OpAsmParser::UnresolvedOperand> lse,
    Type &lseType);
void printOptionalOperandTypes(OpAsmPrinter &printer, Operation *op,
                               Type outType, Value workspace, Type workspaceType,
                               Value sinks, Type sinksType, Value alibi,
                               Type alibiType, Value lse, Type lseType);

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_IR_VERIFIERHELPERS_H
