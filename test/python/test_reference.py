"""kvcache.reference, the numpy model, checked against the formulas of
docs/Contract.md section 1 and simple facts (no compiler involved)."""

import numpy as np
import pytest

from kvcache import CacheConfig, caches, dtypes, reference, testing

CONFIG = CacheConfig("f32", num_heads=2, head_size=4, page_size=3, num_layers=2)


def make_cache(seed=0):
    return testing.random_cache(CONFIG, [4, 0, 7], [2, 3, 1], rng=seed)


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
    new = testing.random_rows(np.random.default_rng(1), 6, 2, 4, "f32")
    offsets = testing.row_offsets([2, 3, 1])
    stored = cache.value_cache(1).store_ragged(new, offsets)
    assert np.array_equal(cache.blocks, make_cache().blocks)  # input unchanged
    ctx = testing.row_offsets([6, 3, 8])
    context = reference.gather_ragged(stored.value_cache(1), ctx, np.zeros((17, 2, 4)))
    assert np.array_equal(context[4:6], new[0:2])      # after 4 cached tokens
    assert np.array_equal(context[6:9], new[2:5])      # an empty sequence
    assert np.array_equal(context[16], new[5])
    # untouched: K, other layers
    assert np.array_equal(stored.blocks[:, 0], cache.blocks[:, 0])
    assert np.array_equal(stored.blocks[:, :, 0], cache.blocks[:, :, 0])


def test_copy_pages():
    cache = make_cache()
    blocks = cache.copy_pages(np.array([[0, 5], [3, 1]], np.int32)).blocks
    assert np.array_equal(blocks[5], cache.blocks[0])
    assert np.array_equal(blocks[1], cache.blocks[3])
    assert np.array_equal(blocks[2], cache.blocks[2])


def test_deprecated_blocks_only_forms_are_the_new_caches_blocks():
    cache = make_cache()
    new = testing.random_rows(np.random.default_rng(2), 6, 2, 4, "f32")
    offsets = testing.row_offsets([2, 3, 1])
    pairs = np.array([[0, 5], [3, 1]], np.int32)
    with pytest.warns(DeprecationWarning, match=r"view.store_ragged\(new, "
                      r"row_offsets\).blocks"):
        blocks = reference.store_ragged(cache.key_cache(1), new, offsets)
    assert np.array_equal(blocks, cache.key_cache(1).store_ragged(new, offsets).blocks)
    assert not np.array_equal(blocks, cache.blocks)
    with pytest.warns(DeprecationWarning, match=r"cache.copy_pages\(pairs\).blocks"):
        blocks = reference.copy_pages(cache, pairs)
    assert np.array_equal(blocks, cache.copy_pages(pairs).blocks)


def test_attention_limits():
    cache = make_cache()
    cache.blocks[:, 0] = 0  # equal scores: the mean of the visible values
    q = np.ones((6, 4, 4), np.float32)  # GQA group 2
    offsets = testing.row_offsets([2, 3, 1])
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
    stored = dtypes.from_float32(np.float32(value), "bf16")
    assert int(stored) == bits
    assert dtypes.to_float32(stored, "bf16") == np.float32(
        dtypes.to_float32(np.uint16(bits), "bf16"))


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
    assert int(dtypes.from_float32(np.float32(value), dtype)) == code


@pytest.mark.parametrize("dtype", ["f8E4M3FN", "f8E5M2"])
def test_fp8_encoding_is_nearest_ties_to_even(dtype):
    # Against a brute-force search over every finite code, on values that
    # hit every interval, its midpoints and both ends of the range.
    table = dtypes.fp8_values(dtype)
    finite = np.flatnonzero(np.isfinite(table))
    top = np.max(table[finite])
    rng = np.random.default_rng(0)
    mids = (table[finite][:, None] + table[finite][None, :]) / 2
    values = np.concatenate([rng.uniform(-1.2 * top, 1.2 * top, 4000),
                             rng.normal(0, 1, 4000), mids.ravel()[::7],
                             table[finite]]).astype(np.float32)
    codes = dtypes.from_float32(values, dtype)
    for value, code in zip(values.astype(np.float64), codes):
        target = np.clip(value, -top, top)
        distance = np.abs(table[finite] - target)
        best = finite[distance == distance.min()]
        if len(best) > 1:  # a tie (or +-0): the even code of value's sign
            best = [c for c in best if c % 2 == 0 and
                    (np.signbit(table[c]) == np.signbit(value) or table[c] != 0)]
        assert int(code) in [int(c) for c in best], (value, hex(code))
    decoded = dtypes.to_float32(codes, dtype)
    assert np.all(np.abs(decoded) <= top)


