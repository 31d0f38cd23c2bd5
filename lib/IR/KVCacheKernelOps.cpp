//===- KVCacheKernelOps.cpp - kvcache kernel operations ---------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Verifiers and custom assembly of the kernel ops (KVCacheKernelOps.td).
//
//===----------------------------------------------------------------------===//

#include "KVCache/IR/KVCacheOps.h"
#include "VerifierHelpers.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::opverify;

//===----------------------------------------------------------------------===//
// Kernel ops
//===----------------------------------------------------------------------===//

// ODS checks the ranks, the element types that do not depend on the cache
// and the memory space of the kernel ops' memrefs; the verifiers check them
// against the cache, alike in both forms. DestinationStyleOpInterface checks
// that the tensor form returns the types of its inits.

LogicalResult opverify::verifyOneForm(Operation *op, OpOperand *workspace) {
  Value first;
  for (OpOperand &operand : op->getOpOperands()) {
    if (&operand == workspace || !isa<ShapedType>(operand.get().getType()))
      continue;
    if (!first)
      first = operand.get();
    else if (isa<TensorType>(operand.get().getType()) !=
             isa<TensorType>(first.getType()))
      return op->emitOpError("expects its data operands in one form, all "
                             "memrefs or all tensors, got ")
             << first.getType() << " and " << operand.get().getType();
  }
  if (op->getNumResults() != 0 && !isa<TensorType>(first.getType()))
    return op->emitOpError("has results only in the tensor form (the memref "
                           "form writes its operands in place), got ")
           << op->getNumResults();
  return success();
}

LogicalResult StoreRaggedOp::verify() {
  if (failed(verifyOneForm(*this)) || failed(verifyCacheWriter(*this)))
    return failure();
  KVCacheParams params = KVCacheParams::get(getCache().getType());
  if (failed(verifyTokenRows(*this, "values", getValues().getType(), params)))
    return failure();
  return verifyRopeClause(
      *this, getCosSin(), static_cast<bool>(getPositions()), getRotaryDims(),
      getStyle().has_value(),
      cast<ShapedType>(getValues().getType()).getElementType(),
      params.headSize);
}

LogicalResult GatherRaggedOp::verify() {
  if (failed(verifyOneForm(*this)))
    return failure();
  return verifyTokenRows(*this, "out", getOut().getType(),
                         KVCacheParams::get(getCache().getType()));
}

/// `memref<...>` or `tensor<...>`, as `type` is: how messages spell an
/// expected type in the operand's form.
static StringRef formPrefix(ShapedType type) {
  return isa<TensorType>(type) ? "tensor<" : "memref<";
}

/// Checks an f32 operand of one value per query head (`sinks`, `alibi`).
static LogicalResult verifyPerHead(Operation *op, StringRef what,
                                   Value operand, int64_t qHeads) {
  if (!operand)
    return success();
  auto type = cast<ShapedType>(operand.getType());
  if (type.getDimSize(0) != qHeads)
    return op->emitOpError("expects '")
           << what << "' to hold one f32 per query head, " << formPrefix(type)
           << qHeads << "xf32>, got " << type;
  return success();
}

/// Checks a log-sum-exp operand `[T, q_heads]` (row-major) against the rows
/// `rows` `[T, q_heads, ...]`.
static LogicalResult verifyLse(Operation *op, StringRef what, Value lse,
                               ShapedType rows) {
  if (!lse)
    return success();
  auto type = cast<ShapedType>(lse.getType());
  if (type.getDimSize(1) != rows.getDimSize(1) ||
      (!type.isDynamicDim(0) && !rows.isDynamicDim(0) &&
       type.getDimSize(0) != rows.getDimSize(0)))
  {
    InFlightDiagnostic diag = op->emitOpError("expects '")
                              << what << "' to be [tokens, q_heads] = [";
    if (rows.isDynamicDim(0))
      diag << "?";
    else
      diag << rows.getDimSize(0);
    return diag << ", " << rows.getDimSize(1)
                << "] like the rows' first dims, got " << type;
  }
  auto memref = dyn_cast<MemRefType>(type);
  if (memref && !memref.getLayout().isIdentity())
    return op->emitOpError("expects '")
           << what << "' to be row-major (the identity layout), got " << type;
  return success();
}

