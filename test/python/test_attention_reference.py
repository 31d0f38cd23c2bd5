"""kvcache.reference's attention with its optional clauses (window, chunk,
noncausal, softcap, alibi, sinks, lse) and merge_states (docs/Contract.md
3.3, attention), against a brute force written here from the contract's
formulas: loops over the keys in plain Python float64, reading the tokens
from the test's own arrays (written into the caches through the lookup
tables here), no helper of the reference. No compiler involved."""

import math

import numpy as np
import pytest

from kvcache import CacheConfig, caches, dtypes, reference, testing

HEAD_SIZE = 8
KV_HEADS = 2
LAYER = 1
# decode rows (one new token) and prefill rows; sequence 2's rows sit at
# positions 14..17 (across the page edge at 16), sequence 3's at 20, 21
CACHE_LENGTHS = [0, 5, 14, 20]
NEW_LENGTHS = [1, 1, 4, 2]
# Worst absolute error of outputs in [-1, 1]: float64 vs the brute force,
# then one rounding to the element type.
TOLERANCE = {"f32": 2e-6, "f16": 1e-3, "bf16": 8e-3}


def f32(value):
    """An attribute or f32 operand's value, as the reference rounds it."""
    return float(np.float32(value))


def stored(rng, shape, dtype):
    """(elements of `dtype` uniform in [-1, 1), their float64 values)."""
    values = rng.uniform(-1, 1, shape).astype(np.float32)
    if dtype == "bf16":
        bits = dtypes.from_float32(values, "bf16")
        return bits, dtypes.to_float32(bits, "bf16").astype(np.float64)
    elements = values.astype(dtypes.storage_dtype(dtype))
    return elements, elements.astype(np.float64)


