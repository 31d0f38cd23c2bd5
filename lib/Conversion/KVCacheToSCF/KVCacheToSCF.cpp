//===- KVCacheToSCF.cpp - kvcache kernel ops to loops -----------*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// Kernel ops become loop nests over access ops: one lookup per token row
// (outside the head and element loops), 16-byte vectors along head_size.
//
//===----------------------------------------------------------------------===//

#include "KVCache/Conversion/KVCacheToSCF/KVCacheToSCF.h"
#include "KVCache/Conversion/Passes.h"
#include "KVCache/IR/KVCacheOps.h"
#include "../KernelCommon/Fp8ToInteger.h"
#include "../KernelCommon/KernelBuilder.h"
#include "../KernelCommon/Quantization.h"
#include "../KernelCommon/Rope.h"
#include "AttentionCPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/TargetParser/Host.h"


namespace mlir {
#define GEN_PASS_DEF_CONVERTKVCACHETOSCF
#include "KVCache/Conversion/Passes.h.inc"
} // namespace mlir

using namespace mlir;
using namespace mlir::kvcache;

/// Emits `for (head, element) in [0, H) x [0, D) step width` calling
/// `body(head, element)`.
static void emitRowLoops(KernelBuilder &k, const KVCacheParams &params,
                         int64_t width,
                         function_ref<void(Value, Value)> body) {
  Value zero = k.index(0), one = k.index(1);
  Value numHeads = k.index(params.numHeads);
  Value headSize = k.index(params.headSize);
  Value step = k.index(width);
  k.forLoop(zero, numHeads, one, [&](Value head) {
    k.forLoop(zero, headSize, step,
              [&](Value element) { body(head, element); });
  });
}

/// Writes and returns the scale of the group at `groupStart` of head
/// `at.head` whose largest magnitude is `amax` (f32, or a vector of lane-wise
/// amax of its chunks).
static Value storeGroupScale(KernelBuilder &k, const KVCacheParams &params,
                             Value cache, const RowChunkPosition &at,
                             Value amax, Value groupStart) {
  // No lane holds NaN (maxnumf from 0): the reduction may say so, which
  // lets LLVM use a shuffle tree instead of a NaN-aware scalar chain.
  if (isa<VectorType>(amax.getType()))
    amax = vector::ReductionOp::create(k.b, k.loc,
                                       vector::CombiningKind::MAXNUMF, amax,
                                       arith::FastMathFlags::nnan);
  Value scale = getScaleFromAmax(k.b, k.loc, amax, params.elementType);
  PageStoreScaleOp::create(k.b, k.loc, scale, cache, at.page, at.slot,
                           at.head, groupStart);
  return scale;
}

/// Quantizes the `chunks` f32 chunks of a scale group, `read(element)` the
/// one at `elementAt(i)`, to fp8 `storage` codes with the group's `scale`,
/// and stores them 4 chunks to a vector (packFp8CodeWords: no truncation).
static void
emitPackedFp8Codes(KernelBuilder &k, Type storage, Value cache,
                   RowChunkPosition at, Value scale, int64_t chunks,
                   function_ref<Value(int64_t)> elementAt,
                   function_ref<Value(Value)> read) {
  Value divisor;
  for (int64_t i = 0; i < chunks; i += 4) {
    SmallVector<Value> words;
    for (int64_t j = i; j < std::min(chunks, i + 4); ++j) {
      Value values = read(elementAt(j));
      if (!divisor)
        divisor = k.splat(scale, cast<VectorType>(values.getType()));
      words.push_back(encodeF32ToFp8Words(k.b, k.loc,
                                          k.fdiv(values, divisor), storage));
    }
    PageStoreOp::create(k.b, k.loc,
                        packFp8CodeWords(k.b, k.loc, words, storage), cache,
                        at.page, at.slot, at.head, elementAt(i));
  }
}

