//===- KVCacheToGPU.cpp - kvcache kernel ops to GPU kernels -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The pass, and copy_pages designed for bandwidth: a thread block per page
// pair and layer, consecutive threads on consecutive 16-byte chunks, grid
// sizes from memref sizes with grid-stride loops past `maxBlocks` (no host
// reads: CUDA-graph safe). store_ragged and gather_ragged:
// RaggedCopyToGPU.cpp; attention_ragged: AttentionToGPU.cpp.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToGPU/KVCacheToGPU.h"
#include "AttentionToGPU.h"
#include "GPUKernel.h"
#include "RaggedCopyToGPU.h"
#include "../KernelCommon/KernelBuilder.h"
#include "KVCache/Conversion/Passes.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/KernelLowering.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/PatternMatch.h"
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

/// Threads of a block moving `chunks` vectors per unit of work.
int64_t getBlockThreads(int64_t chunks, const GPUKernelTarget &target) {
  return std::min(chunks, target.threadsPerBlock);
}

/// copy_pages as one launch for every pair, layer, K and V: block (x, y)
/// copies pair x (grid-stride) of layer y, K then V; a page of a layer is
/// page_size * num_heads * head_size contiguous elements.
struct CopyPagesToGPU : OpRewritePattern<CopyPagesOp> {
  CopyPagesToGPU(MLIRContext *ctx, const GPUKernelTarget &target)
      : OpRewritePattern(ctx), target(target) {}
  LogicalResult matchAndRewrite(CopyPagesOp op,
                                PatternRewriter &rewriter) const override {
    KernelBuilder host{rewriter, getKernelLoc(op)};
    auto params = KVCacheParams::get(op.getCollection().getType());
    int64_t width = getRowVectorWidth(params, nullptr, target.vectorBytes);
    int64_t chunksPerPage = params.pageSize * params.rowElements() / width;
    Value numPairs = memref::DimOp::create(rewriter, host.loc, op.getPairs(), 0);
    Value numLayers = NumLayersOp::create(rewriter, host.loc, op.getCollection());
    Value run = host.andi(host.ult(host.index(0), numPairs),
                          host.ult(host.index(0), numLayers));
    LaunchShape shape{host.minu(numPairs, host.index(target.maxBlocks)),
                      numLayers, host.index(1),
                      getBlockThreads(chunksPerPage, target)};
    if (failed(emitGuardedKernel(rewriter, op, run, shape, [&](GPUKernel &kernel) {
          emitCopyPagesBody(kernel, op, params, width, chunksPerPage);
        })))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }

  /// Block (x, y) copies pair x (grid-stride) of layer y, K then V.
  static void emitCopyPagesBody(GPUKernel &kernel, CopyPagesOp op,
                                const KVCacheParams &params, int64_t width,
                                int64_t chunksPerPage) {
    GPUKernelBuilder &k = kernel.builder();
    Value collection = kernel.param(op.getCollection());
    Value pairs = kernel.param(op.getPairs());
    Value layer = kernel.blockId(gpu::Dimension::y);
    SmallVector<Value> caches = {
        GetKeyCacheOp::create(k.b, k.loc, collection, layer)};
    if (!params.mla)
      caches.push_back(GetValueCacheOp::create(k.b, k.loc, collection, layer));
    Value numPairs = memref::DimOp::create(k.b, k.loc, pairs, 0);
    k.forLoop(kernel.blockId(gpu::Dimension::x), numPairs,
              kernel.gridDim(gpu::Dimension::x), [&](Value pair) {
      Value src = k.loadOffset(pairs, ValueRange{pair, k.index(0)});
      Value dst = k.loadOffset(pairs, ValueRange{pair, k.index(1)});
      for (Value cache : caches)
        k.forLoop(kernel.threadId(gpu::Dimension::x), k.index(chunksPerPage),
                  kernel.blockDim(gpu::Dimension::x), [&](Value chunk) {
          Value first = k.mul(chunk, k.index(width));
          Value rowElements = k.index(params.rowElements());
          Value slot = k.divu(first, rowElements);
          Value inRow = k.remu(first, rowElements);
          Value head = k.divu(inRow, k.index(params.headSize));
          Value element = k.remu(inRow, k.index(params.headSize));
          k.copyPageChunk(cache, src, dst, slot, head, element, width);
        });
      // Per-page scales (token_head, block<G>) move with the page, one f32
      // per thread: page_size * num_heads * (head_size / G) of them.
      if (params.scales.isPaged())
        for (Value cache : caches)
          emitCopyPageScales(kernel, params, cache, src, dst);
    });
  }

