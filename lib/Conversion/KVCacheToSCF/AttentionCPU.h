//===- AttentionCPU.h - what the CPU attention kernels share ----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// The attention ops (attention_ragged, mla_attention_ragged: through
// AttentionOpInterface) on the CPU have three kernels, chosen per op at
// compile time and per row tile at run time (docs/Design.md, "CPU attention"): the
// per-row key loop (AttentionToSCF.cpp), its decode kernel in blocks of
// keys (AttentionDecodeToSCF.cpp) and the register-blocked row-tile
// kernel (AttentionTilesToSCF.cpp). What they read and write the same way
// is here: head rows as f32, the keys a row sees, and the output row.
//
//===----------------------------------------------------------------------===//

#ifndef KVCACHE_LIB_CONVERSION_KVCACHETOSCF_ATTENTIONCPU_H
#define KVCACHE_LIB_CONVERSION_KVCACHETOSCF_ATTENTIONCPU_H

#include "../KernelCommon/AttentionClauses.h"

namespace mlir::kvcache {

/// f32 lanes of one 64-byte vector register: the width of the partial dot
/// products of the per-row loop and of the row-tile kernel's vectors.
constexpr int64_t kDotLanes = 16;

/// The unit attribute of the `math.tanh` ops the row-tile kernel's soft cap
/// emits on vectors: convert-kvcache-to-scf expands them to MLIR's f32
/// polynomial (a few ulp, vectorised) instead of one libm call per lane.
/// The per-row loop's scalar tanh stays a libm call.
constexpr llvm::StringLiteral kApproximateAttrName = "kvcache.approximate";

/// The lanes of the vectors `headSize` elements are read in: the largest
/// power of two of at most kDotLanes that divides it.
int64_t getDotLanes(int64_t headSize);

/// The head row (page, slot, head) of `cache` as `accType` (f32 x
/// head_size): widened from a float cache, or dequantized from a cache with
/// scales (page_load with an f32 result: `stored * scale`), one scale group
/// per load (a dequantizing vector lies within one group).
Value loadHeadRowAsF32(KernelBuilder &k, Value cache, Value page, Value slot,
                       Value head, VectorType accType);
/// The elements [element, element + width of `accType`) of that head row,
/// as loadHeadRowAsF32: a chunk within one scale group, or whole groups.
Value loadHeadChunkAsF32(KernelBuilder &k, Value cache, Value page,
                         Value slot, Value head, Value element,
                         VectorType accType);

/// Prefetches the head row (`token`, `head`) of sequence `batch` of `cache`
/// into the cache hierarchy, a 64-byte line at a time. A head row of a
/// token is num_heads * head_size elements from the next token's: the
/// hardware prefetchers, which do not cross 4 KiB pages, miss such strides.
void prefetchHeadRow(KernelBuilder &k, Value cache, Value batch, Value token,
                     Value head);

/// Loads every cache line of the rows of `tokens` tokens from `token` (one
/// tile of a page) of the KV heads [firstHead, firstHead + heads) of each
/// of `caches`, head after head, into a value an empty inline asm uses (so
/// the loads stay): a burst of independent loads that brings rows the
/// kernel reads next into the cache hierarchy. On the test machine, whose
/// memory latency is about 0.4 us, the decode kernel's blocks read ahead
/// this way took 0.6-0.7 of the time they took with prefetch instructions
/// of the same lines (docs/Design.md, "CPU attention"). The caches' head
/// rows are alike and whole 4-byte words (the decode kernel's heads are
/// multiples of 16 elements).
void loadRowsAhead(KernelBuilder &k, ArrayRef<Value> caches, Value batch,
                   Value token, int64_t tokens, Value firstHead, Value heads);

/// The block's scores of each of H heads (a power of two, H = the size
/// of `groups`) as one vector of kDotLanes keys, from the H group vectors
/// of the decode kernel's dotsOfHeadsTogether (group g: the keys g x 16 /
/// H ... in lanes H x key + head): a transpose by shuffles.
SmallVector<Value> transposeGroupScores(KernelBuilder &k,
                                        ArrayRef<Value> groups);

/// bf16 elements of one AVX512-BF16 dot product (vdpbf16ps: kDotLanes
/// lanes of f32, each the sum of 2 products).
constexpr int64_t kBF16DotElements = 2 * kDotLanes;

/// x . y (vectors of bf16, a multiple of kBF16DotElements) as kDotLanes
/// partial sums: one vdpbf16ps per kBF16DotElements elements, lane i
/// summing the products of pair i of each piece (exact in f32, each added
/// with one rounding; the instruction takes bf16 subnormals as zero). Only
/// for a target with AVX512-BF16.
Value dotBF16Pairs(KernelBuilder &k, Value x, Value y);

/// x . y (vectors of head_size f32) as `lanes` partial sums: the product of
/// the first `lanes` elements, then a fused multiply-add per further chunk.
Value partialDot(KernelBuilder &k, Value x, Value y, int64_t lanes);
/// The vectors `pieces` (a power of two of them, of one width) end to end,
/// by a tree of shuffles of pairs.
Value concatenateVectors(KernelBuilder &k, SmallVector<Value> pieces);

/// The query heads of a KV head in `op` (its GQA group).
int64_t getQueryGroup(AttentionOpInterface op);

/// Two vectors `x` and `y` (null: `x` alone) of partial sums in segments of
/// `segment` lanes, each the partial sums of one dot product: their
/// segments, x's then y's, each halved by adding its second half to its
/// first (one shuffle of each half and one add for the pair).
Value halveSegments(KernelBuilder &k, Value x, Value y, int64_t segment);
/// The dot products whose `segment` partial sums (partialDot) are `sums`,
/// one vector per key, as one vector in key order (sums.size() a power of
/// two): a tree that halves the segments of two keys' sums per shuffle pair
/// instead of one horizontal reduction per key.
Value reducePartialDots(KernelBuilder &k, SmallVector<Value> sums,
                        int64_t segment);

/// The keys [begin, end) a row at `position` sees: [0, position] by
/// default, from the window's or the chunk's start, or the `cached` tokens
/// (noncausal).
std::pair<Value, Value> getKeyRange(KernelBuilder &k, AttentionOpInterface op,
                                    Value position, Value cached);

/// Writes row `row`, head `head` of out from `state` (0 for a row with no
/// keys and no sink) and of lse (-inf when empty).
void writeAttentionRow(KernelBuilder &k, AttentionClauses &clauses,
                       OnlineSoftmax &softmax, AttentionOpInterface op,
                       const SoftmaxState &state, Value row, Value head);

/// The register-blocked kernel of a tile of query rows (the (row, query
/// head) pairs of one sequence and one KV head as the rows of a small
/// matrix multiplication).
class AttentionRowTiles {
public:
  /// Whether the row-tile kernel takes `op`; otherwise every row takes the
  /// per-row loop. It does not take a GQA group of more than kTileLanes
  /// query heads.
  static bool canLower(AttentionOpInterface op);
  /// Query rows of one tile: kTileLanes / group (at least 1).
  static int64_t getTileRows(AttentionOpInterface op);
  /// Whether a tile of `rows` query rows (an index) takes the row-tile
  /// kernel at run time: it fills at least one vector of lanes.
  static Value isWorthTiling(KernelBuilder &k, AttentionOpInterface op,
                             Value rows);
  /// Emits the kernel for `rows` query rows from ragged row `firstRow` of
  /// sequence `batch`, whose first row is `sequenceRow` and whose cache held
  /// `cached` tokens before them, and KV head `kvHead` (`checked`: a rope
  /// clause's rotary positions checked against its table).
  static void emit(KernelBuilder &k, AttentionOpInterface op, Value batch,
                   Value kvHead, Value firstRow, Value rows, Value sequenceRow,
                   Value cached, bool checked);
};

/// The decode kernel (AttentionDecodeToSCF.cpp): one pass over the keys of
/// a query row for the query heads of some KV heads, in blocks of
/// kDotLanes keys; per block the KV heads in turn (token-major: a block's
/// K and V rows of all the KV heads of a task are read together), each K
/// and V row converted once for the query heads of its group, the block's
/// scores of a query head one vector.
class AttentionDecodeBlocks {
public:
  /// Whether the decode kernel takes `op`'s per-row passes (otherwise the
  /// per-row loop's KeyPass does): head sizes (K and V) that are multiples
  /// of kDotLanes, scale groups within or made of such chunks.
  static bool canLower(AttentionOpInterface op);
  /// The query row of a query head (scaled, f32; or as q stores it, not
  /// rotated or scaled), its softmax state before the first key, and what
  /// is done with its final state.
  using QueryFn = function_ref<Value(Value head)>;
  using InitFn = function_ref<SoftmaxState(Value head)>;
  using WriteFn = function_ref<void(const SoftmaxState &, Value head)>;
  /// Emits the pass of a row of sequence `batch` at `position` over the
  /// keys `keyRange` for the query heads of the `kvHeads` KV heads from
  /// `firstKVHead` (indices), `headsPerPass` query heads of a group at a
  /// time sharing each K and V row. `bf16Dot`: the target has
  /// AVX512-BF16, whose dot product of bf16 pairs then takes q . K of a
  /// bf16 cache and q without a rope clause (`storedQuery` gives q).
  static void emit(KernelBuilder &k, AttentionOpInterface op,
                   AttentionClauses &clauses, OnlineSoftmax &softmax,
                   Value batch, Value firstKVHead, Value kvHeads,
                   Value position, std::pair<Value, Value> keyRange,
                   int64_t headsPerPass, QueryFn query, QueryFn storedQuery,
                   bool bf16Dot, InitFn init, WriteFn write);
};

} // namespace mlir::kvcache

#endif // KVCACHE_LIB_CONVERSION_KVCACHETOSCF_ATTENTIONCPU_H
