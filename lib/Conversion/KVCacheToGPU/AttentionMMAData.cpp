//===- AttentionMMAData.cpp - operands of tensor-core attention ---------===//
//
// Part of the kvcache-mlir project.
//
// The tensor-core attention kernel's operands (AttentionMMA.h): q's A
// fragments (from global memory, or staged in shared memory), the cp.async
// copies of K/V rows (or of a quantized cache's codes, with their scales,
// dequantized in shared memory by the threads that copied them), the B
// fragments read with ldmatrix, and mma.sync.
//
//===----------------------------------------------------------------------===//

#include "AttentionMMA.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::kvcache;
using namespace mlir::kvcache::attention;

SmallVector<SmallVector<Value>>
TensorCoreAttention::loadQueries(const TileRows &rows) {
  // A fragment of columns [16 kk, 16 kk + 16): a0a1 (row g, columns 2 tig),
  // a2a3 (row g + 8), a4a5 (row g, columns 2 tig + 8), a6a7 (row g + 8).
  // M rows past the tile are zeros.
  if (sharedQ) {
    stageQueries(rows);
    return {};
  }
  SmallVector<SmallVector<Value>> fragments;
  Value zero = k.splatConstant(pairType, 0);
  int64_t alignment = std::min<int64_t>(4, plan.rowAlignment);
  // With a rope clause each pair is rotated as it is loaded.
  QueryRope rope = makeQueryRope(kernel, op, plan);
  Value rotary[2];
  for (int r = 0; r < 2; ++r)
    rotary[r] = rope.rotaryPosition(rows.row[r], rows.position[r]);
  for (int64_t kk = 0; kk < plan.headSize / (16 * plan.scoreSplit()); ++kk) {
    if (plan.quadQueries) {
      fragments.push_back(loadQueryFragmentByQuads(rows, kk));
      continue;
    }
    SmallVector<Value> fragment;
    for (auto [r, columnOffset] :
         {std::pair<int, int64_t>{0, 0}, {1, 0}, {0, 8}, {1, 8}}) {
      Value column = k.add(k.add(firstDim, k.mul(tig, k.index(2))),
                           k.index(16 * kk + columnOffset));
      Value pair = vector::LoadOp::create(
          k.b, k.loc, pairType, q, ValueRange{rows.row[r], rows.head[r], column},
          /*nontemporal=*/false, llvm::Align(alignment));
      pair = rope.rotate(pair, rows.row[r], rows.head[r], column, rotary[r]);
      fragment.push_back(k.select(rows.valid[r], pair, zero));
    }
    fragments.push_back(fragment);
  }
  return fragments;
}

SmallVector<Value>
TensorCoreAttention::loadQueryFragmentByQuads(const TileRows &rows,
                                              int64_t kk) {
  // Each lane loads 8 bytes, columns 4 tig .. 4 tig + 3 of its row (a
  // warp's load: 8 rows x 32 bytes, whole sectors, where the fragment's
  // 4-byte pairs would touch half of each), and the quad trades them into
  // the fragment: columns 2 tig, 2 tig + 1 are word tig % 2 of the quad's
  // lane tig / 2, columns 8 + 2 tig, 9 + 2 tig of its lane 2 + tig / 2.
  auto quadType = VectorType::get({4}, plan.mmaType);
  auto wordsType = VectorType::get({2}, k.b.getI32Type());
  Value zero = k.splatConstant(quadType, 0);
  Value column = k.add(k.add(firstDim, k.mul(tig, k.index(4))),
                       k.index(16 * kk));
  Value odd = k.eq(k.remu(tig, k.index(2)), k.index(1));
  SmallVector<Value> fragment(4);
  for (int r = 0; r < 2; ++r) {
    Value quad = vector::LoadOp::create(
        k.b, k.loc, quadType, q, ValueRange{rows.row[r], rows.head[r], column},
        /*nontemporal=*/false, llvm::Align(8));
    Value words = vector::BitCastOp::create(
        k.b, k.loc, wordsType, k.select(rows.valid[r], quad, zero));
    for (int64_t half = 0; half < 2; ++half) {
      Value source = k.toI32(k.add(
          k.mul(groupId, k.index(4)),
          k.add(k.divu(tig, k.index(2)), k.index(2 * half))));
      Value traded[2];
      for (int64_t w = 0; w < 2; ++w)
        traded[w] = gpu::ShuffleOp::create(
                        k.b, k.loc,
                        vector::ExtractOp::create(k.b, k.loc, words,
                                                  ArrayRef<int64_t>{w}),
                        source, k.i32(32), gpu::ShuffleMode::IDX)
                        .getShuffleResult();
      Value word = k.select(odd, traded[1], traded[0]);
      fragment[2 * half + r] = vector::BitCastOp::create(
          k.b, k.loc, pairType,
          vector::FromElementsOp::create(
              k.b, k.loc, VectorType::get({1}, k.b.getI32Type()), word));
    }
  }
  return fragment;
}

