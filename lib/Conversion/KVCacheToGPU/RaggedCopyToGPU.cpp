//===- RaggedCopyToGPU.cpp - store/gather_ragged to GPU kernels -*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// store_ragged and gather_ragged as one kernel shape (grid and block:
// docs/KernelABI.md), built so that a warp issues few instructions per
// 16 bytes it moves (bench/gpu/model.py):
//
// - the unit of work is a warp's tile: `rowsPerTile` consecutive rows of the
//   batch, as many as give each lane `chunks-in-flight` chunks (at most 32
//   rows); warp w of block x takes tiles x * warps + w, then steps by
//   gridDim.x * warps (grid-stride: any grid is correct);
// - lane l < rowsPerTile resolves row l of the tile: its sequence (a binary
//   search over the offsets on the device: no host reads, CUDA-graph safe),
//   its token position and its (page, slot) by one lookup; the lanes that
//   move the row's chunks read them with shuffles. The search, the
//   lookup-table read and the token / page_size split happen once per row
//   and warp, never per chunk;
// - each lane loads all its chunks of the tile before it stores any
//   (consecutive lanes on consecutive chunks of a row: coalesced), so they
//   are in flight together; a row wider than a warp's chunks in flight is
//   moved in passes of `chunks-in-flight` chunks per lane;
// - rows outside [offsets[0], offsets[batch]), or past the rows memref, are
//   left alone.
//
// The kernel of a store (a gather reads the cache and writes the rows):
//
//   for %tile = blockIdx.x * warps + warp to %num_tiles
//       step gridDim.x * warps {
//     %start = offsets[0] + %tile * rowsPerTile
//     %page, %slot = scf.if (lane < rowsPerTile && %start + lane < %end) {
//       (search, cache_length, kvcache.lookup of row %start + lane)
//     } else { 0, 0 }
//     // for each row r that the lane's chunks touch:
//     %page_r = gpu.shuffle idx %page, r   // (and %slot)
//     %chunks_r = scf.if (%start + r < %end) {
//       vector.load %rows[%start + r, head, element]  (each chunk in r)
//     } else { ub.poison }
//     // then, for each row r:
//     scf.if (%start + r < %end) {
//       kvcache.page_store %chunk, %cache[%page_r, %slot_r, head, element]
//     }
//   }
//
//===----------------------------------------------------------------------===//

#include "RaggedCopyToGPU.h"
#include "GPUKernel.h"
#include "../KernelCommon/KernelBuilder.h"
#include "../KernelCommon/Quantization.h"
#include "../KernelCommon/Rope.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"


using namespace mlir;
using namespace mlir::kvcache;

namespace {

/// Lanes of a warp.
constexpr int64_t kWarpSize = 32;

/// The shape of a ragged-copy kernel.
struct RaggedCopyPlan {
  RaggedCopyPlan(const KVCacheParams &params, const RaggedCopy &copy,
                 const GPUKernelTarget &target);

  /// Chunks (vector accesses) of a warp's tile.
  int64_t tileChunks() const { return rowsPerTile * chunksPerRow; }
  int64_t threads() const { return warps * kWarpSize; }

