"""A numpy model of `kvcache.attention_ragged` with its optional clauses and
of `kvcache.merge_states` (docs/Contract.md 3.3, attention): the reference
every compiled attention kernel is tested against. Written from the
contract alone, on the cache objects of kvcache.caches; kvcache.reference
re-exports it (`reference.attention_ragged`, `reference.key_range`,
`reference.merge_states`).

    out = attention_ragged(q, k, v, row_offsets, out, scale)   # causal
    out, lse = attention_ragged(q, k, v, row_offsets, out, scale, window=128,
                                softcap=30.0, alibi=slopes, sinks=sinks,
                                lse=np.zeros((T, q_heads), np.float32))
    # cascade: a shared prefix stored once (sequence 0), every row in it
    prefix_out, prefix_lse = attention_ragged(q, prefix_k, prefix_v, [0, T],
                                              out, scale, noncausal=True,
                                              lse=lse)
    # q rotated first (keys stored with store_ragged's rope clause)
    out = attention_ragged(q, k, v, row_offsets, out, scale, cos_sin=table,
                           style="half")
    out, lse = merge_states(prefix_out, prefix_lse, own_out, own_lse, "f16")

Query row r of sequence b sits at p = cache_length(b) + r - row_offsets[b];
`key_range` gives the keys it sees. The kernel functions never change their
inputs: they return new arrays.
"""

import numpy as np

from .caches import _ragged, _rows_element
from .config import FLOAT_TYPES
from .dtypes import from_float32, storage_dtype, to_float32

__all__ = ["attention_ragged", "key_range", "merge_states",
           "mla_attention_ragged"]