void TensorCoreAttention::stageQueries(const TileRows &rows) {
  // The warps sharing a tile need all of its q: the block copies q once
  // into shared memory (zero rows past the group), then each warp reads its
  // A fragments with ldmatrix.x4 (matrices: rows 0-7 and 8-15 of columns
  // 16 kk .. + 8, then of 16 kk + 8 .. + 16).
  int64_t chunkBytes = std::min<int64_t>(16, plan.rowAlignment);
  int64_t chunkElements = std::max<int64_t>(chunkBytes / 2, 1);
  auto chunkType = VectorType::get({chunkElements}, plan.mmaType);
  int64_t chunksPerQRow = plan.headSize / chunkElements;
  int64_t total = plan.mTiles * 16 * chunksPerQRow;
  Value thread = kernel.threadId(gpu::Dimension::x);
  Value zero = k.splatConstant(chunkType, 0);
  // With a rope clause each chunk is rotated as it is copied, at its row's
  // position (the key's, cache_length + the row's index in its sequence).
  QueryRope rope = makeQueryRope(kernel, op, plan);
  Value cached, start;
  if (rope) {
    cached = CacheLengthOp::create(k.b, k.loc, keys, rows.batch);
    start = k.loadOffset(offsets, rows.batch);
  }
  for (int64_t first = 0; first < total; first += plan.threads) {
    auto copy = [&] {
      Value index = k.add(thread, k.index(first));
      Value local = k.divu(index, k.index(chunksPerQRow));
      Value column = k.mul(k.remu(index, k.index(chunksPerQRow)),
                           k.index(chunkElements));
      auto [row, head, valid] = describeMRow(rows.first, rows.count, local);
      Value chunk = vector::LoadOp::create(k.b, k.loc, chunkType, q,
                                           ValueRange{row, head, column},
                                           /*nontemporal=*/false,
                                           llvm::Align(chunkBytes));
      if (rope)
        chunk = rope.rotate(
            chunk, row, head, column,
            rope.rotaryPosition(row, k.rowPosition(cached, row, start)));
      vector::StoreOp::create(k.b, k.loc, k.select(valid, chunk, zero), sharedQ,
                              ValueRange{local, column});
    };
    if (first + plan.threads <= total)
      copy();
    else
      k.ifThen(k.ult(thread, k.index(total - first)), copy);
  }
  gpu::BarrierOp::create(k.b, k.loc);
  // The fragments are read from shared memory where the scores need them
  // (queryFragment), not held in registers across the key loop.
}

SmallVector<Value>
TensorCoreAttention::queryFragment(ArrayRef<SmallVector<Value>> queries,
                                   int64_t kk) {
  if (!sharedQ)
    return queries[kk];
  Value matrix = k.divu(lane, k.index(8));
  Value rowInTile = k.add(k.add(k.mul(mTile, k.index(16)), k.remu(lane, k.index(8))),
                          k.mul(k.remu(matrix, k.index(2)), k.index(8)));
  Value columnHalf = k.mul(k.divu(matrix, k.index(2)), k.index(8));
  return ldmatrix(sharedQ,
                  ValueRange{rowInTile, k.add(columnHalf, k.index(16 * kk))}, 4,
                  false);
}