  /// Elements of a chunk.
  int64_t width;
  int64_t headSize;
  int64_t chunksPerRow;
  /// Consecutive rows a warp moves at once, at most one per lane.
  int64_t rowsPerTile;
  /// Chunks a lane loads before it stores, per pass over the tile.
  int64_t chunksPerLane;
  /// Passes over a tile: more than one only for a row wider than a warp's
  /// chunks in flight (then rowsPerTile is 1).
  int64_t passes;
  int64_t warps;
  /// A store of float rows into a cache with scales: the chunks are
  /// quantized; a scale group is `chunksPerGroup` consecutive chunks, held
  /// by as many consecutive lanes.
  bool quantizes = false;
  int64_t chunksPerGroup = 0;
  /// A NaN quantized into an i8 cache fails a device assertion.
  bool checked = false;
};

/// The chunks of a ragged copy are of the rows' element type: a gather into
/// float rows from a quantized cache dequantizes (page_load with a float
/// result), a store of float rows quantizes (getRaggedChunkWidth).
static KVCacheParams getRowParams(const KVCacheParams &cacheParams,
                                  MemRefType rowsType) {
  KVCacheParams params = cacheParams;
  params.elementType = rowsType.getElementType();
  return params;
}

RaggedCopyPlan::RaggedCopyPlan(const KVCacheParams &cacheParams,
                               const RaggedCopy &copy,
                               const GPUKernelTarget &target) {
  auto rowsType = cast<MemRefType>(copy.rows.getType());
  KVCacheParams params = getRowParams(cacheParams, rowsType);
  width = getRaggedChunkWidth(cacheParams, rowsType, target.vectorBytes);
  if (copy.rope)
    width = RopeEmitter::fitWidth(width, copy.rope.rotaryDims,
                                  params.headSize);
  bool converts = params.elementType != cacheParams.elementType;
  quantizes = converts && copy.isStore();
  chunksPerGroup = params.scales.groupSize(params.headSize) / width;
  checked = target.checked;
  headSize = params.headSize;
  chunksPerRow = params.rowElements() / width;
  rowsPerTile = std::clamp<int64_t>(
      kWarpSize * target.chunksInFlight / chunksPerRow, 1, kWarpSize);
  int64_t laneChunks = llvm::divideCeil(tileChunks(), kWarpSize);
  chunksPerLane = std::min(laneChunks, target.chunksInFlight);
  passes = llvm::divideCeil(laneChunks, chunksPerLane);
  warps = std::max<int64_t>(target.threadsPerBlock / kWarpSize, 1);
}

/// Builds the body of a ragged-copy kernel: per tile, `resolve` the lane's
/// row, then per pass `load` every chunk of the lane and `store` them.
class RaggedCopyKernel {
public:
  /// The kernel of `op`, whose run-time checks report at it.
  RaggedCopyKernel(GPUKernel &kernel, Operation *op, const RaggedCopy &copy,
                   const RaggedCopyPlan &plan);
  void emit();

private:
  /// The chunks of a lane's pass that lie in one row of the tile.
  struct RowChunks {
    /// The row's index in the tile (a constant when it is the same in every
    /// lane), and the lane that resolved it (i32; null when the page and slot
    /// the pass gets are already the row's).
    Value rowInTile, sourceLane;
    /// Whether the lane's chunks lie in the tile (null: always).
    Value inTile;
    /// (head, element) of each chunk.
    SmallVector<std::pair<Value, Value>> chunks;
  };

  /// (page, slot) of row `tileStart + lane` in lanes that own a row of the
  /// batch, 0 in the others; then, with a rope clause, its rotary position.
  SmallVector<Value> resolveLaneRow(Value tileStart);
  /// The chunks of the lane's pass starting at chunk `passStart` of the
  /// tile (null: 0), grouped by row.
  SmallVector<RowChunks> getPassChunks(Value passStart);
  /// Loads every chunk of `rows` (rotated with a rope clause), then stores
  /// them; each row's page, slot and rotary position are `resolved` as the
  /// lane that resolved it holds them.
  void emitPass(Value tileStart, ArrayRef<Value> resolved,
                ArrayRef<RowChunks> rows);
  /// Whether row `row` (>= offsets[0]) belongs to the batch.
  Value isBatchRow(Value row) { return k.ult(row, endRow); }
  /// Whether chunk `index` of some lane's pass may lie past the tile.
  bool mayPassTileEnd(int64_t index) const;

  /// The quantizing store of a pass's chunks (plan.quantizes): each
  /// group's scale from the amax over its lanes (or the layer's scale),
  /// then the codes.
  void emitQuantizingWrites(ArrayRef<RowChunks> rows,
                            ArrayRef<Value> valid,
                            ArrayRef<RowChunkPosition> positions,
                            ArrayRef<SmallVector<Value>> chunks);