def _length_attribute(value, name):
    """`window` or `chunk` (an i64 >= 1, or None) as an int."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} is an i64 attribute: pass an int, got "
                        f"{value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1 (the keys a row sees), got "
                         f"{value}; omit it for plain causal attention")
    return int(value)


def _checked_mask(window, chunk, noncausal):
    """(window, chunk, noncausal) checked: the exclusions of the contract."""
    window = _length_attribute(window, "window")
    chunk = _length_attribute(chunk, "chunk")
    if not isinstance(noncausal, (bool, np.bool_)):
        raise TypeError(f"noncausal is a unit attribute: pass True or False, "
                        f"got {noncausal!r}")
    if window is not None and chunk is not None:
        raise ValueError("window and chunk exclude each other: pass one of "
                         "them")
    if noncausal and (window is not None or chunk is not None):
        raise ValueError("noncausal excludes window and chunk: a noncausal "
                         "row sees every cached token of its sequence")
    return window, chunk, bool(noncausal)


def key_range(position, cache_length, window=None, chunk=None,
              noncausal=False):
    """(begin, end): the key positions [begin, end) that the query row at
    `position` of a sequence with `cache_length` cached tokens sees.
    Causal: [0, p]; with window W: [max(0, p - W + 1), p]; with chunk C:
    [floor(p / C) * C, p]; noncausal: [0, cache_length) (the cached tokens
    only, none of the step's own rows; empty when cache_length is 0)."""
    window, chunk, noncausal = _checked_mask(window, chunk, noncausal)
    position, cache_length = int(position), int(cache_length)
    if position < 0 or cache_length < 0:
        raise ValueError(f"position ({position}) and cache_length "
                         f"({cache_length}) must be >= 0")
    if noncausal:
        return 0, cache_length
    if window is not None:
        return max(0, position - window + 1), position + 1
    if chunk is not None:
        return position // chunk * chunk, position + 1
    return 0, position + 1


def _per_head(values, q_heads, name):
    """A memref<q_heads x f32> operand (alibi slopes, sinks) as float64,
    its values rounded to f32 as the operand holds them; None stays None."""
    if values is None:
        return None
    values = np.asarray(values)
    if values.shape != (q_heads,):
        raise ValueError(f"{name} holds one f32 per query head: shape "
                         f"({q_heads},), got {values.shape}")
    if not np.issubdtype(values.dtype, np.floating):
        raise TypeError(f"{name} must be floats (f32), got {values.dtype}")
    return values.astype(np.float32).astype(np.float64)


def _checked_softcap(softcap):
    if softcap is None:
        return None
    softcap = float(np.float32(softcap))
    if not (softcap > 0 and np.isfinite(softcap)):
        raise ValueError(f"softcap must be a finite f32 > 0, got {softcap}; "
                         "omit it for uncapped scores")
    return softcap


def _checked_lse(lse, rows, q_heads):
    """A copy of the `lse` operand (float32 [T, q_heads]) to write into."""
    if not isinstance(lse, np.ndarray) or lse.dtype != np.float32:
        got = getattr(lse, "dtype", type(lse).__name__)
        raise TypeError("lse must be a float32 numpy array (memref<T x Hq x "
                        f"f32>), got {got}")
    if lse.shape != (rows, q_heads):
        raise ValueError(f"lse is [T, q_heads] = ({rows}, {q_heads}) like q's "
                         f"first two dims, got {lse.shape}")
    return lse.copy()


def _attend(query, keys, values, offsets, scale, clauses):
    """(out [Hq, D], lse [Hq]) of one query row in float64: `keys` and
    `values` [n, Hq, D] are its keys (each query head's KV head), `offsets`
    [n] their positions j - p."""
    softcap, slopes, sinks = clauses
    q_heads = query.shape[0]
    if not len(offsets) and sinks is None:        # no keys, no sink
        return np.zeros(query.shape), np.full(q_heads, -np.inf)
    scores = np.einsum("hd,jhd->hj", query, keys) * scale
    if softcap is not None:
        scores = softcap * np.tanh(scores / softcap)
    if slopes is not None:
        scores = scores + slopes[:, None] * offsets[None, :]
    if sinks is None:
        top = scores.max(axis=1, keepdims=True)
    elif len(offsets):
        top = np.maximum(scores.max(axis=1, keepdims=True), sinks[:, None])
    else:
        top = sinks[:, None]
    weights = np.exp(scores - top)
    denominator = weights.sum(axis=1, keepdims=True)
    if sinks is not None:
        denominator = denominator + np.exp(sinks[:, None] - top)
    weights /= denominator
    result = np.einsum("hj,jhd->hd", weights, values)
    return result, (top + np.log(denominator))[:, 0]


def attention_ragged(q, key_view, value_view, row_offsets, out, scale, *,
                     window=None, chunk=None, noncausal=False, softcap=None,
                     alibi=None, sinks=None, lse=None, cos_sin=None,
                     style=None, positions=None):
    """`kvcache.attention_ragged`: a copy of `out` where query row r of
    sequence b, at position p = cache_length(b) + r - row_offsets[b], is
    softmax_j(s_j) @ V[b, j, h / G] over the keys j of key_range(p, ...),
    G = q_heads / kv_heads, with the score of key j for query head h

        s_j = scale * q[r, h] . K[b, j, h / G]
        s_j = softcap * tanh(s_j / softcap)           (softcap)
        s_j = s_j + alibi[h] * (j - p)                (alibi: the slopes)

    `sinks` [q_heads] adds one logit per query head to the softmax's
    denominator only (not scaled, capped or biased; no value). Computed in
    float64 from the stored values (dequantized, in f32, on a quantized
    cache), rounded once to the element type of q and out: the cache's
    dtype, or on a quantized cache f32, f16 or bf16 by q's numpy dtype. K/V
    must hold the step's rows (for noncausal rows they are never read).

    window/chunk (ints >= 1) exclude each other and noncausal; softcap is a
    finite f32 > 0; alibi and sinks are float [q_heads] (rounded to f32).
    Returns the new out; with `lse` (float32 [T, q_heads]), (out, lse): a
    copy of lse whose row r holds m + log(denominator) per head (natural
    log, m the max over the scores and the sink). A row without keys (and
    no sink) gets out 0 and lse -inf. Rows outside every sequence keep
    their out and lse.

    With `cos_sin` (the rope clause: float32 [P, R], `style` "interleaved"
    or "half", optional int32 `positions` [T]), q's rows are first rotated
    as rope_ragged rotates them into q_out (reference.rope_rows, at
    positions[r] or p, rounded once to q's element type)."""
    cache = key_view.cache
    dtype = _rows_element(cache, q, "attention_ragged's q")
    if dtype not in FLOAT_TYPES:
        raise TypeError(f"attention_ragged takes float q and out (f32, f16 or "
                        f"bf16), not {dtype} codes")
    if cos_sin is not None:
        # kvcache.reference imports this module: a late import of its rope.
        from .reference import rope_rows
        q = rope_rows(key_view, q, row_offsets, cos_sin, style, positions)
    q_heads = q.shape[1]
    mask = _checked_mask(window, chunk, noncausal)
    clauses = (_checked_softcap(softcap), _per_head(alibi, q_heads, "alibi"),
               _per_head(sinks, q_heads, "sinks"))
    new_lse = None if lse is None else _checked_lse(lse, q.shape[0], q_heads)
    out = np.array(out, copy=True)
    kv_head = np.arange(q_heads) // (q_heads // cache.num_heads)
    scale = float(np.float32(scale))
    for b, begin, end in _ragged(row_offsets, cache.batch):
        if end <= begin:
            continue
        cached = int(cache.cache_lengths[b])
        positions = range(cached, cached + end - begin)
        ranges = [key_range(p, cached, *mask) for p in positions]
        length = max(stop for _, stop in ranges)
        keys = key_view.tokens(b, length).astype(np.float64)
        values = value_view.tokens(b, length).astype(np.float64)
        for r, p, (first, stop) in zip(range(begin, end), positions, ranges):
            query = to_float32(q[r], dtype).astype(np.float64)  # [Hq, D]
            result, row_lse = _attend(query, keys[first:stop, kv_head],
                                      values[first:stop, kv_head],
                                      np.arange(first, stop) - p, scale,
                                      clauses)
            out[r] = from_float32(result.astype(np.float32), dtype)
            if new_lse is not None:
                new_lse[r] = row_lse
    return out if new_lse is None else (out, new_lse)


class _LeadingElements:
    """The first `size` elements of each head row of a cache view: MLA's
    values in its latent rows."""

    def __init__(self, view, size):
        self.cache, self._view, self._size = view.cache, view, size

    def tokens(self, b, length):
        return self._view.tokens(b, length)[..., :self._size]


def mla_attention_ragged(q, latent_view, row_offsets, out, scale,
                         v_head_size, **clauses):
    """`kvcache.mla_attention_ragged` (absorbed MLA decode): attention_ragged
    with the latent rows K of an MLA cache as the keys (scores over all
    head_size elements) and their first `v_head_size` elements as the
    values, `out[r, h] = softmax_j(s_j) @ K[b, j, h / G, 0:v_head_size]`;
    `out` is [T, q_heads, v_head_size]. The clauses and the result are
    attention_ragged's."""
    head_size = latent_view.cache.head_size
    if not 0 < int(v_head_size) <= head_size:
        raise ValueError(f"v_head_size must be in [1, head_size = "
                         f"{head_size}], got {v_head_size}")
    if out.shape[2:] != (int(v_head_size),):
        raise ValueError(f"out is [T, q_heads, v_head_size = {v_head_size}], "
                         f"got {out.shape}")
    return attention_ragged(q, latent_view,
                            _LeadingElements(latent_view, int(v_head_size)),
                            row_offsets, out, scale, **clauses)


def _checked_states(out_a, lse_a, out_b, lse_b, dtype):
    """The operands of merge_states checked: outs [T, Hq, D] of `dtype`'s
    storage, lses float32 [T, Hq]."""
    if dtype not in FLOAT_TYPES:
        raise ValueError(f"merge_states merges f32, f16 or bf16 states, not "
                         f"{dtype!r}")
    storage = storage_dtype(dtype)
    for name, state in (("out_a", out_a), ("out_b", out_b)):
        if not isinstance(state, np.ndarray) or state.dtype != storage:
            raise TypeError(f"{name} of {dtype} must be a numpy array of "
                            f"{storage}, got "
                            f"{getattr(state, 'dtype', type(state).__name__)}")
    if out_a.ndim != 3 or out_b.shape != out_a.shape:
        raise ValueError(f"out_a and out_b are [T, q_heads, head_size] of one "
                         f"shape, got {out_a.shape} and {out_b.shape}")
    for name, lse in (("lse_a", lse_a), ("lse_b", lse_b)):
        if not isinstance(lse, np.ndarray) or lse.dtype != np.float32:
            raise TypeError(f"{name} must be a float32 numpy array, got "
                            f"{getattr(lse, 'dtype', type(lse).__name__)}")
        if lse.shape != out_a.shape[:2]:
            raise ValueError(f"{name} is [T, q_heads] = {out_a.shape[:2]}, "
                             f"got {lse.shape}")


def merge_states(out_a, lse_a, out_b, lse_b, dtype):
    """`kvcache.merge_states`: (out, lse) of two partial attention states
    over disjoint key sets, in f32:

        lse = max + log(e^(lse_a - max) + e^(lse_b - max)),
        max = max(lse_a, lse_b)
        out = e^(lse_a - lse) out_a + e^(lse_b - lse) out_b

    out rounded once to `dtype` ("f32", "f16" or "bf16"; the outs stored as
    dtypes.storage_dtype(dtype)), lse float32. Where both lses are -inf
    (no keys on either side): out 0, lse -inf; where one is -inf, the
    other state exactly (its out finite). New arrays: passing the result
    back as out_a (the op's in-place use) is safe."""
    _checked_states(out_a, lse_a, out_b, lse_b, dtype)
    a, b = to_float32(out_a, dtype), to_float32(out_b, dtype)
    empty = np.maximum(lse_a, lse_b) == -np.inf
    top = np.where(empty, np.float32(0), np.maximum(lse_a, lse_b))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lse = top + np.log(np.exp(lse_a - top) + np.exp(lse_b - top))
        weight_a = np.where(empty, np.float32(0), np.exp(lse_a - lse))
        weight_b = np.where(empty, np.float32(0), np.exp(lse_b - lse))
        merged = weight_a[..., None] * a + weight_b[..., None] * b
        merged = np.where(empty[..., None], np.float32(0), merged)
        return from_float32(merged, dtype), lse.astype(np.float32)