MemRefType TensorCoreAttention::copyRowType() {
  return MemRefType::get({1, plan.headSize}, plan.elementType,
                         StridedLayoutAttr::get(
                             k.b.getContext(), ShapedType::kDynamic,
                             {plan.kvHeads * plan.headSize, 1}));
}

TensorCoreAttention::CopySource
TensorCoreAttention::copySource(Value batch, const TileKeys &tileKeys,
                                Value step, Value cache) {
  // Key row `copyKey` of the step; past the end, the zero-fill form from a
  // valid row (tileKeys.begin).
  Value key = k.add(tileKeys.begin,
                    k.add(k.mul(step, k.index(plan.keysPerStep)), copyKey));
  Value valid = k.ult(key, tileKeys.end);
  key = k.select(valid, key, tileKeys.begin);
  CopySource source{Value(), batch, cache, key,
                    k.select(valid, k.index(16 / plan.elementBytes),
                             k.index(0)),
                    Value()};
  // A query tile issues no lookup for a step past its last (a tenth of a
  // short tile's loads); the decode kernel looks up here, at the top of
  // the step (V's row address is then ready when its copies are issued;
  // at issue, ptxas (sm_90) spilled at GQA 4 and took 215 registers
  // instead of 168 at GQA 64).
  if (plan.tileRows > 1)
    source.issued = k.ult(step, tileKeys.numSteps);
  else
    source.tile =
        TileOp::create(k.b, k.loc, copyRowType(), cache, batch, key, kvHead);
  return source;
}

void TensorCoreAttention::issueCopies(const CopySource &source, Value step,
                                      Value shared) {
  // This thread's chunks of its key row: chunk copyChunk + i *
  // threadsPerKey, so the threads of a key read consecutive 16-byte chunks.
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(k.b.getContext());
  int64_t chunkElements = 16 / plan.elementBytes;
  auto copy = [&] {
    Value tile = source.tile
                     ? source.tile
                     : TileOp::create(k.b, k.loc, copyRowType(), source.cache,
                                      source.batch, source.key, kvHead);
    Value buffer = k.remu(step, k.index(plan.stages));
    for (int64_t i = 0; i < chunksPerRow / threadsPerKey; ++i) {
      Value element = k.mul(k.add(copyChunk, k.index(i * threadsPerKey)),
                            k.index(chunkElements));
      nvgpu::DeviceAsyncCopyOp::create(
          k.b, k.loc, tokenType, shared, ValueRange{buffer, copyKey, element},
          tile, ValueRange{k.index(0), element},
          k.b.getIndexAttr(chunkElements), source.count, k.b.getUnitAttr());
    }
  };
  // Every thread commits a group (empty past copyThreads and for a step
  // past the last), so the waits' group counts hold for all of them.
  Value copies = source.issued;
  if (copyThreads < plan.threads) {
    Value copying =
        k.ult(kernel.threadId(gpu::Dimension::x), k.index(copyThreads));
    copies = copies ? k.andi(copies, copying) : copying;
  }
  if (copies)
    k.ifThen(copies, copy);
  else
    copy();
  NVVM::CpAsyncCommitGroupOp::create(k.b, k.loc);
}

void TensorCoreAttention::issueValueCopies(const CopySource &source,
                                           Value step) {
  if (plan.sharesKeyTiles()) {
    NVVM::CpAsyncCommitGroupOp::create(k.b, k.loc);
    return;
  }
  issueCopies(source, step, plan.dequantize ? codesV : sharedV);
}

void TensorCoreAttention::waitGroups(int64_t pending) {
  // cp.async.wait_group: nvgpu's wait needs a group token, and creating one
  // would commit an extra (empty) group.
  NVVM::CpAsyncWaitGroupOp::create(k.b, k.loc, pending);
}

