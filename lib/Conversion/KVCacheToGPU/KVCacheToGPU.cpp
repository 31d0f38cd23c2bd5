//===- KVCacheToGPU.cpp - kvcache kernel ops to GPU kernels -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Data-movement kernels designed for bandwidth: a thread block per token row
// (or page), consecutive threads on consecutive 16-byte chunks of the row,
// the row's sequence found on the device by a binary search over the ragged
// offsets (no host reads: CUDA-graph safe), one lookup per row, grid sizes
// from memref sizes with grid-stride loops past `maxBlocks`.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"
#include "AttentionToGPU.h"
#include "KVCache/Conversion/Passes.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm-c/Target.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/TargetParser/Triple.h"

namespace mlir {
#define GEN_PASS_DEF_CONVERTKVCACHETOGPU
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// Ids of the running thread and sizes of the launch.
struct KernelLaunch {
  Value blockX, blockY, threadX, gridX, blockSize;
};

/// Builds `gpu.launch` guarded by `run` (a zero-sized grid is a launch
/// error) and calls `body` inside it. The kernel is named
/// `<enclosing function>_<op>` in module `kvcache_kernels` when outlined.
/// Its parameters are `abiOperands`, in that order: the body first mentions
/// each of them (dead uses that canonicalization removes after outlining),
/// and computes everything else from them, so the outlined kernel captures
/// nothing more.
void emitGuardedLaunch(OpBuilder &builder, Operation *op, Value run,
                       Value gridX, Value gridY, int64_t threads,
                       ValueRange abiOperands,
                       function_ref<void(OpBuilder &, const KernelLaunch &)>
                           body) {
  Location loc = getKernelLoc(op);
  auto ifOp = scf::IfOp::create(builder, loc, run, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value blockSize = arith::ConstantIndexOp::create(builder, loc, threads);
  auto launch = gpu::LaunchOp::create(builder, loc, gridX, gridY, one,
                                      blockSize, one, one);
  MLIRContext *ctx = builder.getContext();
  std::string name = op->getName().stripDialect().str();
  if (auto function = op->getParentOfType<FunctionOpInterface>())
    name = (function.getName() + "_" + name).str();
  launch.setFunctionAttr(FlatSymbolRefAttr::get(ctx, name));
  launch.setModuleAttr(FlatSymbolRefAttr::get(ctx, "kvcache_kernels"));
  builder.setInsertionPointToStart(&launch.getBody().front());
  for (Value operand : abiOperands) {
    if (isa<MemRefType>(operand.getType()))
      memref::DimOp::create(builder, loc, operand, 0);
    else
      NumPagesOp::create(builder, loc, operand);
  }
  KernelLaunch ids{launch.getBlockIds().x, launch.getBlockIds().y,
                   launch.getThreadIds().x, launch.getGridSize().x,
                   launch.getBlockSize().x};
  body(builder, ids);
  gpu::TerminatorOp::create(builder, loc);
}

/// `for (i = start; i < end; i += step) body(i)`.
void emitStridedLoop(OpBuilder &builder, Location loc, Value start, Value end,
                     Value step, function_ref<void(OpBuilder &, Value)> body) {
  scf::ForOp::create(builder, loc, start, end, step, ValueRange{},
                     [&](OpBuilder &b, Location l, Value i, ValueRange) {
                       body(b, i);
                       scf::YieldOp::create(b, l);
                     });
}

Value constant(OpBuilder &builder, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(builder, loc, value);
}

/// `a > 0 && b > 0` for indices.
Value bothPositive(OpBuilder &builder, Location loc, Value a, Value b) {
  Value zero = constant(builder, loc, 0);
  Value aPositive =
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ugt, a, zero);
  Value bPositive =
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ugt, b, zero);
  return arith::AndIOp::create(builder, loc, aPositive, bPositive);
}

/// Threads of a block moving `chunks` vectors per unit of work.
int64_t getBlockThreads(int64_t chunks, const GPUKernelTarget &target) {
  return std::min(chunks, target.threadsPerBlock);
}

