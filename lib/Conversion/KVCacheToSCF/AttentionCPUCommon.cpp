//===- AttentionCPUCommon.cpp - shared CPU attention pieces -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// What the CPU attention kernels share (AttentionCPU.h): head rows read as
// f32 (widened or dequantized), their prefetch or loads ahead, the key
// range of a row, the writing of a finished row, the dot products as
// partial sums (fused multiply-adds, or AVX512-BF16's dot products of
// bf16 pairs) and their shuffle tree.
//
//===----------------------------------------------------------------------===//

#include "AttentionCPU.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/Fp8ToInteger.h"
#include "../KernelCommon/KernelLowering.h"
#include "../KernelCommon/Quantization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::kvcache;

Value mlir::kvcache::loadHeadChunkAsF32(KernelBuilder &k, Value cache,
                                        Value page, Value slot, Value head,
                                        Value element, VectorType accType) {
  auto params = KVCacheParams::get(cache.getType());
  int64_t width = accType.getDimSize(0);
  if (!params.scales) {
    auto chunkType = VectorType::get({width}, params.elementType);
    return k.widen(PageLoadOp::create(k.b, k.loc, chunkType, cache, page, slot,
                                      head, element),
                   accType);
  }
  int64_t group = params.scales.groupSize(params.headSize);
  if (group % width == 0)
    return PageLoadOp::create(k.b, k.loc, accType, cache, page, slot, head,
                              element);
  auto groupType = VectorType::get({group}, k.b.getF32Type());
  Value chunk = arith::ConstantOp::create(
      k.b, k.loc, accType, DenseElementsAttr::get(accType, 0.0f));
  for (int64_t start = 0; start < width; start += group) {
    // Folded: a row's offsets stay constants.
    Value at = k.b.createOrFold<arith::AddIOp>(k.loc, element, k.index(start));
    Value part = PageLoadOp::create(k.b, k.loc, groupType, cache, page, slot,
                                    head, at);
    chunk = vector::InsertStridedSliceOp::create(k.b, k.loc, part, chunk,
                                                 ArrayRef<int64_t>{start},
                                                 ArrayRef<int64_t>{1});
  }
  return chunk;
}

Value mlir::kvcache::loadHeadRowAsF32(KernelBuilder &k, Value cache,
                                      Value page, Value slot, Value head,
                                      VectorType accType) {
  return loadHeadChunkAsF32(k, cache, page, slot, head, k.index(0), accType);
}

std::pair<Value, Value> mlir::kvcache::getKeyRange(KernelBuilder &k,
                                                   AttentionOpInterface op,
                                                   Value position,
                                                   Value cached) {
  Value end = k.add(position, k.index(1));
  if (op.getNoncausal())
    return {k.index(0), cached};
  if (std::optional<uint64_t> window = op.getWindow()) {
    // max(0, end - W) without going below zero in index arithmetic.
    Value w = k.index(int64_t(*window));
    return {k.sub(k.maxu(end, w), w), end};
  }
  if (std::optional<uint64_t> chunk = op.getChunk()) {
    Value c = k.index(int64_t(*chunk));
    return {k.mul(k.divu(position, c), c), end};
  }
  return {k.index(0), end};
}

void mlir::kvcache::writeAttentionRow(KernelBuilder &k,
                                      AttentionClauses &clauses,
                                      OnlineSoftmax &softmax,
                                      AttentionOpInterface op,
                                      const SoftmaxState &state, Value row,
                                      Value head) {
  auto outType = VectorType::get(
      cast<VectorType>(state.acc.getType()).getShape(),
      cast<MemRefType>(op.getOut().getType()).getElementType());
  Value out = clauses.normalize(softmax, state);
  vector::StoreOp::create(k.b, k.loc, k.narrow(out, outType), op.getOut(),
                          ValueRange{row, head, k.index(0)});
  if (Value lse = op.getLse())
    memref::StoreOp::create(k.b, k.loc,
                            clauses.logSumExp(state.max, state.sum), lse,
                            ValueRange{row, head});
}

