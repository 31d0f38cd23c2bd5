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
//   left alone;
// - a store with a rope clause of float rows moves each head's elements
//   that do not rotate as above, then its rotary part in units that need
//   no per-element index arithmetic or branch: a chunk of half pairs with
//   its partner chunk R/2 on (one lane reads both, rotates both, writes
//   both), or a chunk of whole interleaved pairs; a lane's unit is at the
//   same place of a head in every row, so it reads the unit's cos and sin
//   once per row, for every head it rotates (RowSegment). A quantizing
//   store, whose scale groups span consecutive lanes, rotates chunk by
//   chunk, reading half partners again (RopeEmitter::rotateRowChunk).
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
#include "RaggedCopyPlan.h"
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

/// Builds the body of a ragged-copy kernel: per tile, `resolve` the lane's
/// row, then per pass `load` every chunk of the lane and `store` them.
class RaggedCopyKernel {
public:
  /// The kernel of `op`, whose run-time checks report at it.
  RaggedCopyKernel(GPUKernel &kernel, Operation *op, const RaggedCopy &copy,
                   const RaggedCopyPlan &plan);
  void emit();

private:
  /// The units of a lane's pass that lie in one row of the tile.
  struct RowChunks {
    /// The row's index in the tile (a constant when it is the same in every
    /// lane), and the lane that resolved it (i32; null when the page and slot
    /// the pass gets are already the row's).
    Value rowInTile, sourceLane;
    /// Whether the lane's units lie in the tile (null: always).
    Value inTile;
    /// (head, element) of each chunk, a unit's chunks in a row.
    SmallVector<std::pair<Value, Value>> chunks;
    /// Of a rotating segment, each unit's u * width.
    SmallVector<Value> rotary;
  };