def write_tokens(cache, layer, b, keys, values):
    """Token t of sequence b in `layer` := keys[t], values[t] (stored
    elements), through the lookup table (docs/Contract.md 1)."""
    for t in range(len(keys)):
        if cache.kind == "paged":
            block = cache.lookup_table[b, t // cache.blocks.shape[3]]
            slot = t % cache.blocks.shape[3]
        else:
            block, slot = cache.lookup_table[b], t
        cache.blocks[block, 0, layer, slot] = keys[t]
        cache.blocks[block, 1, layer, slot] = values[t]


class Case:
    """A batch: a cache whose layer LAYER holds the test's tokens (K and V
    of every sequence, the step's rows included), and q."""

    def __init__(self, dtype="f32", q_heads=4, page_size=16, seed=0,
                 cache_lengths=CACHE_LENGTHS, new_lengths=NEW_LENGTHS,
                 kind="paged"):
        rng = np.random.default_rng(seed)
        config = CacheConfig(dtype, KV_HEADS, HEAD_SIZE,
                             page_size if kind == "paged" else None,
                             num_layers=2, kind=kind)
        self.cache = testing.random_cache(config, cache_lengths, new_lengths,
                                          rng=rng)
        self.dtype, self.cache_lengths = dtype, list(cache_lengths)
        self.offsets = testing.row_offsets(new_lengths)
        self.keys, self.values = [], []
        for b, (cached, new) in enumerate(zip(cache_lengths, new_lengths)):
            shape = (cached + new, KV_HEADS, HEAD_SIZE)
            (k, keys), (v, values) = (stored(rng, shape, dtype) for _ in "kv")
            write_tokens(self.cache, LAYER, b, k, v)
            self.keys.append(keys)
            self.values.append(values)
        rows = int(self.offsets[-1])
        self.q, self.q64 = stored(rng, (rows, q_heads, HEAD_SIZE), dtype)

    def reference(self, scale, **clauses):
        """reference.attention_ragged with an lse: (out, lse) as float64."""
        rows, q_heads = self.q.shape[:2]
        out, lse = reference.attention_ragged(
            self.q, self.cache.key_cache(LAYER), self.cache.value_cache(LAYER),
            self.offsets, np.zeros_like(self.q), scale,
            lse=np.zeros((rows, q_heads), np.float32), **clauses)
        return (dtypes.to_float32(out, self.dtype).astype(np.float64),
                lse.astype(np.float64))

    def brute_force(self, scale, **clauses):
        return brute_force(self.q64, self.keys, self.values,
                           self.cache_lengths, self.offsets, f32(scale),
                           **clauses)


def visible(p, cache_length, window=None, chunk=None, noncausal=False):
    """The key positions that the row at position p sees, by the contract's
    definitions: the cached tokens (noncausal); the `window` most recent
    positions up to p; the positions up to p in p's chunk; all up to p."""
    if noncausal:
        return list(range(cache_length))
    keys = range(p + 1)
    if window is not None:
        return [j for j in keys if p - j < window]
    if chunk is not None:
        return [j for j in keys if j // chunk == p // chunk]
    return list(keys)


def brute_force(q, keys, values, cache_lengths, offsets, scale, window=None,
                chunk=None, noncausal=False, softcap=None, alibi=None,
                sinks=None):
    """(out [T, Hq, D], lse [T, Hq]) in float64, one key at a time."""
    rows, q_heads, _ = q.shape
    out, lse = np.zeros(q.shape), np.full((rows, q_heads), np.nan)
    for b, cached in enumerate(cache_lengths):
        for r in range(offsets[b], offsets[b + 1]):
            p = cached + r - offsets[b]
            seen = visible(p, cached, window, chunk, noncausal)
            for h in range(q_heads):
                g = h // (q_heads // keys[b].shape[1])
                logits = []
                for j in seen:
                    s = scale * sum(float(x) * float(y)
                                    for x, y in zip(q[r, h], keys[b][j, g]))
                    if softcap is not None:
                        s = f32(softcap) * math.tanh(s / f32(softcap))
                    if alibi is not None:
                        s += f32(alibi[h]) * (j - p)
                    logits.append(s)
                sink = [] if sinks is None else [f32(sinks[h])]
                if not logits + sink:
                    lse[r, h] = -math.inf
                    continue
                m = max(logits + sink)
                denominator = math.fsum(math.exp(s - m) for s in logits + sink)
                for s, j in zip(logits, seen):
                    out[r, h] += math.exp(s - m) / denominator * values[b][j, g]
                lse[r, h] = m + math.log(denominator)
    return out, lse


def slopes(q_heads):
    """ALiBi's slopes 2^(-8 (h + 1) / Hq)."""
    return 2.0 ** (-8.0 * np.arange(1, q_heads + 1) / q_heads)


def sink_logits(q_heads):
    return np.linspace(-1.5, 2.0, q_heads)


def check(case, scale, rows=None, **clauses):
    """The reference against the brute force (on `rows`, default all)."""
    out, lse = case.reference(scale, **clauses)
    expected_out, expected_lse = case.brute_force(scale, **clauses)
    rows = slice(None) if rows is None else rows
    assert np.allclose(out[rows], expected_out[rows], rtol=0,
                       atol=TOLERANCE[case.dtype])
    assert np.allclose(lse[rows], expected_lse[rows], rtol=1e-6, atol=1e-5)
    return out, lse


CLAUSES = {
    "causal": {},
    "window 1": dict(window=1),
    "window 3": dict(window=3),
    # window 6: larger than row 0's context (1 key), equal to row 1's (6),
    # smaller than the others
    "window 6": dict(window=6),
    "window 1000": dict(window=1000),
    "chunk 1": dict(chunk=1),
    "chunk 5": dict(chunk=5),        # boundaries inside pages of 16
    "chunk 16": dict(chunk=16),      # boundaries at the page edges
    "softcap": dict(softcap=1.5),
    "alibi": dict(alibi="slopes"),
    "sinks": dict(sinks="sinks"),
    "window+all": dict(window=4, softcap=2.0, alibi="slopes", sinks="sinks"),
    "chunk+all": dict(chunk=4, softcap=2.0, alibi="slopes", sinks="sinks"),
    "noncausal": dict(noncausal=True),
    "noncausal+all": dict(noncausal=True, softcap=2.0, alibi="slopes",
                          sinks="sinks"),
}


def clauses_for(name, q_heads):
    clauses = dict(CLAUSES[name])
    if "alibi" in clauses:
        clauses["alibi"] = slopes(q_heads)
    if "sinks" in clauses:
        clauses["sinks"] = sink_logits(q_heads)
    return clauses


@pytest.mark.parametrize("page_size", [1, 16])
@pytest.mark.parametrize("group", [1, 4, 8])
@pytest.mark.parametrize("name", CLAUSES)
def test_clauses_against_brute_force(name, group, page_size):
    case = Case(q_heads=KV_HEADS * group, page_size=page_size,
                seed=len(name) + group)
    clauses = clauses_for(name, KV_HEADS * group)
    out, lse = check(case, 0.7, **clauses)
    if clauses.get("noncausal"):
        # sequence 0 has no cached token: out 0, lse -inf (or the sink's)
        assert np.all(out[0] == 0)
        sinks = clauses.get("sinks", np.full(KV_HEADS * group, -np.inf))
        assert np.array_equal(lse[0], sinks.astype(np.float32))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_rounds_once(dtype):
    case = Case(dtype, q_heads=8, seed=3)
    clauses = dict(window=5, softcap=3.0, alibi=slopes(8), sinks=sink_logits(8))
    out = reference.attention_ragged(
        case.q, case.cache.key_cache(LAYER), case.cache.value_cache(LAYER),
        case.offsets, np.zeros_like(case.q), 0.5, **clauses)
    expected, _ = case.brute_force(0.5, **clauses)
    # the float64 result rounded once to f32 and then to the element type
    # (f16: the nearest f16 of the f32; bf16 from f32, ties to even)
    rounded = dtypes.from_float32(expected.astype(np.float32), dtype)
    mismatches = np.flatnonzero(out.ravel() != rounded.ravel())
    assert out.dtype == dtypes.storage_dtype(dtype)
    assert len(mismatches) <= out.size // 100   # only at rounding ties
    check(case, 0.5, **clauses)


def test_soft_cap_saturates_large_scores():
    # scale 3000: |scale q . k| up to ~1e4; tanh(s / c) saturates to +-1
    case = Case(q_heads=8, seed=5)
    out, lse = check(case, 3000.0, softcap=20.0)
    assert lse.max() <= 20 + np.log(22) + 1e-4  # 22 keys of at most 20
    uncapped, uncapped_lse = case.reference(3000.0)
    assert uncapped_lse.max() > 1000            # the same row without the cap
    assert not np.allclose(out, uncapped, atol=1e-3)
    check(case, 3000.0, softcap=20.0, alibi=slopes(8), window=7)


def test_dominant_sinks():
    # sink 50 against scores of at most ~1: out ~ e^-49, lse ~ 50
    case = Case(q_heads=4, seed=6)
    sinks = np.full(4, 50.0)
    out, lse = check(case, 0.1, sinks=sinks)
    assert np.all(np.abs(out) < 1e-18) and np.any(out != 0)
    assert np.allclose(lse, 50, rtol=0, atol=1e-6)
    out, lse = check(case, 0.1, sinks=np.full(4, -50.0))  # a negligible sink
    plain, plain_lse = case.reference(0.1)
    assert np.allclose(out, plain, rtol=0, atol=1e-7)
    assert np.allclose(lse, plain_lse, rtol=0, atol=1e-6)


def test_continuous_cache_and_rows_outside_sequences():
    case = Case(q_heads=8, seed=7, kind="continuous")
    check(case, 0.5, chunk=3, alibi=slopes(8), sinks=sink_logits(8))
    # rows after the last sequence keep their out and lse
    q = np.concatenate([case.q, case.q[:1]])
    out, lse = reference.attention_ragged(
        q, case.cache.key_cache(LAYER), case.cache.value_cache(LAYER),
        case.offsets, np.full_like(q, 7.0), 0.5, window=2,
        lse=np.full(q.shape[:2], 9.0, np.float32))
    assert np.all(out[-1] == 7.0) and np.all(lse[-1] == 9.0)
    assert np.all(out[:-1] != 7.0) and np.all(lse[:-1] != 9.0)


@pytest.mark.parametrize("position, cache_length, clauses, expected", [
    (0, 0, {}, (0, 1)), (7, 3, {}, (0, 8)),
    (7, 3, dict(window=1), (7, 8)), (7, 3, dict(window=3), (5, 8)),
    (7, 3, dict(window=8), (0, 8)), (7, 3, dict(window=9), (0, 8)),
    (15, 15, dict(chunk=16), (0, 16)), (16, 15, dict(chunk=16), (16, 17)),
    (17, 15, dict(chunk=16), (16, 18)), (14, 0, dict(chunk=5), (10, 15)),
    (15, 0, dict(chunk=5), (15, 16)), (4, 4, dict(chunk=1), (4, 5)),
    (9, 6, dict(noncausal=True), (0, 6)), (3, 0, dict(noncausal=True), (0, 0)),
])
def test_key_range(position, cache_length, clauses, expected):
    assert reference.key_range(position, cache_length, **clauses) == expected
    assert reference.key_range(position, cache_length, **clauses) == \
        reference.key_range(np.int64(position), np.int32(cache_length),
                            **{k: v if k == "noncausal" else np.int64(v)
                               for k, v in clauses.items()})


def test_noncausal_rows_see_the_cached_prefix_only():
    # Cascade: a prefix of 13 tokens stored once (sequence 0, a continuous
    # block of exactly 13 slots: the rows' own positions 13.. do not
    # exist), every query row of the batch placed in it.
    rng = np.random.default_rng(8)
    (k, keys), (v, values) = (stored(rng, (13, KV_HEADS, HEAD_SIZE), "f32")
                              for _ in range(2))
    blocks = np.zeros((2, 2, 1, 13, KV_HEADS, HEAD_SIZE), np.float32)
    blocks[1, 0, 0], blocks[1, 1, 0] = k, v
    cache = caches.ContinuousCache(blocks, [13], [1], 5, 18, "f32")
    q, q64 = stored(rng, (5, 8, HEAD_SIZE), "f32")
    q[3], q64[3] = q[1], q64[1]
    clauses = dict(noncausal=True, softcap=2.0, alibi=slopes(8))
    out, lse = reference.attention_ragged(
        q, cache.key_cache(0), cache.value_cache(0), [0, 5], np.zeros_like(q),
        0.6, lse=np.zeros((5, 8), np.float32), **clauses)
    expected, expected_lse = brute_force(q64, [keys], [values], [13], [0, 5],
                                         f32(0.6), **clauses)
    assert np.allclose(out, expected, rtol=0, atol=2e-6)
    assert np.allclose(lse, expected_lse, rtol=1e-6, atol=1e-5)
    # alibi's j - p uses the row's position 13 + r: rows 1 and 3 (the same
    # q) differ by 2 * slope in every score, which cancels in out, not lse
    assert np.allclose(out[1], out[3], rtol=0, atol=2e-6)
    assert np.allclose(lse[1] - lse[3], 2 * slopes(8), rtol=0, atol=2e-5)


def test_empty_key_ranges():
    # noncausal on sequences without cached tokens: no keys; a sink alone
    # gives out 0 and lse = the sink
    case = Case(q_heads=4, seed=9, cache_lengths=[0, 3, 0], new_lengths=[2, 1, 1])
    out, lse = check(case, 0.5, noncausal=True)
    assert np.all(out[[0, 1, 3]] == 0) and np.all(lse[[0, 1, 3]] == -np.inf)
    assert np.all(np.isfinite(lse[2])) and np.all(out[2] != 0)
    sinks = np.array([0.5, -3.0, 7.0, 1e-3])
    out, lse = check(case, 0.5, noncausal=True, sinks=sinks)
    assert np.all(out[[0, 1, 3]] == 0)
    assert np.array_equal(lse[3], sinks.astype(np.float32))


@pytest.mark.parametrize("scales", ["token_head", "block<4>"])
def test_quantized_cache_with_clauses(scales):
    # the keys and values are the cache's dequantized tokens
    config = CacheConfig("i8", KV_HEADS, HEAD_SIZE, 4, scales=scales)
    cache = testing.random_cache(config, [6, 9], [1, 3], rng=10)
    offsets = testing.row_offsets([1, 3])
    keys = [cache.key_cache(0).tokens(b, n).astype(np.float64) for b, n in
            enumerate([7, 12])]
    values = [cache.value_cache(0).tokens(b, n).astype(np.float64) for b, n in
              enumerate([7, 12])]
    q, q64 = stored(np.random.default_rng(11), (4, 4, HEAD_SIZE), "f16")
    clauses = dict(window=5, softcap=1.0, alibi=slopes(4), sinks=sink_logits(4))
    out, lse = reference.attention_ragged(
        q, cache.key_cache(0), cache.value_cache(0), offsets, np.zeros_like(q),
        0.8, lse=np.zeros((4, 4), np.float32), **clauses)
    expected, expected_lse = brute_force(q64, keys, values, [6, 9], offsets,
                                         f32(0.8), **clauses)
    assert out.dtype == np.float16
    assert np.allclose(out, expected, rtol=0, atol=1e-3)
    assert np.allclose(lse, expected_lse, rtol=1e-6, atol=1e-5)


def causal_attention_before_the_clauses(q, key_view, value_view, offsets,
                                        out, scale, dtype):
    """reference.attention_ragged as it was before the clauses (frozen):
    its results must not change by one bit."""
    cache, out = key_view.cache, np.array(out, copy=True)
    group = q.shape[1] // cache.num_heads
    scale = float(np.float32(scale))
    for b in range(cache.batch):
        begin, end = int(offsets[b]), int(offsets[b + 1])
        if end <= begin:
            continue
        length = int(cache.cache_lengths[b]) + end - begin
        keys = key_view.tokens(b, length).astype(np.float64)
        values = value_view.tokens(b, length).astype(np.float64)
        for r in range(begin, end):
            p = int(cache.cache_lengths[b]) + r - begin
            query = dtypes.to_float32(q[r], dtype).astype(np.float64)
            kv_head = np.arange(q.shape[1]) // group
            scores = np.einsum("hd,jhd->hj", query, keys[:p + 1, kv_head]) * scale
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            result = np.einsum("hj,jhd->hd", weights, values[:p + 1, kv_head])
            out[r] = dtypes.from_float32(result.astype(np.float32), dtype)
    return out


@pytest.mark.parametrize("dtype, scales, q_dtype", [
    ("f32", None, "f32"), ("f16", None, "f16"), ("bf16", None, "bf16"),
    ("i8", "token_head", "f16"), ("f8E4M3FN", "block<4>", "bf16")])
def test_defaults_are_the_causal_attention_bit_for_bit(dtype, scales, q_dtype):
    config = CacheConfig(dtype, KV_HEADS, HEAD_SIZE, 4, scales=scales)
    cache = testing.random_cache(config, [0, 9, 30], [3, 1, 5], rng=12)
    offsets = testing.row_offsets([3, 1, 5])
    q, _ = stored(np.random.default_rng(13), (9, 8, HEAD_SIZE), q_dtype)
    views = (cache.key_cache(1), cache.value_cache(0))
    expected = causal_attention_before_the_clauses(
        q, *views, offsets, np.zeros_like(q), 0.3, q_dtype)
    out = reference.attention_ragged(q, *views, offsets, np.zeros_like(q), 0.3)
    assert np.array_equal(out.view(np.uint8), expected.view(np.uint8))
    explicit, _ = reference.attention_ragged(
        q, *views, offsets, np.zeros_like(q), 0.3, window=None, chunk=None,
        noncausal=False, softcap=None, alibi=None, sinks=None,
        lse=np.zeros((9, 8), np.float32))
    assert np.array_equal(explicit.view(np.uint8), expected.view(np.uint8))


def test_returns_new_arrays():
    case = Case(q_heads=4, seed=14)
    views = (case.cache.key_cache(LAYER), case.cache.value_cache(LAYER))
    out, lse = np.full_like(case.q, 5.0), np.full((8, 4), 5.0, np.float32)
    plain = reference.attention_ragged(case.q, *views, case.offsets, out, 0.5)
    assert isinstance(plain, np.ndarray) and plain.shape == out.shape
    result = reference.attention_ragged(case.q, *views, case.offsets, out, 0.5,
                                        sinks=sink_logits(4), lse=lse)
    assert isinstance(result, tuple) and result[1].dtype == np.float32
    assert np.all(out == 5.0) and np.all(lse == 5.0)    # inputs unchanged
    assert np.array_equal(plain, reference.attention_ragged(
        case.q, *views, case.offsets, out, 0.5, lse=lse)[0])


@pytest.mark.parametrize("clauses, error, message", [
    (dict(window=4, chunk=4), ValueError, "window and chunk exclude each other"),
    (dict(noncausal=True, window=2), ValueError, "noncausal excludes window"),
    (dict(noncausal=True, chunk=2), ValueError, "noncausal excludes window and chunk"),
    (dict(window=0), ValueError, r"window must be >= 1 .*, got 0"),
    (dict(chunk=-3), ValueError, r"chunk must be >= 1 .*, got -3"),
    (dict(window=2.5), TypeError, "window is an i64 attribute"),
    (dict(chunk=True), TypeError, "chunk is an i64 attribute"),
    (dict(noncausal=1), TypeError, "noncausal is a unit attribute"),
    (dict(softcap=0.0), ValueError, "softcap must be a finite f32 > 0, got 0.0"),
    (dict(softcap=-1.0), ValueError, "softcap must be a finite f32 > 0"),
    (dict(softcap=float("nan")), ValueError, "softcap must be a finite f32 > 0"),
    (dict(softcap=float("inf")), ValueError, "softcap must be a finite f32 > 0"),
    (dict(alibi=np.ones(3)), ValueError,
     r"alibi holds one f32 per query head: shape \(4,\), got \(3,\)"),
    (dict(sinks=np.ones((4, 1))), ValueError,
     r"sinks holds one f32 per query head: shape \(4,\), got \(4, 1\)"),
    (dict(sinks=np.ones(4, np.int32)), TypeError, "sinks must be floats"),
    (dict(lse=np.zeros((8, 3), np.float32)), ValueError,
     r"lse is \[T, q_heads\] = \(8, 4\) like q's first two dims, got \(8, 3\)"),
    (dict(lse=np.zeros((8, 4))), TypeError,
     "lse must be a float32 numpy array .*, got float64"),
])
def test_exclusions_and_bad_operands(clauses, error, message):
    case = Case(q_heads=4, seed=15)
    with pytest.raises(error, match=message):
        reference.attention_ragged(case.q, case.cache.key_cache(LAYER),
                                   case.cache.value_cache(LAYER), case.offsets,
                                   case.q, 0.5, **clauses)
    lengths = {k: v for k, v in clauses.items()
               if k in ("window", "chunk", "noncausal")}
    if lengths:
        with pytest.raises(error, match=message):
            reference.key_range(3, 2, **lengths)


# merge_states: partial states over disjoint key sets (a cascade: a shared
# prefix stored once and attended noncausally, then each sequence's own
# tokens) merge into the attention over all keys.

OWN_CACHED, OWN_NEW = [0, 4, 9], [1, 3, 2]


def cascade(dtype, prefixes, sinks_on=None, seed=16, q_heads=4):
    """(q, [(out, lse) of each prefix, noncausal], (out, lse) of the own
    tokens, (out, lse) over everything), with a soft cap; `sinks_on`: the
    index of the part (prefixes, then own) that has sinks, if any."""
    rng = np.random.default_rng(seed)
    config = CacheConfig(dtype, KV_HEADS, HEAD_SIZE, 4, num_layers=2)
    rows, offsets = sum(OWN_NEW), testing.row_offsets(OWN_NEW)
    q, _ = stored(rng, (rows, q_heads, HEAD_SIZE), dtype)
    sinks = sink_logits(q_heads)

    def attend(cache, row_offsets, with_sinks, **clauses):
        if with_sinks:
            clauses["sinks"] = sinks
        return reference.attention_ragged(
            q, cache.key_cache(LAYER), cache.value_cache(LAYER), row_offsets,
            np.zeros_like(q), 0.9, softcap=3.0,
            lse=np.zeros((rows, q_heads), np.float32), **clauses)

    tokens = [[stored(rng, (n, KV_HEADS, HEAD_SIZE), dtype)[0] for _ in "kv"]
              for n in prefixes]
    parts = []
    for i, (k, v) in enumerate(tokens):
        cache = testing.random_cache(config, [len(k)], [rows], rng=rng)
        write_tokens(cache, LAYER, 0, k, v)
        parts.append(attend(cache, [0, rows], i == sinks_on, noncausal=True))
    own = testing.random_cache(config, OWN_CACHED, OWN_NEW, rng=rng)
    whole = sum(prefixes)
    full = testing.random_cache(config, [whole + c for c in OWN_CACHED],
                                OWN_NEW, rng=rng)
    for b, n in enumerate(np.add(OWN_CACHED, OWN_NEW)):
        k, v = (stored(rng, (n, KV_HEADS, HEAD_SIZE), dtype)[0] for _ in "kv")
        write_tokens(own, LAYER, b, k, v)
        write_tokens(full, LAYER, b,
                     np.concatenate([t[0] for t in tokens] + [k]),
                     np.concatenate([t[1] for t in tokens] + [v]))
    return (q, parts, attend(own, offsets, sinks_on == len(prefixes)),
            attend(full, offsets, sinks_on is not None))


def as_float(out, dtype):
    return dtypes.to_float32(out, dtype).astype(np.float64)


@pytest.mark.parametrize("sinks_on", [None, 0, 1])   # none, prefix, own
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_merged_cascade_is_attention_over_all_keys(dtype, sinks_on):
    _, [(prefix, prefix_lse)], (own, own_lse), (full, full_lse) = cascade(
        dtype, [11], sinks_on)
    out, lse = reference.merge_states(prefix, prefix_lse, own, own_lse, dtype)
    assert out.dtype == dtypes.storage_dtype(dtype) and lse.dtype == np.float32
    assert np.allclose(as_float(out, dtype), as_float(full, dtype), rtol=0,
                       atol=2 * TOLERANCE[dtype])
    assert np.allclose(lse, full_lse, rtol=1e-6, atol=1e-5)
    # not the own part alone: the prefix counts
    assert not np.allclose(as_float(out, dtype), as_float(own, dtype), atol=0.05)


def test_merge_into_the_first_state():
    # three disjoint parts merged one after the other, each result passed
    # back as out_a (the op's in-place use); the inputs are never changed
    _, parts, own, (full, full_lse) = cascade("f32", [6, 5], sinks_on=2)
    copies = [(o.copy(), s.copy()) for o, s in parts + [own]]
    out, lse = parts[0]
    for other, other_lse in parts[1:] + [own]:
        out, lse = reference.merge_states(out, lse, other, other_lse, "f32")
    assert np.allclose(out, full, rtol=0, atol=4e-6)
    assert np.allclose(lse, full_lse, rtol=1e-6, atol=1e-5)
    for (o, s), (copy, copy_lse) in zip(parts + [own], copies):
        assert np.array_equal(o, copy) and np.array_equal(s, copy_lse)
    # the order of the two states does not matter, to the bit
    a, b = parts
    forward = reference.merge_states(*a, *b, "f32")
    backward = reference.merge_states(*b, *a, "f32")
    assert all(np.array_equal(x, y) for x, y in zip(forward, backward))


def random_states(dtype, seed, rows=6, q_heads=4):
    rng = np.random.default_rng(seed)
    (a, _), (b, _) = (stored(rng, (rows, q_heads, HEAD_SIZE), dtype)
                      for _ in range(2))
    lse_a, lse_b = (rng.uniform(-3, 3, (rows, q_heads)).astype(np.float32)
                    for _ in range(2))
    return a, lse_a, b, lse_b


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_merge_with_empty_states(dtype):
    a, lse_a, b, lse_b = random_states(dtype, 17)
    lse_b[:2] = -np.inf                    # rows 0, 1: b has no keys
    lse_a[1:3] = -np.inf                   # rows 1, 2: a has no keys
    a[1, 0, 0] = b[1, 0, 1] = dtypes.from_float32(np.nan, dtype)  # ignored
    for (x, lse_x, y, lse_y) in [(a, lse_a, b, lse_b), (b, lse_b, a, lse_a)]:
        out, lse = reference.merge_states(x, lse_x, y, lse_y, dtype)
        # both empty: out 0, lse -inf; one empty: the other exactly
        assert np.all(as_float(out[1], dtype) == 0) and np.all(lse[1] == -np.inf)
        assert np.array_equal(out[0], a[0]) and np.array_equal(lse[0], lse_a[0])
        assert np.array_equal(out[2], b[2]) and np.array_equal(lse[2], lse_b[2])
        assert np.all(np.isfinite(lse[3:]))


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_merge_formula_rounds_once(dtype):
    a, lse_a, b, lse_b = random_states(dtype, 18, rows=64)
    out, lse = reference.merge_states(a, lse_a, b, lse_b, dtype)
    # the formula in float64 from the same f32 inputs
    x, y = as_float(a, dtype), as_float(b, dtype)
    top = np.maximum(lse_a, lse_b).astype(np.float64)
    expected_lse = top + np.log(np.exp(lse_a - top) + np.exp(lse_b - top))
    weight_a = np.exp(lse_a - expected_lse)[..., None]
    weight_b = np.exp(lse_b - expected_lse)[..., None]
    expected = weight_a * x + weight_b * y
    assert np.allclose(lse, expected_lse, rtol=0, atol=1e-6)
    if dtype == "f32":
        assert np.allclose(out, expected, rtol=1e-6, atol=1e-7)
    else:
        once = dtypes.from_float32(expected.astype(np.float32), dtype)
        mismatches = np.flatnonzero(out.ravel() != once.ravel())
        assert len(mismatches) <= out.size // 200   # f32 vs float64 near ties
        # the data tells one rounding from two (each product rounded first)
        twice = dtypes.from_float32(
            as_float(dtypes.from_float32(weight_a * x, dtype), dtype) +
            as_float(dtypes.from_float32(weight_b * y, dtype), dtype), dtype)
        assert np.count_nonzero(twice != once) > out.size // 20


@pytest.mark.parametrize("change, error, message", [
    (dict(dtype="i8"), ValueError, "merges f32, f16 or bf16 states, not 'i8'"),
    (dict(dtype="f16"), TypeError, "out_a of f16 must be a numpy array of "
                                   "float16, got float32"),
    (dict(out_b=np.zeros((6, 4, 4), np.float32)), ValueError,
     r"one shape, got \(6, 4, 8\) and \(6, 4, 4\)"),
    (dict(lse_a=np.zeros((6, 3), np.float32)), ValueError,
     r"lse_a is \[T, q_heads\] = \(6, 4\), got \(6, 3\)"),
    (dict(lse_b=np.zeros((6, 4))), TypeError,
     "lse_b must be a float32 numpy array, got float64"),
])
def test_bad_merges(change, error, message):
    a, lse_a, b, lse_b = random_states("f32", 19)
    operands = dict(out_a=a, lse_a=lse_a, out_b=b, lse_b=lse_b, dtype="f32")
    operands.update(change)
    with pytest.raises(error, match=message):
        reference.merge_states(**operands)
