"""kvcache.reference, the numpy model, checked against the formulas of
docs/Contract.md section 1 and simple facts (no compiler involved)."""

import numpy as np
import pytest

from kvcache import CacheConfig, reference

CONFIG = CacheConfig("f32", num_heads=2, head_size=4, page_size=3, num_layers=2)


def make_cache(seed=0):
    return reference.random_cache(CONFIG, [4, 0, 7], [2, 3, 1], rng=seed)


def test_random_cache_shape_and_pages():
    cache = make_cache()
    assert cache.shape[1:] == (2, 2, 3, 2, 4)
    assert (cache.max_seq_length, cache.max_cache_length) == (3, 8)
    # pages of different sequences never alias; padding is one null page
    needed = [2, 1, 3]
    pages = [p for b, n in enumerate(needed) for p in cache.lookup_table[b, :n]]
    assert len(set(pages)) == len(pages)
    padding = {int(p) for b, n in enumerate(needed) for p in cache.lookup_table[b, n:]}
    assert len(padding) == 1 and not padding & set(pages)


def test_load_follows_the_spec_formula():
    cache = make_cache()
    P = cache.page_size
    for kv, layer, b, h, t, d in [(0, 1, 0, 1, 4, 2), (1, 0, 2, 0, 7, 3)]:
        view = cache.key_cache(layer) if kv == 0 else cache.value_cache(layer)
        page = cache.lookup_table[b, t // P]
        expected = cache.blocks[page, kv, layer, t % P, h, d]
        assert view.load(b, h, t, d)[0] == expected
        assert cache.lookup(b, t) == (page, t % P)


def test_store_then_gather_returns_the_rows():
    cache = make_cache()
    new = reference.random_rows(np.random.default_rng(1), 6, 2, 4, "f32")
    offsets = reference.row_offsets([2, 3, 1])
    stored = cache.copy(reference.store_ragged(cache.value_cache(1), new, offsets))
    assert np.array_equal(cache.blocks, make_cache().blocks)  # input unchanged
    ctx = reference.row_offsets([6, 3, 8])
    context = reference.gather_ragged(stored.value_cache(1), ctx, np.zeros((17, 2, 4)))
    assert np.array_equal(context[4:6], new[0:2])      # after 4 cached tokens
    assert np.array_equal(context[6:9], new[2:5])      # an empty sequence
    assert np.array_equal(context[16], new[5])
    # untouched: K, other layers
    assert np.array_equal(stored.blocks[:, 0], cache.blocks[:, 0])
    assert np.array_equal(stored.blocks[:, :, 0], cache.blocks[:, :, 0])


def test_copy_pages():
    cache = make_cache()
    blocks = reference.copy_pages(cache, np.array([[0, 5], [3, 1]], np.int32))
    assert np.array_equal(blocks[5], cache.blocks[0])
    assert np.array_equal(blocks[1], cache.blocks[3])
    assert np.array_equal(blocks[2], cache.blocks[2])


def test_attention_limits():
    cache = make_cache()
    cache.blocks[:, 0] = 0  # equal scores: the mean of the visible values
    q = np.ones((6, 4, 4), np.float32)  # GQA group 2
    offsets = reference.row_offsets([2, 3, 1])
    out = reference.attention_ragged(q, cache.key_cache(0), cache.value_cache(0),
                                     offsets, np.zeros_like(q), 0.5)
    values = cache.value_cache(0).tokens(1, 3)
    # sequence 1 (no cached tokens): row 2 sees token 0, row 4 tokens 0..2
    assert np.allclose(out[2, 3], values[0, 1])
    assert np.allclose(out[4, 0], values[:3, 0].mean(axis=0))


@pytest.mark.parametrize("value, bits", [
    (1.0, 0x3F80), (-2.5, 0xC020), (1 + 2**-8, 0x3F80),      # ties to even
    (1 + 3 * 2**-8, 0x3F82), (1 + 2**-8 + 2**-12, 0x3F81)])
def test_bf16_rounding(value, bits):
    stored = reference.from_float32(np.float32(value), "bf16")
    assert int(stored) == bits
    assert reference.to_float32(stored, "bf16") == np.float32(
        reference.to_float32(np.uint16(bits), "bf16"))


# Codes from the OCP 8-bit floating point specification (E4M3: no
# infinities, S.1111.111 NaN; E5M2: IEEE-style infinities and NaNs).
@pytest.mark.parametrize("dtype, value, code", [
    ("f8E4M3FN", 1.0, 0x38), ("f8E4M3FN", 448.0, 0x7E), ("f8E4M3FN", -448.0, 0xFE),
    ("f8E4M3FN", 2.0**-6, 0x08), ("f8E4M3FN", 2.0**-9, 0x01), ("f8E4M3FN", 0.0, 0x00),
    ("f8E4M3FN", -0.0, 0x80), ("f8E4M3FN", 1.0625, 0x38), ("f8E4M3FN", 1.1875, 0x3A),
    ("f8E4M3FN", 1e6, 0x7E), ("f8E4M3FN", -np.inf, 0xFE), ("f8E4M3FN", 2.0**-11, 0x00),
    ("f8E4M3FN", 3 * 2.0**-10, 0x02), ("f8E4M3FN", np.nan, 0x7F),
    ("f8E5M2", 1.0, 0x3C), ("f8E5M2", 57344.0, 0x7B), ("f8E5M2", np.inf, 0x7B),
    ("f8E5M2", 2.0**-14, 0x04), ("f8E5M2", 2.0**-16, 0x01), ("f8E5M2", 1.125, 0x3C),
    ("f8E5M2", 1.375, 0x3E), ("f8E5M2", -7.0, 0xC7), ("f8E5M2", 61440.0, 0x7B),
    ("f8E5M2", -np.nan, 0xFE)])
def test_fp8_encoding(dtype, value, code):
    assert int(reference.from_float32(np.float32(value), dtype)) == code


@pytest.mark.parametrize("dtype", ["f8E4M3FN", "f8E5M2"])
def test_fp8_encoding_is_nearest_ties_to_even(dtype):
    # Against a brute-force search over every finite code, on values that
    # hit every interval, its midpoints and both ends of the range.
    table = reference.fp8_values(dtype)
    finite = np.flatnonzero(np.isfinite(table))
    top = np.max(table[finite])
    rng = np.random.default_rng(0)
    mids = (table[finite][:, None] + table[finite][None, :]) / 2
    values = np.concatenate([rng.uniform(-1.2 * top, 1.2 * top, 4000),
                             rng.normal(0, 1, 4000), mids.ravel()[::7],
                             table[finite]]).astype(np.float32)
    codes = reference.from_float32(values, dtype)
    for value, code in zip(values.astype(np.float64), codes):
        target = np.clip(value, -top, top)
        distance = np.abs(table[finite] - target)
        best = finite[distance == distance.min()]
        if len(best) > 1:  # a tie (or +-0): the even code of value's sign
            best = [c for c in best if c % 2 == 0 and
                    (np.signbit(table[c]) == np.signbit(value) or table[c] != 0)]
        assert int(code) in [int(c) for c in best], (value, hex(code))
    decoded = reference.to_float32(codes, dtype)
    assert np.all(np.abs(decoded) <= top)


def test_i8_encoding():
    values = np.array([0.5, 1.5, 2.5, -0.5, -126.5, -200.0, 300.0, np.nan],
                      np.float32)
    assert reference.from_float32(values, "i8").tolist() == [
        0, 2, 2, 0, -126, -127, 127, 0]


def test_bad_views():
    cache = reference.random_cache(CacheConfig("f16", 1, 8, 4, mla=True), [1], [1],
                                   num_layers=2)
    with pytest.raises(ValueError, match="no value cache"):
        cache.value_cache(0)
    with pytest.raises(ValueError, match="layer=2"):
        cache.key_cache(2)


# The continuous kind: sequence b owns block lookup_table[b]; token t sits
# in slot t of it.
CONTINUOUS = CacheConfig("f32", num_heads=2, head_size=4, num_layers=2,
                         kind="continuous")


def make_continuous(seed=0, **arguments):
    return reference.random_cache(CONTINUOUS, [4, 0, 7], [2, 3, 1], rng=seed,
                                  **arguments)


def test_continuous_random_cache_blocks():
    cache = make_continuous(spare_pages=3)
    assert isinstance(cache, reference.ContinuousCache) and cache.kind == "continuous"
    # one block per sequence plus 3 spare ones, as long as the longest
    # sequence (7 + 1 tokens)
    assert cache.shape == (6, 2, 2, 8, 2, 4)
    assert cache.block_tokens == 8 and cache.num_blocks == 6
    assert cache.lookup_table.shape == (3,) and cache.lookup_table.dtype == np.int32
    assert len(set(cache.lookup_table.tolist())) == 3
    assert set(cache.lookup_table.tolist()) <= set(range(6))
    assert (cache.max_seq_length, cache.max_cache_length) == (3, 8)
    # the blocks are shuffled: not always the first ones in order
    tables = {tuple(make_continuous(seed).lookup_table) for seed in range(8)}
    assert len(tables) > 1
    assert make_continuous(block_tokens=20).block_tokens == 20


def test_continuous_random_cache_errors():
    with pytest.raises(ValueError, match="fewer tokens than the longest"):
        make_continuous(block_tokens=7)
    with pytest.raises(ValueError, match="columns is for paged caches"):
        make_continuous(columns=2)
    with pytest.raises(ValueError, match="block_tokens is for continuous"):
        reference.random_cache(CONFIG, [4], [1], block_tokens=8)
    config = CacheConfig("f16", 1, 8, kind="continuous", block_tokens=16)
    assert reference.random_cache(config, [3], [1]).block_tokens == 16
    with pytest.raises(ValueError, match="differs from the config's 16"):
        reference.random_cache(config, [3], [1], block_tokens=32)
    with pytest.raises(ValueError, match="lookup_table of a continuous cache is 1-D"):
        reference.ContinuousCache(np.zeros((2, 2, 1, 4, 1, 8), np.float32),
                                  [1], [[0]], 1, 1, "f32")
    with pytest.raises(ValueError, match="lookup_table of a paged cache is 2-D"):
        reference.PagedCache(np.zeros((2, 2, 1, 4, 1, 8), np.float32),
                             [1], [0], 1, 1, "f32")


def test_continuous_load_follows_the_spec_formula():
    cache = make_continuous()
    for kv, layer, b, h, t, d in [(0, 1, 0, 1, 4, 2), (1, 0, 2, 0, 7, 3),
                                  (1, 1, 1, 1, 0, 0)]:
        view = cache.key_cache(layer) if kv == 0 else cache.value_cache(layer)
        block = cache.lookup_table[b]
        assert view.load(b, h, t, d)[0] == cache.blocks[block, kv, layer, t, h, d]
        assert cache.lookup(b, t) == (block, t)
    with pytest.raises(IndexError, match="outside the 8 slots"):
        cache.lookup(0, 8)


def test_continuous_store_gather_and_attention_follow_the_formula():
    cache = make_continuous()
    rng = np.random.default_rng(1)
    new = reference.random_rows(rng, 7, 2, 4, "f32")
    offsets = reference.row_offsets([2, 3, 1]) + 1  # rows 1..6
    stored = reference.store_ragged(cache.value_cache(1), new, offsets)
    expected = cache.blocks.copy()
    for b, start in enumerate([4, 0, 7]):
        rows = range(offsets[b], offsets[b + 1])
        for i, r in enumerate(rows):
            expected[cache.lookup_table[b], 1, 1, start + i] = new[r]
    assert np.array_equal(stored, expected)
    assert not np.array_equal(stored, cache.blocks)  # the input is unchanged
    stored = cache.copy(stored)
    assert isinstance(stored, reference.ContinuousCache)

    ctx = reference.row_offsets([6, 3, 8]) + 2
    sentinel = np.full((20, 2, 4), 7.0, np.float32)
    context = reference.gather_ragged(stored.value_cache(1), ctx, sentinel)
    for b, length in enumerate([6, 3, 8]):
        block = cache.lookup_table[b]
        assert np.array_equal(context[ctx[b]:ctx[b + 1]],
                              stored.blocks[block, 1, 1, :length])
    assert np.all(context[:2] == 7.0) and np.all(context[19] == 7.0)

    stored.blocks[:, 0] = 0  # equal scores: the mean of the visible values
    q = np.ones((7, 4, 4), np.float32)
    out = reference.attention_ragged(q, stored.key_cache(1), stored.value_cache(1),
                                     offsets, np.full_like(q, 7.0), 0.5)
    values = stored.blocks[cache.lookup_table[0], 1, 1]
    # sequence 0 has 4 cached tokens: its rows 1 and 2 see tokens 0..4, 0..5
    assert np.allclose(out[1, 3], values[:5, 1].mean(axis=0))
    assert np.allclose(out[2, 0], values[:6, 0].mean(axis=0))
    assert np.all(out[0] == 7.0)


def test_continuous_caches_have_no_pages_to_copy():
    with pytest.raises(ValueError, match="copy_pages needs a cache with pages"):
        reference.copy_pages(make_continuous(), np.array([[0, 1]], np.int32))
