"""The numpy oracle of the kernel ops (docs/Contract.md 3.3), written from
the contract alone, with no compiler code, so that compiled kernels can be
checked against it: on the cache objects of kvcache.caches, and never
changing its inputs (every function returns new arrays or a new cache).

    stored = cache.key_cache(layer).store_ragged(new, row_offsets)  # new cache
    rows = reference.gather_ragged(stored.key_cache(layer), ctx_offsets, out)
    out = reference.attention_ragged(q, stored.key_cache(layer),
                                     stored.value_cache(layer), row_offsets,
                                     out, scale)
    stored, out = reference.decode_step(cache, layer, q, k, v, row_offsets,
                                        out, scale)
    out, lse = reference.merge_states(out_a, lse_a, out_b, lse_b, "f16")
    q_out, rotated = reference.rope_ragged(q, stored.key_cache(layer),
                                           row_offsets, cos_sin, "half")
    keys = reference.rope_rows(cache.key_cache(layer), new, row_offsets,
                               cos_sin, "half")       # store_ragged rope(...)
    stored = cache.key_cache(layer).store_ragged(keys, row_offsets)
    out = reference.attention_ragged(q, stored.key_cache(layer),  # rope(...)
                                     stored.value_cache(layer), row_offsets,
                                     out, scale, cos_sin=cos_sin, style="half")

Here: `gather_ragged`, `decode_step`, `rope_ragged` (with `rotate`, the
rotation of one row, and `rope_rows`, the rotation of a step's rows that
store_ragged's rope clause stores), and (from kvcache.attention_reference)
`attention_ragged` with its optional clauses (the rope clause on q
included: q rotated by `rope_rows`, then attended), `mla_attention_ragged`,
`key_range` and `merge_states`. The writes are methods of the caches, returning the new
cache, blocks and scales: `view.store_ragged(new, row_offsets)` and
`cache.copy_pages(pairs)`.

Moved (still importable from here; import them from their modules):

    kvcache.dtypes    storage_dtype, to_float32, from_float32, fp8_values,
                      fp8_encode, i8_encode, quantize, dequantize,
                      dynamic_scale, group_scales, FP8_FORMATS, MAX_FINITE
    kvcache.caches    CacheCollection, PagedCache, ContinuousCache, CacheView
    kvcache.testing   random_cache, random_rows, row_offsets

Deprecated: `store_ragged(view, new, row_offsets)` and `copy_pages(cache,
pairs)`, which return the new blocks only (and refuse a quantized cache,
whose scales change too): use `view.store_ragged(new, row_offsets).blocks`
and `cache.copy_pages(pairs).blocks`.
"""

import warnings

import numpy as np

from .attention_reference import (attention_ragged, key_range, merge_states,
                                  mla_attention_ragged)
from .caches import (CacheCollection, CacheView, ContinuousCache,
                     PagedCache, _ragged, _rows_element)
from .config import ELEMENT_TYPES, CacheConfig  # noqa: F401  (as before)
from .dtypes import (FP8_FORMATS, MAX_FINITE, dequantize,  # noqa: F401
                     dynamic_scale, fp8_encode, fp8_values, from_float32,
                     group_scales, i8_encode, quantize, storage_dtype,
                     to_float32)
from .testing import random_cache, random_rows, row_offsets

__all__ = ["CacheCollection", "CacheView", "ContinuousCache", "PagedCache",
           "attention_ragged", "copy_pages", "decode_step", "dequantize",
           "dynamic_scale", "fp8_encode", "fp8_values", "from_float32",
           "gather_ragged", "group_scales", "key_range", "merge_states",
           "mla_attention_ragged", "quantize", "random_cache", "random_rows",
           "rope_ragged", "rope_rows", "rotate",
           "row_offsets", "storage_dtype", "store_ragged", "to_float32"]


def gather_ragged(view, ctx_offsets, out):
    """`kvcache.gather_ragged`: a copy of `out` whose row r of sequence b
    (r in [ctx_offsets[b], ctx_offsets[b+1])) holds token r - ctx_offsets[b]
    of `view` (a kvcache.caches.CacheView). On a quantized cache, float
    rows of `out` (float32, float16, bf16 as uint16) receive the values
    dequantized (stored * scale in f32, then rounded to nearest even), rows
    of its storage dtype the codes."""
    return view.gather_ragged(ctx_offsets, out)


def decode_step(cache, layer, q, new_keys, new_values, row_offsets, out, scale):
    """builders.decode_step on a standard cache: store K and V, then attend.
    Returns (new cache of the same kind, new out)."""
    stored = cache.key_cache(layer).store_ragged(new_keys, row_offsets)
    stored = stored.value_cache(layer).store_ragged(new_values, row_offsets)
    return stored, attention_ragged(q, stored.key_cache(layer),
                                    stored.value_cache(layer), row_offsets,
                                    out, scale)


