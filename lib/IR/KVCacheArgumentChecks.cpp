//===- KVCacheArgumentChecks.cpp - the ops' argument checks -----*- C++ -*-===//
//
// Part of the kvcache-mlir project.
//
// ArgumentChecksOpInterface of the kernel ops, of get_key_cache /
// get_value_cache and of the collection constructors: the rules of
// docs/Contract.md section 5.1 as IR (kvcache access ops, arith, scf,
// memref). Each phase sits behind a guard of the reporter, so that a check
// reads only what the checks before it made sure is in bounds: offsets
// before what they index, the batch before the metadata of its sequences, a
// sequence's capacity before its pages. kvcache-generate-argument-checks
// calls them.
//
//===----------------------------------------------------------------------===//

#include "VerifierHelpers.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/CastInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::kvcache;

KVCheckReporter::~KVCheckReporter() = default;

namespace {

/// A value the checks read, with the name of the op's operand and how the
/// messages quote it: `'values' (function argument 6)` when it is (a cast
/// of) an argument of the function, so that a caller can tell which of its
/// values is wrong.
struct Named {
  std::string name;
  Value value;
  std::string quoted;
};

/// The operand `name` holding `value`, quoted for a message.
static std::string quoteOperand(StringRef name, Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<CastOpInterface>(def) || def->getNumOperands() != 1)
      break;
    value = def->getOperand(0);
  }
  std::string quoted = ("'" + name + "'").str();
  auto argument = dyn_cast<BlockArgument>(value);
  if (!argument || !argument.getOwner()->isEntryBlock() ||
      !isa<FunctionOpInterface>(argument.getOwner()->getParentOp()))
    return quoted;
  return quoted + " (function argument " +
         std::to_string(argument.getArgNumber()) + ")";
}

/// The vocabulary of the checks: unsigned index arithmetic on the values
/// the mapping gives for the op's operands, loops, and the reporter's
/// checks and guards.
class Checker {
public:
  Checker(OpBuilder &b, Operation *op, const IRMapping &operands,
          KVCheckReporter &reporter)
      : b(b), loc(op->getLoc()), operands(operands), reporter(reporter) {}

  /// The value the checks read for the op's operand `operand`.
  Named get(StringRef name, Value operand) const {
    Value value = operands.lookupOrDefault(operand);
    return {name.str(), value, quoteOperand(name, value)};
  }
  Value get(Value operand) const { return operands.lookupOrDefault(operand); }

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  Value dim(Value memref, int64_t dim) {
    return memref::DimOp::create(b, loc, memref, dim);
  }
  /// The i32 `memref[indices]` as an index (unsigned).
  Value load(Value memref, ValueRange indices) {
    Value value = memref::LoadOp::create(b, loc, memref, indices);
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), value);
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divu(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value maxu(Value x, Value y) { return arith::MaxUIOp::create(b, loc, x, y); }
  /// `x - y`, or 0 when `y > x`.
  Value subClamped(Value x, Value y) {
    return sub(x, arith::MinUIOp::create(b, loc, x, y));
  }
  Value cmp(arith::CmpIPredicate predicate, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, predicate, x, y);
  }
  Value ult(Value x, Value y) { return cmp(arith::CmpIPredicate::ult, x, y); }
  Value ne(Value x, Value y) { return cmp(arith::CmpIPredicate::ne, x, y); }
  Value andi(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value select(Value condition, Value x, Value y) {
    return arith::SelectOp::create(b, loc, condition, x, y);
  }

  /// Fails when the i1 `failed` holds, with the message `format` (one
  /// `%lld` per value of `values`).
  void fail(Value failed, const Twine &format, ValueRange values) {
    reporter.check(b, loc, failed, format.str(), values);
  }
  /// Continues where every check so far held.
  void guard() { reporter.guard(b, loc); }

  /// An scf.for over [lower, upper) by `step` carrying `inits`: `body`
  /// takes the induction variable and the carried values and returns the
  /// next ones, computed before any guard it emits. The loop's results.
  ValueRange loop(Value lower, Value upper, Value step, ValueRange inits,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto forOp = scf::ForOp::create(
        b, loc, lower, upper, step, inits,
        [&](OpBuilder &, Location, Value iv, ValueRange carried) {
          SmallVector<Value> next;
          {
            OpBuilder::InsertionGuard inner(b);
            next = body(iv, carried);
          }
          scf::YieldOp::create(b, loc, next);
        });
    return forOp.getResults();
  }

  OpBuilder &b;
  Location loc;

private:
  const IRMapping &operands;
  KVCheckReporter &reporter;
};

} // namespace