/// store_ragged of float rows into a cache with scales, one token row
/// (`at.row` -> `at.page`, `at.slot`): each scale group of each head is
/// quantized `saturate(rne(value / scale))` (encodeF32ToStorage). For
/// `tensor` the scale is the layer's; for `token_head` (a group is the
/// head) and `block<G>` it is computed from the group's values first,
/// `amax / max_finite` (1 when amax = 0; amax over the non-NaN magnitudes),
/// and written with page_store_scale. Groups of at most kMaxResidentChunks
/// chunks are straight-line code: a first pass over the row computes and
/// stores every group's scale (the amax of f16 and bf16 rows on their bits:
/// getHalfChunksAmax), a second one reads the row again (from L1) and
/// stores the codes (fp8: 4 chunks' codes to one vector, emitPackedFp8Codes).
/// A larger group is read twice in its own loops (amax, then the codes).
/// The values are row `readRow` of `rows` (`at.row`, or the scratch row a
/// rope clause rotated it into; `at.row` names it in messages).
static void emitQuantizingRowStore(KernelBuilder &k,
                                   const KVCacheParams &params, Value cache,
                                   Value rows, Value readRow,
                                   RowChunkPosition at, int64_t width,
                                   bool checked) {
  constexpr int64_t kMaxResidentChunks = 16;
  int64_t group = params.scales.groupSize(params.headSize);
  int64_t chunks = group / width;
  bool dynamic = params.scales.getKind() != KVScales::Kind::Tensor;
  Type f32 = k.b.getF32Type();
  Type chunkF32 = width == 1 ? f32 : VectorType::get({width}, f32);
  auto readRaw = [&](Value element) {
    RowChunkPosition from = at;
    from.row = readRow;
    from.element = element;
    return k.readRowChunk(cache, rows, from, width, RowCopyDirection::ToCache);
  };
  auto read = [&](Value element) { return k.widen(readRaw(element), chunkF32); };
  // maxnumf: NaN magnitudes drop out.
  auto maxMagnitude = [&](Value acc, Value values) -> Value {
    return arith::MaxNumFOp::create(
        k.b, k.loc, acc, math::AbsFOp::create(k.b, k.loc, values));
  };
  auto storeDynamicScale = [&](Value amax, Value groupStart) {
    return storeGroupScale(k, params, cache, at, amax, groupStart);
  };
  auto quantizeAndStore = [&](Value values, Value scale, Value element) {
    at.element = element;
    k.storeQuantized(values, scale, cache, at, checked);
  };
  auto zeros = [&]() -> Value {
    return arith::ConstantOp::create(
        k.b, k.loc, chunkF32,
        width == 1 ? TypedAttr(k.b.getF32FloatAttr(0.0f))
                   : DenseElementsAttr::get(cast<VectorType>(chunkF32), 0.0f));
  };
  Value zero = k.index(0), step = k.index(width);
  Value heads = k.index(params.numHeads), one = k.index(1);
  auto loadScale = [&](Value groupStart) -> Value {
    return PageLoadScaleOp::create(k.b, k.loc, cache, at.page, at.slot,
                                   at.head, groupStart);
  };
  // A loop nest over the row's scale groups (at.head set), `body` taking
  // the group's first element.
  auto eachGroup = [&](function_ref<void(Value)> body) {
    k.forLoop(zero, heads, one, [&](Value head) {
      at.head = head;
      k.forLoop(zero, k.index(params.headSize), k.index(group), body);
    });
  };
  if (chunks <= kMaxResidentChunks) {
    // Every scale of the row first, then the codes: the groups' amax,
    // division and scale store chains overlap one another instead of each
    // holding up its group's codes (the second pass reads the row again
    // from L1, and each group's scale back).
    auto elementAt = [&](Value groupStart, int64_t i) {
      return k.add(groupStart, k.index(i * width));
    };
    // 16-bit float rows: the amax on their bits, without converting them.
    bool amaxOnBits =
        width > 1 && cast<MemRefType>(rows.getType())
                             .getElementType()
                             .getIntOrFloatBitWidth() == 16;
    if (dynamic && amaxOnBits) {
      eachGroup([&](Value groupStart) {
        SmallVector<Value> raw;
        for (int64_t i = 0; i < chunks; ++i)
          raw.push_back(readRaw(elementAt(groupStart, i)));
        storeDynamicScale(getHalfChunksAmax(k.b, k.loc, raw), groupStart);
      });
    } else if (dynamic) {
      eachGroup([&](Value groupStart) {
        SmallVector<Value> amax;
        for (int64_t i = 0; i < chunks; ++i)
          amax.push_back(
              maxMagnitude(zeros(), read(elementAt(groupStart, i))));
        storeDynamicScale(combineAsTree(amax,
                                        [&](Value x, Value y) -> Value {
                                          return arith::MaxNumFOp::create(
                                              k.b, k.loc, x, y);
                                        }),
                          groupStart);
      });
    }
    // fp8 codes of up to 4 chunks go out as one vector (packFp8CodeWords).
    bool packs = width > 1 && isa<FloatType>(params.elementType);
    eachGroup([&](Value groupStart) {
      Value scale = loadScale(groupStart);
      if (packs)
        return emitPackedFp8Codes(
            k, params.elementType, cache, at, scale, chunks,
            [&](int64_t i) { return elementAt(groupStart, i); }, read);
      for (int64_t i = 0; i < chunks; ++i) {
        Value element = elementAt(groupStart, i);
        quantizeAndStore(read(element), scale, element);
      }
    });
    return;
  }
  eachGroup([&](Value groupStart) {
    Value groupEnd = k.add(groupStart, k.index(group));
    Value scale;
    if (dynamic) {
      Value amax = k.forLoop(groupStart, groupEnd, step, {zeros()},
                             [&](Value element, ValueRange carried) {
        return SmallVector<Value>{maxMagnitude(carried[0], read(element))};
      })[0];
      scale = storeDynamicScale(amax, groupStart);
    } else {
      scale = loadScale(groupStart);
    }
    k.forLoop(groupStart, groupEnd, step, [&](Value element) {
      quantizeAndStore(read(element), scale, element);
    });
  });
}

