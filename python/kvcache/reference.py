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

Quantized caches (docs/Contract.md 2.2: a storage type with scales) carry
their float32 `scales` (and `scales_kind`); `arguments()` is then the six
operands of the constructor op. A store or copy changes the scales too, so
for them the functions returning a new cache serve every cache:

    config = CacheConfig("i8", 2, 16, 4, scales="block<8>")
    cache = reference.random_cache(config, [5, 0], [1, 3])  # codes + scales
    stored = cache.key_cache(0).store_ragged(float_rows, row_offsets)
    copied = cache.copy_pages(pairs)                  # new caches
    values = stored.key_cache(0).tokens(b, count)     # dequantized float32
    rows = reference.gather_ragged(view, ctx_offsets, f16_out)  # dequantized

Element types: f32 and f16 are numpy's float32 and float16; bf16 is stored as
uint16 bits (numpy has no bfloat16), f8E4M3FN and f8E5M2 as uint8 codes,
i8 as int8: `to_float32` and `from_float32` convert (the fp8 codec is
written here from the formats' bit fields: `fp8_values`, `fp8_encode`);
`quantize`, `dequantize` and `dynamic_scale` are the quantized caches'
arithmetic.

`attention_ragged` (with its optional clauses: window, chunk, noncausal,
softcap, alibi, sinks, lse), `key_range` and `merge_states` live in
attention_reference.py and are re-exported here.
"""

import numpy as np

from .config import ELEMENT_TYPES, CacheConfig

__all__ = ["CacheCollection", "CacheView", "ContinuousCache", "PagedCache",
           "attention_ragged", "copy_pages", "decode_step", "dequantize",
           "dynamic_scale", "fp8_encode", "fp8_values", "from_float32",
           "gather_ragged", "group_scales", "key_range", "merge_states",
           "quantize", "random_cache", "random_rows", "row_offsets",
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


def group_scales(values, dtype):
    """dynamic_scale of each group along the last axis of `values`
    ([..., G] -> [...], float32): amax / max_finite over the non-NaN
    magnitudes, 1 where amax is 0."""
    magnitudes = np.abs(np.asarray(values, np.float32))
    amax = np.where(np.isnan(magnitudes), np.float32(0), magnitudes).max(axis=-1)
    with np.errstate(over="ignore", invalid="ignore"):
        scales = amax / np.float32(MAX_FINITE[dtype])
    return np.where(amax == 0, np.float32(1), scales).astype(np.float32)


# numpy dtype of float rows -> their element type (bf16 as uint16 bits).
_FLOAT_ROWS = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
               np.dtype(np.uint16): "bf16"}


def _checked_scales(blocks, dtype, scales, scales_kind):
    """(scales, normalized kind) of a cache, checked against its blocks
    (docs/Contract.md 2.2); the kind is read from the shape when None."""
    if scales is None:
        if scales_kind is not None:
            raise ValueError(f"scales_kind={scales_kind!r} without scales: pass "
                             "the scales array too")
        return None, None
    if not isinstance(scales, np.ndarray) or scales.dtype != np.float32:
        raise TypeError("scales must be a float32 numpy array, got "
                        f"{getattr(scales, 'dtype', type(scales).__name__)}")
    num_blocks, kv_dim, layers, tokens, heads, head_size = blocks.shape
    if scales_kind is None:
        scales_kind = _scales_kind_of(scales.shape, head_size)
    config = CacheConfig(dtype, heads, head_size, mla=kv_dim == 1,
                         scales=scales_kind)
    expected = config.scales_shape(num_blocks, layers, tokens)
    if scales.shape != expected:
        raise ValueError(f"{config.scales} scales of blocks of shape "
                         f"{blocks.shape} have shape {expected}, got "
                         f"{scales.shape}")
    return scales, config.scales


def _scales_kind_of(shape, head_size):
    """The scales kind of scales of `shape`: by rank, G from the last dim."""
    if len(shape) not in (2, 5, 6):
        raise ValueError("scales must be 2-D (tensor), 5-D (token_head) or 6-D "
                         f"(block<G>), got shape {shape}")
    if len(shape) < 6:
        return "tensor" if len(shape) == 2 else "token_head"
    if shape[5] == 0 or head_size % shape[5]:
        raise ValueError(f"the last dim of block<G> scales, head_size / G, must "
                         f"divide head_size ({head_size}), got shape {shape}")
    return f"block<{head_size // shape[5]}>"


class CacheCollection:
    """The five values of a collection (docs/Contract.md 1), and the scales
    of a quantized cache (2.2); PagedCache and ContinuousCache say how a
    token is found (`lookup`):

    blocks           [num_blocks, kv_dim, num_layers, tokens, num_heads, head_size]
                     (tokens: page_size or block_tokens)
    cache_lengths    [batch] int32: tokens of sequence b already cached
    lookup_table     int32, [batch, max_pages] or [batch] by kind
    max_seq_length   the step's largest number of new tokens
    max_cache_length the step's largest cache_length + new tokens
    scales           None, or for a quantized cache (dtype f8E4M3FN, f8E5M2
                     or i8) its float32 scales: tensor [num_layers, kv_dim],
                     token_head [num_blocks, kv_dim, num_layers, tokens,
                     num_heads], block<G> the same then head_size / G
    scales_kind      "tensor", "token_head" or "block<G>"; read from the
                     scales' shape when None

    `dtype` names the element type ("f32", "f16", "bf16", or a storage
    type); `blocks` holds its storage (uint16 bits for bf16, uint8 codes
    for fp8, int8 for i8).
    """

    kind = None            # "paged" or "continuous", as CacheConfig.kind
    lookup_table_rank = None

    def __init__(self, blocks, cache_lengths, lookup_table, max_seq_length,
                 max_cache_length, dtype, scales=None, scales_kind=None):
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
        self.scales, self.scales_kind = _checked_scales(blocks, dtype, scales,
                                                        scales_kind)

    @property
    def shape(self):
        return self.blocks.shape

    num_blocks = property(lambda self: self.blocks.shape[0])
    kv_dim = property(lambda self: self.blocks.shape[1])
    num_layers = property(lambda self: self.blocks.shape[2])
    num_heads = property(lambda self: self.blocks.shape[4])
    head_size = property(lambda self: self.blocks.shape[5])
    batch = property(lambda self: self.cache_lengths.shape[0])

    @property
    def scale_group(self):
        """Elements of a head sharing one scale: G of block<G>, head_size
        for token_head and tensor; None without scales."""
        if self.scales is None:
            return None
        if self.scales_kind.startswith("block"):
            return self.head_size // self.scales.shape[5]
        return self.head_size

    def arguments(self):
        """(blocks, cache_lengths, lookup_table, max_seq_length,
        max_cache_length[, scales]): the operands of
        `kvcache.paged_collection` / `kvcache.continuous_collection`, the
        first five (six for a quantized cache) arguments of every builder
        function."""
        fields = (self.blocks, self.cache_lengths, self.lookup_table,
                  self.max_seq_length, self.max_cache_length)
        return fields if self.scales is None else fields + (self.scales,)

    def copy(self, blocks=None, scales=None):
        """A deep copy, or one with `blocks` and/or `scales` replaced."""
        if scales is None and self.scales is not None:
            scales = self.scales.copy()
        return type(self)(self.blocks.copy() if blocks is None else blocks,
                          self.cache_lengths.copy(), self.lookup_table.copy(),
                          self.max_seq_length, self.max_cache_length,
                          self.dtype, scales, self.scales_kind)

    def copy_pages(self, pairs):
        """`kvcache.copy_pages` as a new cache: copy_pages' blocks, and
        for token_head and block<G> scales the pages' scales copied with
        them (tensor scales belong to no page). A PagedCache only."""
        blocks = _copied_pages(self, pairs)
        scales = None if self.scales is None else self.scales.copy()
        if scales is not None and self.scales_kind != "tensor":
            for src, dst in np.asarray(pairs).reshape(-1, 2):
                scales[dst] = self.scales[src]
        return self.copy(blocks, scales)

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
        """The [num_heads, head_size] stored elements (codes of a quantized
        cache) of token t of sequence b."""
        page, slot = self.cache.lookup(b, t)
        blocks = self.cache.blocks if blocks is None else blocks
        return blocks[page, self.kv, self.layer, slot]

    def scale_row(self, b, t, scales=None):
        """The scales of token t of sequence b, a view that can be written:
        token_head [num_heads], block<G> [num_heads, head_size / G]; tensor
        [1], the layer's K or V scale."""
        scales = self.cache.scales if scales is None else scales
        if self.cache.scales_kind == "tensor":
            return scales[self.layer, self.kv:self.kv + 1]
        page, slot = self.cache.lookup(b, t)
        return scales[page, self.kv, self.layer, slot]

    def element_scales(self, b, t):
        """float32 [num_heads, head_size]: the scale of each element of
        token t of sequence b (a quantized cache only)."""
        if self.cache.scales is None:
            raise ValueError(f"{self.cache.dtype} caches without scales have "
                             "no scales")
        shape = (self.cache.num_heads, self.cache.head_size)
        scales = self.scale_row(b, t)
        if self.cache.scales_kind == "tensor":
            return np.broadcast_to(scales[0], shape).astype(np.float32)
        if scales.ndim == 1:
            scales = scales[:, None]
        return np.repeat(scales, self.cache.scale_group, axis=1).reshape(shape)

    def values(self, b, t):
        """float32 [num_heads, head_size]: token t of sequence b, dequantized
        (stored * scale in f32) on a quantized cache."""
        row = self.row(b, t)
        if self.cache.scales is None:
            return to_float32(row, self.cache.dtype)
        return dequantize(row, self.cache.dtype, self.element_scales(b, t))

    def load(self, b, h, t, d, width=1):
        """`kvcache.load %cache[b, h, t, d]`: `width` elements from d, as
        stored, or dequantized to float32 on a quantized cache."""
        if self.cache.scales is not None:
            return self.values(b, t)[h, d:d + width]
        return self.row(b, t)[h, d:d + width]

    def tokens(self, b, count):
        """Tokens 0..count-1 of sequence b as float32 [count, H, D]
        (dequantized on a quantized cache)."""
        shape = (0, self.cache.num_heads, self.cache.head_size)
        rows = [self.values(b, t) for t in range(count)]
        return np.stack(rows) if rows else np.zeros(shape, np.float32)

    def parameters(self):
        """(blocks, cache_lengths, lookup_table, max_seq_length,
        max_cache_length, kv, layer[, scales]): what kvcache.abi packs."""
        c = self.cache
        fields = (c.blocks, c.cache_lengths, c.lookup_table, c.max_seq_length,
                  c.max_cache_length, self.kv, self.layer)
        return fields if c.scales is None else fields + (c.scales,)

    def store_ragged(self, new, row_offsets):
        """`kvcache.store_ragged` as a new cache (any cache): rows of the
        dtype (codes of a quantized cache, stored raw), or on a quantized
        cache float rows (float32, float16, bf16 as uint16), quantized as
        docs/Contract.md 2.2 says: tensor scales divide them; token_head
        and block<G> first write each group's dynamic_scale."""
        cache = self.cache
        element = _rows_element(cache, new, "store_ragged's rows")
        if element == cache.dtype:
            return cache.copy(_stored_raw(self, new, row_offsets))
        blocks, scales = cache.blocks.copy(), cache.scales.copy()
        for b, begin, end in _ragged(row_offsets, cache.batch):
            for r in range(begin, end):
                t = int(cache.cache_lengths[b]) + r - begin
                values = to_float32(new[r], element)
                self._quantize_row(values, b, t, blocks, scales)
        return cache.copy(blocks, scales)

    def _quantize_row(self, values, b, t, blocks, scales):
        """Writes float32 `values` [H, D] as token t of sequence b."""
        cache, codes = self.cache, self.row(b, t, blocks)
        if cache.scales_kind == "tensor":
            scale = self.scale_row(b, t, scales)[0]
            codes[...] = quantize(values, cache.dtype, scale).view(codes.dtype)
            return
        group = cache.scale_group
        grouped = values.reshape(cache.num_heads, -1, group)
        row_scales = np.array([[dynamic_scale(g, cache.dtype) for g in head]
                               for head in grouped], np.float32)
        written = self.scale_row(b, t, scales)         # [H] or [H, D/G]
        written[...] = row_scales.reshape(written.shape)
        quantized = quantize(grouped, cache.dtype, row_scales[..., None])
        codes[...] = quantized.reshape(codes.shape).view(codes.dtype)

    def gather_ragged(self, ctx_offsets, out):
        """`kvcache.gather_ragged` (the module function)."""
        return gather_ragged(self, ctx_offsets, out)


def _rows_element(cache, rows, what):
    """The element type of the rows a kernel op takes on `cache`: the
    dtype, or for a quantized cache f32/f16/bf16 by the rows' numpy dtype."""
    if cache.scales is None or rows.dtype == cache.blocks.dtype:
        return cache.dtype
    if rows.dtype in _FLOAT_ROWS:
        return _FLOAT_ROWS[rows.dtype]
    raise TypeError(f"{what}: a quantized {cache.dtype} cache takes rows of "
                    f"float32, float16 or uint16 (bf16 bits), or "
                    f"{cache.blocks.dtype} codes; got {rows.dtype}")


def _ragged(offsets, batch):
    offsets = np.asarray(offsets).astype(np.int64)
    if offsets.shape[0] < batch + 1:
        raise ValueError(f"offsets need batch + 1 = {batch + 1} entries, got "
                         f"{offsets.shape[0]}")
    return [(b, int(offsets[b]), int(offsets[b + 1])) for b in range(batch)]


def _stored_raw(view, new, row_offsets):
    blocks = view.cache.blocks.copy()
    for b, begin, end in _ragged(row_offsets, view.cache.batch):
        for r in range(begin, end):
            t = int(view.cache.cache_lengths[b]) + r - begin
            view.row(b, t, blocks)[...] = new[r]
    return blocks


def _no_scales(cache, function, method):
    if cache.scales is not None:
        raise ValueError(f"{function} returns blocks only, and on a quantized "
                         f"cache the scales change too: use {method}, which "
                         "returns the new cache")


def store_ragged(view, new, row_offsets):
    """`kvcache.store_ragged`: the new `blocks`, where row r of sequence b
    (r in [row_offsets[b], row_offsets[b+1])) is written at token
    cache_length(b) + r - row_offsets[b]. A cache without scales; any
    cache: `view.store_ragged(new, row_offsets)`, the new cache."""
    _no_scales(view.cache, "reference.store_ragged",
               "view.store_ragged(new, row_offsets)")
    return _stored_raw(view, new, row_offsets)


def gather_ragged(view, ctx_offsets, out):
    """`kvcache.gather_ragged`: a copy of `out` whose row r of sequence b
    (r in [ctx_offsets[b], ctx_offsets[b+1])) holds token r - ctx_offsets[b].
    On a quantized cache, float rows of `out` (float32, float16, bf16 as
    uint16) receive the values dequantized (stored * scale in f32, then
    rounded to nearest even), rows of its storage dtype the codes."""
    out = np.array(out, copy=True)
    element = _rows_element(view.cache, out, "gather_ragged's out")
    for b, begin, end in _ragged(ctx_offsets, view.cache.batch):
        for r in range(begin, end):
            if element == view.cache.dtype:
                out[r] = view.row(b, r - begin)
            else:
                with np.errstate(over="ignore"):   # f16 overflows to inf
                    out[r] = from_float32(view.values(b, r - begin), element)
    return out


def copy_pages(cache, pairs):
    """`kvcache.copy_pages`: the new `blocks`, page dst = page src for each
    (src, dst) row of `pairs`, in every layer, K and V. A PagedCache
    without scales; any PagedCache: `cache.copy_pages(pairs)`, the new
    cache."""
    _no_scales(cache, "reference.copy_pages", "cache.copy_pages(pairs)")
    return _copied_pages(cache, pairs)


def _copied_pages(cache, pairs):
    if not isinstance(cache, PagedCache):
        raise ValueError(f"copy_pages needs a cache with pages, got a "
                         f"{cache.kind} cache")
    blocks = cache.blocks.copy()
    for src, dst in np.asarray(pairs).reshape(-1, 2):
        blocks[dst] = cache.blocks[src]
    return blocks


def decode_step(cache, layer, q, new_keys, new_values, row_offsets, out, scale):
    """builders.decode_step on a standard cache: store K and V, then attend.
    Returns (new cache of the same kind, new out)."""
    stored = cache.key_cache(layer).store_ragged(new_keys, row_offsets)
    stored = stored.value_cache(layer).store_ragged(new_values, row_offsets)
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

    Quantized (config.scales set): the random values are stored as codes
    with `scales` of config.scales: token_head and block<G> each group's
    dynamic scale (amax / max_finite, as store_ragged computes it), tensor
    a random scale per layer and K/V in [1, 2) / max_finite.
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
        table, num_blocks, tokens = _random_blocks(rng, config, totals,
                                                   spare_pages, block_tokens)
        collection = ContinuousCache
    layers = config.num_layers or num_layers or 2
    shape = (num_blocks, config.kv_dim, layers, tokens, config.num_heads,
             config.head_size)
    values = rng.uniform(-1, 1, shape).astype(np.float32)
    if config.scales is None:
        blocks, scales = from_float32(values, config.dtype), None
    else:
        blocks, scales = _quantized(rng, config, values)
    return collection(blocks, np.array(cache_lengths, np.int32), table,
                      max([0] + new_lengths), max([0] + totals), config.dtype,
                      scales, config.scales)


def _quantized(rng, config, values):
    """(codes, scales) of float32 `values` [blocks, kv, layers, tokens, H,
    D] for random_cache: token_head and block<G> groups at their dynamic
    scale (group_scales), tensor scales drawn in [1, 2) / max_finite (the
    values, in [-1, 1), fit)."""
    dtype = config.dtype
    if config.scales == "tensor":
        layers, kv_dim = values.shape[2], values.shape[1]
        scales = (rng.uniform(1, 2, (layers, kv_dim)) /
                  MAX_FINITE[dtype]).astype(np.float32)
        codes = quantize(values, dtype, scales.T[None, :, :, None, None, None])
    else:
        grouped = values.reshape(values.shape[:5] + (-1, config.scale_group))
        scales = group_scales(grouped, dtype)
        codes = quantize(grouped, dtype, scales[..., None]).reshape(values.shape)
        if config.scales == "token_head":
            scales = scales[..., 0]
    return codes.view(storage_dtype(dtype)), np.ascontiguousarray(scales)


def _random_blocks(rng, config, totals, spare_pages, block_tokens):
    """(lookup_table, num_blocks, block_tokens) of random_cache for a
    continuous cache."""
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
    return table, num_blocks, tokens


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


# Last: attention_reference builds on this module's conversions and lookups
# (imported from it while this module finishes loading).
from .attention_reference import (attention_ragged, key_range,  # noqa: E402
                                  merge_states)