void mlir::kvcache::prefetchHeadRow(KernelBuilder &k, Value cache,
                                    Value batch, Value token, Value head) {
  auto params = KVCacheParams::get(cache.getType());
  int64_t bits = params.elementType.getIntOrFloatBitWidth();
  auto tileType = MemRefType::get(
      {1, params.headSize}, params.elementType,
      StridedLayoutAttr::get(k.b.getContext(), ShapedType::kDynamic,
                             {params.numHeads * params.headSize, 1}));
  Value tile = TileOp::create(k.b, k.loc, tileType, cache, batch, token, head);
  for (int64_t element = 0; element < params.headSize; element += 512 / bits)
    memref::PrefetchOp::create(k.b, k.loc, tile,
                               ValueRange{k.index(0), k.index(element)},
                               /*isWrite=*/false, /*localityHint=*/3,
                               /*isDataCache=*/true);
}

void mlir::kvcache::loadRowsAhead(KernelBuilder &k, ArrayRef<Value> caches,
                                  Value batch, Value token, int64_t tokens,
                                  Value firstHead, Value heads) {
  // One cache line (64 bytes) per load where the head row allows; the
  // caches (K and V of one collection) have the same rows.
  auto params = KVCacheParams::get(caches.front().getType());
  int64_t bits = params.elementType.getIntOrFloatBitWidth();
  int64_t width = 512 / bits;
  while (params.headSize % width)
    width /= 2;
  assert(width * bits % 32 == 0 && "head rows of whole 4-byte words");
  auto lineType = VectorType::get({width}, params.elementType);
  auto wordsType = VectorType::get({width * bits / 32}, k.b.getI32Type());
  auto tileType = MemRefType::get(
      {tokens, params.headSize}, params.elementType,
      StridedLayoutAttr::get(k.b.getContext(), ShapedType::kDynamic,
                             {params.numHeads * params.headSize, 1}));
  Value seen = arith::ConstantOp::create(
      k.b, k.loc, wordsType, DenseElementsAttr::get(wordsType, int32_t(0)));
  for (Value cache : caches) {
    assert(KVCacheParams::get(cache.getType()).headSize == params.headSize &&
           KVCacheParams::get(cache.getType()).elementType ==
               params.elementType &&
           "the caches' rows alike");
    seen = k.forLoop(
        k.index(0), heads, k.index(1), ValueRange{seen},
        [&](Value h, ValueRange carried) -> SmallVector<Value> {
          Value tile = TileOp::create(k.b, k.loc, tileType, cache, batch,
                                      token, k.add(firstHead, h));
          Value acc = carried.front();
          for (int64_t j = 0; j < tokens; ++j)
            for (int64_t element = 0; element < params.headSize;
                 element += width) {
              Value line = vector::LoadOp::create(
                  k.b, k.loc, lineType, tile,
                  ValueRange{k.index(j), k.index(element)});
              acc = arith::OrIOp::create(
                  k.b, k.loc, acc,
                  vector::BitCastOp::create(k.b, k.loc, wordsType, line));
            }
          return {acc};
        })
               .front();
  }
  // Used by an empty asm with side effects: the loads stay.
  Value word = vector::ReductionOp::create(k.b, k.loc,
                                           vector::CombiningKind::OR, seen);
  LLVM::InlineAsmOp::create(k.b, k.loc, TypeRange{}, ValueRange{word},
                            /*asm_string=*/"", /*constraints=*/"r",
                            /*has_side_effects=*/true, /*is_align_stack=*/false,
                            LLVM::tailcallkind::TailCallKind::None,
                            LLVM::AsmDialectAttr(), ArrayAttr());
}

SmallVector<Value>
mlir::kvcache::transposeGroupScores(KernelBuilder &k, ArrayRef<Value> groups) {
  int64_t heads = groups.size();
  int64_t keysPerGroup = kDotLanes / heads;
  // Head h's score of key j: lane heads x (j mod keysPerGroup) + h of
  // group j / keysPerGroup. Gathered from pairs of groups, then the
  // pieces concatenated pairwise.
  SmallVector<Value> dots;
  for (int64_t h = 0; h < heads; ++h) {
    SmallVector<Value> pieces;
    if (heads == 1) {
      pieces.push_back(groups.front());
    } else {
      for (int64_t g = 0; g < heads; g += 2) {
        SmallVector<int64_t> lanes;
        for (int64_t operand = 0; operand < 2; ++operand)
          for (int64_t key = 0; key < keysPerGroup; ++key)
            lanes.push_back(operand * kDotLanes + key * heads + h);
        pieces.push_back(vector::ShuffleOp::create(k.b, k.loc, groups[g],
                                                   groups[g + 1], lanes));
      }
    }
    dots.push_back(concatenateVectors(k, std::move(pieces)));
  }
  return dots;
}