/// store_ragged / gather_ragged as one kernel: block x visits rows
/// bx, bx + gridDim.x, ...; its threads move the row's 16-byte chunks.
template <typename OpTy>
void lowerRaggedCopy(OpTy op, PatternRewriter &rewriter, Value rows,
                     Value offsets, RowCopyDirection direction,
                     const GPUKernelTarget &target) {
  Location loc = getKernelLoc(op);
  Value cache = op.getCache();
  auto params = PagedCacheParams::get(cache.getType());
  int64_t width = getRowVectorWidth(
      params, cast<MemRefType>(rows.getType()), target.vectorBytes);
  int64_t chunksPerRow = params.rowElements() / width;
  int64_t threads = getBlockThreads(chunksPerRow, target);

  Value hostRows = memref::DimOp::create(rewriter, loc, rows, 0);
  Value hostSequences = getNumSequences(rewriter, loc, offsets);
  Value grid = arith::MinUIOp::create(rewriter, loc, hostRows,
                                      constant(rewriter, loc, target.maxBlocks));
  emitGuardedLaunch(
      rewriter, op, bothPositive(rewriter, loc, hostRows, hostSequences), grid,
      constant(rewriter, loc, 1), threads, {cache, rows, offsets},
      [&](OpBuilder &b, const KernelLaunch &ids) {
        Value numRows = memref::DimOp::create(b, loc, rows, 0);
        Value numSequences = getNumSequences(b, loc, offsets);
        Value firstRow = loadOffset(b, loc, offsets, constant(b, loc, 0));
        Value endRow = loadOffset(b, loc, offsets, numSequences);
        emitStridedLoop(b, loc, ids.blockX, numRows, ids.gridX, [&](OpBuilder &rb, Value row) {
          Value afterFirst = arith::CmpIOp::create(
              rb, loc, arith::CmpIPredicate::uge, row, firstRow);
          Value beforeEnd = arith::CmpIOp::create(
              rb, loc, arith::CmpIPredicate::ult, row, endRow);
          Value inBatch = arith::AndIOp::create(rb, loc, afterFirst, beforeEnd);
          auto ifRow = scf::IfOp::create(rb, loc, inBatch, false);
          OpBuilder::InsertionGuard guard(rb);
          rb.setInsertionPointToStart(&ifRow.getThenRegion().front());
          Value batch =
              emitSequenceSearch(rb, loc, offsets, numSequences, row);
          Value start = loadOffset(rb, loc, offsets, batch);
          Value token = arith::SubIOp::create(rb, loc, row, start);
          if (direction == RowCopyDirection::ToCache)
            token = arith::AddIOp::create(
                rb, loc, createWriteCacheLength(rb, loc, cache, batch), token);
          Value slot;
          Value page = createLookup(rb, loc, cache, batch, token,
                                    direction == RowCopyDirection::ToCache,
                                    &slot);
          Value headSize = constant(rb, loc, params.headSize);
          Value step = constant(rb, loc, width);
          emitStridedLoop(
              rb, loc, ids.threadX, constant(rb, loc, chunksPerRow),
              ids.blockSize, [&](OpBuilder &cb, Value chunk) {
                Value first = arith::MulIOp::create(cb, loc, chunk, step);
                Value head = arith::DivUIOp::create(cb, loc, first, headSize);
                Value element =
                    arith::RemUIOp::create(cb, loc, first, headSize);
                emitRowChunkCopy(cb, loc, cache, rows, row, page, slot, head,
                                 element, width, direction);
              });
        });
      });
  rewriter.eraseOp(op);
}

struct StoreRaggedToGPU : OpRewritePattern<StoreRaggedOp> {
  StoreRaggedToGPU(MLIRContext *ctx, const GPUKernelTarget &target)
      : OpRewritePattern(ctx), target(target) {}
  LogicalResult matchAndRewrite(StoreRaggedOp op,
                                PatternRewriter &rewriter) const override {
    lowerRaggedCopy(op, rewriter, op.getValues(), op.getRowOffsets(),
                    RowCopyDirection::ToCache, target);
    return success();
  }
  GPUKernelTarget target;
};