//===----------------------------------------------------------------------===//
// Ragged batches
//===----------------------------------------------------------------------===//

/// Checks ragged offsets (at least one entry, never decreasing) and that
/// every memref of `rows` has at least `offsets[batch]` rows. Rows before
/// `offsets[0]` and from `offsets[batch]` on are neither read nor written
/// (the contract allows them: callers keep sentinel rows there), so the
/// rules ask for no more. Returns `batch`; the insertion point is left
/// where all of it holds.
static Value checkOffsets(Checker &c, const Named &offsets,
                          ArrayRef<Named> rows) {
  const std::string &name = offsets.name;
  Value zero = c.index(0), one = c.index(1);
  Value size = c.dim(offsets.value, 0);
  c.fail(c.cmp(arith::CmpIPredicate::eq, size, zero),
         offsets.quoted + " has %lld entries, but needs at least 1 (batch + 1)",
         size);
  c.guard();
  Value batch = c.sub(size, one);
  c.loop(zero, batch, one, {}, [&](Value b, ValueRange) {
    Value next = c.add(b, one);
    Value start = c.load(offsets.value, b);
    Value end = c.load(offsets.value, next);
    c.fail(c.ult(end, start),
           name + "[%lld] is %lld, below " + name +
               "[%lld] = %lld: offsets never decrease",
           {next, end, b, start});
    return SmallVector<Value>();
  });
  c.guard();
  Value total = c.load(offsets.value, batch);
  for (const Named &memref : rows) {
    Value count = c.dim(memref.value, 0);
    c.fail(c.ult(count, total),
           memref.quoted + " has %lld rows, but " + name +
               "[%lld] (the end of the batch's rows) is %lld",
           {count, batch, total});
  }
  c.guard();
  return batch;
}

namespace {

/// The token positions of one sequence an op needs: `needed` must fit the
/// capacity; the op reads or writes the pages of [first, touchedEnd).
/// `what` says where `needed` comes from in the message (with its values).
struct SequenceTokens {
  Value needed, first, touchedEnd;
  std::string what;
  SmallVector<Value, 2> whatValues;
};

/// The largest rows, needed positions and capacity of a batch's sequences.
struct BatchMaxima {
  Value rows, needed, capacity;
};

using TokensFn =
    function_ref<SequenceTokens(Checker &c, Value cache, Value batch,
                                Value rows)>;

} // namespace

/// Whether `type` is of the paged or continuous kind, whose metadata has
/// MAX's names (the messages use them).
static bool hasMAXMetadata(Type type) {
  return isa<PagedCollectionType, PagedCacheType, ContinuousCollectionType,
             ContinuousCacheType>(type);
}

/// What holds a sequence's pages, for a message.
static std::string describeTable(Type type) {
  return hasMAXMetadata(type) ? "lookup_table" : "the page table";
}

/// What says how many sequences there are, for a message.
static std::string describeSequences(Type type) {
  return hasMAXMetadata(type) ? "the rows of cache_lengths and lookup_table"
                              : "the sequences of its metadata";
}

/// What gives a sequence's capacity, for a message.
static std::string describeCapacity(Type type) {
  if (isa<PagedCollectionType, PagedCacheType>(type))
    return "lookup_table columns x page_size";
  if (isa<ContinuousCollectionType, ContinuousCacheType>(type))
    return "block_tokens";
  return "its capacity";
}

/// Whether the kind of `type` (a collection or layer cache) implements the
/// sequence hooks; its page size.
static std::pair<bool, int64_t> getSequenceShape(Type type) {
  if (auto collection = dyn_cast<KVCollectionTypeInterface>(type))
    return {collection.describesSequences(), collection.getPageSize()};
  auto cache = cast<KVCacheTypeInterface>(type);
  return {cache.describesSequences(), cache.getPageSize()};
}

