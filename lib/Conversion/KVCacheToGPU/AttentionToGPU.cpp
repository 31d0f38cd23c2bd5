//===- AttentionToGPU.cpp - attention_ragged to GPU kernels -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Flash-decoding for paged caches (design notes: GPU-DESIGN.md):
//
// - a thread block per (query row, KV head, context split); the G query
//   heads of the KV group live in the same block and share every K/V load;
// - L lanes per key hold a W-element slice of the head (16 bytes when the
//   head size allows), NT = threads / L keys are processed per step; the
//   q.k partial sums are reduced across the L lanes with xor shuffles;
// - one lookup per key per step (kvcache.tile), K and V streamed into shared
//   memory with double-buffered cp.async (nvgpu.device_async_copy), each
//   thread copying the slice it later reads, so no barrier is needed;
// - online softmax in f32 with exp2 (scale * log2(e) folded into q) through
//   NVVM's ex2.approx, no libdevice;
// - the NT partial states merge in shared memory; with a workspace and a
//   context long enough, splits write (o, m, l) partials that a second
//   kernel merges.
//
// Rows with several query tokens (prefill) use the same kernel: each row's
// causal limit bounds its key loop.
//
//===----------------------------------------------------------------------===//

#include "AttentionToGPU.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// Static shape of the attention kernel.
struct AttentionPlan {
  int64_t headSize, kvHeads, qHeads, group;
  int64_t lanes;     // L: threads per key, a power of two <= 32
  int64_t width;     // W: elements per lane
  int64_t keysPerStep; // NT
  int64_t threads;   // NT * L
  bool asyncCopy;    // W elements are a cp.async size (4, 8 or 16 bytes)
  int64_t rowAlignment; // bytes a q/out slice access may claim
  Type elementType;
  int64_t elementBytes;
};

constexpr int64_t kSharedBytes = 48 * 1024;

FailureOr<AttentionPlan> makePlan(AttentionRaggedOp op,
                                  const GPUKernelTarget &target) {
  auto params = PagedCacheParams::get(op.getKeyCache().getType());
  for (Value rows : {op.getQ(), op.getOut()}) {
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(cast<MemRefType>(rows.getType())
                   .getStridesAndOffset(strides, offset)) ||
        strides.back() != 1)
      return op.emitOpError("cannot be lowered: q and out need a unit "
                            "innermost stride (copy them into contiguous "
                            "buffers)");
  }
  AttentionPlan plan;
  plan.headSize = params.headSize;
  plan.kvHeads = params.numHeads;
  plan.qHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
  plan.group = plan.qHeads / plan.kvHeads;
  plan.elementType = params.elementType;
  plan.elementBytes = llvm::divideCeil(params.elementType.getIntOrFloatBitWidth(), 8);
  int64_t vectorWidth = getRowVectorWidth(params, nullptr, target.vectorBytes);
  int64_t chunks = params.headSize / vectorWidth;
  plan.lanes = std::min<int64_t>(int64_t(1) << llvm::countr_zero(uint64_t(chunks)), 32);
  plan.width = params.headSize / plan.lanes;
  int64_t sliceBytes = plan.width * plan.elementBytes;
  plan.asyncCopy = sliceBytes == 4 || sliceBytes == 8 || sliceBytes == 16;
  // q and out slices: aligned as far as their layouts and the slice allow.
  auto qType = cast<MemRefType>(op.getQ().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  int64_t rowWidth = std::min(getRowVectorWidth(params, qType, target.vectorBytes),
                              getRowVectorWidth(params, outType, target.vectorBytes));
  plan.rowAlignment = std::min<int64_t>(
      rowWidth * plan.elementBytes,
      int64_t(1) << llvm::countr_zero(uint64_t(sliceBytes)));
  plan.keysPerStep = std::max<int64_t>(target.attentionThreads / plan.lanes, 1);
  auto tooLarge = [&] {
    return op.emitOpError("needs more than 48 KiB of shared memory for a "
                          "GQA group of ")
           << plan.group << " heads of " << plan.headSize
           << " elements; use fewer query heads per KV head";
  };
  // One key's partial states of the whole group must fit (checked before
  // the products below can overflow).
  if (plan.group > kSharedBytes / ((plan.headSize + 2) * 4))
    return tooLarge();
  auto sharedBytes = [&](int64_t keys) {
    int64_t kv = plan.asyncCopy ? 2 * 2 * keys * plan.headSize * plan.elementBytes : 0;
    return kv + keys * plan.group * (plan.headSize + 2) * 4;
  };
  while (plan.keysPerStep > 1 && sharedBytes(plan.keysPerStep) > kSharedBytes)
    plan.keysPerStep /= 2;
  if (sharedBytes(plan.keysPerStep) > kSharedBytes)
    return tooLarge();
  plan.threads = plan.keysPerStep * plan.lanes;
  return plan;
}

