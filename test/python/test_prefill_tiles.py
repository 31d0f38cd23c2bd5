"""attention_ragged with many rows per sequence (prefill, chunked prefill) on
the emulated GPU: the host launches the query-tile kernel when a sequence's
rows times the GQA group fill an mma tile (docs/Design.md), and its results
are the reference's for rows per sequence from 1 to 300, tiles cut by the
sequence's end, pages of 1, 16 and 128, GQA 1, 4 and 8, in the emulator's
forward, reverse and random thread orders; each K/V row is copied once per
tile that sees it (the emulator's cp.async bytes)."""

import json

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import (CacheConfig, builders, dtypes, reference,  # noqa: E402
                     testing)

TOLERANCE = {"f16": 2e-3, "bf16": 1.6e-2}
LSE_TOLERANCE = 1e-4


def tile_rows(group, head_size):
    """The query-tile kernel's rows per tile (docs/KernelABI.md)."""
    return (64 if head_size > 128 else 128) // group


def attend(config, cached, new, rng, monkeypatch, tmp_path, order="forward",
           workspace=False, layer=0, scale=0.3, **clauses):
    """Runs attention on the emulated GPU in thread order `order`; returns
    the profile's launches, and asserts out and lse against the
    reference."""
    q_heads, head_size, dtype = config.query_heads, config.head_size, config.dtype
    module = kvcache.EmulatedGPUModule(builders.attention_ragged(
        config, "attention", scale=scale, workspace=workspace, lse=True, **clauses))
    cache = testing.random_cache(config, cached, new, rng)
    offsets = testing.row_offsets(new)
    q = testing.random_rows(rng, sum(new), q_heads, head_size, dtype)
    out = np.full_like(q, 3)
    lse = np.full((sum(new), q_heads), 7, np.float32)
    expected_out, expected_lse = reference.attention_ragged(
        q, cache.key_cache(layer), cache.value_cache(layer), offsets,
        np.zeros_like(q), scale, lse=np.zeros_like(lse), **clauses)
    extra = ((np.zeros(sum(new) * q_heads * (head_size + 2) * 4, np.float32),)
             if workspace else ())
    profile = tmp_path / f"profile-{order}.jsonl"
    monkeypatch.setenv("KVCACHE_EMU_ORDER", order)
    monkeypatch.setenv("KVCACHE_EMU_PROFILE", str(profile))
    module.attention(*cache.arguments(), layer, q, offsets, out, *extra, lse)
    monkeypatch.delenv("KVCACHE_EMU_PROFILE")
    error = np.abs(dtypes.to_float32(out, dtype) -
                   dtypes.to_float32(expected_out, dtype)).max()
    assert error <= TOLERANCE[dtype], error
    finite = np.isfinite(expected_lse)
    np.testing.assert_array_equal(np.isfinite(lse), finite)
    assert np.abs(lse[finite] - expected_lse[finite]).max(initial=0) <= LSE_TOLERANCE
    return [json.loads(line) for line in profile.read_text().splitlines()]


def tile_key_rows(cached, new, rows_per_tile):
    """K/V rows one KV head's tiles copy: each tile its last row's keys."""
    return sum(c + min(first + rows_per_tile, n)
               for c, n in zip(cached, new) for first in range(0, n, rows_per_tile))


# (dtype, head_size, page_size, kv_heads, group, cached, new): tiles cut by
# a sequence's end (rows 1 .. 2 tiles + 1), sequences with nothing cached,
# MHA (group 1, 8 heads), pages 1, 16 and 128.
CASES = [
    ("bf16", 64, 16, 2, 4, [0, 5, 17, 100, 40], [1, 31, 32, 33, 65]),
    ("f16", 64, 1, 1, 8, [3, 0], [16, 17]),
    ("f16", 64, 128, 8, 1, [130, 0], [129, 7]),
    ("bf16", 128, 16, 2, 8, [60], [40]),
    ("f16", 256, 16, 1, 4, [10, 0], [17, 3]),
]


