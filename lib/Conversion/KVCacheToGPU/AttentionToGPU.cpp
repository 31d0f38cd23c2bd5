//===- AttentionToGPU.cpp - attention_ragged to GPU kernels -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Flash-decoding for paged caches (kernel parameters, grids and the
// workspace layout: docs/KernelABI.md):
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
#include "AttentionKernels.h"
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

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

namespace {

constexpr int64_t kSharedBytes = 48 * 1024;
/// Query heads one pass over the keys handles at most (each holds a running
/// (m, l, o) in registers).
constexpr int64_t kMaxHeadsPerPass = 8;
/// Key groups whose partial states the block merges in unrolled code; more
/// (heads of a few elements, many keys per step) merge in a loop.
constexpr int64_t kMaxUnrolledStates = 8;

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
  // Lanes per key: a power of two dividing head_size, at most 32; the
  // fewest that keep a lane's slice within 16 bytes (one vector access, few
  // registers for q and the accumulators), else as many as divide it. Head
  // sizes like 80, 96 or 112 so get slices of 5-7 elements instead of 40,
  // 24 or 56 (which spilled).
  int64_t maxLanes = std::min<int64_t>(
      int64_t(1) << llvm::countr_zero(uint64_t(params.headSize)), 32);
  plan.lanes = 1;
  while (plan.lanes < maxLanes &&
         (params.headSize / plan.lanes) * plan.elementBytes > 16)
    plan.lanes *= 2;
  plan.width = params.headSize / plan.lanes;
  int64_t sliceBytes = plan.width * plan.elementBytes;
  // cp.async exists from sm_80; older chips load K and V straight from the
  // cache.
  plan.asyncCopy = (sliceBytes == 4 || sliceBytes == 8 || sliceBytes == 16) &&
                   getChipVersion(target.chip) >= 80;
  // q and out slices: aligned as far as their layouts and the slice allow.
  auto qType = cast<MemRefType>(op.getQ().getType());
  auto outType = cast<MemRefType>(op.getOut().getType());
  int64_t rowWidth = std::min(getRowVectorWidth(params, qType, target.vectorBytes),
                              getRowVectorWidth(params, outType, target.vectorBytes));
  plan.rowAlignment = std::min<int64_t>(
      rowWidth * plan.elementBytes,
      int64_t(1) << llvm::countr_zero(uint64_t(sliceBytes)));
  plan.keysPerStep = std::max<int64_t>(target.attentionThreads / plan.lanes, 1);
  // Head indices are computed in 32-bit-safe ranges on the device.
  if (plan.qHeads >= (int64_t(1) << 31))
    return op.emitOpError("cannot be lowered to the GPU: q has ")
           << plan.qHeads << " heads, more than 2^31 - 1";
  // As few passes as 8 heads per pass allow, the heads spread evenly over
  // them (a group of 12: 2 passes of 6, not 8 + 4 with 4 idle slots).
  // Wide slices (head sizes with few factors of two) hold fewer heads per
  // pass: about 64 floats of q and accumulators per thread at most.
  int64_t maxHeads = std::clamp<int64_t>(64 / plan.width, 1, kMaxHeadsPerPass);
  plan.heads = llvm::divideCeil(plan.group,
                                llvm::divideCeil(plan.group, maxHeads));
  // Shared memory: K and V slices of two steps (cp.async) and the partial
  // states (D + 2 floats) of every key group and head of a pass. Reduce the
  // keys per step first, then the heads per pass.
  auto sharedBytes = [&](int64_t keys, int64_t heads) {
    int64_t kv = plan.asyncCopy ? 2 * 2 * keys * plan.headSize * plan.elementBytes : 0;
    return kv + keys * heads * (plan.headSize + 2) * 4;
  };
  while (plan.keysPerStep > 1 &&
         sharedBytes(plan.keysPerStep, plan.heads) > kSharedBytes)
    plan.keysPerStep /= 2;
  while (plan.heads > 1 && sharedBytes(plan.keysPerStep, plan.heads) > kSharedBytes)
    plan.heads /= 2;
  if (sharedBytes(plan.keysPerStep, plan.heads) > kSharedBytes)
    return op.emitOpError("cannot be lowered to the GPU: one key of ")
           << plan.headSize
           << " elements needs more than 48 KiB of shared memory; use a "
              "smaller head size";
  plan.threads = plan.keysPerStep * plan.lanes;
  return plan;
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
                    [&] {
                      emitAttentionMergeKernel(rewriter, op, plan, grid,
                                               splits);
                    });
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
    int64_t GC = plan.heads, passes = llvm::divideCeil(G, GC);
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
    auto stateType = MemRefType::get({NT, GC, D + 2}, f32,
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
    float scaleLog2 = op.getScale().convertToFloat() / std::log(2.0f);

    forEachBatchRow(k, launch, q, offsets, [&](Value row, Value numSequences) {
      Value batch = emitSequenceSearch(builder, loc, offsets, numSequences, row);
      Value start = loadOffset(builder, loc, offsets, batch);
      Value position = k.add(CacheLengthOp::create(builder, loc, keys, batch),
                             k.sub(row, start));
      // Each split takes ceil(numKeys / numSplits) keys. The division is
      // one of unsigned i32 (a div.u32 in PTX, where one of index is a
      // div.u64 behind a 32-bit bypass): the key count is at most
      // max_cache_length, an i32, the split count at most 65535 (grid z).
      // The bounds stay in index: with them in i32 too, ptxas used more
      // registers in some kernels. Divisions by the constant NT need no
      // div instruction.
      Value numKeys = k.add(position, k.index(1));
      Value chunk = k.toIndex(k.ceilDiv(k.toI32(numKeys), k.toI32(numSplits)));
      Value keyBegin = k.minu(k.mul(split, chunk), numKeys);
      Value keyEnd = k.minu(k.add(keyBegin, chunk), numKeys);
      Value numSteps = k.ceilDiv(k.sub(keyEnd, keyBegin), k.index(NT));

      // One pass over the keys for GC heads of the group, from `first`.
      auto emitPass = [&](Value first) {
        // The query heads of the pass; when GC does not divide G, the last
        // pass repeats head G - 1 in its extra slots and writes nothing
        // for them.
        SmallVector<Value> heads, headValid;
        for (int64_t i = 0; i < GC; ++i) {
          Value local = k.add(first, k.index(i));
          if (G % GC != 0) {
            headValid.push_back(k.ult(local, k.index(G)));
            local = k.minu(local, k.index(G - 1));
          }
          heads.push_back(k.add(k.mul(kvHead, k.index(G)), local));
        }

        // q slices of the pass's heads, scaled by scale * log2(e).
        SmallVector<Value> queries;
        for (int64_t i = 0; i < GC; ++i) {
          Value head = heads[i];
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
        for (int64_t i = 0; i < GC; ++i)
          init.append({negInf, k.f32(0),
                       arith::ConstantOp::create(
                           builder, loc,
                           DenseElementsAttr::get(accType, builder.getF32FloatAttr(0)))});
        // One step: NT keys, one per key group of L lanes. Only the last
        // step can hold keys past the end; it alone is `masked` (its invalid
        // keys leave the state unchanged), so the loop over the full steps
        // has no per-key selects.
        auto emitStep = [&](Value step, ValueRange state,
                            bool masked) -> SmallVector<Value> {
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
          for (int64_t i = 0; i < GC; ++i) {
            Value max = state[3 * i], sum = state[3 * i + 1];
            Value acc = state[3 * i + 2];
            Value score = k.laneSum(k.dot(queries[i], keyRow), plan.lanes);
            Value newMax = k.fmax(max, score);
            Value rescale = k.weight(max, newMax);
            Value w = k.exp2(k.fsub(score, newMax));
            Value newSum = k.fma(sum, rescale, w);
            Value newAcc = vector::FMAOp::create(
                builder, loc, k.splat(w, accType), valueRow,
                k.fmul(acc, k.splat(rescale, accType)));
            if (masked) {
              newMax = k.select(valid, newMax, max);
              newSum = k.select(valid, newSum, sum);
              newAcc = k.select(valid, newAcc, acc);
            }
            next.append({newMax, newSum, newAcc});
          }
          return next;
        };
        Value fullSteps = k.divu(k.sub(keyEnd, keyBegin), k.index(NT));
        auto loop = scf::ForOp::create(builder, loc, k.index(0), fullSteps,
                                       k.index(1), init);
        {
          OpBuilder::InsertionGuard loopGuard(builder);
          builder.setInsertionPointToStart(loop.getBody());
          scf::YieldOp::create(builder, loc,
                               emitStep(loop.getInductionVar(),
                                        loop.getRegionIterArgs(), /*masked=*/false));
        }
        auto tail = scf::IfOp::create(builder, loc, loop.getResultTypes(),
                                      k.ult(fullSteps, numSteps),
                                      /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard tailGuard(builder);
          builder.setInsertionPointToStart(&tail.getThenRegion().front());
          scf::YieldOp::create(builder, loc,
                               emitStep(fullSteps, loop.getResults(), /*masked=*/true));
          builder.setInsertionPointToStart(&tail.getElseRegion().front());
          scf::YieldOp::create(builder, loc, loop.getResults());
        }
        ValueRange results = tail.getResults();

        if (plan.asyncCopy) {
          // The last step prefetched an empty group whose zero-fill still
          // writes this thread's slice of a buffer: let it land before the
          // next pass or row copies into the same buffer (cp.async writes
          // of different groups are not ordered).
          Value last = nvgpu::DeviceAsyncCreateGroupOp::create(
              builder, loc, nvgpu::DeviceAsyncTokenType::get(ctx), ValueRange{});
          nvgpu::DeviceAsyncWaitOp::create(builder, loc, last,
                                           builder.getI32IntegerAttr(0));
        }

        // Merge the NT partial states of the block in shared memory.
        Value isLaneZero = k.eq(lane, k.index(0));
        for (int64_t i = 0; i < GC; ++i) {
          Value slot = k.index(i);
          vector::StoreOp::create(builder, loc, results[3 * i + 2],
                                  sharedState, ValueRange{keyGroup, slot, sliceStart});
          k.ifThen(isLaneZero, [&] {
            memref::StoreOp::create(builder, loc, results[3 * i],
                                    sharedState, ValueRange{keyGroup, slot, k.index(D)});
            memref::StoreOp::create(builder, loc, results[3 * i + 1],
                                    sharedState, ValueRange{keyGroup, slot, k.index(D + 1)});
          });
        }
        gpu::BarrierOp::create(builder, loc);
        k.ifThen(k.eq(keyGroup, k.index(0)), [&] {
          for (int64_t i = 0; i < GC; ++i) {
            Value slot = k.index(i);
            Value head = heads[i];
            auto stateAt = [&](Value g, int64_t field) -> Value {
              return memref::LoadOp::create(builder, loc, sharedState,
                                            ValueRange{g, slot, k.index(field)});
            };
            // The weighted sum of the NT partial states: unrolled for a
            // few key groups, a loop for many (small heads).
            Value max, sum, acc;
            Value zeroAcc = arith::ConstantOp::create(
                builder, loc, DenseElementsAttr::get(accType, builder.getF32FloatAttr(0)));
            auto accumulate = [&](Value g, Value max, Value sum,
                                  Value acc) -> std::pair<Value, Value> {
              Value w = k.weight(stateAt(g, D), max);
              Value partialAcc = vector::LoadOp::create(
                  builder, loc, accType, sharedState, ValueRange{g, slot, sliceStart});
              return {k.fadd(sum, k.fmul(w, stateAt(g, D + 1))),
                      vector::FMAOp::create(builder, loc, k.splat(w, accType),
                                            partialAcc, acc)};
            };
            if (NT <= kMaxUnrolledStates) {
              max = negInf;
              for (int64_t g = 0; g < NT; ++g)
                max = k.fmax(max, stateAt(k.index(g), D));
              sum = k.f32(0);
              acc = zeroAcc;
              for (int64_t g = 0; g < NT; ++g)
                std::tie(sum, acc) = accumulate(k.index(g), max, sum, acc);
            } else {
              // The bound (NT) is read from blockDim: with a constant
              // bound ptxas unrolls the loops fully for sm_80 and spills
              // (11 KB for NT = 128, 8 heads).
              Value keyGroups = k.divu(launch.getBlockSize().x, k.index(plan.lanes));
              auto maxLoop = scf::ForOp::create(builder, loc, k.index(0), keyGroups,
                                                k.index(1), ValueRange{negInf});
              {
                OpBuilder::InsertionGuard g(builder);
                builder.setInsertionPointToStart(maxLoop.getBody());
                scf::YieldOp::create(
                    builder, loc,
                    k.fmax(maxLoop.getRegionIterArg(0),
                           stateAt(maxLoop.getInductionVar(), D)));
              }
              max = maxLoop.getResult(0);
              auto sumLoop = scf::ForOp::create(builder, loc, k.index(0), keyGroups,
                                                k.index(1), ValueRange{k.f32(0), zeroAcc});
              {
                OpBuilder::InsertionGuard g(builder);
                builder.setInsertionPointToStart(sumLoop.getBody());
                auto [nextSum, nextAcc] =
                    accumulate(sumLoop.getInductionVar(), max,
                               sumLoop.getRegionIterArg(0), sumLoop.getRegionIterArg(1));
                scf::YieldOp::create(builder, loc, ValueRange{nextSum, nextAcc});
              }
              sum = sumLoop.getResult(0);
              acc = sumLoop.getResult(1);
            }
            auto writeOut = [&] {
              Value result = arith::DivFOp::create(builder, loc, acc,
                                                   k.splat(sum, accType));
              vector::StoreOp::create(builder, loc, k.narrow(result, sliceType),
                                      out, ValueRange{row, head, sliceStart},
                                      /*nontemporal=*/false,
                                      llvm::Align(plan.rowAlignment));
            };
            auto writeSplit = [&] {
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
            };
            auto writeResult = [&] {
              if (!workspace)
                return writeOut();
              auto oneSplit = scf::IfOp::create(builder, loc,
                                                k.eq(numSplits, k.index(1)),
                                                /*withElse=*/true);
              OpBuilder::InsertionGuard g(builder);
              builder.setInsertionPointToStart(&oneSplit.getThenRegion().front());
              writeOut();
              builder.setInsertionPointToStart(&oneSplit.getElseRegion().front());
              writeSplit();
            };
            if (headValid.empty())
              writeResult();
            else
              k.ifThen(headValid[i], writeResult);
          }
        });
        // The shared state is reused by the block's next pass or row.
        gpu::BarrierOp::create(builder, loc);
      };
      if (passes == 1)
        emitPass(k.index(0));
      else
        k.forLoop(k.index(0), k.index(passes * GC), k.index(GC), emitPass);
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