def test_i8_encoding():
    values = np.array([0.5, 1.5, 2.5, -0.5, -126.5, -200.0, 300.0, np.nan],
                      np.float32)
    assert dtypes.from_float32(values, "i8").tolist() == [
        0, 2, 2, 0, -126, -127, 127, 0]


def test_bad_views():
    cache = testing.random_cache(CacheConfig("f16", 1, 8, 4, mla=True), [1], [1],
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
    return testing.random_cache(CONTINUOUS, [4, 0, 7], [2, 3, 1], rng=seed,
                                **arguments)


def test_continuous_random_cache_blocks():
    cache = make_continuous(spare_pages=3)
    assert isinstance(cache, caches.ContinuousCache) and cache.kind == "continuous"
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
        testing.random_cache(CONFIG, [4], [1], block_tokens=8)
    config = CacheConfig("f16", 1, 8, kind="continuous", block_tokens=16)
    assert testing.random_cache(config, [3], [1]).block_tokens == 16
    with pytest.raises(ValueError, match="differs from the config's 16"):
        testing.random_cache(config, [3], [1], block_tokens=32)
    with pytest.raises(ValueError, match="lookup_table of a continuous cache is 1-D"):
        caches.ContinuousCache(np.zeros((2, 2, 1, 4, 1, 8), np.float32),
                               [1], [[0]], 1, 1, "f32")
    with pytest.raises(ValueError, match="lookup_table of a paged cache is 2-D"):
        caches.PagedCache(np.zeros((2, 2, 1, 4, 1, 8), np.float32),
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
    new = testing.random_rows(rng, 7, 2, 4, "f32")
    offsets = testing.row_offsets([2, 3, 1]) + 1  # rows 1..6
    stored = cache.value_cache(1).store_ragged(new, offsets).blocks
    expected = cache.blocks.copy()
    for b, start in enumerate([4, 0, 7]):
        rows = range(offsets[b], offsets[b + 1])
        for i, r in enumerate(rows):
            expected[cache.lookup_table[b], 1, 1, start + i] = new[r]
    assert np.array_equal(stored, expected)
    assert not np.array_equal(stored, cache.blocks)  # the input is unchanged
    stored = cache.copy(stored)
    assert isinstance(stored, caches.ContinuousCache)

    ctx = testing.row_offsets([6, 3, 8]) + 2
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
        make_continuous().copy_pages(np.array([[0, 1]], np.int32))


# Quantized caches (docs/Contract.md 2.2): codes + scales. One layer, one
# head of 4, pages of 2 tokens; sequence 0 owns pages 2 then 0.
TABLE = np.array([[2, 0]], np.int32)


def quantized_cache(dtype, scales_kind, cache_length=1):
    blocks = np.zeros((3, 2, 1, 2, 1, 4), dtypes.storage_dtype(dtype))
    config = CacheConfig(dtype, 1, 4, 2, num_layers=1, scales=scales_kind)
    scales = np.full(config.scales_shape(3), 0.25, np.float32)
    return caches.PagedCache(blocks, [cache_length], TABLE, 2, 3, dtype,
                             scales, scales_kind)


def test_store_ragged_token_head_by_hand():
    cache = quantized_cache("i8", "token_head")
    rows = np.array([[[254, -127, 63.5, 0]], [[0, 0, 0, 0]]], np.float32)
    stored = cache.key_cache(0).store_ragged(rows, np.array([0, 2], np.int32))
    # token 1: page 2 slot 1, scale 254 / 127 = 2, codes rne(v / 2) (ties to
    # even: -63.5 -> -64, 31.75 -> 32); token 2: page 0 slot 0, amax 0:
    # scale 1
    assert stored.blocks[2, 0, 0, 1, 0].tolist() == [127, -64, 32, 0]
    assert stored.blocks[0, 0, 0, 0, 0].tolist() == [0, 0, 0, 0]
    expected = np.full((3, 2, 1, 2, 1), 0.25, np.float32)
    expected[2, 0, 0, 1, 0], expected[0, 0, 0, 0, 0] = 2.0, 1.0
    assert np.array_equal(stored.scales, expected)
    assert np.all(cache.scales == 0.25) and not cache.blocks.any()  # unchanged
    assert stored.key_cache(0).tokens(0, 3)[1:].tolist() == [
        [[254, -128, 64, 0]], [[0, 0, 0, 0]]]
    assert stored.key_cache(0).load(0, 0, 1, 1, width=2).tolist() == [-128, 64]


def test_store_ragged_block_scales_by_hand():
    cache = quantized_cache("f8E4M3FN", "block<2>")
    rows = np.array([[[448, 224, -896, 1]]], np.float32)
    stored = cache.value_cache(0).store_ragged(rows, np.array([0, 1], np.int32))
    # groups [448, 224] (scale 1: 0x7E, 0x76) and [-896, 1] (scale 2:
    # -448 -> 0xFE, 0.5 -> 0x30)
    assert stored.blocks[2, 1, 0, 1, 0].tolist() == [0x7E, 0x76, 0xFE, 0x30]
    assert stored.scales[2, 1, 0, 1, 0].tolist() == [1.0, 2.0]
    assert np.count_nonzero(stored.scales != 0.25) == 2
    assert stored.value_cache(0).tokens(0, 2)[1].tolist() == [[448, 224, -896, 1]]


def test_store_ragged_tensor_scales_by_hand():
    cache = quantized_cache("f8E5M2", "tensor")
    cache.scales[0, 1] = 0.5
    rows = dtypes.from_float32(np.array([[[1, -3, 0.25, 1e5]]], np.float32),
                               "bf16")
    stored = cache.value_cache(0).store_ragged(rows, np.array([0, 1], np.int32))
    # value / 0.5: 2 -> 0x40, -6 -> 0xC6, 0.5 -> 0x38, 2e5 saturates: 0x7B
    assert stored.blocks[2, 1, 0, 1, 0].tolist() == [0x40, 0xC6, 0x38, 0x7B]
    assert stored.scales.tolist() == [[0.25, 0.5]]   # tensor scales not written
    out = np.full((3, 1, 4), 9, np.float32)
    got = reference.gather_ragged(stored.value_cache(0), [1, 3], out)
    assert got[1:].tolist() == [[[0, 0, 0, 0]], [[1, -3, 0.25, 28672]]]
    assert got[0].tolist() == [[9, 9, 9, 9]]
    f16 = reference.gather_ragged(stored.value_cache(0), [0, 2],
                                  np.zeros((2, 1, 4), np.float16))
    assert f16.dtype == np.float16 and f16[1].tolist() == [[1, -3, 0.25, 28672]]
    bf16 = reference.gather_ragged(stored.value_cache(0), [0, 2],
                                   np.zeros((2, 1, 4), np.uint16))
    assert bf16[1].tolist() == [[0x3F80, 0xC040, 0x3E80, 0x46E0]]
    codes = reference.gather_ragged(stored.value_cache(0), [0, 2],
                                    np.zeros((2, 1, 4), np.uint8))
    assert codes[1].tolist() == [[0x40, 0xC6, 0x38, 0x7B]]   # raw


def test_codes_rows_on_a_quantized_cache_are_stored_raw():
    cache = quantized_cache("i8", "token_head")
    rows = np.array([[[1, -2, 3, -128]]], np.int8)
    stored = cache.key_cache(0).store_ragged(rows, np.array([0, 1], np.int32))
    assert stored.blocks[2, 0, 0, 1, 0].tolist() == [1, -2, 3, -128]
    assert np.all(stored.scales == 0.25)
    with pytest.raises(TypeError, match="takes rows of float32, float16 or "
                       "uint16 .* got float64"):
        cache.key_cache(0).store_ragged(rows.astype(np.float64), [0, 1])


def test_copy_pages_copies_per_page_scales():
    cache = quantized_cache("f8E5M2", "token_head")
    cache.blocks[...] = np.arange(cache.blocks.size).reshape(cache.shape)
    cache.scales[...] = np.arange(cache.scales.size).reshape(cache.scales.shape)
    copied = cache.copy_pages(np.array([[2, 1]], np.int32))
    assert np.array_equal(copied.blocks[1], cache.blocks[2])
    assert np.array_equal(copied.scales[1], cache.scales[2])
    assert np.array_equal(copied.scales[[0, 2]], cache.scales[[0, 2]])
    tensor = quantized_cache("i8", "tensor")
    tensor.scales[...] = [[1, 2]]
    copied = tensor.copy_pages(np.array([[2, 1]], np.int32))
    assert copied.scales.tolist() == [[1, 2]]
    # The deprecated blocks-only forms refuse a quantized cache.
    with pytest.raises(ValueError, match=r"use cache.copy_pages\(pairs\)"), \
            pytest.warns(DeprecationWarning):
        reference.copy_pages(cache, np.array([[2, 1]], np.int32))
    with pytest.raises(ValueError, match=r"use view.store_ragged\(new, "
                       r"row_offsets\), which returns the new cache"), \
            pytest.warns(DeprecationWarning):
        reference.store_ragged(cache.key_cache(0), np.zeros((1, 1, 4), np.float32),
                               [0, 1])


def test_attention_reads_dequantized_keys_and_values():
    # Token 0: K codes 1 at scale 1, V codes [2, 4, 6, 8] at 0.5; token 1:
    # K codes 2 at scale 0.5 (the same values: equal scores), V codes
    # [-2, 0, 2, 4] at 1. Row 0 (position 1) sees both: the mean of V.
    cache = quantized_cache("i8", "token_head", cache_length=1)
    cache.blocks[2, 0, 0, 0, 0], cache.scales[2, 0, 0, 0, 0] = 1, 1.0
    cache.blocks[2, 0, 0, 1, 0], cache.scales[2, 0, 0, 1, 0] = 2, 0.5
    cache.blocks[2, 1, 0, 0, 0], cache.scales[2, 1, 0, 0, 0] = [2, 4, 6, 8], 0.5
    cache.blocks[2, 1, 0, 1, 0], cache.scales[2, 1, 0, 1, 0] = [-2, 0, 2, 4], 1.0
    q = np.array([[[0.5, -1, 2, 0.25]]] * 2, np.float16)     # GQA 2
    out = reference.attention_ragged(q.reshape(1, 2, 4), cache.key_cache(0),
                                     cache.value_cache(0), [0, 1],
                                     np.zeros((1, 2, 4), np.float16), 0.5)
    assert out.dtype == np.float16
    assert out.tolist() == [[[-0.5, 1, 2.5, 4]] * 2]
    new, _ = reference.decode_step(cache, 0, q.reshape(1, 2, 4),
                                   np.zeros((1, 1, 4), np.float32),
                                   np.zeros((1, 1, 4), np.float32), [0, 1],
                                   np.zeros((1, 2, 4), np.float16), 0.5)
    assert new.scales[2, :, 0, 1, 0].tolist() == [1.0, 1.0]  # amax 0: scale 1
    with pytest.raises(TypeError, match="float q and out"):
        reference.attention_ragged(np.zeros((1, 2, 4), np.int8), cache.key_cache(0),
                                   cache.value_cache(0), [0, 1],
                                   np.zeros((1, 2, 4), np.int8), 0.5)


def test_quantized_cache_values():
    cache = quantized_cache("i8", "block<2>")
    assert cache.scales_kind == "block<2>" and cache.scale_group == 2
    assert len(cache.arguments()) == 6 and cache.arguments()[5] is cache.scales
    view = cache.value_cache(0)
    assert len(view.parameters()) == 8 and view.parameters()[7] is cache.scales
    copy = cache.copy()
    copy.scales[...] = 1
    assert np.all(cache.scales == 0.25)            # a deep copy
    assert copy.scales_kind == "block<2>"
    # the kind is read from the shape when not given
    inferred = caches.PagedCache(cache.blocks, [1], TABLE, 2, 3, "i8",
                                 cache.scales)
    assert inferred.scales_kind == "block<2>"
    assert caches.PagedCache(cache.blocks, [1], TABLE, 2, 3, "i8",
                             np.ones((1, 2), np.float32)).scales_kind == "tensor"
    assert len(quantized_cache("i8", "tensor").key_cache(0).parameters()) == 8
    assert len(make_cache().arguments()) == 5
    assert len(make_cache().key_cache(0).parameters()) == 7


@pytest.mark.parametrize("arguments, error, message", [
    (dict(dtype="f32", scales=np.ones((1, 2), np.float32)), ValueError,
     "scales need a storage type"),
    (dict(scales=np.ones((1, 2), np.float64)), TypeError,
     "scales must be a float32 numpy array, got float64"),
    (dict(scales=np.ones((3, 2, 1, 2, 2), np.float32)), ValueError,
     r"token_head scales of blocks of shape \(3, 2, 1, 2, 1, 4\) have shape "
     r"\(3, 2, 1, 2, 1\), got \(3, 2, 1, 2, 2\)"),
    (dict(scales=np.ones((2, 2), np.float32)), ValueError, "have shape"),
    (dict(scales=np.ones((3, 2, 1, 2, 1, 3), np.float32)), ValueError,
     r"the last dim of block<G> scales, head_size / G, must divide head_size "
     r"\(4\)"),
    (dict(scales=np.ones((3, 2, 1, 2), np.float32)), ValueError,
     r"scales must be 2-D \(tensor\), 5-D \(token_head\) or 6-D \(block<G>\)"),
    (dict(scales=np.ones((1, 2), np.float32), scales_kind="block<3>"),
     ValueError, "dividing head_size"),
    (dict(scales=np.ones((1, 2), np.float32), scales_kind="token_head"),
     ValueError, "have shape"),
    (dict(scales_kind="tensor"), ValueError, "without scales"),
])
def test_bad_quantized_caches(arguments, error, message):
    dtype = arguments.pop("dtype", "i8")
    blocks = np.zeros((3, 2, 1, 2, 1, 4), dtypes.storage_dtype(dtype))
    with pytest.raises(error, match=message):
        caches.PagedCache(blocks, [1], TABLE, 2, 3, dtype, **arguments)


@pytest.mark.parametrize("scales", ["tensor", "token_head", "block<4>"])
@pytest.mark.parametrize("dtype", ["f8E4M3FN", "f8E5M2", "i8"])
@pytest.mark.parametrize("kind", ["paged", "continuous"])
def test_random_quantized_caches(kind, dtype, scales):
    config = CacheConfig(dtype, 2, 8, 4 if kind == "paged" else None,
                         kind=kind, scales=scales)
    cache = testing.random_cache(config, [4, 0, 7], [2, 3, 1], rng=3)
    assert cache.scales_kind == scales and cache.scales.dtype == np.float32
    assert cache.scales.shape == config.scales_shape(
        cache.num_blocks, cache.num_layers, cache.shape[3])
    assert cache.scales.flags.c_contiguous
    codes = dtypes.to_float32(cache.blocks, dtype)
    limit = dtypes.MAX_FINITE[dtype]
    if scales == "tensor":
        # values in [-1, 1) fit: scale * max_finite in [1, 2)
        assert np.all((cache.scales * limit >= 1) & (cache.scales * limit < 2.001))
        assert np.abs(codes).max() < limit
    else:
        # each group's largest value becomes the largest code
        group = 8 if scales == "token_head" else 4
        largest = np.abs(codes).reshape(cache.shape[:5] + (-1, group)).max(-1)
        assert np.all(largest == limit)
    # dequantized: the values in [-1, 1), within half a step of the codes
    # (at most 1/8 relative for f8E5M2)
    values = np.abs(np.stack([cache.key_cache(1).tokens(2, 8),
                              cache.value_cache(0).tokens(2, 8)]))
    assert 0.5 < values.max() < 1.125