/// Small builder helpers bound to one location.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divu(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value remu(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value minu(Value x, Value y) { return arith::MinUIOp::create(b, loc, x, y); }
  Value ceilDiv(Value x, Value y) {
    return arith::CeilDivUIOp::create(b, loc, x, y);
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value eq(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fmax(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  /// 2^x with NVVM's ex2.approx (no libdevice needed).
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, b.getF32Type(),
               b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"), ValueRange{x})
        .getResult(0);
  }
  /// 2^(m - max), or 0 when m is -inf (an empty partial state).
  Value weight(Value m, Value max) {
    Value isEmpty = arith::CmpFOp::create(
        b, loc, arith::CmpFPredicate::OEQ, m,
        f32(-std::numeric_limits<float>::infinity()));
    return select(isEmpty, f32(0), exp2(fsub(m, max)));
  }
  Value splat(Value scalar, VectorType type) {
    return vector::BroadcastOp::create(b, loc, type, scalar);
  }
  Value widen(Value v, VectorType type) {
    return v.getType() == type ? v : arith::ExtFOp::create(b, loc, type, v);
  }
  Value narrow(Value v, VectorType type) {
    return v.getType() == type ? v : arith::TruncFOp::create(b, loc, type, v);
  }
  /// The sum of `value` over the `lanes` consecutive lanes of a key.
  Value laneSum(Value value, int64_t lanes) {
    for (int64_t offset = lanes / 2; offset >= 1; offset /= 2)
      value = fadd(value, gpu::ShuffleOp::create(b, loc, value, offset, 32,
                                                 gpu::ShuffleMode::XOR)
                              .getShuffleResult());
    return value;
  }
  void forLoop(Value lower, Value upper, Value step,
               function_ref<void(Value)> body) {
    scf::ForOp::create(b, loc, lower, upper, step, ValueRange{},
                       [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPointToStart(nested.getInsertionBlock());
                         body(iv);
                         scf::YieldOp::create(b, loc);
                       });
  }
  void ifThen(Value cond, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    body();
  }
};

Attribute workgroupSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

/// Names an outlined kernel `<function>_<suffix>` in module kvcache_kernels.
void nameKernel(gpu::LaunchOp launch, Operation *op, StringRef suffix) {
  MLIRContext *ctx = op->getContext();
  std::string name = suffix.str();
  if (auto function = op->getParentOfType<FunctionOpInterface>())
    name = (function.getName() + "_" + suffix).str();
  launch.setFunctionAttr(FlatSymbolRefAttr::get(ctx, name));
  launch.setModuleAttr(FlatSymbolRefAttr::get(ctx, "kvcache_kernels"));
}

/// Mentions `operands` first in the kernel body so that outlining makes them
/// the first parameters, in this order (dead uses, removed after outlining).
void mentionOperands(OpBuilder &b, Location loc, ValueRange operands) {
  for (Value operand : operands) {
    if (isa<MemRefType>(operand.getType()))
      memref::DimOp::create(b, loc, operand, 0);
    else
      NumPagesOp::create(b, loc, operand);
  }
}

struct AttentionToGPU : OpRewritePattern<AttentionRaggedOp> {
  AttentionToGPU(MLIRContext *ctx, const GPUKernelTarget &target)
      : OpRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(AttentionRaggedOp op,
                                PatternRewriter &rewriter) const override {
    FailureOr<AttentionPlan> maybePlan = makePlan(op, target);
    if (failed(maybePlan))
      return failure();
    AttentionPlan plan = *maybePlan;
    Location loc = getKernelLoc(op);
    KernelBuilder host{rewriter, loc};
    Value q = op.getQ(), offsets = op.getRowOffsets();
    Value keys = op.getKeyCache(), workspace = op.getWorkspace();

    // Host side: grid sizes from memref sizes and max_cache_length only.
    Value numRows = memref::DimOp::create(rewriter, loc, q, 0);
    Value numSequences = getNumSequences(rewriter, loc, offsets);
    Value splits = host.index(1);
    if (workspace) {
      // Splits of about keysPerSplit keys, as many as the workspace holds.
      Value maxContext = MaxCacheLengthOp::create(rewriter, loc, keys);
      Value wanted = host.ceilDiv(maxContext, host.index(target.keysPerSplit));
      Value perSplit = host.mul(numRows, host.index(plan.qHeads * (plan.headSize + 2)));
      Value capacity = host.divu(memref::DimOp::create(rewriter, loc, workspace, 0),
                                 arith::MaxUIOp::create(rewriter, loc, perSplit, host.index(1)));
      splits = host.minu(host.minu(wanted, capacity), host.index(target.maxSplits));
      splits = arith::MaxUIOp::create(rewriter, loc, splits, host.index(1));
    }
    Value grid = host.minu(numRows, host.index(target.maxBlocks));
    Value run = arith::AndIOp::create(
        rewriter, loc, host.ult(host.index(0), numRows),
        host.ult(host.index(0), numSequences));
    host.ifThen(run, [&] {
      emitAttentionKernel(rewriter, op, plan, grid, splits);
      if (workspace)
        host.ifThen(host.ult(host.index(1), splits),
                    [&] { emitMergeKernel(rewriter, op, plan, grid, splits); });
    });
    rewriter.eraseOp(op);
    return success();
  }

  /// The main kernel: block (row, kv head, split).
  void emitAttentionKernel(OpBuilder &builder, AttentionRaggedOp op,
                           const AttentionPlan &plan, Value grid,
                           Value splits) const {
    Location loc = getKernelLoc(op);
    MLIRContext *ctx = builder.getContext();
    KernelBuilder k{builder, loc};
    Value q = op.getQ(), out = op.getOut(), offsets = op.getRowOffsets();
    Value keys = op.getKeyCache(), values = op.getValueCache();
    Value workspace = op.getWorkspace();
    auto launch = gpu::LaunchOp::create(
        builder, loc, grid, k.index(plan.kvHeads), splits,
        k.index(plan.threads), k.index(1), k.index(1));
    nameKernel(launch, op, "attention_ragged");
    Type f32 = builder.getF32Type();
    int64_t D = plan.headSize, G = plan.group, NT = plan.keysPerStep;
    auto sliceType = VectorType::get({plan.width}, plan.elementType);
    auto accType = VectorType::get({plan.width}, f32);
    Value sharedK, sharedV;
    if (plan.asyncCopy) {
      auto kvType = MemRefType::get({2, NT, D}, plan.elementType,
                                    MemRefLayoutAttrInterface(),
                                    workgroupSpace(ctx));
      sharedK = launch.addWorkgroupAttribution(kvType, loc);
      sharedV = launch.addWorkgroupAttribution(kvType, loc);
    }
    auto stateType = MemRefType::get({NT, G, D + 2}, f32,
                                     MemRefLayoutAttrInterface(),
                                     workgroupSpace(ctx));
    Value sharedState = launch.addWorkgroupAttribution(stateType, loc);

    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&launch.getBody().front());
    SmallVector<Value> abi = {q, keys, values, offsets, out};
    if (workspace)
      abi.push_back(workspace);
    mentionOperands(builder, loc, abi);

    Value thread = launch.getThreadIds().x;
    Value kvHead = launch.getBlockIds().y;
    Value split = launch.getBlockIds().z;
    Value numSplits = launch.getGridSize().z;
    Value keyGroup = k.divu(thread, k.index(plan.lanes));
    Value lane = k.remu(thread, k.index(plan.lanes));
    Value sliceStart = k.mul(lane, k.index(plan.width));
    Value numRows = memref::DimOp::create(builder, loc, q, 0);
    Value numSequences = getNumSequences(builder, loc, offsets);
    Value firstRow = loadOffset(builder, loc, offsets, k.index(0));
    Value endRow = loadOffset(builder, loc, offsets, numSequences);
    float scaleLog2 = op.getScale().convertToFloat() / std::log(2.0f);

    k.forLoop(launch.getBlockIds().x, numRows, launch.getGridSize().x, [&](Value row) {
      Value inBatch = arith::AndIOp::create(
          builder, loc,
          arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::uge, row,
                                firstRow),
          k.ult(row, endRow));
      k.ifThen(inBatch, [&] {
        Value batch = emitSequenceSearch(builder, loc, offsets, numSequences, row);
        Value start = loadOffset(builder, loc, offsets, batch);
        Value position = k.add(CacheLengthOp::create(builder, loc, keys, batch),
                               k.sub(row, start));
        Value numKeys = k.add(position, k.index(1));
        Value chunk = k.ceilDiv(numKeys, numSplits);
        Value keyBegin = k.minu(k.mul(split, chunk), numKeys);
        Value keyEnd = k.minu(k.add(keyBegin, chunk), numKeys);
        Value numSteps = k.ceilDiv(k.sub(keyEnd, keyBegin), k.index(NT));

        // q slices of the G heads, scaled by scale * log2(e).
        SmallVector<Value> queries;
        for (int64_t i = 0; i < G; ++i) {
          Value head = k.add(k.mul(kvHead, k.index(G)), k.index(i));
          Value slice = vector::LoadOp::create(
              builder, loc, sliceType, q, ValueRange{row, head, sliceStart},
              /*nontemporal=*/false, llvm::Align(plan.rowAlignment));
          queries.push_back(k.fmul(k.widen(slice, accType),
                                   k.splat(k.f32(scaleLog2), accType)));
        }

        // The key this thread's group handles at `step`, clamped into the
        // range so addresses stay valid when it is past the end.
        auto keyAt = [&](Value step) -> std::pair<Value, Value> {
          Value key = k.add(keyBegin, k.add(k.mul(step, k.index(NT)), keyGroup));
          Value valid = k.ult(key, keyEnd);
          return {k.select(valid, key, keyBegin), valid};
        };
        auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
        // Issues this thread's slices of K and V for `step` (nothing past
        // the end: zero-fill form) as one cp.async group.
        auto issueCopies = [&](Value step) -> Value {
          auto [key, valid] = keyAt(step);
          Value buffer = k.remu(step, k.index(2));
          Value count = k.select(valid, k.index(plan.width), k.index(0));
          SmallVector<Value> tokens;
          for (auto [cache, shared] : {std::pair{keys, sharedK}, {values, sharedV}}) {
            auto tileType = MemRefType::get(
                {1, D}, plan.elementType,
                StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                                       {plan.kvHeads * D, 1}));
            Value tile = TileOp::create(builder, loc, tileType, cache, batch,
                                        key, kvHead);
            tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
                builder, loc, tokenType, shared,
                ValueRange{buffer, keyGroup, sliceStart}, tile,
                ValueRange{k.index(0), sliceStart},
                builder.getIndexAttr(plan.width), count,
                plan.width * plan.elementBytes == 16 ? builder.getUnitAttr()
                                                     : UnitAttr()));
          }
          return nvgpu::DeviceAsyncCreateGroupOp::create(builder, loc,
                                                         tokenType, tokens);
        };
        if (plan.asyncCopy)
          k.ifThen(k.ult(k.index(0), numSteps), [&] { issueCopies(k.index(0)); });

        Value negInf = k.f32(-std::numeric_limits<float>::infinity());
        SmallVector<Value> init;
        for (int64_t i = 0; i < G; ++i)
          init.append({negInf, k.f32(0),
                       arith::ConstantOp::create(
                           builder, loc,
                           DenseElementsAttr::get(accType, builder.getF32FloatAttr(0)))});
        auto loop = scf::ForOp::create(builder, loc, k.index(0), numSteps,
                                       k.index(1), init);
        {
          OpBuilder::InsertionGuard loopGuard(builder);
          builder.setInsertionPointToStart(loop.getBody());
          Value step = loop.getInductionVar();
          auto [key, valid] = keyAt(step);
          Value keySlice, valueSlice;
          if (plan.asyncCopy) {
            // Prefetch the next step (an empty group past the end, so that
            // exactly one group is in flight), then wait for this step's.
            Value group = issueCopies(k.add(step, k.index(1)));
            nvgpu::DeviceAsyncWaitOp::create(builder, loc, group,
                                             builder.getI32IntegerAttr(1));
            Value buffer = k.remu(step, k.index(2));
            keySlice = vector::LoadOp::create(builder, loc, sliceType, sharedK,
                                              ValueRange{buffer, keyGroup, sliceStart});
            valueSlice = vector::LoadOp::create(builder, loc, sliceType, sharedV,
                                                ValueRange{buffer, keyGroup, sliceStart});
          } else {
            Value slot;
            Value page = createLookup(builder, loc, keys, batch, key,
                                      /*servesWrite=*/false, &slot);
            keySlice = PageLoadOp::create(builder, loc, sliceType, keys, page,
                                          slot, kvHead, sliceStart);
            valueSlice = PageLoadOp::create(builder, loc, sliceType, values,
                                            page, slot, kvHead, sliceStart);
          }
          Value keyRow = k.widen(keySlice, accType);
          Value valueRow = k.widen(valueSlice, accType);
          SmallVector<Value> next;
          for (int64_t i = 0; i < G; ++i) {
            Value max = loop.getRegionIterArg(3 * i);
            Value sum = loop.getRegionIterArg(3 * i + 1);
            Value acc = loop.getRegionIterArg(3 * i + 2);
            Value partial = vector::ReductionOp::create(
                builder, loc, vector::CombiningKind::ADD,
                k.fmul(queries[i], keyRow));
            Value score = k.laneSum(partial, plan.lanes);
            Value newMax = k.fmax(max, score);
            Value rescale = k.weight(max, newMax);
            Value w = k.exp2(k.fsub(score, newMax));
            Value newSum = k.fadd(k.fmul(sum, rescale), w);
            Value newAcc = vector::FMAOp::create(
                builder, loc, k.splat(w, accType), valueRow,
                k.fmul(acc, k.splat(rescale, accType)));
            next.push_back(k.select(valid, newMax, max));
            next.push_back(k.select(valid, newSum, sum));
            next.push_back(k.select(valid, newAcc, acc));
          }
          scf::YieldOp::create(builder, loc, next);
        }

        // Merge the NT partial states of the block in shared memory.
        Value isLaneZero = k.eq(lane, k.index(0));
        for (int64_t i = 0; i < G; ++i) {
          Value slot = k.index(i);
          vector::StoreOp::create(builder, loc, loop.getResult(3 * i + 2),
                                  sharedState, ValueRange{keyGroup, slot, sliceStart});
          k.ifThen(isLaneZero, [&] {
            memref::StoreOp::create(builder, loc, loop.getResult(3 * i),
                                    sharedState, ValueRange{keyGroup, slot, k.index(D)});
            memref::StoreOp::create(builder, loc, loop.getResult(3 * i + 1),
                                    sharedState, ValueRange{keyGroup, slot, k.index(D + 1)});
          });
        }
        gpu::BarrierOp::create(builder, loc);
        k.ifThen(k.eq(keyGroup, k.index(0)), [&] {
          for (int64_t i = 0; i < G; ++i) {
            Value slot = k.index(i);
            Value head = k.add(k.mul(kvHead, k.index(G)), slot);
            Value max = negInf;
            for (int64_t g = 0; g < NT; ++g)
              max = k.fmax(max, memref::LoadOp::create(
                                    builder, loc, sharedState,
                                    ValueRange{k.index(g), slot, k.index(D)}));
            Value sum = k.f32(0);
            Value acc = arith::ConstantOp::create(
                builder, loc, DenseElementsAttr::get(accType, builder.getF32FloatAttr(0)));
            for (int64_t g = 0; g < NT; ++g) {
              Value w = k.weight(memref::LoadOp::create(
                                     builder, loc, sharedState,
                                     ValueRange{k.index(g), slot, k.index(D)}),
                                 max);
              Value partialSum = memref::LoadOp::create(
                  builder, loc, sharedState, ValueRange{k.index(g), slot, k.index(D + 1)});
              sum = k.fadd(sum, k.fmul(w, partialSum));
              Value partialAcc = vector::LoadOp::create(
                  builder, loc, accType, sharedState,
                  ValueRange{k.index(g), slot, sliceStart});
              acc = vector::FMAOp::create(builder, loc, k.splat(w, accType),
                                          partialAcc, acc);
            }
            auto writeOut = [&] {
              Value result = arith::DivFOp::create(builder, loc, acc,
                                                   k.splat(sum, accType));
              vector::StoreOp::create(builder, loc, k.narrow(result, sliceType),
                                      out, ValueRange{row, head, sliceStart},
                                      /*nontemporal=*/false,
                                      llvm::Align(plan.rowAlignment));
            };
            if (!workspace) {
              writeOut();
              continue;
            }
            auto oneSplit = scf::IfOp::create(builder, loc,
                                              k.eq(numSplits, k.index(1)),
                                              /*withElse=*/true);
            {
              OpBuilder::InsertionGuard g(builder);
              builder.setInsertionPointToStart(&oneSplit.getThenRegion().front());
              writeOut();
              builder.setInsertionPointToStart(&oneSplit.getElseRegion().front());
              // Partial (o, m, l) of this split: o unnormalised, relative to m.
              Value base = k.mul(
                  k.add(k.mul(k.add(k.mul(row, k.index(plan.qHeads)), head),
                              numSplits),
                        split),
                  k.index(D + 2));
              vector::StoreOp::create(builder, loc, acc, workspace,
                                      ValueRange{k.add(base, sliceStart)});
              k.ifThen(isLaneZero, [&] {
                memref::StoreOp::create(builder, loc, max, workspace,
                                        ValueRange{k.add(base, k.index(D))});
                memref::StoreOp::create(builder, loc, sum, workspace,
                                        ValueRange{k.add(base, k.index(D + 1))});
              });
            }
          }
        });
        // The shared state is reused by the block's next row.
        gpu::BarrierOp::create(builder, loc);
      });
    });
    gpu::TerminatorOp::create(builder, loc);
  }

  /// The merge kernel: block (row, query head) combines the splits' partial
  /// states of its row from the workspace.
  void emitMergeKernel(OpBuilder &builder, AttentionRaggedOp op,
                       const AttentionPlan &plan, Value grid,
                       Value splits) const {
    Location loc = getKernelLoc(op);
    KernelBuilder k{builder, loc};
    Value out = op.getOut(), offsets = op.getRowOffsets();
    Value workspace = op.getWorkspace();
    int64_t D = plan.headSize;
    int64_t threads = std::min<int64_t>(D, 256);
    auto launch = gpu::LaunchOp::create(builder, loc, grid, k.index(plan.qHeads),
                                        k.index(1), k.index(threads), k.index(1),
                                        k.index(1));
    nameKernel(launch, op, "attention_merge");
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&launch.getBody().front());
    mentionOperands(builder, loc, {workspace, offsets, out});
    Value head = launch.getBlockIds().y;
    Value thread = launch.getThreadIds().x;
    Value numRows = memref::DimOp::create(builder, loc, out, 0);
    Value numSequences = getNumSequences(builder, loc, offsets);
    Value firstRow = loadOffset(builder, loc, offsets, k.index(0));
    Value endRow = loadOffset(builder, loc, offsets, numSequences);
    k.forLoop(launch.getBlockIds().x, numRows, launch.getGridSize().x, [&](Value row) {
      Value inBatch = arith::AndIOp::create(
          builder, loc,
          arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::uge, row,
                                firstRow),
          k.ult(row, endRow));
      k.ifThen(inBatch, [&] {
        Value rowBase = k.mul(k.add(k.mul(row, k.index(plan.qHeads)), head), splits);
        auto maxLoop = scf::ForOp::create(
            builder, loc, k.index(0), splits, k.index(1),
            ValueRange{k.f32(-std::numeric_limits<float>::infinity())},
            [&](OpBuilder &b, Location l, Value s, ValueRange args) {
              KernelBuilder kb{b, l};
              scf::YieldOp::create(b, l, kb.fmax(args[0], memref::LoadOp::create(
                                                             b, l, workspace,
                                                             kb.add(kb.mul(kb.add(rowBase, s), kb.index(D + 2)), kb.index(D)))
                                                             .getResult()));
            });
        Value max = maxLoop.getResult(0);
        auto sumLoop = scf::ForOp::create(
            builder, loc, k.index(0), splits, k.index(1), ValueRange{k.f32(0)},
            [&](OpBuilder &b, Location l, Value s, ValueRange args) {
              KernelBuilder kb{b, l};
              Value m = memref::LoadOp::create(b, l, workspace,
                                               kb.add(kb.mul(kb.add(rowBase, s), kb.index(D + 2)), kb.index(D)));
              Value partial = memref::LoadOp::create(b, l, workspace,
                                                     kb.add(kb.mul(kb.add(rowBase, s), kb.index(D + 2)), kb.index(D + 1)));
              scf::YieldOp::create(b, l, kb.fadd(args[0], kb.fmul(kb.weight(m, max), partial)));
            });
        Value sum = sumLoop.getResult(0);
        k.forLoop(thread, k.index(D), k.index(threads), [&](Value d) {
          auto accLoop = scf::ForOp::create(
              builder, loc, k.index(0), splits, k.index(1), ValueRange{k.f32(0)},
              [&](OpBuilder &b, Location l, Value s, ValueRange args) {
                KernelBuilder kb{b, l};
                Value base = kb.mul(kb.add(rowBase, s), kb.index(D + 2));
                Value m = memref::LoadOp::create(b, l, workspace, kb.add(base, kb.index(D)));
                Value o = memref::LoadOp::create(b, l, workspace, kb.add(base, d));
                scf::YieldOp::create(b, l, kb.fadd(args[0], kb.fmul(kb.weight(m, max), o)));
              });
          Value result = arith::DivFOp::create(builder, loc, accLoop.getResult(0), sum);
          Value narrow = plan.elementType == builder.getF32Type()
                             ? result
                             : arith::TruncFOp::create(builder, loc, plan.elementType, result).getResult();
          memref::StoreOp::create(builder, loc, narrow, out, ValueRange{row, head, d});
        });
      });
    });
    gpu::TerminatorOp::create(builder, loc);
  }

  GPUKernelTarget target;
};

} // namespace

void mlir::kvcache::populateAttentionToGPUConversionPatterns(
    RewritePatternSet &patterns, const GPUKernelTarget &target) {
  patterns.add<AttentionToGPU>(patterns.getContext(), target);
}