/// The optional clauses of the attention ops (docs/Contract.md 4.7).
static LogicalResult verifyAttentionClauses(AttentionOpInterface op) {
  if (std::optional<APFloat> softcap = op.getSoftcap())
    if (!(softcap->convertToFloat() > 0.0f) || softcap->isInfinity())
      return op->emitOpError("expects 'softcap' to be a finite f32 > 0, got ")
             << softcap->convertToFloat();
  for (auto [name, size] : {std::pair{"window", op.getWindow()},
                            std::pair{"chunk", op.getChunk()}})
    if (size && int64_t(*size) < 1)
      return op->emitOpError("expects '")
             << name << "' to be at least 1 (keys a row sees), got "
             << int64_t(*size);
  if (op.getWindow() && op.getChunk())
    return op->emitOpError("takes 'window' or 'chunk', not both");
  if (op.getNoncausal() && (op.getWindow() || op.getChunk()))
    return op->emitOpError("takes 'noncausal' without 'window' and 'chunk': "
                           "a noncausal row sees every cached token");
  int64_t qHeads = op.getQ().getType().getDimSize(1);
  if (failed(verifyPerHead(op, "sinks", op.getSinks(), qHeads)) ||
      failed(verifyPerHead(op, "alibi", op.getAlibi(), qHeads)))
    return failure();
  return verifyLse(op, "lse", op.getLse(), op.getQ().getType());
}

/// Checks that an attention op is in one form, `workspace` aside.
static LogicalResult verifyAttentionForm(Operation *op,
                                         MutableOperandRange workspace) {
  return verifyOneForm(op, workspace.empty() ? nullptr : &workspace[0]);
}

/// What the attention ops share beyond their form, caches and `out`: the
/// cache's values, q against the cache, the clauses.
static LogicalResult verifyAttention(AttentionOpInterface op) {
  KVCacheParams params = KVCacheParams::get(op.getKeyCache().getType());
  if (isStorageElementType(params.elementType) && !params.scales)
    return op->emitOpError("needs values, not raw stored codes: the ")
           << params.elementType
           << " cache has no 'scales'; give its type 'scales = tensor | "
              "token_head | block<G>'";
  if (failed(verifyQueryRows(op, op.getQ().getType(), params)) ||
      failed(verifyAttentionClauses(op)))
    return failure();
  return verifyRopeClause(op, op.getCosSin(),
                          static_cast<bool>(op.getPositions()),
                          op.getRotaryDims(), op.getStyle().has_value(),
                          op.getQ().getType().getElementType(),
                          params.headSize);
}

LogicalResult AttentionRaggedOp::verify() {
  if (failed(verifyAttentionForm(*this, getWorkspaceMutable())))
    return failure();
  KVCacheTypeInterface keyType = getKeyCache().getType();
  if (getValueCache().getType() != keyType)
    return emitOpError("expects the key and value caches to have one type, "
                       "got ")
           << keyType << " and " << getValueCache().getType();
  if (keyType.getMla())
    return emitOpError("does not support MLA caches (mla = true): "
                       "kvcache.mla_attention_ragged attends over them");
  if (getQ().getType() != getOut().getType())
    return emitOpError("expects 'q' and 'out' to have one type, got ")
           << getQ().getType() << " and " << getOut().getType();
  return verifyAttention(*this);
}

LogicalResult MlaAttentionRaggedOp::verify() {
  if (failed(verifyAttentionForm(*this, getWorkspaceMutable())))
    return failure();
  KVCacheTypeInterface cacheType = getKeyCache().getType();
  if (!cacheType.getMla())
    return emitOpError("expects the K cache of an MLA collection "
                       "(mla = true), got ")
           << cacheType << "; kvcache.attention_ragged attends over K and V "
                           "caches";
  int64_t valueSize = getVHeadSize();
  if (valueSize < 1 || valueSize > cacheType.getHeadSize())
    return emitOpError("expects 'v_head_size' in [1, head_size = ")
           << cacheType.getHeadSize() << "], got " << valueSize;
  if (failed(verifyAttention(*this)))
    return failure();
  ShapedType qType = getQ().getType(), outType = getOut().getType();
  auto sameDim = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  if (outType.getElementType() != qType.getElementType() ||
      !sameDim(outType.getDimSize(0), qType.getDimSize(0)) ||
      outType.getDimSize(1) != qType.getDimSize(1) ||
      outType.getDimSize(2) != valueSize)
    return emitOpError("expects 'out' to be [tokens, q_heads, v_head_size "
                       "= ")
           << valueSize << "] of q's element type, like " << qType
           << " but for its last dim, got " << outType;
  return success();
}

void AttentionRaggedOp::emitArgumentChecks(OpBuilder &builder,
                                           const IRMapping &operands,
                                           KVCheckReporter &reporter) {
  emitAttentionChecks(*this, builder, operands, reporter);
}

void MlaAttentionRaggedOp::emitArgumentChecks(OpBuilder &builder,
                                              const IRMapping &operands,
                                              KVCheckReporter &reporter) {
  emitAttentionChecks(*this, builder, operands, reporter);
}