/// Checks that every page sequence `batch` touches in [first, end) is below
/// `numPages`: one lookup per page (per block without static pages).
static void checkPages(Checker &c, const Named &cache, Value batch,
                       Value first, Value end, int64_t pageSize,
                       Value numPages) {
  Value start = first, step;
  if (ShapedType::isDynamic(pageSize)) {
    step = c.maxu(c.subClamped(end, first), c.index(1));
  } else {
    step = c.index(pageSize);
    start = c.mul(c.divu(first, step), step);
  }
  c.loop(start, end, step, {}, [&](Value position, ValueRange) {
    Value token = c.maxu(position, first);
    auto lookup = LookupOp::create(c.b, c.loc, cache.value, batch, token,
                                   /*read_only=*/true, /*unchecked=*/true);
    c.fail(c.cmp(arith::CmpIPredicate::uge, lookup.getPage(), numPages),
           "token %lld of sequence %lld is on page %lld (" +
               describeTable(cache.value.getType()) + " of " + cache.quoted +
               "), but num_pages is %lld",
           {token, batch, lookup.getPage(), numPages});
    return SmallVector<Value>();
  });
}

/// Checks a ragged batch of `batch` sequences against the cache `cache`:
/// the batch fits its sequences, each sequence's tokens fit its capacity,
/// and every page the op touches is below num_pages. Nothing when the kind
/// does not describe its sequences (null maxima).
static BatchMaxima checkSequences(Checker &c, const Named &cache,
                                  const Named &offsets, Value batch,
                                  TokensFn tokens) {
  std::pair<bool, int64_t> shape = getSequenceShape(cache.value.getType());
  if (!shape.first)
    return {};
  int64_t pageSize = shape.second;
  Value sequences = NumSequencesOp::create(c.b, c.loc, cache.value);
  c.fail(c.ult(sequences, batch),
         offsets.quoted + " describes %lld sequences, but " + cache.quoted +
             " has %lld (" + describeSequences(cache.value.getType()) +
             ": kvcache.num_sequences)",
         {batch, sequences});
  c.guard();
  Value numPages = NumPagesOp::create(c.b, c.loc, cache.value);
  Value zero = c.index(0), one = c.index(1);
  ValueRange maxima = c.loop(
      zero, batch, one, {zero, zero, zero},
      [&](Value b, ValueRange carried) {
        Value rows = c.sub(c.load(offsets.value, c.add(b, one)),
                           c.load(offsets.value, b));
        SequenceTokens t = tokens(c, cache.value, b, rows);
        Value capacity = CapacityOp::create(c.b, c.loc, cache.value, b);
        SmallVector<Value> values = {b, t.needed};
        llvm::append_range(values, t.whatValues);
        values.push_back(capacity);
        c.fail(c.ult(capacity, t.needed),
               "sequence %lld needs %lld token positions (" + t.what +
                   "), but " + cache.quoted + " holds %lld (" +
                   describeCapacity(cache.value.getType()) +
                   ": kvcache.capacity)",
               values);
        SmallVector<Value> next = {c.maxu(carried[0], rows),
                                   c.maxu(carried[1], t.needed),
                                   c.maxu(carried[2], capacity)};
        c.guard();
        checkPages(c, cache, b, t.first, t.touchedEnd, pageSize, numPages);
        return next;
      });
  return {maxima[0], maxima[1], maxima[2]};
}

//===----------------------------------------------------------------------===//
// Kernel ops
//===----------------------------------------------------------------------===//

/// The positions a step's rows are written at (store_ragged) or rotated at
/// (rope_ragged): [cache_length, cache_length + rows).
static SequenceTokens getStepTokens(Checker &c, Value cache, Value b,
                                    Value rows) {
  Value length = CacheLengthOp::create(c.b, c.loc, cache, b);
  Value end = c.add(length, rows);
  return SequenceTokens{
      end, length, end, "cache_lengths[%lld] = %lld + %lld rows",
      {b, length, rows}};
}

void StoreRaggedOp::emitArgumentChecks(OpBuilder &builder,
                                       const IRMapping &operands,
                                       KVCheckReporter &reporter) {
  Checker c(builder, *this, operands, reporter);
  Named offsets = c.get("row_offsets", getRowOffsets());
  SmallVector<Named> rows = {c.get("values", getValues())};
  if (getPositions())
    rows.push_back(c.get("positions", getPositions()));
  Value batch = checkOffsets(c, offsets, rows);
  checkSequences(c, c.get("cache", getCache()), offsets, batch,
                 getStepTokens);
}