def rotate(values, table_row, style):
    """float32 `values` [..., D] with their last R = len(table_row)
    elements rotated (docs/Contract.md 3.3): table_row holds the pairs
    (cos t_i, sin t_i); pair i is (o + 2i, o + 2i + 1) for "interleaved",
    (o + i, o + i + R/2) for "half", o = D - R; (x, y) -> (x cos - y sin,
    x sin + y cos), each product and sum rounded to float32."""
    values = np.array(values, np.float32)
    table_row = np.asarray(table_row, np.float32)
    half = table_row.shape[-1] // 2
    o = values.shape[-1] - 2 * half
    if style == "interleaved":
        first, second = slice(o, None, 2), slice(o + 1, None, 2)
    elif style == "half":
        first, second = slice(o, o + half), slice(o + half, None)
    else:
        raise ValueError(f"style must be 'interleaved' or 'half', got {style!r}")
    cos, sin = table_row[0::2], table_row[1::2]
    x, y = values[..., first].copy(), values[..., second].copy()
    values[..., first] = x * cos - y * sin
    values[..., second] = x * sin + y * cos
    return values


def rope_ragged(q, view, row_offsets, cos_sin, style, positions=None,
                q_out=None):
    """`kvcache.rope_ragged`: (new q_out, new cache). Row r of sequence b
    (r in [row_offsets[b], row_offsets[b+1])) sits at storage position
    s = cache_length(b) + r - row_offsets[b]; with table row p = positions[r]
    (or s), q's row r rotated (rotate) and rounded once to its element type
    goes to q_out (default: q itself, in place), and the key row at s of
    `view` is rotated in place (on a cache with a tensor scale: dequantized,
    rotated, quantized again with that scale). Other elements unchanged."""
    cache = view.cache
    if cache.scales_kind not in (None, "tensor"):
        raise ValueError("rope_ragged rotates keys in place on caches without "
                         f"scales or with a tensor scale, not {cache.scales_kind}")
    q_out = np.array(q if q_out is None else q_out)
    cos_sin = np.asarray(cos_sin, np.float32)
    rotated_q = rope_rows(view, q, row_offsets, cos_sin, style, positions)
    blocks = cache.blocks.copy()
    rotary = cos_sin.shape[1]
    for b, r, s, p in _rotary_positions(view, row_offsets, cos_sin, positions):
        q_out[r] = rotated_q[r]
        codes = view.row(b, s, blocks)
        if cache.scales is None:
            values = rotate(to_float32(codes, cache.dtype), cos_sin[p], style)
            codes[...] = from_float32(values, cache.dtype)
            continue
        scale = view.scale_row(b, s)[0]
        keys = rotate(dequantize(codes, cache.dtype, scale), cos_sin[p], style)
        new_codes = quantize(keys, cache.dtype, scale).view(codes.dtype)
        codes[..., -rotary:] = new_codes[..., -rotary:]
    return q_out, cache.copy(blocks)


def _rotary_positions(view, row_offsets, cos_sin, positions):
    """(b, r, s, p) of each ragged row r of sequence b: its storage position
    s = cache_length(b) + r - row_offsets[b] and rotary position p =
    positions[r] (or s), which must be a row of cos_sin."""
    cache = view.cache
    for b, begin, end in _ragged(row_offsets, cache.batch):
        for r in range(begin, end):
            s = int(cache.cache_lengths[b]) + r - begin
            p = s if positions is None else int(positions[r])
            if not 0 <= p < cos_sin.shape[0]:
                raise IndexError(f"rotary position {p} of row {r} is past the "
                                 f"{cos_sin.shape[0]} rows of cos_sin")
            yield b, r, s, p


def rope_rows(view, rows, row_offsets, cos_sin, style, positions=None):
    """A copy of the step's `rows` [T, H, D] (float rows of `view`'s cache)
    with row r of sequence b rotated (rotate) at its rotary position
    (positions[r], or its storage position on `view`) and rounded once to
    the rows' element type: the rows `view.store_ragged` receives from
    `kvcache.store_ragged` with the clause rope(cos_sin) (docs/Contract.md
    3.3), and the q_out of rope_ragged. Rows outside the batch unchanged."""
    element = _rows_element(view.cache, rows, "the rotated rows")
    cos_sin = np.asarray(cos_sin, np.float32)
    rotated = np.array(rows)
    for _, r, _, p in _rotary_positions(view, row_offsets, cos_sin, positions):
        values = rotate(to_float32(rows[r], element), cos_sin[p], style)
        rotated[r] = from_float32(values, element)
    return rotated


def _deprecated_blocks_only(cache, function, method):
    """Warns that `function` is deprecated for `method`, and refuses a
    quantized cache, whose scales the blocks alone leave out."""
    warnings.warn(f"kvcache.reference.{function} is deprecated: use "
                  f"{method}.blocks (the new cache's blocks)",
                  DeprecationWarning, stacklevel=3)
    if cache.scales is not None:
        raise ValueError(f"reference.{function} returns blocks only, and on a "
                         "quantized cache the scales change too: use "
                         f"{method}, which returns the new cache")


def store_ragged(view, new, row_offsets):
    """Deprecated: `view.store_ragged(new, row_offsets).blocks`, the new
    `blocks` of a cache without scales."""
    _deprecated_blocks_only(view.cache, "store_ragged",
                            "view.store_ragged(new, row_offsets)")
    return view.store_ragged(new, row_offsets).blocks


def copy_pages(cache, pairs):
    """Deprecated: `cache.copy_pages(pairs).blocks`, the new `blocks` of a
    PagedCache without scales."""
    _deprecated_blocks_only(cache, "copy_pages", "cache.copy_pages(pairs)")
    return cache.copy_pages(pairs).blocks