namespace {

/// Base of the data-movement patterns: knows the vector size.
template <typename OpTy>
struct DataMovementPattern : OpRewritePattern<OpTy> {
  DataMovementPattern(MLIRContext *ctx, int64_t vectorBytes, bool checked)
      : OpRewritePattern<OpTy>(ctx), vectorBytes(vectorBytes),
        checked(checked) {}
  int64_t vectorBytes;
  bool checked;
};

/// store_ragged and gather_ragged: for each sequence b, for each of its rows
/// r, the token row at position `base(b) + r - offsets[b]` moves between
/// `rows[r]` and the cache, where base is cache_length(b) for store_ragged
/// and 0 for gather_ragged.
template <typename OpTy>
struct RaggedCopyToSCF : DataMovementPattern<OpTy> {
  using DataMovementPattern<OpTy>::DataMovementPattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    RaggedCopy copy = RaggedCopy::get(op);
    KernelBuilder k{rewriter, getKernelLoc(op)};
    auto params = KVCacheParams::get(copy.cache.getType());
    auto rowsType = cast<MemRefType>(copy.rows.getType());
    // Chunks of the rows' element type: float rows of a gather from a
    // quantized cache dequantize (page_load with a float result), float
    // rows of a store quantize, each chunk within one scale group.
    int64_t width = getRaggedChunkWidth(params, rowsType, this->vectorBytes);
    if (copy.rope)
      width = RopeEmitter::fitWidth(width, copy.rope.rotaryDims,
                                    params.headSize);
    bool converts = rowsType.getElementType() != params.elementType;
    Value zero = k.index(0), one = k.index(1);
    Value numSequences = k.numSequences(copy.offsets);
    // A quantizing store with a rope clause rotates each row once into its
    // sequence's scratch row (in L1 when it is quantized), then quantizes
    // that (no stack allocation in a parallel loop's body).
    Value scratch;
    if (copy.rope && converts)
      scratch = memref::AllocOp::create(
          k.b, k.loc,
          MemRefType::get({ShapedType::kDynamic, params.numHeads,
                           params.headSize},
                          rowsType.getElementType()),
          ValueRange{numSequences}, k.b.getI64IntegerAttr(64));
    // Sequences are independent (each writes its own token rows): the
    // outer loop is parallel.
    k.parallelLoop(zero, numSequences, [&](Value batch) {
      Value first = k.loadOffset(copy.offsets, batch);
      Value end = k.loadOffset(copy.offsets, k.add(batch, one));
      Value base = copy.isStore()
                       ? k.writeCacheLength(copy.cache, batch)
                       : zero;
      k.forLoop(first, end, one, [&](Value row) {
        Value token = k.rowPosition(base, row, first);
        Value page, slot;
        std::tie(page, slot) =
            k.lookup(copy.cache, batch, token, copy.isStore());
        if (copy.rope)
          return emitRotatedRowStore(k, op, copy, scratch, batch, width,
                                     {row, page, slot, Value(), Value()},
                                     token);
        // Float rows into a cache with scales quantize.
        if (converts && copy.isStore()) {
          emitQuantizingRowStore(k, params, copy.cache, copy.rows, row,
                                 {row, page, slot, Value(), Value()}, width,
                                 this->checked);
          return;
        }
        emitRowLoops(k, params, width, [&](Value head, Value element) {
          k.copyRowChunk(copy.cache, copy.rows,
                         {row, page, slot, head, element}, width,
                         copy.direction);
        });
      });
    });
    if (scratch)
      memref::DeallocOp::create(k.b, k.loc, scratch);
    rewriter.eraseOp(op);
    return success();
  }