LogicalResult CopyPagesOp::verify() {
  if (failed(verifyOneForm(*this)) || failed(verifyCacheWriter(*this)))
    return failure();
  KVCollectionTypeInterface type = getCollection().getType();
  if (ShapedType::isDynamic(type.getPageSize()))
    return emitOpError("needs a collection with pages of a static size; ")
           << type << " (kind \"" << type.getKindName()
           << "\") has none: copy a sequence's tokens with "
              "kvcache.gather_ragged and kvcache.store_ragged instead";
  return success();
}

LogicalResult MergeStatesOp::verify() {
  if (failed(verifyOneForm(*this)))
    return failure();
  ShapedType outType = getOut().getType();
  for (auto [name, value] : {std::pair{"out_a", getOutA()},
                             std::pair{"out_b", getOutB()}})
    if (value.getType() != outType)
      return emitOpError("expects '")
             << name << "' to have the type of 'out', " << outType << ", got "
             << value.getType();
  if (!isDequantizedType(outType.getElementType()))
    return emitOpError("merges f32, f16 or bf16 results, got ") << outType;
  if (outType.isDynamicDim(1))
    return emitOpError("expects the results' dim 1 (q_heads) to be static, "
                       "got ")
           << outType;
  for (auto [name, value] : {std::pair{"lse_a", getLseA()},
                             std::pair{"lse_b", getLseB()},
                             std::pair{"lse", getLse()}})
    if (failed(verifyLse(*this, name, value, outType)))
      return failure();
  return success();
}

/// The kernel operands of an attention op: `leading`, then the optional
/// operands in the order of the assembly, `lse` after `alibi`
/// (attention_ragged's parameters keep the order of its operands before
/// `lse` moved next to `out`, docs/KernelABI.md), the rope clause's last.
static SmallVector<Value> getAttentionKernelOperands(AttentionOpInterface op,
                                                     ArrayRef<Value> leading) {
  SmallVector<Value> operands(leading);
  Value optionals[] = {op.getWorkspace(), op.getSinks(), op.getAlibi(),
                       op.getLse(),       op.getCosSin(), op.getPositions()};
  for (Value optional : optionals)
    if (optional)
      operands.push_back(optional);
  return operands;
}

SmallVector<Value> AttentionRaggedOp::getKernelOperands() {
  return getAttentionKernelOperands(*this, {getQ(), getKeyCache(),
                                            getValueCache(), getRowOffsets(),
                                            getOut()});
}

SmallVector<Value> MlaAttentionRaggedOp::getKernelOperands() {
  return getAttentionKernelOperands(
      *this, {getQ(), getKeyCache(), getRowOffsets(), getOut()});
}

LogicalResult mlir::kvcache::verifyKernelOpsInMemRefForm(Operation *root,
                                                         StringRef passName) {
  auto isTensor = [](Type type) { return isa<TensorType>(type); };
  WalkResult tensorForm = root->walk([&](Operation *op) {
    if (!isa_and_nonnull<KVCacheDialect>(op->getDialect()) ||
        (llvm::none_of(op->getOperandTypes(), isTensor) &&
         llvm::none_of(op->getResultTypes(), isTensor)))
      return WalkResult::advance();
    op->emitOpError("is in the tensor form, and ")
        << passName
        << " takes the memref form: bufferize first (kvcache-bufferize, "
           "which the pipelines run unless bufferize=false)";
    return WalkResult::interrupt();
  });
  return failure(tensorForm.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// Custom assembly
//===----------------------------------------------------------------------===//

ParseResult mlir::kvcache::parseOptionalOperandTypes(
    OpAsmParser &parser, Type &outType,
    std::optional<OpAsmParser::UnresolvedOperand> workspace,
    Type &workspaceType, std::optional<OpAsmParser::UnresolvedOperand> sinks,
    Type &sinksType, std::optional<OpAsmParser::UnresolvedOperand> alibi,
    Type &alibiType, std::optional<OpAsmParser::UnresolvedOperand> lse,
    Type &lseType) {
  if (parser.parseType(outType))
    return failure();
  for (auto [operand, type] :
       {std::pair{&workspace, &workspaceType}, std::pair{&sinks, &sinksType},
        std::pair{&alibi, &alibiType}, std::pair{&lse, &lseType}})
    if (operand->has_value() &&
        (parser.parseComma() || parser.parseType(*type)))
      return failure();
  return success();
}

void mlir::kvcache::printOptionalOperandTypes(
    OpAsmPrinter &printer, Operation *, Type outType, Value workspace,
    Type workspaceType, Value sinks, Type sinksType, Value alibi,
    Type alibiType, Value lse, Type lseType) {
  printer << outType;
  for (auto [operand, type] :
       {std::pair{workspace, workspaceType}, std::pair{sinks, sinksType},
        std::pair{alibi, alibiType}, std::pair{lse, lseType}})
    if (operand)
      printer << ", " << type;
}