SmallVector<Accumulator>
TensorCoreAttention::computeScores(Value buffer,
                                   ArrayRef<SmallVector<Value>> queries) {
  // B fragments of K^T for 8 keys x 32 columns with one ldmatrix.x4: lane l
  // addresses key 8 n + l % 8, columns 32 kk + 8 (l / 8); its registers are
  // b0b1, b2b3 of columns 32 kk and of 32 kk + 16 (from firstDim).
  int64_t keyTiles = plan.keysPerStep / 8,
          columnSteps = plan.headSize / (16 * plan.scoreSplit());
  Value rowInTile = k.remu(lane, k.index(8));
  Value matrix = k.divu(lane, k.index(8));
  SmallVector<Accumulator> scores(keyTiles, {k.f32(0), k.f32(0), k.f32(0), k.f32(0)});
  for (int64_t kk = 0; kk < columnSteps; kk += 2) {
    int64_t tiles = kk + 1 < columnSteps ? 4 : 2;
    SmallVector<Value> first = queryFragment(queries, kk), second;
    if (tiles == 4)
      second = queryFragment(queries, kk + 1);
    Value column =
        k.add(k.add(firstDim, k.mul(k.remu(matrix, k.index(tiles)),
                                    k.index(8))),
              k.index(16 * kk));
    for (int64_t n = 0; n < keyTiles; ++n) {
      Value key = k.add(rowInTile, k.index(8 * n));
      SmallVector<Value> b =
          ldmatrix(sharedK, ValueRange{buffer, key, column}, tiles, false);
      scores[n] = mma(first, {b[0], b[1]}, scores[n]);
      if (tiles == 4)
        scores[n] = mma(second, {b[2], b[3]}, scores[n]);
    }
  }
  if (plan.splitScores)
    sumPartialScores(scores);
  return scores;
}

void TensorCoreAttention::sumPartialScores(SmallVector<Accumulator> &scores) {
  // Each lane parks its 4 partial scores of a key tile in 16 bytes (the
  // warp's 32 lanes: consecutive, no bank conflicts); after a barrier each
  // warp sums the tile's warps' partials in warp order, so all of them hold
  // the same scores. The barrier at the top of the next step orders these
  // loads before the next step's stores.
  auto quadType = VectorType::get({4}, k.b.getF32Type());
  Value warp = k.divu(kernel.threadId(gpu::Dimension::x), k.index(32));
  for (size_t n = 0; n < scores.size(); ++n)
    vector::StoreOp::create(
        k.b, k.loc,
        vector::FromElementsOp::create(k.b, k.loc, quadType,
                                       ValueRange(ArrayRef<Value>(scores[n]))),
        sharedScores, ValueRange{warp, k.index(n), lane, k.index(0)});
  gpu::BarrierOp::create(k.b, k.loc);
  Value firstWarp = k.mul(mTile, k.index(plan.dSplit));
  for (size_t n = 0; n < scores.size(); ++n) {
    Value sum;
    for (int64_t c = 0; c < plan.dSplit; ++c) {
      Value part = vector::LoadOp::create(
          k.b, k.loc, quadType, sharedScores,
          ValueRange{k.add(firstWarp, k.index(c)), k.index(n), lane,
                     k.index(0)});
      sum = c == 0 ? part : k.fadd(sum, part);
    }
    for (int64_t i = 0; i < 4; ++i)
      scores[n][i] =
          vector::ExtractOp::create(k.b, k.loc, sum, ArrayRef<int64_t>{i});
  }
}

