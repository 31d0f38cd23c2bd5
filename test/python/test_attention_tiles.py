"""attention_ragged's row-tile kernel on the CPU (docs/Design.md, "CPU
attention"), against kvcache.reference: a tile is up to 128 lanes, its
rows times the GQA group's heads, of one sequence and KV head; tiles of
fewer than 16 lanes (a decode row of GQA 4) take the per-row passes
(test_attention_decode.py).
Prefill and chunked-prefill rows (1 to 300 per sequence, tiles cut by the
sequence's end, ragged batches), pages of 1, 16 and 128, MHA, GQA 3
(lanes the group does not fill), 4, 8, 16, 48 and 160 (the per-row passes);
every clause (window, chunk, noncausal, sinks, lse, scale, alibi, softcap:
its tanh an f32 polynomial on the tiles, libm's in the per-row passes); quantized caches with scales, a continuous
cache; head sizes that are not multiples of 16; every core against one
thread. Head size 16 (one vector of lanes) keeps the other cases cheap."""

import functools

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

from kvcache import CacheConfig  # noqa: E402
import attention_checks as checks  # noqa: E402
from attention_checks import CLAUSES, assert_close, attend  # noqa: E402

HEAD_SIZE = 16


config_of = functools.partial(checks.config_of, head_size=HEAD_SIZE)


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
    # heads than a tile's 128 lanes, takes the per-row passes.
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
    checks.assert_same_on_every_core(config_of("f32", 16, 2, 8), [5, 0], [40, 90])
