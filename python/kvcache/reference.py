"""A numpy model of the KV cache: docs/Contract.md sections 1 (layout,
lookups) and 3.3 (store_ragged, gather_ragged, copy_pages, attention_ragged),
for both kinds of collection: PagedCache (pages through a [batch, max_pages]
lookup table) and ContinuousCache (one block of token slots per sequence,
a [batch] lookup table).

Written from the contract alone, with no compiler code, so that compiled
kernels can be checked against it. The kernel functions never change their
inputs: they return new arrays.

    cache = reference.random_cache(config, cache_lengths=[5, 0], new_lengths=[1, 3])
    expected = reference.store_ragged(cache.key_cache(layer=0), new, row_offsets)
    # expected is the new `blocks`; cache.blocks is unchanged

Element types: f32 and f16 are numpy's float32 and float16; bf16 is stored as
uint16 bits (numpy has no bfloat16), f8E4M3FN and f8E5M2 as uint8 codes,
i8 as int8: `to_float32` and `from_float32` convert (the fp8 codec is
written here from the formats' bit fields: `fp8_values`, `fp8_encode`).
"""

import numpy as np

from .config import ELEMENT_TYPES

__all__ = ["CacheCollection", "CacheView", "ContinuousCache", "PagedCache",
           "attention_ragged", "copy_pages", "decode_step", "dequantize",
           "dynamic_scale", "fp8_encode", "fp8_values", "from_float32",
           "quantize",
           "gather_ragged", "random_cache", "random_rows", "row_offsets",
           "storage_dtype", "store_ragged", "to_float32"]


def storage_dtype(dtype):
    """The numpy dtype that stores elements of `dtype` ("f16", "bf16", ...)."""
    if dtype not in ELEMENT_TYPES:
        raise ValueError(f"unknown element type {dtype!r}")
    return np.dtype(ELEMENT_TYPES[dtype])


# The 8-bit float formats (docs/Contract.md 2.2): exponent and mantissa bits,
# exponent bias, and whether the all-ones exponent holds numbers (E4M3FN:
# only S.1111.111 is NaN, no infinities) or infinities and NaNs (E5M2, as
# IEEE 754).
FP8_FORMATS = {"f8E4M3FN": (4, 3, 7, False), "f8E5M2": (5, 2, 15, True)}
# The largest finite magnitude of each storage type (saturation bound).
MAX_FINITE = {"f8E4M3FN": 448.0, "f8E5M2": 57344.0, "i8": 127.0}