void TensorCoreAttention::accumulateValues(Value buffer,
                                           ArrayRef<SmallVector<Value>> probs,
                                           SmallVector<Accumulator> &out) {
  // B fragments of V for 16 keys x 16 columns with one ldmatrix.x4.trans:
  // lane l addresses key 16 j + 8 ((l / 8) % 2) + l % 8, column
  // 8 (l / 16) of the pair; registers b0b1, b2b3 of each 8 columns.
  Value rowInTile = k.remu(lane, k.index(8));
  Value matrix = k.divu(lane, k.index(8));
  Value keyHalf = k.mul(k.remu(matrix, k.index(2)), k.index(8));
  Value columnHalf = k.mul(k.divu(matrix, k.index(2)), k.index(8));
  for (size_t j = 0; j < probs.size(); ++j) {
    ArrayRef<Value> p = probs[j];
    Value key = k.add(k.add(rowInTile, keyHalf), k.index(16 * j));
    for (int64_t n = 0; n < columnsPerWarp / 8; n += 2) {
      Value column = k.add(k.add(firstColumn, columnHalf), k.index(8 * n));
      SmallVector<Value> b =
          ldmatrix(sharedV, ValueRange{buffer, key, column}, 4, true);
      out[n] = mma(p, {b[0], b[1]}, out[n]);
      out[n + 1] = mma(p, {b[2], b[3]}, out[n + 1]);
    }
  }
}

SmallVector<Value>
TensorCoreAttention::loadChunkScales(Value batch, const TileKeys &tileKeys,
                                     Value step, Value cache) {
  // The key row of copySource, through the cache's own lookup; none for a
  // step past the last (copySource), whose scales are never read.
  Value key = k.add(tileKeys.begin,
                    k.add(k.mul(step, k.index(plan.keysPerStep)), copyKey));
  Value valid = k.ult(key, tileKeys.end);
  SmallVector<Type> types(plan.chunksPerThread, k.b.getF32Type());
  auto load = [&]() -> SmallVector<Value> {
    auto [page, slot] = k.lookup(cache, batch,
                                 k.select(valid, key, tileKeys.begin),
                                 /*servesWrite=*/false);
    // One load per scale group: a token_head or tensor scale serves all of
    // the thread's chunks of the row.
    bool onePerRow = plan.scaleGroup >= plan.headSize;
    SmallVector<Value> scales;
    for (int64_t i = 0; i < plan.chunksPerThread; ++i) {
      if (onePerRow && i > 0) {
        scales.push_back(scales.front());
        continue;
      }
      Value element =
          k.mul(k.add(copyChunk, k.index(i * threadsPerKey)), k.index(16));
      Value scale = PageLoadScaleOp::create(k.b, k.loc, cache, page, slot,
                                            kvHead, element);
      // Past the end the codes are zero-filled: a zero scale keeps the
      // tile's rows zero whatever the scale of the row they were read from.
      scales.push_back(k.select(valid, scale, k.f32(0)));
    }
    return scales;
  };
  if (plan.tileRows == 1)
    return load();
  return k.ifThenElse(k.ult(step, tileKeys.numSteps), types, load, [&] {
    return SmallVector<Value>(plan.chunksPerThread, k.f32(0));
  });
}

void TensorCoreAttention::storeChunkScales(ArrayRef<Value> scales,
                                           Value step, Value slots) {
  Value buffer = k.remu(step, k.index(plan.stages));
  Value thread = kernel.threadId(gpu::Dimension::x);
  if (slots == slotsK && foldsKeyScales()) {
    // One scale per key row, stored by the thread that copies its chunk 0.
    auto store = [&] {
      memref::StoreOp::create(k.b, k.loc, scales.front(), slots,
                              ValueRange{buffer, copyKey});
    };
    if (threadsPerKey == 1 && copyThreads == plan.threads)
      store();
    else
      k.ifThen(k.andi(k.eq(copyChunk, k.index(0)),
                      k.ult(thread, k.index(copyThreads))),
               store);
    return;
  }
  Value first = k.mul(thread, k.index(plan.chunksPerThread));
  for (auto [i, scale] : llvm::enumerate(scales))
    memref::StoreOp::create(k.b, k.loc, scale, slots,
                            ValueRange{buffer, k.add(first, k.index(i))});
}

