//===- AttentionToGPU.cpp - the attention ops to GPU kernels ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Flash-decoding for paged caches (kernel parameters, grids and the
// workspace layout: docs/KernelABI.md):
//
// - a thread block per (query row, KV head, context split); the query heads
//   of the KV group live in the same block and share every K/V load;
// - `lanes` threads per key hold a `width`-element slice of the head (16
//   bytes when the head size allows), `keysPerStep` keys are processed per
//   step; the q.k partial sums are reduced across the lanes with xor
//   shuffles;
// - one lookup per key per step (kvcache.tile), K and V streamed into shared
//   memory with double-buffered cp.async (nvgpu.device_async_copy), each
//   thread copying the slice it later reads, so no barrier is needed;
// - the online softmax of KernelCommon/Softmax.h in f32, with NVVM's
//   ex2.approx (no libdevice);
// - the key groups' partial states merge in shared memory; with a workspace
//   and a context long enough, splits write partial states that a second
//   kernel merges (AttentionMerge.cpp).
//
// mla_attention_ragged takes this kernel (AttentionOpInterface): its latent
// rows are copied once per step and serve q.K and, their first v_head_size
// elements, p.V; lanes write only their slices of the value.
//
// Several query rows per sequence (prefill, chunked prefill): with tensor
// cores, when a sequence's rows times the GQA group fill an mma tile, the
// host launches the query-tile kernel instead (AttentionMMA.cpp; a block per
// tile of rows of one sequence, KV head and split streams the tile's keys
// once for all its rows); otherwise each row's causal limit bounds its loop.
//
//===----------------------------------------------------------------------===//

#include "AttentionToGPU.h"
#include "AttentionKernels.h"
#include "../KernelCommon/AttentionClauses.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

namespace {

/// Key groups whose partial states the block merges in unrolled code; more
/// (heads of a few elements, many keys per step) merge in a loop.
constexpr int64_t kMaxUnrolledStates = 8;
/// (row, query head) pairs of a sequence from which the host launches the
/// query-tile kernel: one mma tile's 16 rows (docs/Design.md).
constexpr int64_t kMinQueryTileHeight = 16;

/// Builds the body of the attention kernel in named steps: per row, `plan`
/// the keys of this block's split; per pass over the keys, `load queries`,
/// `issue copies` ahead, one `key step` at a time, `merge key groups` and
/// `write result`.
class AttentionKernel {
public:
  AttentionKernel(GPUKernel &kernel, AttentionOpInterface op,
                  const AttentionPlan &plan);
  void emit();

private:
  /// The query heads of a pass; `valid` is empty when every slot holds a
  /// head (the pass count divides the group), else says which do.
  struct PassHeads {
    SmallVector<Value> heads, valid;
  };

  KeyRange planKeys(Value row, Value numSequences);
  void emitPass(const KeyRange &keys, Value firstHead);
  PassHeads getPassHeads(Value firstHead);
  SmallVector<Value> loadQueries(const KeyRange &keys, const PassHeads &heads);
  /// The key the thread's key group handles at `step` (clamped into range)
  /// and whether it is in range.
  std::pair<Value, Value> keyAt(const KeyRange &keys, Value step);
  Value issueCopies(const KeyRange &keys, Value step);
  SmallVector<SoftmaxState> emitKeyLoop(const KeyRange &keys,
                                        ArrayRef<Value> queries);
  SmallVector<SoftmaxState> emitKeyStep(const KeyRange &keys, Value step,
                                        ArrayRef<Value> queries,
                                        ArrayRef<SoftmaxState> states,
                                        bool masked);
  void waitForLastCopies();
  void mergeKeyGroups(const KeyRange &keys, const PassHeads &heads,
                      ArrayRef<SoftmaxState> states);
  SoftmaxState combineKeyGroups(Value slot);
  void writeResult(Value row, Value head, const SoftmaxState &state);
  /// Stores this lane's slice `slice` (elements from sliceStart) of a
  /// head's output at `indices` of `dest` (the last index: where the
  /// slice's first element goes): whole within the value, element by
  /// element up to its end when the slice straddles it, not at all past it
  /// (MLA: v_head_size < head_size).
  void storeValueSlice(Value slice, Value dest, SmallVector<Value> indices,
                       llvm::MaybeAlign alignment);