void RopeRaggedOp::emitArgumentChecks(OpBuilder &builder,
                                      const IRMapping &operands,
                                      KVCheckReporter &reporter) {
  Checker c(builder, *this, operands, reporter);
  Named offsets = c.get("row_offsets", getRowOffsets());
  SmallVector<Named> rows = {c.get("q", getQ()), c.get("q_out", getQOut())};
  if (getPositions())
    rows.push_back(c.get("positions", getPositions()));
  Value batch = checkOffsets(c, offsets, rows);
  checkSequences(c, c.get("key_cache", getKeyCache()), offsets, batch,
                 getStepTokens);
}

void GatherRaggedOp::emitArgumentChecks(OpBuilder &builder,
                                        const IRMapping &operands,
                                        KVCheckReporter &reporter) {
  Checker c(builder, *this, operands, reporter);
  Named offsets = c.get("ctx_offsets", getCtxOffsets());
  Value batch = checkOffsets(c, offsets, {c.get("out", getOut())});
  checkSequences(c, c.get("cache", getCache()), offsets, batch,
                 [](Checker &c, Value, Value, Value rows) {
                   return SequenceTokens{
                       rows, c.index(0), rows, "its rows in ctx_offsets", {}};
                 });
}

/// The keys attention_ragged reads of one sequence: [0, cache_length) when
/// noncausal, else up to cache_length + rows from the first key the first
/// row sees (its window or chunk); none without rows.
static SequenceTokens getAttentionTokens(AttentionOpInterface op, Checker &c,
                                         Value cache, Value b, Value rows) {
  Value length = CacheLengthOp::create(c.b, c.loc, cache, b);
  Value zero = c.index(0);
  Value noRows = c.cmp(arith::CmpIPredicate::eq, rows, zero);
  if (op.getNoncausal())
    return SequenceTokens{length, zero, c.select(noRows, zero, length),
                          "cache_lengths[%lld] = %lld, noncausal",
                          {b, length}};
  Value end = c.add(length, rows);
  Value first = zero;
  if (std::optional<uint64_t> window = op.getWindow())
    first = c.subClamped(c.add(length, c.index(1)), c.index(*window));
  if (std::optional<uint64_t> chunk = op.getChunk()) {
    Value size = c.index(*chunk);
    first = c.mul(c.divu(length, size), size);
  }
  return SequenceTokens{end, first, c.select(noRows, first, end),
                        "cache_lengths[%lld] = %lld + %lld rows",
                        {b, length, rows}};
}

/// max_seq_length and max_cache_length of `cache` against the batch's
/// largest rows and positions; max_cache_length within the capacity.
static void checkMaxLengths(Checker &c, const Named &cache, Value batch,
                            const BatchMaxima &maxima) {
  c.guard();
  Value maxSeq = MaxSeqLengthOp::create(c.b, c.loc, cache.value);
  Value maxCache = MaxCacheLengthOp::create(c.b, c.loc, cache.value);
  c.fail(c.ult(maxSeq, maxima.rows),
         "max_seq_length of " + cache.quoted +
             " is %lld, but a sequence has %lld rows",
         {maxSeq, maxima.rows});
  c.fail(c.ult(maxCache, maxima.needed),
         "max_cache_length of " + cache.quoted +
             " is %lld, but a sequence needs %lld token positions",
         {maxCache, maxima.needed});
  c.fail(c.andi(c.ult(c.index(0), batch), c.ult(maxima.capacity, maxCache)),
         "max_cache_length of " + cache.quoted +
             " is %lld, but it holds %lld token positions per sequence at "
             "most (kvcache.capacity)",
         {maxCache, maxima.capacity});
}

