//===- RopeToGPU.cpp - rope_ragged to a GPU kernel --------------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// kvcache.rope_ragged as one kernel (docs/KernelABI.md): block x rotates
// the batch's rows x, x + gridDim.x, ... Every thread of the block resolves
// the row (its sequence by a binary search over the offsets on the device,
// its storage position, the rotary position, one lookup: block-uniform
// values, no host reads); then thread t takes the chunks of pairs t,
// t + blockDim.x, ... of the row's query heads, then of its key heads,
// each chunk with its cos and sin (RopeEmitter: the CPU's chunks). Each
// element is read and written by one thread, so q_out may be q.
//
//===----------------------------------------------------------------------===//

#include "GPUKernel.h"
#include "RaggedCopyToGPU.h"
#include "../KernelCommon/Rope.h"
#include "KVCache/IR/KVCacheOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::kvcache;

namespace {

struct RopeRaggedToGPU : OpRewritePattern<RopeRaggedOp> {
  RopeRaggedToGPU(MLIRContext *ctx, const GPUKernelTarget &target)
      : OpRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(RopeRaggedOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(RopeEmitter::checkStrides(op)))
      return failure();
    // The kernel indexes q's rows (heads x head_size elements) with
    // products of small constants: a row of more elements than an i32
    // holds is rejected (no GPU holds one) before any of them overflows.
    int64_t rowHeads = cast<ShapedType>(op.getQ().getType()).getDimSize(1);
    int64_t headSize = KVCacheParams::get(op.getKeyCache().getType()).headSize;
    if (!ShapedType::isDynamic(rowHeads) &&
        rowHeads > std::numeric_limits<int32_t>::max() / headSize)
      return op.emitOpError("cannot be lowered to a GPU kernel: q has ")
             << rowHeads << " heads of " << headSize
             << " elements, over 2^31 - 1 elements per row";
    KernelBuilder host{rewriter, getKernelLoc(op)};
    RopeEmitter sizes(host, op, target.vectorBytes);
    // One thread per chunk of pairs of q's heads and the cache's (bounded
    // by the check above), up to the block's limit.
    int64_t chunks =
        (rowHeads + KVCacheParams::get(op.getKeyCache().getType()).numHeads) *
        sizes.getPairChunks();
    Value rows = memref::DimOp::create(rewriter, host.loc, op.getQ(), 0);
    LaunchShape shape{host.minu(rows, host.index(target.maxBlocks)),
                      host.index(1), host.index(1),
                      std::clamp<int64_t>(llvm::alignTo(chunks, 32), 32,
                                          target.threadsPerBlock)};
    if (failed(emitGuardedKernel(rewriter, op, host.ult(host.index(0), rows),
                                 shape, [&](GPUKernel &kernel) {
                                   emitBody(kernel, op);
                                 })))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }

  void emitBody(GPUKernel &kernel, RopeRaggedOp op) const {
    GPUKernelBuilder &k = kernel.builder();
    RopeEmitter rope(k, op, target.vectorBytes);
    Value q = kernel.param(op.getQ()), qOut = kernel.param(op.getQOut());
    Value cache = kernel.param(op.getKeyCache());
    Value offsets = kernel.param(op.getRowOffsets());
    Value table = kernel.param(op.getCosSin());
    Value thread = kernel.threadId(gpu::Dimension::x);
    Value threads = kernel.blockDim(gpu::Dimension::x);
    kernel.forEachBatchRow(q, offsets, [&](Value row, Value numSequences) {
      Value batch = k.sequenceOf(offsets, numSequences, row);
      Value first = k.loadOffset(offsets, batch);
      Value token =
          k.rowPosition(k.writeCacheLength(cache, batch), row, first);
      Value positions;
      if (op.getPositions())
        positions = kernel.param(op.getPositions());
      Value position = RopeEmitter::rotaryPosition(
          k, op, table, positions, row, token, target.checked);
      auto [page, slot] = k.lookup(cache, batch, token, /*servesWrite=*/true);
      Value width = k.index(rope.getWidth());
      // Thread t's chunks of `perHead` chunks per head of `heads` heads.
      auto eachChunk = [&](int64_t heads, int64_t perHead,
                           function_ref<void(Value, Value)> body) {
        Value count = k.index(perHead);
        k.forLoop(thread, k.index(heads * perHead), threads, [&](Value i) {
          body(k.divu(i, count), k.mul(k.remu(i, count), width));
        });
      };
      int64_t qHeads = cast<ShapedType>(op.getQ().getType()).getDimSize(1);
      if (op.getQOut() != op.getQ())
        eachChunk(qHeads, rope.getUnrotatedChunks(),
                  [&](Value head, Value element) {
                    rope.copyChunk(q, qOut, row, head, element);
                  });
      RotatedRows sides[] = {rope.queries(q, qOut, row),
                             rope.keys(cache, row, page, slot,
                                       target.checked)};
      for (const RotatedRows &rows : sides)
        eachChunk(rows.numHeads, rope.getPairChunks(),
                  [&](Value head, Value pair) {
                    Value cos, sin;
                    std::tie(cos, sin) = rope.loadCosSin(table, position, pair);
                    rope.rotateChunk(rows, head, pair, cos, sin);
                  });
    });
  }

  GPUKernelTarget target;
};

} // namespace

void mlir::kvcache::populateRopeToGPUConversionPatterns(
    RewritePatternSet &patterns, const GPUKernelTarget &target) {
  patterns.add<RopeRaggedToGPU>(patterns.getContext(), target);
}