void TensorCoreAttention::dequantizeChunks(Value buffer, Value codes,
                                           Value slots, Value tile,
                                           bool scaled) {
  // This thread's own chunks: its cp.async copies have landed (the wait),
  // and the block's reads of the tile's previous step are done (the
  // barrier before).
  auto codesType = VectorType::get({16}, plan.elementType);
  Value first = k.mul(kernel.threadId(gpu::Dimension::x),
                      k.index(plan.chunksPerThread));
  for (int64_t i = 0; i < plan.chunksPerThread; ++i) {
    Value element =
        k.mul(k.add(copyChunk, k.index(i * threadsPerKey)), k.index(16));
    Value chunk = vector::LoadOp::create(k.b, k.loc, codesType, codes,
                                         ValueRange{buffer, copyKey, element});
    Value values = decodeStorageToF32(k.b, k.loc, chunk);
    if (scaled) {
      Value scale = memref::LoadOp::create(
          k.b, k.loc, slots, ValueRange{buffer, k.add(first, k.index(i))});
      values =
          k.fmul(values, k.splat(scale, cast<VectorType>(values.getType())));
    }
    vector::StoreOp::create(
        k.b, k.loc, k.narrow(values, VectorType::get({16}, plan.mmaType)),
        tile, ValueRange{k.index(0), copyKey, element});
  }
  gpu::BarrierOp::create(k.b, k.loc);
}

void TensorCoreAttention::scaleScores(SmallVector<Accumulator> &scores,
                                      Value buffer) {
  // Elements 0, 1 (row groupID) and 2, 3 (row groupID + 8) of key tile n
  // are keys 8 n + 2 tig and 8 n + 2 tig + 1 of the step: one 8-byte load
  // of their parked scales. The barrier at the top of the step ordered the
  // stores before these loads.
  for (size_t n = 0; n < scores.size(); ++n) {
    Value key = k.add(k.mul(tig, k.index(2)), k.index(8 * n));
    Value pair = vector::LoadOp::create(k.b, k.loc, accPairType, slotsK,
                                        ValueRange{buffer, key});
    for (int64_t column = 0; column < 2; ++column) {
      Value scale = vector::ExtractOp::create(k.b, k.loc, pair,
                                              ArrayRef<int64_t>{column});
      for (int64_t row : {0, 2})
        scores[n][row + column] = k.fmul(scores[n][row + column], scale);
    }
  }
}

Accumulator TensorCoreAttention::mma(ArrayRef<Value> a, ArrayRef<Value> b,
                                     const Accumulator &c) {
  // bf16 operands travel as i32 (MLIR 22's nvgpu.mma.sync cannot deduce
  // bf16 PTX types, so this builds nvvm.mma.sync for both types).
  MLIRContext *ctx = k.b.getContext();
  bool bf16 = plan.mmaType.isBF16();
  auto operand = [&](Value pair) -> Value {
    return bf16 ? LLVM::BitcastOp::create(k.b, k.loc, k.b.getI32Type(), pair)
                      .getResult()
                : pair;
  };
  SmallVector<Value> as, bs;
  for (Value v : a)
    as.push_back(operand(v));
  for (Value v : b)
    bs.push_back(operand(v));
  Type f32 = k.b.getF32Type();
  auto resultType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
  NVVM::MMATypes type = bf16 ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  Value result = NVVM::MmaOp::create(
      k.b, k.loc, resultType, as, bs, ValueRange(c), {16, 8, 16},
      std::nullopt, std::nullopt, std::array<NVVM::MMATypes, 2>{type, type},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  Accumulator d;
  for (int64_t i = 0; i < 4; ++i)
    d[i] = LLVM::ExtractValueOp::create(k.b, k.loc, result, i);
  return d;
}

SmallVector<Value> TensorCoreAttention::ldmatrix(Value shared,
                                                 ValueRange indices,
                                                 int64_t tiles,
                                                 bool transpose) {
  auto type = VectorType::get({tiles, 2}, plan.mmaType);
  Value matrices = nvgpu::LdMatrixOp::create(k.b, k.loc, type, shared, indices,
                                             transpose, tiles);
  SmallVector<Value> registers;
  for (int64_t i = 0; i < tiles; ++i)
    registers.push_back(vector::ExtractOp::create(k.b, k.loc, matrices,
                                                  ArrayRef<int64_t>{i}));
  return registers;
}