void opverify::emitAttentionChecks(AttentionOpInterface op,
                                   OpBuilder &builder,
                                   const IRMapping &operands,
                                   KVCheckReporter &reporter) {
  Checker c(builder, op, operands, reporter);
  Named offsets = c.get("row_offsets", op.getRowOffsets());
  SmallVector<Named> rows = {c.get("q", op.getQ()), c.get("out", op.getOut())};
  if (op.getLse())
    rows.push_back(c.get("lse", op.getLse()));
  if (op.getPositions())
    rows.push_back(c.get("positions", op.getPositions()));
  Value batch = checkOffsets(c, offsets, rows);
  auto tokens = [&](Checker &c, Value cache, Value b, Value rows) {
    return getAttentionTokens(op, c, cache, b, rows);
  };
  Named keys = c.get("key_cache", op.getKeyCache());
  BatchMaxima maxima = checkSequences(c, keys, offsets, batch, tokens);
  if (op.getValueCache() != op.getKeyCache())
    checkSequences(c, c.get("value_cache", op.getValueCache()), offsets, batch,
                   tokens);
  if (maxima.rows)
    checkMaxLengths(c, keys, batch, maxima);
}

void CopyPagesOp::emitArgumentChecks(OpBuilder &builder,
                                     const IRMapping &operands,
                                     KVCheckReporter &reporter) {
  Checker c(builder, *this, operands, reporter);
  Named named = c.get("pairs", getPairs());
  Named collection = c.get("collection", getCollection());
  Value pairs = named.value;
  Value count = c.dim(pairs, 0);
  Value numPages = NumPagesOp::create(builder, c.loc, collection.value);
  Value zero = c.index(0), one = c.index(1);
  c.loop(zero, count, one, {}, [&](Value i, ValueRange) {
    for (auto [column, direction] : {std::pair{0, "from"}, {1, "to"}}) {
      Value page = c.load(pairs, {i, c.index(column)});
      c.fail(c.cmp(arith::CmpIPredicate::uge, page, numPages),
             named.quoted + ": pair %lld copies " + direction + " page %lld, but " +
                 collection.quoted + " has %lld pages (num_pages)",
             {i, page, numPages});
    }
    return SmallVector<Value>();
  });
  c.guard();
  // No page is the dst of two pairs, or the dst of one and the src of
  // another: marks[page] = 1 + the pair that copies to it, in a scratch
  // buffer of num_pages entries (with two pairs or more).
  auto twoOrMore = scf::IfOp::create(
      builder, c.loc, c.cmp(arith::CmpIPredicate::uge, count, c.index(2)),
      /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(twoOrMore.thenBlock()->getTerminator());
  Type i32 = builder.getI32Type();
  Value marks = memref::AllocOp::create(
      builder, c.loc, MemRefType::get({ShapedType::kDynamic}, i32),
      ValueRange{numPages});
  Value zero32 = arith::ConstantIntOp::create(builder, c.loc, i32, 0);
  c.loop(zero, numPages, one, {}, [&](Value page, ValueRange) {
    memref::StoreOp::create(builder, c.loc, zero32, marks, page);
    return SmallVector<Value>();
  });
  c.loop(zero, count, one, {}, [&](Value i, ValueRange) {
    Value dst = c.load(pairs, {i, one});
    Value mark = c.load(marks, dst);
    c.fail(c.ne(mark, zero), named.quoted + ": pairs %lld and %lld both copy to page %lld",
           {c.sub(mark, one), i, dst});
    Value next = arith::IndexCastOp::create(builder, c.loc, i32, c.add(i, one));
    memref::StoreOp::create(builder, c.loc, next, marks, dst);
    return SmallVector<Value>();
  });
  c.loop(zero, count, one, {}, [&](Value i, ValueRange) {
    Value src = c.load(pairs, {i, zero});
    Value mark = c.load(marks, src);
    c.fail(c.andi(c.ne(mark, zero), c.ne(mark, c.add(i, one))),
           named.quoted + ": page %lld is copied to by pair %lld and from by "
                          "pair %lld: pairs must not overlap",
           {src, c.sub(mark, one), i});
    return SmallVector<Value>();
  });
  memref::DeallocOp::create(builder, c.loc, marks);
}

void MergeStatesOp::emitArgumentChecks(OpBuilder &builder,
                                       const IRMapping &operands,
                                       KVCheckReporter &reporter) {
  Checker c(builder, *this, operands, reporter);
  Named out = c.get("out", getOut());
  Value rows = c.dim(out.value, 0);
  SmallVector<Named> others = {c.get("out_a", getOutA()),
                               c.get("lse_a", getLseA()),
                               c.get("out_b", getOutB()),
                               c.get("lse_b", getLseB())};
  if (getLse())
    others.push_back(c.get("lse", getLse()));
  for (const Named &other : others) {
    Value count = c.dim(other.value, 0);
    c.fail(c.ne(count, rows),
           other.quoted + " has %lld rows, but " + out.quoted + " has %lld",
           {count, rows});
  }
  // The outs have one type; a dynamic head size must agree at run time.
  if (!getOut().getType().isDynamicDim(2))
    return;
  Value headSize = c.dim(out.value, 2);
  for (const Named &other : {others[0], others[2]}) {
    Value size = c.dim(other.value, 2);
    c.fail(c.ne(size, headSize),
           other.quoted + " has head_size %lld (dim 2), but " +
               out.quoted + " has %lld",
           {size, headSize});
  }
}

//===----------------------------------------------------------------------===//
// Layer caches and collection constructors
//===----------------------------------------------------------------------===//

/// The layer index of get_key_cache / get_value_cache below num_layers.
template <typename OpTy>
static void checkLayer(OpTy op, OpBuilder &builder, const IRMapping &operands,
                       KVCheckReporter &reporter) {
  Checker c(builder, op, operands, reporter);
  Named layer = c.get("layer", op.getLayer());
  Named collection = c.get("collection", op.getCollection());
  Value layers = NumLayersOp::create(builder, c.loc, collection.value);
  c.fail(c.cmp(arith::CmpIPredicate::uge, layer.value, layers),
         layer.quoted + " is %lld, out of range: " + collection.quoted +
             " has %lld layers (num_layers)",
         {layer.value, layers});
}

void GetKeyCacheOp::emitArgumentChecks(OpBuilder &builder,
                                       const IRMapping &operands,
                                       KVCheckReporter &reporter) {
  checkLayer(*this, builder, operands, reporter);
}

void GetValueCacheOp::emitArgumentChecks(OpBuilder &builder,
                                         const IRMapping &operands,
                                         KVCheckReporter &reporter) {
  checkLayer(*this, builder, operands, reporter);
}

/// A quantized collection's scales: their dynamic dims equal those of
/// `blocks` (pages, layers and, without static pages, block_tokens), so
/// that every page and layer of the blocks has its scales.
static void checkScales(Operation *op, Value blocks, Value scales,
                        OpBuilder &builder, const IRMapping &operands,
                        KVCheckReporter &reporter) {
  if (!scales)
    return;
  Checker c(builder, op, operands, reporter);
  KVCacheParams params = KVCacheParams::get(op->getResult(0).getType());
  bool paged = params.hasStaticPages();
  // (dim of scales, dim of blocks, its name)
  SmallVector<std::tuple<int64_t, int64_t, StringRef>> dims;
  if (params.scales.getKind() == KVScales::Kind::Tensor) {
    dims.push_back({0, 2, "num_layers"});
  } else {
    dims.push_back({0, 0, paged ? "num_pages" : "num_blocks"});
    dims.push_back({2, 2, "num_layers"});
    if (!paged)
      dims.push_back({3, 3, "block_tokens"});
  }
  Named namedScales = c.get("scales", scales);
  Named namedBlocks = c.get("blocks", blocks);
  for (auto [scalesDim, blocksDim, name] : dims) {
    Value count = c.dim(namedScales.value, scalesDim);
    Value expected = c.dim(namedBlocks.value, blocksDim);
    c.fail(c.ne(count, expected),
           namedScales.quoted + " has %lld " + name + " (dim " +
               Twine(scalesDim) + "), but " + namedBlocks.quoted +
               " has %lld",
           {count, expected});
  }
}

void PagedCollectionOp::emitArgumentChecks(OpBuilder &builder,
                                           const IRMapping &operands,
                                           KVCheckReporter &reporter) {
  checkScales(*this, getBlocks(), getScales(), builder, operands, reporter);
}

void ContinuousCollectionOp::emitArgumentChecks(OpBuilder &builder,
                                                const IRMapping &operands,
                                                KVCheckReporter &reporter) {
  checkScales(*this, getBlocks(), getScales(), builder, operands, reporter);
}