  /// (page, slot) of row `tileStart + lane` in lanes that own a row of the
  /// batch, 0 in the others; then, with a rope clause, its rotary position.
  SmallVector<Value> resolveLaneRow(Value tileStart);
  /// The units of `segment` of the lane's pass starting at unit
  /// `passStart` of the tile (null: 0), grouped by row.
  SmallVector<RowChunks> getPassChunks(const RowSegment &segment,
                                       Value passStart);
  /// Loads every chunk of `rows` (rotated with a rope clause), then stores
  /// them; each row's page, slot and rotary position are `resolved` as the
  /// lane that resolved it holds them.
  void emitPass(const RowSegment &segment, Value tileStart,
                ArrayRef<Value> resolved, ArrayRef<RowChunks> rows);
  /// The chunks of `rows`' units in a row at `at` (rotated with a rope
  /// clause at rotary position `position`).
  SmallVector<Value> readUnits(const RowSegment &segment,
                               const RowChunks &rows, RowChunkPosition at,
                               Value position);
  /// Whether row `row` (>= offsets[0]) belongs to the batch.
  Value isBatchRow(Value row) { return k.ult(row, endRow); }
  /// Whether unit `index` of some lane's pass of `segment` may lie past the
  /// tile.
  bool mayPassTileEnd(const RowSegment &segment, int64_t index) const;

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
  // One pass: the lane's units are the same in every tile.
  SmallVector<SmallVector<RowChunks>> units;
  if (plan.onePass())
    for (const RowSegment &segment : plan.segments)
      units.push_back(getPassChunks(segment, /*passStart=*/Value()));
  k.forLoop(firstTile, numTiles, tileStep, [&](Value tile) {
    Value tileStart = k.add(firstRow, k.mul(tile, rowsPerTile));
    SmallVector<Value> resolved = resolveLaneRow(tileStart);
    if (plan.onePass()) {
      for (auto [segment, segmentUnits] : llvm::zip_equal(plan.segments, units))
        emitPass(segment, tileStart, resolved, segmentUnits);
      return;
    }
    // One row per tile: every pass uses lane 0's page, slot and position.
    assert(plan.rowsPerTile == 1 && "passes over a tile of several rows");
    for (Value &value : resolved)
      value = k.readLane(value, k.i32(0));
    for (const RowSegment &segment : plan.segments) {
      int64_t passUnits = kWarpSize * segment.unitsPerLane;
      k.forLoop(k.index(0), k.index(segment.passes * passUnits),
                k.index(passUnits), [&](Value passStart) {
                  emitPass(segment, tileStart, resolved,
                           getPassChunks(segment, passStart));
                });
    }
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

bool RaggedCopyKernel::mayPassTileEnd(const RowSegment &segment,
                                      int64_t index) const {
  int64_t lastPassStart =
      (segment.passes - 1) * kWarpSize * segment.unitsPerLane;
  return lastPassStart + kWarpSize * (index + 1) > plan.tileUnits(segment);
}

SmallVector<RaggedCopyKernel::RowChunks>
RaggedCopyKernel::getPassChunks(const RowSegment &segment, Value passStart) {
  int64_t unitsPerRow = segment.unitsPerRow;
  // Whether unit i of every lane lies in row 32 * i / unitsPerRow.
  bool uniformRows = plan.rowsPerTile == 1 || unitsPerRow % kWarpSize == 0;
  // Where a rotating segment's units of a head divide a warp, a lane's unit
  // is the same unit of a head in every row and pass: one value for it,
  // one read of its cos and sin per row (readUnits).
  Value laneAt;
  if (segment.rotates && kWarpSize % segment.unitsPerHead == 0) {
    laneAt = k.remu(lane, k.index(segment.unitsPerHead));
    if (plan.width > 1)
      laneAt = k.mul(laneAt, k.index(plan.width));
  }
  SmallVector<RowChunks> rows;
  std::optional<int64_t> lastRow;
  for (int64_t i = 0; i < segment.unitsPerLane; ++i) {
    Value unit = i == 0 ? lane : k.add(lane, k.index(kWarpSize * i));
    if (passStart)
      unit = k.add(passStart, unit);
    Value rowInTile, sourceLane, inRow;
    std::optional<int64_t> staticRow;
    if (uniformRows) {
      staticRow = kWarpSize * i / unitsPerRow;
      rowInTile = k.index(*staticRow);
      if (plan.onePass())
        sourceLane = k.i32(*staticRow);
      inRow = *staticRow == 0
                  ? unit
                  : k.sub(unit, k.index(*staticRow * unitsPerRow));
    } else {
      rowInTile = k.divu(unit, k.index(unitsPerRow));
      inRow = k.remu(unit, k.index(unitsPerRow));
    }
    Value inTile;
    if (mayPassTileEnd(segment, i)) {
      inTile = k.ult(unit, k.index(plan.tileUnits(segment)));
      staticRow.reset();
    }
    if (!sourceLane && plan.onePass()) {
      // A lane whose unit lies past the tile reads any lane of it.
      Value source = inTile && plan.rowsPerTile > 1
                         ? k.minu(rowInTile, k.index(plan.rowsPerTile - 1))
                         : rowInTile;
      sourceLane = k.toI32(source);
    }
    Value head, at = laneAt;
    if (laneAt) {
      head = k.divu(inRow, k.index(segment.unitsPerHead));
    } else {
      Value first =
          plan.width == 1 ? inRow : k.mul(inRow, k.index(plan.width));
      Value span = k.index(segment.unitsPerHead * plan.width);
      head = k.divu(first, span);
      at = k.remu(first, span);
    }
    if (!staticRow || staticRow != lastRow)
      rows.push_back({rowInTile, sourceLane, inTile, {}, {}});
    lastRow = staticRow;
    if (!segment.rotates) {
      rows.back().chunks.push_back({head, at});
      continue;
    }
    rows.back().rotary.push_back(at);
    if (segment.chunksPerUnit == 1) {
      int64_t offset = plan.headSize - copy.rope.rotaryDims;
      rows.back().chunks.push_back(
          {head, offset ? k.add(at, k.index(offset)) : at});
      continue;
    }
    auto [first, second] =
        RopeEmitter(k, copy.rope, plan.headSize, plan.width)
            .getPairElements(at);
    rows.back().chunks.append({{head, first}, {head, second}});
  }
  return rows;
}

void RaggedCopyKernel::emitPass(const RowSegment &segment, Value tileStart,
                                ArrayRef<Value> resolved,
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
    // Page and slot; the rotary position where the segment rotates.
    bool usesPosition = segment.rotates || (copy.rope && plan.quantizes);
    SmallVector<Value> rowResolved(resolved.take_front(usesPosition ? 3 : 2));
    if (Value sourceLane = rowChunks.sourceLane)
      for (Value &value : rowResolved)
        value = k.readLane(value, sourceLane);
    ReadRow read{
        valid, {row, rowResolved[0], rowResolved[1], Value(), Value()}, {}};
    SmallVector<Type> types(rowChunks.chunks.size(), chunkType);
    read.chunks = k.ifThenElse(
        valid, types,
        [&]() -> SmallVector<Value> {
          return readUnits(segment, rowChunks, read.row,
                           usesPosition ? rowResolved[2] : Value());
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

SmallVector<Value> RaggedCopyKernel::readUnits(const RowSegment &segment,
                                               const RowChunks &rows,
                                               RowChunkPosition at,
                                               Value position) {
  auto readChunk = [&](std::pair<Value, Value> headElement) {
    std::tie(at.head, at.element) = headElement;
    return k.readRowChunk(copy.cache, copy.rows, at, plan.width,
                          copy.direction);
  };
  SmallVector<Value> chunks;
  std::optional<RopeEmitter> rope;
  if (position)
    rope.emplace(k, copy.rope, plan.headSize, plan.width);
  if (!segment.rotates) {
    for (auto headElement : rows.chunks) {
      Value chunk = readChunk(headElement);
      if (rope)
        chunk = rope->rotateRowChunk(chunk, headElement.second,
                                     copy.rope.cosSin, position,
                                     [&](Value element) {
                                       return readChunk(
                                           {headElement.first, element});
                                     });
      chunks.push_back(chunk);
    }
    return chunks;
  }
  // Units of a row at the same place of the rotary part share one read of
  // their cos and sin (the same value where the head's units divide a warp).
  llvm::SmallDenseMap<Value, std::pair<Value, Value>> cosSin;
  Type f32 = k.b.getF32Type();
  if (plan.width > 1)
    f32 = VectorType::get({plan.width}, f32);
  bool inChunk = segment.chunksPerUnit == 1;
  for (size_t unit = 0; unit < rows.rotary.size(); ++unit) {
    Value at = rows.rotary[unit];
    auto [it, inserted] = cosSin.try_emplace(at);
    if (inserted)
      it->second =
          inChunk ? rope->loadInterleavedCosSin(copy.rope.cosSin, position, at)
                  : rope->loadCosSin(copy.rope.cosSin, position, at);
    auto [cos, sin] = it->second;
    auto read = [&](int64_t i) {
      return k.widen(readChunk(rows.chunks[segment.chunksPerUnit * unit + i]),
                     f32);
    };
    if (inChunk) {
      chunks.push_back(
          k.narrow(rope->rotateInterleavedChunk(read(0), cos, sin), chunkType));
      continue;
    }
    Value a = read(0);
    Value b = read(1);
    auto [rotatedA, rotatedB] = rope->rotatePair(a, b, cos, sin);
    chunks.append(
        {k.narrow(rotatedA, chunkType), k.narrow(rotatedB, chunkType)});
  }
  return chunks;
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