  /// Stores row `at.row`, whose storage position is `token`, rotated by
  /// the rope clause (RopeEmitter's loops, as rope_ragged's: each pair
  /// chunk's cos and sin read once for every head): a float row straight
  /// into the cache, a quantized one through row `scratchRow` of
  /// `scratch`.
  void emitRotatedRowStore(KernelBuilder &k, OpTy op, const RaggedCopy &copy,
                           Value scratch, Value scratchRow, int64_t width,
                           RowChunkPosition at, Value token) const {
    KVCacheParams params = KVCacheParams::get(copy.cache.getType());
    Value position = RopeEmitter::rotaryPosition(
        k, op, copy.rope.cosSin, copy.rope.positions, at.row, token,
        this->checked);
    RopeEmitter rope(k, copy.rope, params.headSize, width);
    if (!scratch) {
      rope.emitRowLoops(
          params.numHeads,
          [&](Value head, Value element) {
            at.head = head;
            at.element = element;
            k.copyRowChunk(copy.cache, copy.rows, at, width,
                           RowCopyDirection::ToCache);
          },
          rope.stored(copy.rows, at.row, copy.cache, at.page, at.slot),
          copy.rope.cosSin, position);
      return;
    }
    rope.emitRowLoops(
        params.numHeads,
        [&](Value head, Value element) {
          rope.copyChunk(copy.rows, scratch, at.row, head, element,
                         scratchRow);
        },
        rope.queries(copy.rows, scratch, at.row, scratchRow),
        copy.rope.cosSin, position);
    emitQuantizingRowStore(k, params, copy.cache, scratch, scratchRow, at,
                           width, this->checked);
  }
};

/// The scales of (`slot`, every head) of page `src` of `cache` to page
/// `dst`: one per head (`token_head`) or per group of G (`block<G>`).
static void copyPageScales(KernelBuilder &k, const KVCacheParams &params,
                           Value cache, Value src, Value dst, Value slot) {
  int64_t group = params.scales.groupSize(params.headSize);
  k.forLoop(k.index(0), k.index(params.numHeads), k.index(1), [&](Value head) {
    k.forLoop(k.index(0), k.index(params.headSize), k.index(group),
              [&](Value element) {
                Value scale = PageLoadScaleOp::create(k.b, k.loc, cache, src,
                                                      slot, head, element);
                PageStoreScaleOp::create(k.b, k.loc, scale, cache, dst, slot,
                                         head, element);
              });
  });
}

