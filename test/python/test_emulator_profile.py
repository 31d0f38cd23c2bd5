"""The GPU emulator's traffic profile (KVCACHE_EMU_PROFILE) used as a
performance test without a GPU: the data-movement kernels are perfectly
coalesced (every warp instruction touches the fewest 32-byte sectors its
bytes allow; store_ragged and gather_ragged but for the few gathers of the
rows' metadata by the lanes that resolve them) and decode attention reads
each K/V byte of a context once per (sequence, KV head), at page sizes 1, 16
and 128."""

import json
import os

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import builders, caches, reference, testing  # noqa: E402

PAGE_SIZES = [1, 16, 128]


def aligned(array, alignment=256):
    """A copy of `array` whose data starts on an `alignment`-byte boundary
    (the profile's sector counts assume buffers aligned as a GPU allocator
    aligns them)."""
    raw = np.empty(array.nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    copy = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def aligned_cache(cache):
    return caches.PagedCache(aligned(cache.blocks), aligned(cache.cache_lengths),
                             aligned(cache.lookup_table), cache.max_seq_length,
                             cache.max_cache_length, cache.dtype)


def profiled(tmp_path, call):
    """Runs `call()` with KVCACHE_EMU_PROFILE set; returns its launches."""
    path = tmp_path / "profile.jsonl"
    path.unlink(missing_ok=True)  # the emulator appends
    os.environ["KVCACHE_EMU_PROFILE"] = str(path)
    try:
        call()
    finally:
        del os.environ["KVCACHE_EMU_PROFILE"]
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_coalesced(launches, metadata_gathers=0):
    """Every warp instruction touches the fewest sectors its bytes allow,
    but for at most `metadata_gathers` sectors of loads."""
    assert launches
    for launch in launches:
        extra = launch["load_sectors"] - launch["ideal_load_sectors"]
        assert 0 <= extra <= metadata_gathers, launch
        assert launch["store_sectors"] == launch["ideal_store_sectors"], launch
        assert launch["global_store_bytes"] > 0, launch


def tile_rows(dtype, heads, head_size, chunks_in_flight=8):
    """Rows of a warp's tile in store_ragged/gather_ragged (docs/KernelABI.md)."""
    width = 16 // {"f32": 4, "f16": 2, "bf16": 2}[dtype]
    while head_size % width:
        width //= 2
    return min(max(32 * chunks_in_flight // (heads * head_size // width), 1), 32)


def metadata_gathers(lengths, rows_per_tile):
    """The most sectors beyond the ideal that store_ragged/gather_ragged may
    load for their rows' metadata, for ragged rows of sequences of `lengths`
    rows (consecutive tokens: their lookup-table entries are consecutive too).
    Lane l of a warp resolves row l of the warp's tile
    (docs/KernelABI.md): lanes whose rows lie in different sequences read
    different offsets in the search and different start offsets and cache
    lengths (rows of one sequence read the same ones: the search path
    depends on the sequence only), one sector more than ideal per extra
    sequence in a tile and read; each sequence's lookup-table entries in a
    tile are one contiguous span, at most 2 sectors more than ideal. A tile
    boundary splits at most one sequence, so S sequences with rows in T
    tiles make at most S + T - 1 (sequence, tile) pairs."""
    sequences = sum(1 for n in lengths if n)
    tiles = -(-sum(lengths) // rows_per_tile)
    steps = max(len(lengths) - 1, 0).bit_length()  # ceil(log2(batch))
    return 2 * (sequences + tiles - 1) + (sequences - 1) * (steps + 2)


@pytest.mark.parametrize("page_size", PAGE_SIZES)
@pytest.mark.parametrize("dtype,heads,head_size",
                         [("f16", 4, 128), ("f32", 1, 64), ("bf16", 2, 96)])
def test_data_movement_kernels_are_coalesced(tmp_path, page_size, dtype, heads,
                                             head_size):
    config = kvcache.CacheConfig(dtype, num_heads=heads, head_size=head_size,
                                 page_size=page_size, num_layers=2)
    rng = np.random.default_rng(page_size)
    cache_lengths, new_lengths = [5, 40, 0, 130], [3, 1, 2, 7]
    cache = aligned_cache(testing.random_cache(config, cache_lengths,
                                               new_lengths, rng, spare_pages=3))
    module = kvcache.EmulatedGPUModule(builders.kernels(config))
    offsets = aligned(testing.row_offsets(new_lengths))
    new = aligned(testing.random_rows(rng, int(offsets[-1]), heads, head_size,
                                      dtype))
    totals = [c + n for c, n in zip(cache_lengths, new_lengths)]
    ctx_offsets = aligned(testing.row_offsets(totals))
    out = aligned(np.zeros((int(ctx_offsets[-1]), heads, head_size),
                           new.dtype))
    used = sorted(set(cache.lookup_table.ravel().tolist()))
    spare = sorted(set(range(cache.num_pages)) - set(used))
    pairs = aligned(np.array(list(zip(spare[:2], used[:2])), np.int32))

    stored = cache.key_cache(1).store_ragged(new, offsets).blocks
    store = profiled(tmp_path, lambda: module.store_keys(
        *cache.arguments(), 1, new, offsets))
    np.testing.assert_array_equal(cache.blocks, stored)
    gathered = reference.gather_ragged(cache.key_cache(1), ctx_offsets, out.copy())
    gather = profiled(tmp_path, lambda: module.gather_keys(
        *cache.arguments(), 1, out, ctx_offsets))
    np.testing.assert_array_equal(out, gathered)
    copied = cache.copy_pages(pairs).blocks
    copy = profiled(tmp_path, lambda: module.copy_pages(*cache.arguments(), pairs))
    np.testing.assert_array_equal(cache.blocks, copied)

    rows_per_tile = tile_rows(dtype, heads, head_size)
    for launches, kernel, gathers in [
            (store, "store_ragged", metadata_gathers(new_lengths, rows_per_tile)),
            (gather, "gather_ragged", metadata_gathers(totals, rows_per_tile)),
            (copy, "copy_pages", 0)]:
        assert len(launches) == 1 and kernel in launches[0]["kernel"], launches
        assert_coalesced(launches, gathers)
    # Each kernel moves what it must: the rows (store/gather), two whole
    # pages in every layer, K and V (copy).
    element = new.dtype.itemsize
    row_bytes = heads * head_size * element
    assert store[0]["global_store_bytes"] == offsets[-1] * row_bytes
    assert gather[0]["global_store_bytes"] == ctx_offsets[-1] * row_bytes
    assert copy[0]["global_store_bytes"] == \
        len(pairs) * 2 * 2 * page_size * row_bytes


@pytest.mark.parametrize("page_size", PAGE_SIZES)
@pytest.mark.parametrize("split", [False, True])
def test_decode_attention_reads_each_kv_byte_once(tmp_path, page_size, split):
    """One query row per sequence, GQA 4 (8 query heads on 2 KV heads): the
    attention kernel loads every key and value of each context once per
    (sequence, KV head), its memory traffic within 15% of the K/V and query
    bytes; with a workspace the context is split over blocks and merged."""
    config = kvcache.CacheConfig("f16", num_heads=2, head_size=128,
                                 page_size=page_size, num_layers=1, q_heads=8)
    rng = np.random.default_rng(11)
    cache_lengths = [300, 16, 0, 700]
    batch = len(cache_lengths)
    cache = aligned_cache(testing.random_cache(config, cache_lengths,
                                               [1] * batch, rng))
    offsets = aligned(testing.row_offsets([1] * batch))
    q = aligned(testing.random_rows(rng, batch, 8, 128, "f16"))
    out = aligned(np.zeros((batch, 8, 128), np.float16))
    module = kvcache.EmulatedGPUModule(builders.attention_ragged(
        config, workspace=split))
    expected = reference.attention_ragged(
        q, cache.key_cache(0), cache.value_cache(0), offsets, out.copy(),
        config.default_scale)
    extra = [aligned(np.zeros(batch * 8 * 130 * 16, np.float32))] if split else []
    launches = profiled(tmp_path, lambda: module.attention_ragged(
        *cache.arguments(), 0, q, offsets, out, *extra))
    error = np.abs(out.astype(np.float32) - expected.astype(np.float32)).max()
    assert error <= 2e-3

    attention = [launch for launch in launches if "merge" not in launch["kernel"]]
    assert len(attention) == 1, launches
    if split:
        assert attention[0]["grid"][2] > 1, attention  # the context really splits
        assert any("merge" in launch["kernel"] for launch in launches), launches
    kv_bytes = sum(n + 1 for n in cache_lengths) * 2 * 128 * 2 * 2  # K and V
    # sm_90 moves K and V with cp.async: every byte exactly once.
    assert attention[0]["cp_async_bytes"] == kv_bytes, attention
    # Memory traffic (32-byte sectors) within 15% of the K/V and query bytes.
    # The bytes requested by the lanes are higher (every lane of a warp
    # loads the lookup-table entry and the lengths it shares with the
    # others: one sector, but 4 bytes a lane).
    traffic = 32 * attention[0]["load_sectors"]
    assert kv_bytes <= traffic <= 1.15 * (kv_bytes + q.nbytes), attention
