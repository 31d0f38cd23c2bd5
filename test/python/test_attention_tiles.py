"""attention_ragged's row-tile kernel on the CPU (docs/Design.md, "CPU
attention"), against kvcache.reference: a tile is up to 128 lanes, its
rows times the GQA group's heads, of one sequence and KV head; tiles of
fewer than 16 lanes (a decode row of GQA 4) take the per-row loop.
Prefill and chunked-prefill rows (1 to 300 per sequence, tiles cut by the
sequence's end, ragged batches), pages of 1, 16 and 128, MHA, GQA 3
(lanes the group does not fill), 4, 8, 16, 48 and 160 (the per-row loop);
every clause (window, chunk, noncausal, sinks, lse, scale, alibi, softcap:
its tanh an f32 polynomial on the tiles, libm's in the per-row loop); quantized caches with scales, a continuous
cache; head sizes that are not multiples of 16; every core against one
thread. Head size 16 (one vector of lanes) keeps the other cases cheap."""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import CacheConfig, builders, reference, testing  # noqa: E402
from attention_checks import assert_close  # noqa: E402

HEAD_SIZE = 16


def attend(config, cached, new, rng, clauses=(), scale=0.5, threads=None):
    """(out, lse) of the compiled attention over a random cache of `config`
    (`cached` tokens and `new` rows per sequence), and of the reference."""
    clauses = dict(clauses)
    cache = testing.random_cache(config, cached, new, rng)
    q = testing.random_rows(rng, sum(new), config.query_heads, config.head_size,
                            config.rows_element)
    offsets = testing.row_offsets(new)
    operands = {}
    if clauses.pop("sinks", False):
        operands["sinks"] = rng.uniform(-2, 2, config.query_heads).astype(np.float32)
    if clauses.pop("alibi", False):
        operands["alibi"] = rng.uniform(0, 0.5, config.query_heads).astype(np.float32)
    ir = builders.attention_ragged(config, "attention", scale=scale, lse=True,
                                   sinks="sinks" in operands,
                                   alibi="alibi" in operands, **clauses)
    out = np.full_like(q, 3)
    lse = np.full((q.shape[0], config.query_heads), 7, np.float32)
    expected = reference.attention_ragged(
        q, cache.key_cache(1), cache.value_cache(1), offsets, np.full_like(q, 3),
        scale, lse=np.full_like(lse, 7), **clauses, **operands)
    kvcache.CPUModule(ir, threads=threads).attention(
        *cache.arguments(), 1, q, offsets, out, *operands.values(), lse)
    return (out, lse), expected


def config_of(dtype, page_size, num_heads, q_heads, head_size=HEAD_SIZE, **kwargs):
    return CacheConfig(dtype, num_heads=num_heads, head_size=head_size,
                       page_size=page_size, num_layers=2, q_heads=q_heads, **kwargs)


# (page size, KV heads, query heads): MHA, GQA 3, 4 and 8.
SHAPES = [(1, 2, 2), (16, 2, 6), (16, 2, 8), (128, 1, 8)]


@pytest.mark.parametrize("page_size, num_heads, q_heads", SHAPES)
def test_prefill_tiles(page_size, num_heads, q_heads):
    # A ragged batch: a decode row, a prefill of 300 rows (tiles of 128,
    # 42, 32 or 16 rows, the last cut by the end), chunked prefills over 40
    # and 200 cached tokens, a sequence of 5 rows, one of 64.
    rng = np.random.default_rng(page_size + 7 * q_heads)
    config = config_of("f32", page_size, num_heads, q_heads)
    assert_close(*attend(config, [9, 0, 40, 200, 0, 3], [1, 300, 17, 33, 5, 64], rng),
                 "f32")


@pytest.mark.parametrize("q_heads, new", [(16, [1, 1, 3]), (48, [2, 5]), (160, [3])])
def test_large_groups(q_heads, new):
    # One KV head: decode rows of GQA 16 fill one vector of lanes (tiles of
    # 8 rows); GQA 48 takes tiles of 2 rows (96 lanes); GQA 160, more
    # heads than a tile's 128 lanes, takes the per-row loop.
    rng = np.random.default_rng(q_heads)
    config = config_of("f32", 16, 1, q_heads)
    assert_close(*attend(config, [40, 0, 7][:len(new)], new, rng), "f32")


@pytest.mark.parametrize("head_size", [3, 8, 24, 64])
def test_head_sizes_on_tiles(head_size):
    # q^T packs head elements in chunks of the largest power of two of at
    # most 16 dividing head_size (1, 8, 8, 16); P V holds up to 4 of them.
    rng = np.random.default_rng(head_size)
    config = config_of("f32", 16, 2, 8, head_size=head_size)
    assert_close(*attend(config, [0, 19], [37, 9], rng), "f32")


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_prefill_tiles_in_f16_and_bf16(dtype):
    rng = np.random.default_rng(len(dtype))
    config = config_of(dtype, 16, 2, 8)
    assert_close(*attend(config, [0, 70], [45, 20], rng), dtype)


CLAUSES = [
    {"window": 1}, {"window": 5}, {"window": 40}, {"window": 1000},
    {"chunk": 7}, {"chunk": 16}, {"noncausal": True}, {"sinks": True},
    {"noncausal": True, "sinks": True}, {"window": 9, "sinks": True},
    {"alibi": True}, {"chunk": 16, "alibi": True, "sinks": True},
    {"noncausal": True, "alibi": True}, {"softcap": 2.0},
    {"softcap": 0.5, "window": 9, "alibi": True}, {"softcap": 30.0, "chunk": 16, "sinks": True},
]


@pytest.mark.parametrize("clauses", CLAUSES, ids=lambda c: "-".join(c))
def test_clauses_on_tiles(clauses):
    # Tiles whose rows see different key ranges (window and chunk starts
    # inside a tile), a noncausal sequence with nothing cached (lse -inf,
    # out 0 without a sink), scale 0.3.
    rng = np.random.default_rng(len(clauses) * 13 + len(str(clauses)))
    config = config_of("f32", 16, 2, 8)
    assert_close(*attend(config, [0, 37, 0], [70, 33, 5], rng, clauses, scale=0.3),
                 "f32")


@pytest.mark.parametrize("dtype, scales", [("i8", "token_head"), ("f8E4M3FN", "block<8>"),
                                           ("f8E5M2", "tensor")])
def test_quantized_caches_on_tiles(dtype, scales):
    rng = np.random.default_rng(len(dtype + scales))
    config = config_of(dtype, 16, 2, 8, scales=scales, rows_dtype="f32")
    assert_close(*attend(config, [9, 30], [40, 20], rng), "f32")


def test_continuous_cache_on_tiles():
    rng = np.random.default_rng(11)
    config = CacheConfig("f32", num_heads=2, head_size=HEAD_SIZE, num_layers=2,
                         q_heads=8, kind="continuous")
    assert_close(*attend(config, [3, 50], [30, 21], rng, {"window": 20}), "f32")


def test_results_do_not_depend_on_threads():
    # The tasks write disjoint rows: every core or one thread, same bits.
    config = config_of("f32", 16, 2, 8)
    serial, _ = attend(config, [5, 0], [40, 90], np.random.default_rng(12), threads=1)
    parallel, _ = attend(config, [5, 0], [40, 90], np.random.default_rng(12))
    for got, expected in zip(parallel, serial):
        np.testing.assert_array_equal(got, expected)
