"""The KV cache objects that kvcache.CPUModule and EmulatedGPUModule take:
a numpy model of docs/Contract.md section 1 (the layout, the lookups) and
2.2 (quantized caches), for both kinds of collection: PagedCache (pages
through a [batch, max_pages] lookup table) and ContinuousCache (one block of
token slots per sequence, a [batch] lookup table); CacheView, one layer's K
or V.

    cache = testing.random_cache(config, cache_lengths=[5, 0], new_lengths=[1, 3])
    cpu.store_ragged(*cache.arguments(), layer, new, row_offsets)
    expected = cache.key_cache(layer).store_ragged(new, row_offsets)
    # expected is a new cache; cache is unchanged

A cache is a value: the kernel ops that write it (`view.store_ragged`,
`cache.copy_pages`) return a new cache, blocks and scales, and never change
their inputs; `view.gather_ragged` returns a new `out`. Written from the
contract alone, with no compiler code (kvcache.reference has the attention
oracle and the function forms).

Quantized caches (docs/Contract.md 2.2: a storage type with scales) carry
their float32 `scales` (and `scales_kind`); `arguments()` is then the six
operands of the constructor op, and `tokens`/`values`/`load` dequantize:

    config = CacheConfig("i8", 2, 16, 4, scales="block<8>")
    cache = testing.random_cache(config, [5, 0], [1, 3])   # codes + scales
    stored = cache.key_cache(0).store_ragged(float_rows, row_offsets)
    copied = cache.copy_pages(pairs)                  # new caches
    values = stored.key_cache(0).tokens(b, count)     # dequantized float32

Formerly in kvcache.reference, which still re-exports every name.
"""

import numpy as np

from .config import CacheConfig, scales_kind_of_shape
from .dtypes import (dequantize, dynamic_scale, from_float32, quantize,
                     storage_dtype, to_float32)

__all__ = ["CacheCollection", "CacheView", "ContinuousCache", "PagedCache"]


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
        scales_kind = scales_kind_of_shape(scales.shape, head_size)
    config = CacheConfig(dtype, heads, head_size, mla=kv_dim == 1,
                         scales=scales_kind)
    expected = config.scales_shape(num_blocks, layers, tokens)
    if scales.shape != expected:
        raise ValueError(f"{config.scales} scales of blocks of shape "
                         f"{blocks.shape} have shape {expected}, got "
                         f"{scales.shape}")
    return scales, config.scales


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
        """`kvcache.copy_pages` as a new cache: page dst = page src for
        each (src, dst) row of `pairs`, in every layer, K and V, and for
        token_head and block<G> scales the pages' scales copied with them
        (tensor scales belong to no page). A PagedCache only."""
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
        """`kvcache.store_ragged` as a new cache (the one store API: any
        cache): row r of sequence b (r in [row_offsets[b],
        row_offsets[b+1])) is written at token cache_length(b) + r -
        row_offsets[b]. Rows of the dtype (codes of a quantized cache,
        stored raw), or on a quantized cache float rows (float32, float16,
        bf16 as uint16), quantized as docs/Contract.md 2.2 says: tensor
        scales divide them; token_head and block<G> first write each
        group's dynamic_scale."""
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
        """`kvcache.gather_ragged`: a copy of `out` whose row r of sequence
        b (r in [ctx_offsets[b], ctx_offsets[b+1])) holds token
        r - ctx_offsets[b]. On a quantized cache, float rows of `out`
        (float32, float16, bf16 as uint16) receive the values dequantized
        (stored * scale in f32, then rounded to nearest even), rows of its
        storage dtype the codes."""
        out = np.array(out, copy=True)
        element = _rows_element(self.cache, out, "gather_ragged's out")
        for b, begin, end in _ragged(ctx_offsets, self.cache.batch):
            for r in range(begin, end):
                if element == self.cache.dtype:
                    out[r] = self.row(b, r - begin)
                else:
                    with np.errstate(over="ignore"):   # f16 overflows to inf
                        out[r] = from_float32(self.values(b, r - begin),
                                              element)
        return out


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
    """(b, begin, end) of each sequence of a batch of ragged rows."""
    offsets = np.asarray(offsets).astype(np.int64)
    if offsets.shape[0] < batch + 1:
        raise ValueError(f"offsets need batch + 1 = {batch + 1} entries, got "
                         f"{offsets.shape[0]}")
    return [(b, int(offsets[b]), int(offsets[b + 1])) for b in range(batch)]


def _stored_raw(view, new, row_offsets):
    """The blocks of view's cache with the rows `new` stored unchanged."""
    blocks = view.cache.blocks.copy()
    for b, begin, end in _ragged(row_offsets, view.cache.batch):
        for r in range(begin, end):
            t = int(view.cache.cache_lengths[b]) + r - begin
            view.row(b, t, blocks)[...] = new[r]
    return blocks


def _copied_pages(cache, pairs):
    """The blocks of `cache` with page dst = page src for each pair."""
    if not isinstance(cache, PagedCache):
        raise ValueError(f"copy_pages needs a cache with pages, got a "
                         f"{cache.kind} cache")
    blocks = cache.blocks.copy()
    for src, dst in np.asarray(pairs).reshape(-1, 2):
        blocks[dst] = cache.blocks[src]
    return blocks