def case_id(case):
    dtype, head_size, page_size, kv_heads, group, _, new = case
    return f"{dtype}-d{head_size}-page{page_size}-kv{kv_heads}-gqa{group}-rows{max(new)}"


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_query_tiles_against_the_reference(case, monkeypatch, tmp_path):
    dtype, head_size, page_size, kv_heads, group, cached, new = case
    config = CacheConfig(dtype, num_heads=kv_heads, head_size=head_size,
                         page_size=page_size, num_layers=1, q_heads=kv_heads * group)
    rng = np.random.default_rng(sum(new) + head_size)
    launches = attend(config, cached, new, rng, monkeypatch, tmp_path)
    rows = tile_rows(group, head_size)
    assert [launch["kernel"] for launch in launches] == ["attention_attention_tiles"]
    slots = len(new) * -(-max(new) // rows)
    assert launches[0]["grid"] == [slots, kv_heads, 1]
    # K and V once per tile that sees them, for each KV head.
    row_bytes = head_size * 2
    assert launches[0]["cp_async_bytes"] == (
        2 * kv_heads * row_bytes * tile_key_rows(cached, new, rows))


@pytest.mark.parametrize("order", ["forward", "reverse", "random:34"])
def test_three_hundred_rows_in_every_thread_order(order, monkeypatch, tmp_path):
    # One sequence of 300 new rows over 40 cached (10 tiles of 32 rows, the
    # last cut at 12), and a decode row beside it.
    config = CacheConfig("bf16", num_heads=1, head_size=64, page_size=16,
                         num_layers=1, q_heads=4)
    launches = attend(config, [40, 7], [300, 1], np.random.default_rng(300),
                      monkeypatch, tmp_path, order=order)
    assert launches[0]["kernel"] == "attention_attention_tiles"
    assert launches[0]["grid"] == [20, 1, 1]


# Clauses whose masks differ per row of a tile (window, chunk: rows start
# apart), with a workspace that splits the 700-key context.
@pytest.mark.parametrize("clauses", [
    {"window": 5}, {"window": 40}, {"chunk": 16}, {"chunk": 48},
    {"noncausal": True}, {"softcap": 2.0, "window": 70},
], ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
@pytest.mark.parametrize("workspace", [False, True], ids=["one-split", "workspace"])
def test_clauses_per_row_of_a_tile(clauses, workspace, monkeypatch, tmp_path):
    config = CacheConfig("f16", num_heads=2, head_size=64, page_size=16,
                         num_layers=1, q_heads=8)
    rng = np.random.default_rng(len(clauses) * 7 + workspace)
    launches = attend(config, [700, 0], [45, 20], rng, monkeypatch, tmp_path,
                      workspace=workspace, **clauses)
    assert launches[0]["kernel"] == "attention_attention_tiles"
    # With a workspace the 700 keys split (a window or chunk of at most 512
    # keys does not): a split tile leaves rows without keys in some splits,
    # which the merge kernel weighs by zero.
    splits = launches[0]["grid"][2]
    long_rows = min(clauses.get("window", 700), clauses.get("chunk", 700)) > 512
    assert (splits > 1) == (workspace and long_rows)
    assert (launches[-1]["kernel"] == "attention_attention_merge") == (splits > 1)


@pytest.mark.parametrize("group, rows, kernel", [
    (4, 1, "attention_attention_ragged"),    # decode
    (4, 3, "attention_attention_ragged"),    # 12 of an mma tile's 16 rows
    (4, 4, "attention_attention_tiles"),
    (8, 2, "attention_attention_tiles"),
    (16, 1, "attention_attention_ragged"),   # one row: the decode kernel
])
def test_the_host_chooses_the_kernel_from_max_seq_length(group, rows, kernel,
                                                         monkeypatch, tmp_path):
    config = CacheConfig("f16", num_heads=1, head_size=64, page_size=16,
                         num_layers=1, q_heads=group)
    launches = attend(config, [30, 0], [rows, 1], np.random.default_rng(group),
                      monkeypatch, tmp_path)
    assert [launch["kernel"] for launch in launches] == [kernel]