def fp8_values(dtype):
    """float64 [256]: the value of each code of an fp8 type (NaN for its NaN
    codes, +-inf for E5M2's infinities), decoded from the bit fields."""
    exponent_bits, mantissa_bits, bias, ieee = FP8_FORMATS[dtype]
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exponent = (codes >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = codes & ((1 << mantissa_bits) - 1)
    fraction = mantissa / float(1 << mantissa_bits)
    normal = np.ldexp(1.0 + fraction, exponent - bias)
    subnormal = np.ldexp(fraction, 1 - bias)
    values = sign * np.where(exponent == 0, subnormal, normal)
    top = exponent == (1 << exponent_bits) - 1
    if ieee:
        values = np.where(top & (mantissa == 0), sign * np.inf, values)
        values = np.where(top & (mantissa != 0), np.nan, values)
    else:
        values = np.where(top & (mantissa == (1 << mantissa_bits) - 1), np.nan,
                          values)
    return values


def fp8_encode(values, dtype):
    """float32/float64 values to fp8 codes (uint8): round to the nearest
    representable value, ties to the even code, then saturate to
    +-max_finite (+-inf included); the sign of zero kept; NaN to the type's
    NaN code with its sign (E4M3FN 0x7F, E5M2 0x7E)."""
    values = np.asarray(values, dtype=np.float64)
    table = fp8_values(dtype)
    # The non-negative finite codes in increasing order: 0x00 .. up to the
    # largest finite one (codes and values both increase).
    positive = [c for c in range(128) if np.isfinite(table[c])]
    magnitudes = table[positive]
    top = magnitudes[-1]
    magnitude = np.minimum(np.abs(np.nan_to_num(values, nan=0.0)), top)
    upper = np.searchsorted(magnitudes, magnitude)  # first >= magnitude
    upper = np.minimum(upper, len(magnitudes) - 1)
    lower = np.maximum(upper - 1, 0)
    below = magnitude - magnitudes[lower]
    above = magnitudes[upper] - magnitude
    codes = np.array(positive)
    pick_upper = (above < below) | ((above == below) & (codes[upper] % 2 == 0))
    pick_upper |= magnitudes[upper] == magnitude
    chosen = np.where(pick_upper, codes[upper], codes[lower])
    sign = np.signbit(values).astype(np.int64) << 7
    nan_code = 0x7F if dtype == "f8E4M3FN" else 0x7E
    result = np.where(np.isnan(values), nan_code, chosen) | sign
    return result.astype(np.uint8)


def i8_encode(values):
    """float values to int8: round half to even, saturate to +-127; NaN to
    0 (docs/Contract.md 2.2)."""
    values = np.asarray(values, dtype=np.float64)
    rounded = np.clip(np.round(np.nan_to_num(values, nan=0.0)), -127, 127)
    return rounded.astype(np.int8)


def to_float32(values, dtype):
    """Elements stored as `dtype` to float32 (exact): bf16 bits, fp8 codes,
    or int8 integers."""
    values = np.asarray(values)
    if dtype == "bf16":
        return (values.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dtype in ("f32", "f16"):
        return values.astype(np.float32)
    if dtype in FP8_FORMATS:
        return fp8_values(dtype)[values.astype(np.uint8)].astype(np.float32)
    if dtype == "i8":
        return values.astype(np.float32)
    raise ValueError(f"no conversion for {dtype!r}")


def from_float32(values, dtype):
    """float32 values rounded (to nearest even) to `dtype`'s storage; fp8
    and i8 saturate (fp8_encode, i8_encode)."""
    values = np.asarray(values, dtype=np.float32)
    if dtype == "bf16":
        bits = values.view(np.uint32).astype(np.int64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        nan = np.isnan(values)
        return np.where(nan, 0x7FC0, rounded & 0xFFFF).astype(np.uint16)
    if dtype in ("f32", "f16"):
        return values.astype(storage_dtype(dtype))
    if dtype in FP8_FORMATS:
        return fp8_encode(values, dtype)
    if dtype == "i8":
        return i8_encode(values)
    raise ValueError(f"no conversion for {dtype!r}")


def quantize(values, dtype, scale):
    """Codes of storage type `dtype` for float32 `values` at `scale`
    (docs/Contract.md 2.2): saturate(rne(value / scale)), the quotient the
    correctly rounded float32 division; fp8 codes as uint8, i8 as int8."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        quotient = np.asarray(values, np.float32) / np.float32(scale)
    if dtype == "i8":
        return i8_encode(quotient)
    return fp8_encode(quotient, dtype)


def dynamic_scale(values, dtype):
    """The scale store_ragged computes for one group of float32 `values`
    (token_head: a head's row; block<G>: G elements): amax / max_finite in
    float32, amax over the non-NaN magnitudes, 1 when amax is 0."""
    magnitudes = np.abs(np.asarray(values, np.float32))
    magnitudes = magnitudes[~np.isnan(magnitudes)]
    amax = np.float32(magnitudes.max()) if magnitudes.size else np.float32(0)
    if amax == 0:
        return np.float32(1)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.float32(amax / np.float32(MAX_FINITE[dtype]))


def dequantize(codes, dtype, scale):
    """float32 values of `codes` at `scale`: stored * scale in float32."""
    with np.errstate(over="ignore", invalid="ignore"):
        return to_float32(codes, dtype) * np.float32(scale)


class CacheCollection:
    """The five values of a collection (docs/Contract.md 1); PagedCache and
    ContinuousCache say how a token is found (`lookup`):

    blocks           [num_blocks, kv_dim, num_layers, tokens, num_heads, head_size]
                     (tokens: page_size or block_tokens)
    cache_lengths    [batch] int32: tokens of sequence b already cached
    lookup_table     int32, [batch, max_pages] or [batch] by kind
    max_seq_length   the step's largest number of new tokens
    max_cache_length the step's largest cache_length + new tokens

    `dtype` names the element type ("f32", "f16", "bf16"); `blocks` holds
    its storage (uint16 bits for bf16).
    """

    kind = None            # "paged" or "continuous", as CacheConfig.kind
    lookup_table_rank = None

    def __init__(self, blocks, cache_lengths, lookup_table, max_seq_length,
                 max_cache_length, dtype):
        self.blocks = blocks
        self.cache_lengths = np.asarray(cache_lengths, dtype=np.int32)
        self.lookup_table = np.asarray(lookup_table, dtype=np.int32)
        self.max_seq_length = int(max_seq_length)
        self.max_cache_length = int(max_cache_length)
        self.dtype = dtype
        if blocks.ndim != 6:
            raise ValueError(f"blocks must be 6-D, got shape {blocks.shape}")
        if blocks.dtype != storage_dtype(dtype):
            raise ValueError(f"blocks of {dtype} must be stored as "
                             f"{storage_dtype(dtype)}, got {blocks.dtype}")
        if self.lookup_table.ndim != self.lookup_table_rank:
            raise ValueError(f"the lookup_table of a {self.kind} cache is "
                             f"{self.lookup_table_rank}-D, got shape "
                             f"{self.lookup_table.shape}")

    @property
    def shape(self):
        return self.blocks.shape

    num_blocks = property(lambda self: self.blocks.shape[0])
    kv_dim = property(lambda self: self.blocks.shape[1])
    num_layers = property(lambda self: self.blocks.shape[2])
    num_heads = property(lambda self: self.blocks.shape[4])
    head_size = property(lambda self: self.blocks.shape[5])
    batch = property(lambda self: self.cache_lengths.shape[0])

    def arguments(self):
        """(blocks, cache_lengths, lookup_table, max_seq_length,
        max_cache_length): the operands of `kvcache.paged_collection` /
        `kvcache.continuous_collection`, the first five arguments of every
        builder function."""
        return (self.blocks, self.cache_lengths, self.lookup_table,
                self.max_seq_length, self.max_cache_length)

    def copy(self, blocks=None):
        """A deep copy, or one with `blocks` replaced."""
        return type(self)(self.blocks.copy() if blocks is None else blocks,
                          self.cache_lengths.copy(), self.lookup_table.copy(),
                          self.max_seq_length, self.max_cache_length,
                          self.dtype)

    def key_cache(self, layer):
        """Layer `layer`'s K cache (`kvcache.get_key_cache`)."""
        return CacheView(self, 0, layer)

    def value_cache(self, layer):
        """Layer `layer`'s V cache (`kvcache.get_value_cache`)."""
        if self.kv_dim != 2:
            raise ValueError("an mla cache has no value cache")
        return CacheView(self, 1, layer)

    def lookup(self, b, t):
        """`kvcache.lookup`: (block, slot) of token t of sequence b."""
        raise NotImplementedError


class PagedCache(CacheCollection):
    """A `!kvcache.paged_collection`: lookup_table [batch, max_pages] holds
    the physical page of logical page j of sequence b."""

    kind = "paged"
    lookup_table_rank = 2
    num_pages = property(lambda self: self.blocks.shape[0])
    page_size = property(lambda self: self.blocks.shape[3])

    def lookup(self, b, t):
        """`kvcache.lookup`: (page, slot) of token t of sequence b."""
        return int(self.lookup_table[b, t // self.page_size]), t % self.page_size


class ContinuousCache(CacheCollection):
    """A `!kvcache.continuous_collection` (continuous batching): sequence b
    owns the block `lookup_table[b]` (lookup_table is [batch]) and its token
    t sits in slot t of that block."""

    kind = "continuous"
    lookup_table_rank = 1
    block_tokens = property(lambda self: self.blocks.shape[3])

    def lookup(self, b, t):
        """`kvcache.lookup`: (block, slot) of token t of sequence b."""
        if not 0 <= t < self.block_tokens:
            raise IndexError(f"token {t} is outside the {self.block_tokens} "
                             "slots of a block")
        return int(self.lookup_table[b]), t


class CacheView:
    """One layer's K or V: a `!kvcache.paged_cache` or
    `!kvcache.continuous_cache` value."""

    def __init__(self, cache, kv, layer):
        if not 0 <= kv < cache.kv_dim:
            raise ValueError(f"kv={kv} out of range for kv_dim {cache.kv_dim}")
        if not 0 <= layer < cache.num_layers:
            raise ValueError(f"layer={layer} out of range for "
                             f"{cache.num_layers} layers")
        self.cache, self.kv, self.layer = cache, kv, layer

    def row(self, b, t, blocks=None):
        """The [num_heads, head_size] elements of token t of sequence b."""
        page, slot = self.cache.lookup(b, t)
        blocks = self.cache.blocks if blocks is None else blocks
        return blocks[page, self.kv, self.layer, slot]

    def load(self, b, h, t, d, width=1):
        """`kvcache.load %cache[b, h, t, d]`: `width` elements from d."""
        return self.row(b, t)[h, d:d + width]

    def tokens(self, b, count):
        """Tokens 0..count-1 of sequence b as float32 [count, H, D]."""
        rows = [self.row(b, t) for t in range(count)]
        shape = (0, self.cache.num_heads, self.cache.head_size)
        rows = np.stack(rows) if rows else np.zeros(shape, self.cache.blocks.dtype)
        return to_float32(rows, self.cache.dtype)

    def parameters(self):
        """(blocks, cache_lengths, lookup_table, max_seq_length,
        max_cache_length, kv, layer): what kvcache.abi packs."""
        c = self.cache
        return (c.blocks, c.cache_lengths, c.lookup_table, c.max_seq_length,
                c.max_cache_length, self.kv, self.layer)


def _ragged(offsets, batch):
    offsets = np.asarray(offsets).astype(np.int64)
    if offsets.shape[0] < batch + 1:
        raise ValueError(f"offsets need batch + 1 = {batch + 1} entries, got "
                         f"{offsets.shape[0]}")
    return [(b, int(offsets[b]), int(offsets[b + 1])) for b in range(batch)]


def store_ragged(view, new, row_offsets):
    """`kvcache.store_ragged`: the new `blocks`, where row r of sequence b
    (r in [row_offsets[b], row_offsets[b+1])) is written at token
    cache_length(b) + r - row_offsets[b]."""
    blocks = view.cache.blocks.copy()
    for b, begin, end in _ragged(row_offsets, view.cache.batch):
        for r in range(begin, end):
            t = int(view.cache.cache_lengths[b]) + r - begin
            view.row(b, t, blocks)[...] = new[r]
    return blocks


def gather_ragged(view, ctx_offsets, out):
    """`kvcache.gather_ragged`: a copy of `out` whose row r of sequence b
    (r in [ctx_offsets[b], ctx_offsets[b+1])) holds token r - ctx_offsets[b]."""
    out = np.array(out, copy=True)
    for b, begin, end in _ragged(ctx_offsets, view.cache.batch):
        for r in range(begin, end):
            out[r] = view.row(b, r - begin)
    return out


def copy_pages(cache, pairs):
    """`kvcache.copy_pages`: the new `blocks`, page dst = page src for each
    (src, dst) row of `pairs`, in every layer, K and V. A PagedCache only."""
    if not isinstance(cache, PagedCache):
        raise ValueError(f"copy_pages needs a cache with pages, got a "
                         f"{cache.kind} cache")
    blocks = cache.blocks.copy()
    for src, dst in np.asarray(pairs).reshape(-1, 2):
        blocks[dst] = cache.blocks[src]
    return blocks


def attention_ragged(q, key_view, value_view, row_offsets, out, scale):
    """`kvcache.attention_ragged`: a copy of `out` where query row r of
    sequence b, at position p = cache_length(b) + r - row_offsets[b], is
    softmax_j(scale * q[r, h] . K[b, j, h / G]) @ V[b, j, h / G] over
    j in [0, p], G = q_heads / kv_heads; computed in float64 from the stored
    values, rounded once to the element type. K/V must hold the step's rows."""
    cache = key_view.cache
    dtype = cache.dtype
    out = np.array(out, copy=True)
    q_heads = q.shape[1]
    group = q_heads // cache.num_heads
    scale = float(np.float32(scale))
    for b, begin, end in _ragged(row_offsets, cache.batch):
        if end <= begin:
            continue
        length = int(cache.cache_lengths[b]) + end - begin
        keys = key_view.tokens(b, length).astype(np.float64)
        values = value_view.tokens(b, length).astype(np.float64)
        for r in range(begin, end):
            p = int(cache.cache_lengths[b]) + r - begin
            query = to_float32(q[r], dtype).astype(np.float64)  # [Hq, D]
            kv_head = np.arange(q_heads) // group
            scores = np.einsum("hd,jhd->hj", query, keys[:p + 1, kv_head]) * scale
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            result = np.einsum("hj,jhd->hd", weights, values[:p + 1, kv_head])
            out[r] = from_float32(result.astype(np.float32), dtype)
    return out


def decode_step(cache, layer, q, new_keys, new_values, row_offsets, out, scale):
    """builders.decode_step on a standard cache: store K and V, then attend.
    Returns (new cache of the same kind, new out)."""
    stored = cache.copy(store_ragged(cache.key_cache(layer), new_keys, row_offsets))
    stored = stored.copy(store_ragged(stored.value_cache(layer), new_values,
                                      row_offsets))
    return stored, attention_ragged(q, stored.key_cache(layer),
                                    stored.value_cache(layer), row_offsets,
                                    out, scale)


def random_rows(rng, rows, heads, head_size, dtype):
    """[rows, heads, head_size] elements of `dtype`, uniform in [-1, 1)."""
    values = rng.uniform(-1, 1, (rows, heads, head_size)).astype(np.float32)
    return from_float32(values, dtype)


def random_cache(config, cache_lengths, new_lengths, rng=None, num_layers=None,
                 spare_pages=1, columns=None, block_tokens=None):
    """A cache for one step of a batch, of `config.kind`: sequence b has
    cache_lengths[b] tokens cached and new_lengths[b] arriving. Blocks hold
    random values in [-1, 1); max_seq_length/max_cache_length are set from
    the lengths. `config` is a CacheConfig (num_layers from it, else
    `num_layers`, else 2).

    Paged: the sequences' pages (enough for both) are shuffled over
    `blocks`, with `spare_pages` never referenced and one null page padding
    every lookup-table row (as MAX does); `columns` lookup-table columns
    (default: the most pages a sequence needs).

    Continuous: each sequence owns one block, the blocks in a shuffled
    order, with `spare_pages` spare blocks never referenced; a block has
    config.block_tokens slots, else `block_tokens`, else as many as the
    longest sequence (cache_length + new) needs, at least 1. A block too
    short for a sequence is a ValueError.
    """
    rng = np.random.default_rng(rng)
    cache_lengths = [int(c) for c in cache_lengths]
    new_lengths = [int(n) for n in new_lengths]
    if len(cache_lengths) != len(new_lengths):
        raise ValueError("cache_lengths and new_lengths differ in length")
    totals = [c + n for c, n in zip(cache_lengths, new_lengths)]
    if config.has_pages:
        if block_tokens is not None:
            raise ValueError("block_tokens is for continuous caches; a paged "
                             "cache's pages have config.page_size slots")
        tokens = config.page_size
        table, num_blocks = _random_pages(rng, config.page_size, totals,
                                          spare_pages, columns)
        collection = PagedCache
    else:
        if columns is not None:
            raise ValueError("columns is for paged caches: the lookup table "
                             "of a continuous cache has one entry per sequence")
        if None not in (config.block_tokens, block_tokens) and \
                config.block_tokens != block_tokens:
            raise ValueError(f"block_tokens={block_tokens} differs from the "
                             f"config's {config.block_tokens}")
        tokens = config.block_tokens or block_tokens or max([1] + totals)
        if tokens < max([0] + totals):
            raise ValueError(f"blocks of {tokens} token slots hold fewer tokens "
                             f"than the longest sequence needs ({max(totals)})")
        num_blocks = len(totals) + spare_pages
        table = rng.permutation(num_blocks)[:len(totals)].astype(np.int32)
        collection = ContinuousCache
    layers = config.num_layers or num_layers or 2
    shape = (num_blocks, config.kv_dim, layers, tokens, config.num_heads,
             config.head_size)
    blocks = from_float32(rng.uniform(-1, 1, shape).astype(np.float32),
                          config.dtype)
    return collection(blocks, np.array(cache_lengths, np.int32), table,
                      max([0] + new_lengths), max([0] + totals), config.dtype)


def _random_pages(rng, page_size, totals, spare_pages, columns):
    """(lookup_table, num_pages) of random_cache for a paged cache."""
    needed = [-(-total // page_size) for total in totals]
    columns = max([1] + needed) if columns is None else columns
    if columns < max([0] + needed):
        raise ValueError(f"{columns} lookup-table columns hold fewer pages than "
                         f"the sequences need ({max(needed)})")
    num_pages = sum(needed) + spare_pages + 1
    ids = rng.permutation(num_pages)
    null_page, ids = int(ids[0]), [int(i) for i in ids[1:]]
    table = np.full((len(needed), columns), null_page, np.int32)
    for b, count in enumerate(needed):
        table[b, :count], ids = ids[:count], ids[count:]
    return table, num_pages


def row_offsets(lengths):
    """[0, l0, l0 + l1, ...] as int32: ragged offsets of consecutive rows."""
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)