  GPUKernel &kernel;
  GPUKernelBuilder &k;
  Operation *op;
  RaggedCopy copy;
  const RaggedCopyPlan &plan;
  Type chunkType;
  Value lane, numSequences, firstRow, endRow;
};

RaggedCopyKernel::RaggedCopyKernel(GPUKernel &kernel, Operation *op,
                                   const RaggedCopy &copy,
                                   const RaggedCopyPlan &plan)
    : kernel(kernel), k(kernel.builder()), op(op),
      copy{kernel.param(copy.cache), kernel.param(copy.rows),
           kernel.param(copy.offsets), copy.direction, copy.rope},
      plan(plan) {
  if (this->copy.rope) {
    this->copy.rope.cosSin = kernel.param(copy.rope.cosSin);
    if (copy.rope.positions)
      this->copy.rope.positions = kernel.param(copy.rope.positions);
  }
  chunkType = getChunkType(
      getRowParams(KVCacheParams::get(copy.cache.getType()),
                   cast<MemRefType>(copy.rows.getType())),
      plan.width);
}

void RaggedCopyKernel::emit() {
  Value thread = kernel.threadId(gpu::Dimension::x);
  Value warpSize = k.index(kWarpSize);
  lane = k.remu(thread, warpSize);
  Value warp = k.divu(thread, warpSize);
  numSequences = k.numSequences(copy.offsets);
  firstRow = k.loadOffset(copy.offsets, k.index(0));
  Value numRows = memref::DimOp::create(k.b, k.loc, copy.rows, 0);
  endRow = k.minu(k.loadOffset(copy.offsets, numSequences), numRows);
  // Tiles start at offsets[0]; none when the offsets end before it.
  Value batchRows = k.sub(k.maxu(endRow, firstRow), firstRow);
  Value rowsPerTile = k.index(plan.rowsPerTile);
  Value numTiles = k.ceilDiv(batchRows, rowsPerTile);
  Value warps = k.index(plan.warps);
  Value firstTile =
      k.add(k.mul(kernel.blockId(gpu::Dimension::x), warps), warp);
  Value tileStep = k.mul(kernel.gridDim(gpu::Dimension::x), warps);
  // One pass: the lane's chunks are the same in every tile.
  SmallVector<RowChunks> chunks;
  if (plan.passes == 1)
    chunks = getPassChunks(/*passStart=*/Value());
  k.forLoop(firstTile, numTiles, tileStep, [&](Value tile) {
    Value tileStart = k.add(firstRow, k.mul(tile, rowsPerTile));
    SmallVector<Value> resolved = resolveLaneRow(tileStart);
    if (plan.passes == 1)
      return emitPass(tileStart, resolved, chunks);
    // One row per tile: every pass uses lane 0's page, slot and position.
    for (Value &value : resolved)
      value = k.readLane(value, k.i32(0));
    int64_t passChunks = kWarpSize * plan.chunksPerLane;
    k.forLoop(k.index(0), k.index(plan.passes * passChunks),
              k.index(passChunks), [&](Value passStart) {
                emitPass(tileStart, resolved, getPassChunks(passStart));
              });
  });
}

SmallVector<Value> RaggedCopyKernel::resolveLaneRow(Value tileStart) {
  Value row = k.add(tileStart, lane);
  Value owns = isBatchRow(row);
  if (plan.rowsPerTile < kWarpSize)
    owns = k.andi(k.ult(lane, k.index(plan.rowsPerTile)), owns);
  Type indexType = k.b.getIndexType();
  SmallVector<Type> types(copy.rope ? 3 : 2, indexType);
  return k.ifThenElse(
      owns, types,
      [&]() -> SmallVector<Value> {
        Value batch = k.sequenceOf(copy.offsets, numSequences, row);
        Value start = k.loadOffset(copy.offsets, batch);
        Value token = copy.isStore()
                          ? k.rowPosition(k.writeCacheLength(copy.cache, batch),
                                          row, start)
                          : k.sub(row, start);
        auto [page, slot] =
            k.lookup(copy.cache, batch, token, copy.isStore());
        if (!copy.rope)
          return {page, slot};
        return {page, slot,
                RopeEmitter::rotaryPosition(k, op,
                                            copy.rope.cosSin,
                                            copy.rope.positions, row, token,
                                            plan.checked)};
      },
      [&]() -> SmallVector<Value> {
        return SmallVector<Value>(types.size(), k.index(0));
      });
}

bool RaggedCopyKernel::mayPassTileEnd(int64_t index) const {
  int64_t lastPassStart = (plan.passes - 1) * kWarpSize * plan.chunksPerLane;
  return lastPassStart + kWarpSize * (index + 1) > plan.tileChunks();
}

SmallVector<RaggedCopyKernel::RowChunks>
RaggedCopyKernel::getPassChunks(Value passStart) {
  int64_t chunksPerRow = plan.chunksPerRow;
  // Whether chunk i of every lane lies in row 32 * i / chunksPerRow.
  bool uniformRows =
      plan.rowsPerTile == 1 || chunksPerRow % kWarpSize == 0;
  SmallVector<RowChunks> rows;
  std::optional<int64_t> lastRow;
  for (int64_t i = 0; i < plan.chunksPerLane; ++i) {
    Value chunk = i == 0 ? lane : k.add(lane, k.index(kWarpSize * i));
    if (passStart)
      chunk = k.add(passStart, chunk);
    Value rowInTile, sourceLane, inRow;
    std::optional<int64_t> staticRow;
    if (uniformRows) {
      staticRow = kWarpSize * i / chunksPerRow;
      rowInTile = k.index(*staticRow);
      if (plan.passes == 1)
        sourceLane = k.i32(*staticRow);
      inRow = *staticRow == 0
                  ? chunk
                  : k.sub(chunk, k.index(*staticRow * chunksPerRow));
    } else {
      rowInTile = k.divu(chunk, k.index(chunksPerRow));
      inRow = k.remu(chunk, k.index(chunksPerRow));
    }
    Value inTile;
    if (mayPassTileEnd(i)) {
      inTile = k.ult(chunk, k.index(plan.tileChunks()));
      staticRow.reset();
    }
    if (!sourceLane && plan.passes == 1) {
      // A lane whose chunk lies past the tile reads any lane of it.
      Value source = inTile && plan.rowsPerTile > 1
                         ? k.minu(rowInTile, k.index(plan.rowsPerTile - 1))
                         : rowInTile;
      sourceLane = k.toI32(source);
    }
    Value first =
        plan.width == 1 ? inRow : k.mul(inRow, k.index(plan.width));
    std::pair<Value, Value> headElement = {
        k.divu(first, k.index(plan.headSize)),
        k.remu(first, k.index(plan.headSize))};
    if (staticRow && staticRow == lastRow) {
      rows.back().chunks.push_back(headElement);
      continue;
    }
    rows.push_back({rowInTile, sourceLane, inTile, {headElement}});
    lastRow = staticRow;
  }
  return rows;
}

void RaggedCopyKernel::emitPass(Value tileStart, ArrayRef<Value> resolved,
                                ArrayRef<RowChunks> rows) {
  /// A row's chunks, read, and where they go.
  struct ReadRow {
    Value valid;
    RowChunkPosition row;
    SmallVector<Value> chunks;
  };
  auto chunkAt = [](RowChunkPosition position,
                    std::pair<Value, Value> headElement) {
    std::tie(position.head, position.element) = headElement;
    return position;
  };
  SmallVector<ReadRow> readRows;
  for (const RowChunks &rowChunks : rows) {
    Value row = isConstantIntValue(rowChunks.rowInTile, 0)
                    ? tileStart
                    : k.add(tileStart, rowChunks.rowInTile);
    Value valid = isBatchRow(row);
    if (rowChunks.inTile)
      valid = k.andi(rowChunks.inTile, valid);
    Value sourceLane = rowChunks.sourceLane;
    SmallVector<Value> rowResolved(resolved);
    if (sourceLane)
      for (Value &value : rowResolved)
        value = k.readLane(value, sourceLane);
    ReadRow read{
        valid, {row, rowResolved[0], rowResolved[1], Value(), Value()}, {}};
    auto readChunk = [&](RowChunkPosition at) {
      return k.readRowChunk(copy.cache, copy.rows, at, plan.width,
                            copy.direction);
    };
    SmallVector<Type> types(rowChunks.chunks.size(), chunkType);
    read.chunks = k.ifThenElse(
        valid, types,
        [&]() -> SmallVector<Value> {
          SmallVector<Value> chunks;
          for (auto headElement : rowChunks.chunks) {
            RowChunkPosition at = chunkAt(read.row, headElement);
            Value chunk = readChunk(at);
            if (copy.rope)
              chunk = RopeEmitter(k, copy.rope, plan.headSize, plan.width)
                          .rotateRowChunk(chunk, at.element, copy.rope.cosSin,
                                          rowResolved[2], [&](Value element) {
                                            at.element = element;
                                            return readChunk(at);
                                          });
            chunks.push_back(chunk);
          }
          return chunks;
        },
        [&]() -> SmallVector<Value> {
          // Never written: any value serves.
          Value poison = ub::PoisonOp::create(k.b, k.loc, chunkType);
          return SmallVector<Value>(types.size(), poison);
        });
    readRows.push_back(std::move(read));
  }
  if (plan.quantizes) {
    SmallVector<Value> valid;
    SmallVector<RowChunkPosition> positions;
    SmallVector<SmallVector<Value>> chunks;
    for (const ReadRow &read : readRows) {
      valid.push_back(read.valid);
      positions.push_back(read.row);
      chunks.push_back(read.chunks);
    }
    return emitQuantizingWrites(rows, valid, positions, chunks);
  }
  for (auto [rowChunks, read] : llvm::zip_equal(rows, readRows)) {
    ArrayRef<std::pair<Value, Value>> headElements = rowChunks.chunks;
    const ReadRow &written = read;
    k.ifThen(read.valid, [&] {
      for (auto [chunk, headElement] :
           llvm::zip_equal(written.chunks, headElements))
        k.writeRowChunk(chunk, copy.cache, copy.rows,
                        chunkAt(written.row, headElement), copy.direction);
    });
  }
}

void RaggedCopyKernel::emitQuantizingWrites(
    ArrayRef<RowChunks> rows, ArrayRef<Value> valid,
    ArrayRef<RowChunkPosition> positions,
    ArrayRef<SmallVector<Value>> chunks) {
  auto params = KVCacheParams::get(copy.cache.getType());
  bool dynamic = params.scales.getKind() != KVScales::Kind::Tensor;
  int64_t group = plan.chunksPerGroup * plan.width;
  Type f32 = k.b.getF32Type();
  Type chunkF32 = plan.width == 1 ? f32 : VectorType::get({plan.width}, f32);
  for (auto [rowIndex, rowChunks] : llvm::enumerate(rows)) {
    for (auto [chunkIndex, headElement] : llvm::enumerate(rowChunks.chunks)) {
      RowChunkPosition at = positions[rowIndex];
      std::tie(at.head, at.element) = headElement;
      Value values = k.widen(chunks[rowIndex][chunkIndex], chunkF32);
      Value scale;
      if (dynamic) {
        // The group's amax: each lane's (0 off the batch, NaN ignored),
        // then the maximum over the group's lanes; every lane shuffles.
        // On the bits of the magnitudes, which order as unsigned integers
        // (no maxnumf, which the GPU pipeline would make a libdevice call).
        Value local = getNonNaNMagnitudeBits(k.b, k.loc, values);
        if (plan.width > 1)
          local = vector::ReductionOp::create(
              k.b, k.loc, vector::CombiningKind::MAXUI, local);
        local = k.select(valid[rowIndex], local, k.i32(0));
        for (int64_t offset = plan.chunksPerGroup / 2; offset >= 1;
             offset /= 2)
          local = arith::MaxUIOp::create(
              k.b, k.loc, local,
              gpu::ShuffleOp::create(k.b, k.loc, local, offset, kWarpSize,
                                     gpu::ShuffleMode::XOR)
                  .getShuffleResult());
        Value amax = arith::BitcastOp::create(k.b, k.loc, f32, local);
        scale = getScaleFromAmax(k.b, k.loc, amax, params.elementType);
      }
      k.ifThen(valid[rowIndex], [&] {
        Value groupScale = scale;
        if (!dynamic)
          groupScale = PageLoadScaleOp::create(k.b, k.loc, copy.cache,
                                               at.page, at.slot, at.head,
                                               at.element);
        k.storeQuantized(values, groupScale, copy.cache, at, plan.checked);
        if (!dynamic)
          return;
        // The group's first chunk writes its scale.
        Value first = k.eq(k.remu(at.element, k.index(group)), k.index(0));
        k.ifThen(first, [&] {
          PageStoreScaleOp::create(k.b, k.loc, scale, copy.cache, at.page,
                                   at.slot, at.head, at.element);
        });
      });
    }
  }
}

/// store_ragged / gather_ragged: warps move tiles of consecutive rows
/// (RaggedCopyPlan); the grid covers every row of `values`/`out`, at most
/// `maxBlocks` blocks.
template <typename OpTy>
struct RaggedCopyToGPU : OpRewritePattern<OpTy> {
  RaggedCopyToGPU(MLIRContext *ctx, const GPUKernelTarget &target)
      : OpRewritePattern<OpTy>(ctx), target(target) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    RaggedCopy copy = RaggedCopy::get(op);
    KernelBuilder host{rewriter, getKernelLoc(op)};
    RaggedCopyPlan plan(KVCacheParams::get(copy.cache.getType()), copy,
                        target);
    if (plan.quantizes &&
        (plan.chunksPerGroup > kWarpSize ||
         !llvm::isPowerOf2_64(plan.chunksPerGroup)))
      return op.emitOpError("cannot be lowered to a GPU kernel: a scale group "
                            "of ")
             << plan.chunksPerGroup << " chunks of " << plan.width
             << " elements is not a power of two of at most 32 (one warp "
                "computes its amax); use a block<G> scale with a smaller G "
                "or quantize on the CPU";
    Value numRows = memref::DimOp::create(rewriter, host.loc, copy.rows, 0);
    Value run = host.andi(host.ult(host.index(0), numRows),
                          host.ult(host.index(0),
                                   host.numSequences(copy.offsets)));
    Value blocks =
        host.ceilDiv(numRows, host.index(plan.rowsPerTile * plan.warps));
    LaunchShape shape{host.minu(blocks, host.index(target.maxBlocks)),
                      host.index(1), host.index(1), plan.threads()};
    if (failed(emitGuardedKernel(rewriter, op, run, shape,
                                 [&](GPUKernel &kernel) {
                                   RaggedCopyKernel(kernel, op, copy, plan).emit();
                                 })))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }

  GPUKernelTarget target;
};

} // namespace

void mlir::kvcache::populateRaggedCopyToGPUConversionPatterns(
    RewritePatternSet &patterns, const GPUKernelTarget &target) {
  patterns.add<RaggedCopyToGPU<StoreRaggedOp>, RaggedCopyToGPU<GatherRaggedOp>>(
      patterns.getContext(), target);
}