struct GatherRaggedToGPU : OpRewritePattern<GatherRaggedOp> {
  GatherRaggedToGPU(MLIRContext *ctx, const GPUKernelTarget &target)
      : OpRewritePattern(ctx), target(target) {}
  LogicalResult matchAndRewrite(GatherRaggedOp op,
                                PatternRewriter &rewriter) const override {
    lowerRaggedCopy(op, rewriter, op.getOut(), op.getCtxOffsets(),
                    RowCopyDirection::FromCache, target);
    return success();
  }
  GPUKernelTarget target;
};

/// copy_pages as one launch for every pair, layer, K and V: block (x, y)
/// copies pair x (grid-stride) of layer y, K then V; a page of a layer is
/// page_size * num_heads * head_size contiguous elements.
struct CopyPagesToGPU : OpRewritePattern<CopyPagesOp> {
  CopyPagesToGPU(MLIRContext *ctx, const GPUKernelTarget &target)
      : OpRewritePattern(ctx), target(target) {}
  LogicalResult matchAndRewrite(CopyPagesOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = getKernelLoc(op);
    Value collection = op.getCollection();
    auto params = PagedCacheParams::get(collection.getType());
    int64_t width = getRowVectorWidth(params, nullptr, target.vectorBytes);
    int64_t chunksPerPage = params.pageSize * params.rowElements() / width;
    int64_t threads = getBlockThreads(chunksPerPage, target);
    Value pairs = op.getPairs();
    Value hostPairs = memref::DimOp::create(rewriter, loc, pairs, 0);
    Value numLayers = NumLayersOp::create(rewriter, loc, collection);
    Value grid = arith::MinUIOp::create(
        rewriter, loc, hostPairs, constant(rewriter, loc, target.maxBlocks));
    emitGuardedLaunch(
        rewriter, op, bothPositive(rewriter, loc, hostPairs, numLayers), grid,
        numLayers, threads, {collection, pairs},
        [&](OpBuilder &b, const KernelLaunch &ids) {
          Value numPairs = memref::DimOp::create(b, loc, pairs, 0);
          Value layer = ids.blockY;
          SmallVector<Value> caches = {
              GetKeyCacheOp::create(b, loc, collection, layer)};
          if (!params.mla)
            caches.push_back(
                GetValueCacheOp::create(b, loc, collection, layer));
          emitStridedLoop(b, loc, ids.blockX, numPairs, ids.gridX, [&](OpBuilder &pb, Value pair) {
            Value src = loadOffset(pb, loc, pairs,
                                   ValueRange{pair, constant(pb, loc, 0)});
            Value dst = loadOffset(pb, loc, pairs,
                                   ValueRange{pair, constant(pb, loc, 1)});
            Value rowElements = constant(pb, loc, params.rowElements());
            Value headSize = constant(pb, loc, params.headSize);
            Value step = constant(pb, loc, width);
            for (Value cache : caches)
              emitStridedLoop(
                  pb, loc, ids.threadX, constant(pb, loc, chunksPerPage),
                  ids.blockSize, [&](OpBuilder &cb, Value chunk) {
                    Value first = arith::MulIOp::create(cb, loc, chunk, step);
                    Value slot =
                        arith::DivUIOp::create(cb, loc, first, rowElements);
                    Value inRow =
                        arith::RemUIOp::create(cb, loc, first, rowElements);
                    Value head =
                        arith::DivUIOp::create(cb, loc, inRow, headSize);
                    Value element =
                        arith::RemUIOp::create(cb, loc, inRow, headSize);
                    emitPageChunkCopy(cb, loc, cache, src, dst, slot, head,
                                      element, width);
                  });
          });
        });
    rewriter.eraseOp(op);
    return success();
  }
  GPUKernelTarget target;
};