  static void emitCopyPageScales(GPUKernel &kernel,
                                 const KVCacheParams &params, Value cache,
                                 Value src, Value dst) {
    GPUKernelBuilder &k = kernel.builder();
    int64_t perHead = params.scales.scalesPerHead(params.headSize);
    int64_t group = params.scales.groupSize(params.headSize);
    int64_t perSlot = params.numHeads * perHead;
    k.forLoop(kernel.threadId(gpu::Dimension::x),
              k.index(params.pageSize * perSlot),
              kernel.blockDim(gpu::Dimension::x), [&](Value index) {
      Value slot = k.divu(index, k.index(perSlot));
      Value inSlot = k.remu(index, k.index(perSlot));
      Value head = k.divu(inSlot, k.index(perHead));
      Value element = k.mul(k.remu(inSlot, k.index(perHead)), k.index(group));
      Value scale =
          PageLoadScaleOp::create(k.b, k.loc, cache, src, slot, head, element);
      PageStoreScaleOp::create(k.b, k.loc, scale, cache, dst, slot, head,
                               element);
    });
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
    target.chunksInFlight = chunksInFlight;
    target.attentionThreads = attentionThreads;
    target.maxSplits = maxSplits;
    target.keysPerSplit = keysPerSplit;
    target.smCount = smCount;
    target.tensorCores = tensorCores;
    target.checked = checked;
    // Reported at the module's location, without a dump of the module.
    Location loc = getOperation().getLoc();
    if (failed(verifyChip(target.chip, [&] {
          return mlir::emitError(loc, "convert-kvcache-to-gpu: ");
        })))
      return signalPassFailure();
    if (target.threadsPerBlock < 32 || target.threadsPerBlock > 1024 ||
        target.attentionThreads < 32 || target.attentionThreads > 1024 ||
        target.maxBlocks < 1 || target.maxSplits < 1 ||
        target.keysPerSplit < 1 || target.smCount < 0 ||
        target.chunksInFlight < 1 || target.chunksInFlight > 64) {
      mlir::emitError(
          loc, "convert-kvcache-to-gpu: threads-per-block and attention-threads "
          "must be in [32, 1024], chunks-in-flight in [1, 64], max-blocks, "
          "max-splits and keys-per-split >= 1, sm-count >= 0 (got "
          "threads-per-block=")
          << target.threadsPerBlock
          << ", attention-threads=" << target.attentionThreads
          << ", chunks-in-flight=" << target.chunksInFlight
          << ", max-blocks=" << target.maxBlocks
          << ", max-splits=" << target.maxSplits
          << ", keys-per-split=" << target.keysPerSplit
          << ", sm-count=" << target.smCount << ")";
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    populateKVCacheToGPUConversionPatterns(patterns, target);
    if (failed(applyKernelLoweringPatterns(getOperation(), std::move(patterns),
                                           getArgument())))
      return signalPassFailure();
    getOperation()->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                            UnitAttr::get(&getContext()));
  }
};

} // namespace

void mlir::kvcache::populateKVCacheToGPUConversionPatterns(
    RewritePatternSet &patterns, const GPUKernelTarget &target) {
  patterns.add<CopyPagesToGPU>(patterns.getContext(), target);
  populateRaggedCopyToGPUConversionPatterns(patterns, target);
  populateRopeToGPUConversionPatterns(patterns, target);
  populateAttentionToGPUConversionPatterns(patterns, target);
  populateMergeStatesToGPUConversionPatterns(patterns, target);
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

bool mlir::kvcache::hasFp8ConversionInstructions(StringRef chip) {
  return getChipVersion(chip) >= 89;
}

int64_t mlir::kvcache::getFlagshipSMCount(StringRef chip) {
  // The largest data-center part of each architecture (consumer parts of
  // the same version have fewer SMs: pass sm-count for them).
  int64_t version = getChipVersion(chip);
  if (version >= 100)
    return 148; // B200
  if (version >= 90)
    return 132; // H100/H200 SXM
  if (version >= 89)
    return 142; // L40S
  if (version >= 86)
    return 84;  // A40
  if (version >= 80)
    return 108; // A100
  if (version >= 75)
    return 40;  // T4
  if (version >= 70)
    return 80;  // V100
  return 56;    // P100
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
