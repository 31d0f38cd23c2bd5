"""Random test data for KV caches: caches of a CacheConfig's kind for one
step of a batch (`random_cache`, quantized with their scales when the config
has them), random rows (`random_rows`) and the ragged offsets of
consecutive rows (`row_offsets`).

    cache = testing.random_cache(config, cache_lengths=[5, 0], new_lengths=[1, 3])
    new = testing.random_rows(rng, 4, config.num_heads, config.head_size, "f16")
    offsets = testing.row_offsets([1, 3])               # [0, 1, 4]

Formerly in kvcache.reference, which still re-exports every name.
"""

import numpy as np

from .caches import ContinuousCache, PagedCache
from .dtypes import MAX_FINITE, from_float32, group_scales, quantize, \
    storage_dtype

__all__ = ["random_cache", "random_rows", "row_offsets"]


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