  GPUKernel &kernel;
  GPUKernelBuilder &k;
  OnlineSoftmax softmax;
  AttentionOpInterface op;
  AttentionClauses clauses;
  /// The rope clause on q, applied to the slices as they are loaded.
  QueryRope rope;
  /// The ALiBi slope of each head of the pass (alibi clause only).
  SmallVector<Value> slopes;
  const AttentionPlan &plan;
  SplitWorkspace layout;
  Value q, keys, values, offsets, out, workspace;
  Value sharedK, sharedV, sharedState;
  Value kvHead, split, numSplits, keyGroup, lane, sliceStart;
  /// q/out slices; K/V slices as loaded; f32 slices.
  VectorType sliceType, kvSliceType, accType;
};

AttentionKernel::AttentionKernel(GPUKernel &kernel, AttentionOpInterface op,
                                 const AttentionPlan &plan)
    : kernel(kernel), k(kernel.builder()),
      softmax(k), op(op),
      clauses(k, op, getOptionalParam(kernel, op.getSinks()),
              getOptionalParam(kernel, op.getAlibi())),
      rope(makeQueryRope(kernel, op, plan)), plan(plan),
      layout{plan.valueSize, plan.qHeads} {
  std::tie(q, keys, values, offsets, out, workspace) =
      getAttentionParams(kernel, op);
  int64_t keysPerStep = plan.keysPerStep, headSize = plan.headSize;
  if (plan.asyncCopy) {
    sharedK = kernel.addSharedBuffer({2, keysPerStep, headSize},
                                     plan.elementType);
    sharedV = plan.valuesAreKeys
                  ? sharedK
                  : kernel.addSharedBuffer({2, keysPerStep, headSize},
                                           plan.elementType);
  }
  // Every lane's accumulator slice (MLA: those past the value too), then
  // max and sum.
  sharedState = kernel.addSharedBuffer(
      {keysPerStep, plan.headsPerPass, headSize + 2}, k.b.getF32Type());
  sliceType = VectorType::get({plan.width}, plan.rowsElementType);
  accType = VectorType::get({plan.width}, k.b.getF32Type());
  // Dequantized slices are f32 already.
  kvSliceType = plan.dequantize
                    ? accType
                    : VectorType::get({plan.width}, plan.elementType);
}

void AttentionKernel::emit() {
  Value thread = kernel.threadId(gpu::Dimension::x);
  kvHead = kernel.blockId(gpu::Dimension::y);
  split = kernel.blockId(gpu::Dimension::z);
  numSplits = kernel.gridDim(gpu::Dimension::z);
  keyGroup = k.divu(thread, k.index(plan.lanes));
  lane = k.remu(thread, k.index(plan.lanes));
  sliceStart = k.mul(lane, k.index(plan.width));
  kernel.forEachBatchRow(q, offsets, [&](Value row, Value numSequences) {
    KeyRange range = planKeys(row, numSequences);
    if (plan.passes() == 1)
      return emitPass(range, k.index(0));
    int64_t heads = plan.headsPerPass;
    k.forLoop(k.index(0), k.index(plan.passes() * heads), k.index(heads),
              [&](Value first) { emitPass(range, first); });
  });
}

KeyRange AttentionKernel::planKeys(Value row,
                                                    Value numSequences) {
  return planKeyRange(k, op, offsets, keys, row, numSequences, split,
                      numSplits, plan.keysPerStep);
}

void AttentionKernel::emitPass(const KeyRange &range, Value firstHead) {
  PassHeads heads = getPassHeads(firstHead);
  SmallVector<Value> queries = loadQueries(range, heads);
  if (plan.asyncCopy)
    k.ifThen(k.ult(k.index(0), range.numSteps),
             [&] { issueCopies(range, k.index(0)); });
  SmallVector<SoftmaxState> states = emitKeyLoop(range, queries);
  if (plan.asyncCopy)
    waitForLastCopies();
  mergeKeyGroups(range, heads, states);
  // The shared state is reused by the block's next pass or row.
  gpu::BarrierOp::create(k.b, k.loc);
}

AttentionKernel::PassHeads AttentionKernel::getPassHeads(Value firstHead) {
  // When the pass count does not divide the group, the last pass repeats
  // head group - 1 in its extra slots and writes nothing for them.
  PassHeads heads;
  bool partial = plan.group % plan.headsPerPass != 0;
  for (int64_t i = 0; i < plan.headsPerPass; ++i) {
    Value local = k.add(firstHead, k.index(i));
    if (partial) {
      heads.valid.push_back(k.ult(local, k.index(plan.group)));
      local = k.minu(local, k.index(plan.group - 1));
    }
    heads.heads.push_back(k.add(k.mul(kvHead, k.index(plan.group)), local));
  }
  return heads;
}

SmallVector<Value> AttentionKernel::loadQueries(const KeyRange &range,
                                                const PassHeads &heads) {
  // q slices (rotated with a rope clause) scaled by scale * log2(e): scores
  // in the log2 domain (by scale alone when a soft cap or ALiBi transforms
  // the scores).
  Value scale = k.splat(k.f32(clauses.queryScale()), accType);
  Value row = range.row;
  Value rotary = rope.rotaryPosition(row, range.position);
  SmallVector<Value> queries;
  slopes.clear();
  for (Value head : heads.heads) {
    slopes.push_back(clauses.loadSlope(head));
    Value slice = vector::LoadOp::create(
        k.b, k.loc, sliceType, q, ValueRange{row, head, sliceStart},
        /*nontemporal=*/false, llvm::Align(plan.rowAlignment));
    slice = rope.rotate(slice, row, head, sliceStart, rotary);
    queries.push_back(k.fmul(k.widen(slice, accType), scale));
  }
  return queries;
}

std::pair<Value, Value> AttentionKernel::keyAt(const KeyRange &range,
                                               Value step) {
  Value key = k.add(range.begin,
                    k.add(k.mul(step, k.index(plan.keysPerStep)), keyGroup));
  Value valid = k.ult(key, range.end);
  return {k.select(valid, key, range.begin), valid};
}

Value AttentionKernel::issueCopies(const KeyRange &range, Value step) {
  // This thread's slices of K and V for `step` as one cp.async group;
  // nothing past the end (the zero-fill form).
  auto [key, valid] = keyAt(range, step);
  MLIRContext *ctx = k.b.getContext();
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  Value buffer = k.remu(step, k.index(2));
  Value count = k.select(valid, k.index(plan.width), k.index(0));
  auto tileType = MemRefType::get(
      {1, plan.headSize}, plan.elementType,
      StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                             {plan.kvHeads * plan.headSize, 1}));
  bool bypassL1 = plan.width * plan.elementBytes == 16;
  SmallVector<std::pair<Value, Value>> copies = {{keys, sharedK}};
  if (!plan.valuesAreKeys)
    copies.push_back({values, sharedV});
  SmallVector<Value> tokens;
  for (auto [cache, shared] : copies) {
    Value tile =
        TileOp::create(k.b, k.loc, tileType, cache, range.batch, key, kvHead);
    tokens.push_back(nvgpu::DeviceAsyncCopyOp::create(
        k.b, k.loc, tokenType, shared, ValueRange{buffer, keyGroup, sliceStart},
        tile, ValueRange{k.index(0), sliceStart},
        k.b.getIndexAttr(plan.width), count,
        bypassL1 ? k.b.getUnitAttr() : UnitAttr()));
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(k.b, k.loc, tokenType,
                                                 tokens);
}

SmallVector<SoftmaxState>
AttentionKernel::emitKeyLoop(const KeyRange &range, ArrayRef<Value> queries) {
  // Only the last step can hold keys past the end; it alone is masked, so
  // the loop over the full steps has no per-key selects.
  SmallVector<SoftmaxState> init(plan.headsPerPass, softmax.empty(accType));
  Value fullSteps =
      k.divu(k.sub(range.end, range.begin), k.index(plan.keysPerStep));
  SmallVector<Value> states = k.forLoop(
      k.index(0), fullSteps, k.index(1), flattenStates(init),
      [&](Value step, ValueRange carried) {
        return flattenStates(
            emitKeyStep(range, step, queries,
                        unflattenStates(carried), /*masked=*/false));
      });
  SmallVector<SoftmaxState> full = unflattenStates(states);
  return unflattenStates(k.ifThenElse(
      k.ult(fullSteps, range.numSteps), getFlatStateTypes(full),
      [&] {
        return flattenStates(
            emitKeyStep(range, fullSteps, queries, full, /*masked=*/true));
      },
      [&] { return states; }));
}

SmallVector<SoftmaxState>
AttentionKernel::emitKeyStep(const KeyRange &range, Value step,
                             ArrayRef<Value> queries,
                             ArrayRef<SoftmaxState> states, bool masked) {
  Value key, valid;
  std::tie(key, valid) = keyAt(range, step);
  Value keySlice, valueSlice;
  if (plan.asyncCopy) {
    // Prefetch the next step (an empty group past the end, so that exactly
    // one group is in flight), then wait for this step's.
    Value group = issueCopies(range, k.add(step, k.index(1)));
    nvgpu::DeviceAsyncWaitOp::create(k.b, k.loc, group,
                                     k.b.getI32IntegerAttr(1));
    SmallVector<Value> at = {k.remu(step, k.index(2)), keyGroup, sliceStart};
    keySlice = vector::LoadOp::create(k.b, k.loc, kvSliceType, sharedK, at);
    valueSlice = vector::LoadOp::create(k.b, k.loc, kvSliceType, sharedV, at);
  } else {
    // Each cache through its own lookup table.
    auto load = [&](Value cache) -> Value {
      auto [page, slot] =
          k.lookup(cache, range.batch, key, /*servesWrite=*/false);
      return PageLoadOp::create(k.b, k.loc, kvSliceType, cache, page, slot,
                                kvHead, sliceStart);
    };
    keySlice = load(keys);
    valueSlice = plan.valuesAreKeys ? keySlice : load(values);
  }
  Value keyRow = k.widen(keySlice, accType);
  Value valueRow = k.widen(valueSlice, accType);
  SmallVector<SoftmaxState> next;
  for (auto [query, state, slope] : llvm::zip(queries, states, slopes)) {
    Value score = clauses.transformScore(
        k.laneSum(k.dot(query, keyRow), plan.lanes), slope, key,
        range.position);
    SoftmaxState updated = softmax.update(state, score, valueRow);
    next.push_back(masked ? softmax.select(valid, updated, state) : updated);
  }
  return next;
}

void AttentionKernel::waitForLastCopies() {
  // The last step prefetched an empty group whose zero-fill still writes
  // this thread's slice of a buffer: let it land before the next pass or
  // row copies into the same buffer (cp.async writes of different groups
  // are not ordered).
  Value last = nvgpu::DeviceAsyncCreateGroupOp::create(
      k.b, k.loc, nvgpu::DeviceAsyncTokenType::get(k.b.getContext()),
      ValueRange{});
  nvgpu::DeviceAsyncWaitOp::create(k.b, k.loc, last, k.b.getI32IntegerAttr(0));
}

void AttentionKernel::mergeKeyGroups(const KeyRange &range,
                                     const PassHeads &heads,
                                     ArrayRef<SoftmaxState> states) {
  // Each key group's partial state goes to shared memory; key group 0
  // combines them per head and writes the result.
  Value isLaneZero = k.eq(lane, k.index(0));
  int64_t headSize = plan.headSize;
  for (size_t i = 0; i < states.size(); ++i) {
    const SoftmaxState &state = states[i];
    Value slot = k.index(i);
    vector::StoreOp::create(k.b, k.loc, state.acc, sharedState,
                            ValueRange{keyGroup, slot, sliceStart});
    k.ifThen(isLaneZero, [&] {
      memref::StoreOp::create(k.b, k.loc, state.max, sharedState,
                              ValueRange{keyGroup, slot, k.index(headSize)});
      memref::StoreOp::create(k.b, k.loc, state.sum, sharedState,
                              ValueRange{keyGroup, slot, k.index(headSize + 1)});
    });
  }
  gpu::BarrierOp::create(k.b, k.loc);
  k.ifThen(k.eq(keyGroup, k.index(0)), [&] {
    for (int64_t i = 0; i < plan.headsPerPass; ++i) {
      SoftmaxState combined = combineKeyGroups(k.index(i));
      auto write = [&] { writeResult(range.row, heads.heads[i], combined); };
      if (heads.valid.empty())
        write();
      else
        k.ifThen(heads.valid[i], write);
    }
  });
}

SoftmaxState AttentionKernel::combineKeyGroups(Value slot) {
  int64_t headSize = plan.headSize;
  auto maxOf = [&](Value group) -> Value {
    return memref::LoadOp::create(k.b, k.loc, sharedState,
                                  ValueRange{group, slot, k.index(headSize)});
  };
  auto addGroup = [&](const SoftmaxState &total, Value group) {
    Value w = softmax.weight(maxOf(group), total.max);
    Value acc = vector::LoadOp::create(k.b, k.loc, accType, sharedState,
                                       ValueRange{group, slot, sliceStart});
    Value sum = memref::LoadOp::create(
        k.b, k.loc, sharedState, ValueRange{group, slot, k.index(headSize + 1)});
    return softmax.addWeighted(total, w, sum, acc);
  };
  SoftmaxState total = softmax.empty(accType);
  if (plan.keysPerStep <= kMaxUnrolledStates) {
    for (int64_t g = 0; g < plan.keysPerStep; ++g)
      total.max = k.fmax(total.max, maxOf(k.index(g)));
    for (int64_t g = 0; g < plan.keysPerStep; ++g)
      total = addGroup(total, k.index(g));
    return total;
  }
  // The bound (keysPerStep) is read from blockDim: with a constant bound
  // ptxas unrolls the loops fully for sm_80 and spills (11 KB for 128 keys
  // per step, 8 heads).
  Value keyGroups =
      k.divu(kernel.blockDim(gpu::Dimension::x), k.index(plan.lanes));
  total.max = k.forLoop(k.index(0), keyGroups, k.index(1), {total.max},
                        [&](Value group, ValueRange max) {
                          return SmallVector<Value>{
                              k.fmax(max[0], maxOf(group))};
                        })[0];
  SmallVector<Value> sums = k.forLoop(
      k.index(0), keyGroups, k.index(1), {total.sum, total.acc},
      [&](Value group, ValueRange carried) {
        SoftmaxState next =
            addGroup({total.max, carried[0], carried[1]}, group);
        return SmallVector<Value>{next.sum, next.acc};
      });
  return {total.max, sums[0], sums[1]};
}

void AttentionKernel::storeValueSlice(Value slice, Value dest,
                                      SmallVector<Value> indices,
                                      llvm::MaybeAlign alignment) {
  auto storeWhole = [&] {
    vector::StoreOp::create(k.b, k.loc, slice, dest, indices,
                            /*nontemporal=*/false, alignment);
  };
  if (plan.valueSize == plan.headSize)
    return storeWhole();
  Value end = k.index(plan.valueSize), first = indices.back();
  if (plan.valueSize % plan.width == 0)
    return k.ifThen(k.ult(sliceStart, end), storeWhole);
  for (int64_t i = 0; i < plan.width; ++i) {
    k.ifThen(k.ult(k.add(sliceStart, k.index(i)), end), [&] {
      indices.back() = k.add(first, k.index(i));
      memref::StoreOp::create(k.b, k.loc,
                              vector::ExtractOp::create(k.b, k.loc, slice, i),
                              dest, indices);
    });
  }
}

void AttentionKernel::writeResult(Value row, Value head,
                                  const SoftmaxState &state) {
  auto writeOut = [&] {
    // The sink joins the softmax once, here or in the merge kernel.
    SoftmaxState total = state;
    if (Value sink = clauses.loadSinkLogit(head))
      total = clauses.addSink(softmax, state, sink);
    storeValueSlice(k.narrow(clauses.normalize(softmax, total), sliceType),
                    out, {row, head, sliceStart},
                    llvm::Align(plan.rowAlignment));
    if (Value lse = getOptionalParam(kernel, op.getLse()))
      k.ifThen(k.eq(lane, k.index(0)), [&] {
        memref::StoreOp::create(k.b, k.loc,
                                clauses.logSumExp(total.max, total.sum), lse,
                                ValueRange{row, head});
      });
  };
  auto writePartial = [&] {
    // This split's partial state, unnormalised (docs/KernelABI.md).
    Value record = layout.recordOffset(
        k, layout.rowHeadOffset(k, row, head, numSplits), split);
    storeValueSlice(state.acc, workspace,
                    {layout.accOffset(k, record, sliceStart)}, {});
    k.ifThen(k.eq(lane, k.index(0)), [&] {
      memref::StoreOp::create(k.b, k.loc, state.max, workspace,
                              ValueRange{layout.maxOffset(k, record)});
      memref::StoreOp::create(k.b, k.loc, state.sum, workspace,
                              ValueRange{layout.sumOffset(k, record)});
    });
  };
  writeResultOrPartial(k, workspace, numSplits, writeOut, writePartial);
}

/// attention_ragged: on the host, the kernel (query tiles or a block per
/// row), its split count and grid; the attention kernel, then the merge
/// kernel when the context was split.
struct AttentionToGPU : OpInterfaceRewritePattern<AttentionOpInterface> {
  AttentionToGPU(MLIRContext *ctx, const GPUKernelTarget &target)
      : OpInterfaceRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(AttentionOpInterface op,
                                PatternRewriter &rewriter) const override {
    if (failed(QueryRope::checkStrides(op)))
      return failure();
    FailureOr<AttentionPlans> plans = makeAttentionPlans(op, target);
    if (failed(plans))
      return failure();
    plans->decode.checked = target.checked;
    if (plans->queryTiles)
      plans->queryTiles->checked = target.checked;
    KernelBuilder host{rewriter, getKernelLoc(op)};
    Value numRows = memref::DimOp::create(rewriter, host.loc, op.getQ(), 0);
    Value numSequences = host.numSequences(op.getRowOffsets());
    Value run = host.andi(host.ult(host.index(0), numRows),
                          host.ult(host.index(0), numSequences));
    LogicalResult result = success();
    // The decode kernel: a block per row; its grid is also the merge
    // kernel's.
    Value rowGrid = host.minu(numRows, host.index(target.maxBlocks));
    auto emitRows = [&] {
      Value splits = getSplitCount(host, op, plans->decode, numRows, rowGrid);
      result = emitAttentionKernel(rewriter, op, plans->decode, rowGrid,
                                   splits);
      return SmallVector<Value>{splits};
    };
    host.ifThen(run, [&] {
      Value splits;
      if (!plans->queryTiles) {
        splits = emitRows()[0];
      } else {
        const AttentionPlan &tiles = *plans->queryTiles;
        // Query tiles when a sequence's rows times the group fill an mma
        // tile (docs/Design.md); slots of ceil(max_seq_length / tileRows)
        // tiles per sequence.
        Value maxRows = MaxSeqLengthOp::create(host.b, host.loc,
                                               op.getKeyCache());
        Value useRows = arith::OrIOp::create(
            host.b, host.loc, host.ult(maxRows, host.index(2)),
            host.ult(host.mul(maxRows, host.index(tiles.group)),
                     host.index(kMinQueryTileHeight)));
        splits = host.ifThenElse(
            useRows, host.b.getIndexType(), emitRows,
            [&] {
              Value slots = host.mul(
                  numSequences,
                  host.ceilDiv(maxRows, host.index(tiles.tileRows)));
              Value grid = host.minu(slots, host.index(target.maxBlocks));
              Value tileSplits =
                  getSplitCount(host, op, tiles, numRows, grid);
              result = emitAttentionKernel(rewriter, op, tiles, grid,
                                           tileSplits);
              return SmallVector<Value>{tileSplits};
            })[0];
      }
      if (succeeded(result) && op.getWorkspace())
        host.ifThen(host.ult(host.index(1), splits), [&] {
          result = emitAttentionMergeKernel(rewriter, op, plans->decode,
                                            rowGrid, splits);
        });
    });
    if (failed(result))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }

  /// Splits of about keysPerSplit keys, as many as the workspace holds (1
  /// without one), and no more than fill the GPU: `sm-count` SMs holding
  /// the plan's estimated blocks each, over the `grid` x kv_heads blocks of
  /// one split (a batch that fills the GPU is not split).
  Value getSplitCount(KernelBuilder &host, AttentionOpInterface op,
                      const AttentionPlan &plan, Value numRows,
                      Value grid) const {
    Value workspace = op.getWorkspace();
    if (!workspace)
      return host.index(1);
    Value maxContext = MaxCacheLengthOp::create(host.b, host.loc, op.getKeyCache());
    // A row sees at most a window's or a chunk's keys.
    if (std::optional<uint64_t> keys =
            op.getWindow() ? op.getWindow() : op.getChunk())
      maxContext = host.minu(maxContext, host.index(int64_t(*keys)));
    Value wanted = host.ceilDiv(maxContext, host.index(target.keysPerSplit));
    SplitWorkspace layout{plan.valueSize, plan.qHeads};
    Value perSplit = layout.floatsPerSplit(host, numRows);
    Value capacity =
        host.divu(memref::DimOp::create(host.b, host.loc, workspace, 0),
                  host.maxu(perSplit, host.index(1)));
    int64_t smCount = target.smCount ? target.smCount
                                     : getFlagshipSMCount(target.chip);
    Value slots = host.index(smCount * plan.estimatedBlocksPerSM());
    Value fill = host.divu(slots, host.maxu(host.mul(grid, host.index(plan.gridHeads())),
                                            host.index(1)));
    Value splits = host.minu(host.minu(wanted, capacity),
                             host.minu(fill, host.index(target.maxSplits)));
    return host.maxu(splits, host.index(1));
  }

  GPUKernelTarget target;
};

} // namespace

LogicalResult attention::emitAttentionKernel(OpBuilder &host,
                                             AttentionOpInterface op,
                                             const AttentionPlan &plan,
                                             Value grid, Value splits) {
  KernelBuilder k{host, getKernelLoc(op)};
  std::string name = isa<MlaAttentionRaggedOp>(op.getOperation()) ? "mla_" : "";
  name += plan.tileRows > 1 ? "attention_tiles" : "attention_ragged";
  std::unique_ptr<GPUKernel> kernel = GPUKernel::create(
      host, op, name,
      cast<KernelOpInterface>(op.getOperation()).getKernelOperands(),
      LaunchShape{grid, k.index(plan.gridHeads()), splits, plan.threads,
                  plan.dynamicSharedMemory ? plan.sharedBytes : 0});
  if (!kernel)
    return failure();
  if (plan.tensorCores)
    emitTensorCoreAttention(*kernel, op, plan);
  else
    AttentionKernel(*kernel, op, plan).emit();
  return success();
}

void mlir::kvcache::populateAttentionToGPUConversionPatterns(
    RewritePatternSet &patterns, const GPUKernelTarget &target) {
  patterns.add<AttentionToGPU>(patterns.getContext(), target);
}