/// copy_pages: for each pair, each layer, K (and V): the page's
/// [page_size, num_heads, head_size] block, chunk by chunk.
struct CopyPagesToSCF : DataMovementPattern<CopyPagesOp> {
  using DataMovementPattern::DataMovementPattern;
  LogicalResult matchAndRewrite(CopyPagesOp op,
                                PatternRewriter &rewriter) const override {
    KernelBuilder k{rewriter, getKernelLoc(op)};
    Value collection = op.getCollection();
    auto params = KVCacheParams::get(collection.getType());
    int64_t width = getRowVectorWidth(params, /*rows=*/nullptr, vectorBytes);
    Value zero = k.index(0), one = k.index(1);
    Value pageSize = k.index(params.pageSize);
    Value pairs = op.getPairs();
    Value numPairs = memref::DimOp::create(rewriter, k.loc, pairs, 0);
    Value numLayers = NumLayersOp::create(rewriter, k.loc, collection);
    // Pairs are independent (docs: distinct destinations): parallel.
    k.parallelLoop(zero, numPairs, [&](Value pair) {
      Value src = k.loadOffset(pairs, ValueRange{pair, zero});
      Value dst = k.loadOffset(pairs, ValueRange{pair, one});
      k.forLoop(zero, numLayers, one, [&](Value layer) {
        SmallVector<Value> caches = {
            GetKeyCacheOp::create(k.b, k.loc, collection, layer)};
        if (!params.mla)
          caches.push_back(GetValueCacheOp::create(k.b, k.loc, collection, layer));
        for (Value cache : caches)
          k.forLoop(zero, pageSize, one, [&](Value slot) {
            emitRowLoops(k, params, width, [&](Value head, Value element) {
              k.copyPageChunk(cache, src, dst, slot, head, element, width);
            });
            // Per-page scales (token_head, block<G>) move with the page:
            // one per head, or per group of G elements.
            if (params.scales.isPaged())
              copyPageScales(k, params, cache, src, dst, slot);
          });
      });
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// Expands the math.tanh ops the lowering marked (kApproximateAttrName) to
/// MLIR's f32 polynomial, and only those: a user's own math.tanh keeps its
/// libm call.
static void approximateMarkedTanh(Operation *root) {
  SmallVector<Operation *> marked;
  root->walk([&](math::TanhOp op) {
    if (op->hasAttr(kApproximateAttrName))
      marked.push_back(op);
  });
  if (marked.empty())
    return;
  RewritePatternSet patterns(root->getContext());
  populateMathPolynomialApproximationPatterns(
      patterns, [](StringRef name) {
        return name == math::TanhOp::getOperationName();
      });
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  (void)applyOpPatternsGreedily(marked, std::move(patterns), config);
}

struct ConvertKVCacheToSCFPass
    : impl::ConvertKVCacheToSCFBase<ConvertKVCacheToSCFPass> {
  using Base::Base;
  void runOnOperation() override {
    if (vectorBytes < 1 || !llvm::isPowerOf2_64(vectorBytes)) {
      getOperation()->emitError("convert-kvcache-to-scf: vector-bytes must "
                                "be a power of two, got ")
          << static_cast<int64_t>(vectorBytes);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    if (threads < 0) {
      getOperation()->emitError("convert-kvcache-to-scf: threads must be 0 "
                                "(the OpenMP runtime's count) or more, got ")
          << static_cast<int64_t>(threads);
      return signalPassFailure();
    }
    FailureOr<bool> bf16Dot = hasBF16Dot();
    if (failed(bf16Dot))
      return signalPassFailure();
    populateKVCacheToSCFConversionPatterns(patterns, vectorBytes, checked,
                                           threads, *bf16Dot);
    if (failed(applyKernelLoweringPatterns(getOperation(), std::move(patterns),
                                           getArgument())))
      return signalPassFailure();
    approximateMarkedTanh(getOperation());
  }

  /// Whether `cpu-features` names AVX512-BF16: "host" asks LLVM for this
  /// machine's features, else a comma-separated list of LLVM feature names
  /// each with + or - (the last mention of a feature counts).
  FailureOr<bool> hasBF16Dot() {
    StringRef features = StringRef(cpuFeatures).trim();
    if (features.empty())
      return false;
    if (features == "host") {
      llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
      auto found = host.find("avx512bf16");
      return found != host.end() && found->second;
    }
    SmallVector<StringRef> names;
    features.split(names, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
    bool enabled = false;
    for (StringRef name : names) {
      name = name.trim();
      if (name.size() < 2 || (name.front() != '+' && name.front() != '-')) {
        getOperation()->emitError("convert-kvcache-to-scf: cpu-features takes "
                                  "'host' or LLVM feature names each with + "
                                  "or - (e.g. +avx512bf16), got '")
            << name << "'";
        return failure();
      }
      if (name.drop_front() == "avx512bf16")
        enabled = name.front() == '+';
    }
    return enabled;
  }
};

} // namespace

void mlir::kvcache::populateKVCacheToSCFConversionPatterns(
    RewritePatternSet &patterns, int64_t vectorBytes, bool checked,
    int64_t threads, bool bf16Dot) {
  patterns.add<RaggedCopyToSCF<StoreRaggedOp>, RaggedCopyToSCF<GatherRaggedOp>,
               CopyPagesToSCF>(
      patterns.getContext(), vectorBytes, checked);
  populateAttentionToSCFConversionPatterns(patterns, checked, threads, bf16Dot);
  populateMergeStatesToSCFConversionPatterns(patterns);
  populateRopeToSCFConversionPatterns(patterns, vectorBytes, checked);
}