struct ConvertKVCacheToGPUPass
    : impl::ConvertKVCacheToGPUBase<ConvertKVCacheToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    GPUKernelTarget target;
    target.chip = chip;
    target.threadsPerBlock = threadsPerBlock;
    target.maxBlocks = maxBlocks;
    target.attentionThreads = attentionThreads;
    target.maxSplits = maxSplits;
    target.keysPerSplit = keysPerSplit;
    // Reported at the module's location, without a dump of the module.
    Location loc = getOperation().getLoc();
    if (failed(verifyChip(target.chip, [&] {
          return mlir::emitError(loc, "convert-kvcache-to-gpu: ");
        })))
      return signalPassFailure();
    if (target.threadsPerBlock < 32 || target.threadsPerBlock > 1024 ||
        target.attentionThreads < 32 || target.attentionThreads > 1024 ||
        target.maxBlocks < 1 || target.maxSplits < 1 ||
        target.keysPerSplit < 1) {
      mlir::emitError(
          loc, "convert-kvcache-to-gpu: threads-per-block and attention-threads "
          "must be in [32, 1024], max-blocks, max-splits and keys-per-split "
          ">= 1 (got threads-per-block=")
          << target.threadsPerBlock
          << ", attention-threads=" << target.attentionThreads
          << ", max-blocks=" << target.maxBlocks
          << ", max-splits=" << target.maxSplits
          << ", keys-per-split=" << target.keysPerSplit << ")";
      return signalPassFailure();
    }
    if (failed(rejectCachesWithoutLowering(getOperation())))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateKVCacheToGPUConversionPatterns(patterns, target);
    // One walk, no folding: folding would rewrite the kernels' cache operands
    // (cache_length of a layer cache folds to its collection), changing what
    // outlined kernels capture.
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // Ops left over failed to lower and said why.
    WalkResult result = getOperation()->walk([](AttentionRaggedOp) {
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    getOperation()->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                            UnitAttr::get(&getContext()));
  }
};

} // namespace

void mlir::kvcache::populateKVCacheToGPUConversionPatterns(
    RewritePatternSet &patterns, const GPUKernelTarget &target) {
  patterns.add<StoreRaggedToGPU, GatherRaggedToGPU, CopyPagesToGPU>(
      patterns.getContext(), target);
  populateAttentionToGPUConversionPatterns(patterns, target);
}

static const llvm::Target *getNVPTXTarget() {
  static const llvm::Target *target = [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    std::string error;
    return llvm::TargetRegistry::lookupTarget(
        llvm::Triple("nvptx64-nvidia-cuda"), error);
  }();
  return target;
}

int64_t mlir::kvcache::getChipVersion(StringRef chip) {
  unsigned version = 0;
  if (!chip.consume_front("sm_") ||
      chip.take_while(llvm::isDigit).getAsInteger(10, version))
    return 0;
  return version;
}

LogicalResult mlir::kvcache::verifyChip(
    StringRef chip, function_ref<InFlightDiagnostic()> emitError) {
  int64_t version = getChipVersion(chip);
  if (version == 0)
    return emitError() << "unknown chip '" << chip
                       << "'; expected sm_XX, e.g. sm_80 or sm_90";
  // The NVPTX backend's own list (sm_90a, sm_100f, ...): an unknown name
  // would otherwise reach LLVM's code generator and abort there.
  if (const llvm::Target *nvptx = getNVPTXTarget()) {
    std::unique_ptr<llvm::MCSubtargetInfo> info(nvptx->createMCSubtargetInfo(
        llvm::Triple("nvptx64-nvidia-cuda"), /*CPU=*/"", /*Features=*/""));
    if (info && !info->isCPUStringValid(chip))
      return emitError() << "unknown chip '" << chip
                         << "': LLVM's NVPTX backend does not know it "
                            "(e.g. sm_75, sm_80, sm_90, sm_90a, sm_100a)";
  }
  if (version < 30)
    return emitError() << "chip '" << chip
                       << "' is older than sm_30, the oldest the kernels "
                          "support (they use warp shuffles)";
  return success();
}
