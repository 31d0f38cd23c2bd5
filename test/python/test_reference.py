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


def test_bad_views():
    cache = reference.random_cache(CacheConfig("f16", 1, 8, 4, mla=True), [1], [1],
                                   num_layers=2)
    with pytest.raises(ValueError, match="no value cache"):
        cache.value_cache(0)
    with pytest.raises(ValueError, match="layer=2"):
        cache.key_cache(2)