Value mlir::kvcache::dotBF16Pairs(KernelBuilder &k, Value x, Value y) {
  int64_t width = cast<VectorType>(x.getType()).getDimSize(0);
  auto piece = [&](Value v, int64_t start) -> Value {
    if (width == kBF16DotElements)
      return v;
    return vector::ExtractStridedSliceOp::create(
        k.b, k.loc, v, ArrayRef<int64_t>{start},
        ArrayRef<int64_t>{kBF16DotElements}, ArrayRef<int64_t>{1});
  };
  auto sumType = VectorType::get({kDotLanes}, k.b.getF32Type());
  Value sum = k.splatConstant(sumType, 0.0);
  for (int64_t start = 0; start < width; start += kBF16DotElements)
    sum = LLVM::CallIntrinsicOp::create(
              k.b, k.loc, sumType,
              k.b.getStringAttr("llvm.x86.avx512bf16.dpbf16ps.512"),
              ValueRange{sum, piece(x, start), piece(y, start)})
              .getResult(0);
  return sum;
}

int64_t mlir::kvcache::getDotLanes(int64_t headSize) {
  int64_t lanes = kDotLanes;
  while (headSize % lanes)
    lanes /= 2;
  return lanes;
}

Value mlir::kvcache::partialDot(KernelBuilder &k, Value x, Value y,
                                int64_t lanes) {
  int64_t size = cast<VectorType>(x.getType()).getDimSize(0);
  auto chunk = [&](Value v, int64_t start) -> Value {
    if (lanes == size)
      return v;
    return vector::ExtractStridedSliceOp::create(
        k.b, k.loc, v, ArrayRef<int64_t>{start}, ArrayRef<int64_t>{lanes},
        ArrayRef<int64_t>{1});
  };
  Value sum = k.fmul(chunk(x, 0), chunk(y, 0));
  for (int64_t start = lanes; start < size; start += lanes)
    sum = k.vectorFma(chunk(x, start), chunk(y, start), sum);
  return sum;
}

int64_t mlir::kvcache::getQueryGroup(AttentionOpInterface op) {
  int64_t qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  return qHeads / KVCacheParams::get(op.getKeyCache().getType()).numHeads;
}

Value mlir::kvcache::halveSegments(KernelBuilder &k, Value x, Value y,
                                   int64_t segment) {
  int64_t width = cast<VectorType>(x.getType()).getDimSize(0);
  SmallVector<int64_t> first, second;
  for (int64_t operand = 0; operand < (y ? 2 : 1); ++operand)
    for (int64_t start = 0; start < width; start += segment)
      for (int64_t lane = 0; lane < segment / 2; ++lane) {
        first.push_back(operand * width + start + lane);
        second.push_back(operand * width + start + segment / 2 + lane);
      }
  Value other = y ? y : x;
  return k.fadd(vector::ShuffleOp::create(k.b, k.loc, x, other, first),
                vector::ShuffleOp::create(k.b, k.loc, x, other, second));
}

Value mlir::kvcache::reducePartialDots(KernelBuilder &k,
                                       SmallVector<Value> sums,
                                       int64_t segment) {
  // Pairs of vectors: twice the segments, each half as long.
  while (sums.size() > 1 && segment > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i < sums.size(); i += 2)
      next.push_back(halveSegments(k, sums[i], sums[i + 1], segment));
    sums = std::move(next);
    segment /= 2;
  }
  // One vector left: fold its segments to one lane each.
  for (; segment > 1; segment /= 2)
    sums.front() = halveSegments(k, sums.front(), Value(), segment);
  // One lane per key left in several vectors: concatenate them.
  return concatenateVectors(k, std::move(sums));
}

Value mlir::kvcache::concatenateVectors(KernelBuilder &k,
                                        SmallVector<Value> pieces) {
  while (pieces.size() > 1) {
    SmallVector<Value> joined;
    for (size_t i = 0; i < pieces.size(); i += 2) {
      int64_t width = cast<VectorType>(pieces[i].getType()).getDimSize(0);
      joined.push_back(vector::ShuffleOp::create(
          k.b, k.loc, pieces[i], pieces[i + 1],
          llvm::to_vector(llvm::seq<int64_t>(0, 2 * width))));
    }
    pieces = std::move(joined);
  }
  return pieces.front();
}
