"""Every kernel op, built by kvcache.builders, executed on the CPU and on the
GPU emulator against kvcache.reference over random configurations, and
compiled to PTX."""

import random

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import builders, dtypes, reference, testing  # noqa: E402
from sampling import sample  # noqa: E402

# Worst absolute error of attention outputs in [-1, 1] (f32 online softmax
# vs the float64 reference, then one rounding to the element type).
ATTENTION_TOLERANCE = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}
SENTINEL = 7.0  # rows the ops must not touch hold it


def random_config(seed):
    rng = random.Random(seed)
    num_heads = rng.choice([1, 2, 4])
    return kvcache.CacheConfig(
        dtype=rng.choice(["f32", "f16", "bf16"]),
        num_heads=num_heads,
        head_size=rng.choice([3, 8, 16, 24, 64, 128]),
        page_size=rng.choice([1, 2, 3, 4, 16]),
        num_layers=rng.choice([None, 1, 3]),
        q_heads=num_heads * rng.choice([1, 2, 3]),
        mla=rng.random() < 0.2,
        assert_write_mode=int(rng.random() < 0.3))


def random_continuous_config(seed):
    """A continuous cache whose blocks hold block_tokens token slots, drawn
    in 1..4096 (seeds 0 and 1: the extremes), static or dynamic in the
    blocks type; long blocks get few, short heads to keep memory small."""
    rng = random.Random(1000 + seed)
    block_tokens = [1, 4096][seed] if seed < 2 else round(2 ** rng.uniform(0, 12))
    num_heads = rng.choice([1, 2])
    head_sizes = [3, 8, 16, 64, 128] if block_tokens <= 256 else [3, 8, 16]
    config = kvcache.CacheConfig(
        dtype=rng.choice(["f32", "f16", "bf16"]),
        num_heads=num_heads,
        head_size=rng.choice(head_sizes),
        num_layers=rng.choice([None, 1, 2]),
        q_heads=num_heads * rng.choice([1, 2, 3]),
        mla=rng.random() < 0.2,
        assert_write_mode=int(rng.random() < 0.3),
        kind="continuous",
        block_tokens=rng.choice([None, block_tokens]))
    return config, block_tokens


# Under the sanitizers a sample of the seeds runs (sampling.py).
SEEDS = sample(range(16))
CONFIGS = {seed: random_config(seed) for seed in range(16)}
CONTINUOUS_SEEDS = sample(range(16))
CONTINUOUS_CONFIGS = {seed: random_continuous_config(seed) for seed in range(16)}

# Where the kernel ops run: kvcache-to-cpu (loops on the CPU), or the GPU
# kernels of kvcache-to-emulated-gpu on the emulator, with its race, bounds
# and uninitialized-memory checks; same calls, same arrays.
TARGETS = {"cpu": kvcache.CPUModule, "emulated-gpu": kvcache.EmulatedGPUModule}


def config_id(config):
    tokens = (f"P{config.page_size}" if config.has_pages
              else f"T{config.block_tokens or '?'}")
    return (f"{config.dtype}-H{config.num_heads}-D{config.head_size}-"
            f"{tokens}-L{config.num_layers}-Hq{config.query_heads}"
            f"{'-mla' if config.mla else ''}"
            f"{'-awm' if config.assert_write_mode else ''}")


class Step:
    """A random batch for one config: the cache before the step, the new
    rows, and ragged offsets (the first one not at 0). A continuous cache
    has blocks of `block_tokens` slots, its last sequence filling its block
    to the end."""

    def __init__(self, config, seed, block_tokens=None):
        self.rng = np.random.default_rng(seed)
        rng = self.rng
        self.config = config
        if config.has_pages:
            batch = int(rng.integers(1, 5))
            self.cache_lengths = [int(n) for n in rng.integers(0, 20, batch)]
            self.new_lengths = [int(n) for n in rng.integers(0, 4, batch)]
            self.new_lengths[0] = max(self.new_lengths[0], 1)
        else:
            batch = int(rng.integers(1, 4))
            self.new_lengths = [int(n) for n in
                                rng.integers(0, min(block_tokens, 3) + 1, batch)]
            self.new_lengths[0] = max(self.new_lengths[0], 1)
            self.cache_lengths = [int(rng.integers(0, block_tokens - n + 1))
                                  for n in self.new_lengths]
            self.cache_lengths[-1] = block_tokens - self.new_lengths[-1]
        cache = testing.random_cache(
            config, self.cache_lengths, self.new_lengths, rng, spare_pages=4,
            block_tokens=None if config.has_pages else block_tokens)
        if seed % 2:  # every other block of a bigger buffer: a strided blocks
            parent = np.zeros((2 * cache.num_blocks,) + cache.shape[1:],
                              cache.blocks.dtype)
            parent[::2] = cache.blocks
            cache = cache.copy(blocks=parent[::2])
        self.cache = cache
        self.layer = int(rng.integers(0, cache.num_layers))
        start = int(rng.integers(0, 3))
        self.row_offsets = testing.row_offsets(self.new_lengths) + start
        self.rows = start + sum(self.new_lengths)

    def new_rows(self, heads=None):
        c = self.config
        return testing.random_rows(self.rng, self.rows, heads or c.num_heads,
                                   c.head_size, c.dtype)

    def filled(self, rows, heads=None):
        c = self.config
        values = np.full((rows, heads or c.num_heads, c.head_size), SENTINEL,
                         np.float32)
        return dtypes.from_float32(values, c.dtype)


def attention_error(expected, actual, dtype):
    return float(np.abs(dtypes.to_float32(expected, dtype) -
                        dtypes.to_float32(actual, dtype)).max(initial=0))


def check_ragged_ops(module, step):
    """store_ragged, gather_ragged and attention_ragged of `step`'s layer
    against the reference; the module is `builders.kernels(step.config)`."""
    config = step.config
    cache, layer, offsets = step.cache, step.layer, step.row_offsets

    # store_ragged: K (and V), bit for bit.
    kinds = ["key"] if config.mla else ["key", "value"]
    for kind in kinds:
        new = step.new_rows()
        view = getattr(cache, f"{kind}_cache")(layer)
        expected = view.store_ragged(new, offsets).blocks
        getattr(module, f"store_{kind}s")(*cache.arguments(), layer, new, offsets)
        np.testing.assert_array_equal(cache.blocks, expected, err_msg=kind)

    # gather_ragged: every sequence's whole context, after a gap of 2 rows.
    totals = [c + n for c, n in zip(step.cache_lengths, step.new_lengths)]
    ctx_offsets = testing.row_offsets(totals) + 2
    for kind in kinds:
        out = step.filled(int(ctx_offsets[-1]) + 1)
        view = getattr(cache, f"{kind}_cache")(layer)
        expected = reference.gather_ragged(view, ctx_offsets, out)
        getattr(module, f"gather_{kind}s")(*cache.arguments(), layer, out, ctx_offsets)
        np.testing.assert_array_equal(out, expected, err_msg=kind)

    # attention_ragged, without and with a workspace (split contexts).
    if config.has_attention:
        q = step.new_rows(config.query_heads)
        out = step.filled(step.rows + 1, config.query_heads)
        expected = reference.attention_ragged(
            q, cache.key_cache(layer), cache.value_cache(layer), offsets, out,
            config.default_scale)
        module.attention(*cache.arguments(), layer, q, offsets, out)
        assert attention_error(expected, out, config.dtype) <= \
            ATTENTION_TOLERANCE[config.dtype]
        out = step.filled(step.rows + 1, config.query_heads)
        workspace = np.zeros(step.rows * config.query_heads *
                             (config.head_size + 2) * 16, np.float32)
        module.attention_split(*cache.arguments(), layer, q, offsets, out, workspace)
        assert attention_error(expected, out, config.dtype) <= \
            ATTENTION_TOLERANCE[config.dtype]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("target", TARGETS)
def test_kernel_ops_match_the_reference(target, seed):
    config = CONFIGS[seed]
    step = Step(config, seed)
    module = TARGETS[target](builders.kernels(config), checked=seed % 3 == 0)
    check_ragged_ops(module, step)

    # copy_pages: spare pages copied over used ones, every layer, K and V.
    cache = step.cache
    used = sorted(set(cache.lookup_table.ravel().tolist()))
    spare = sorted(set(range(cache.num_pages)) - set(used))
    count = min(len(spare), len(used), 3)
    pairs = np.array(list(zip(spare[:count], used[:count])), np.int32).reshape(-1, 2)
    expected = cache.copy_pages(pairs).blocks
    module.copy_pages(*cache.arguments(), pairs)
    np.testing.assert_array_equal(cache.blocks, expected)


class RawStep(Step):
    """A Step on a raw storage cache (f8E4M3FN, f8E5M2, i8 without scales):
    blocks and new rows hold every byte value, NaN and infinity codes
    included, which the ops must move unchanged."""

    def __init__(self, config, seed, block_tokens=None):
        super().__init__(config, seed, block_tokens)
        blocks = self.cache.blocks
        blocks[...] = self.random_codes(blocks.shape)

    def random_codes(self, shape):
        codes = self.rng.integers(0, 256, shape, dtype=np.uint8)
        return codes.view(self.config.numpy_dtype)

    def new_rows(self, heads=None):
        c = self.config
        return self.random_codes((self.rows, heads or c.num_heads, c.head_size))


RAW_CONFIGS = [
    kvcache.CacheConfig("f8E4M3FN", 2, 16, 4, num_layers=2),
    kvcache.CacheConfig("f8E5M2", 1, 24, 1, num_layers=None, mla=True),
    kvcache.CacheConfig("i8", 4, 128, 16, num_layers=1, assert_write_mode=1),
    kvcache.CacheConfig("f8E4M3FN", 2, 3, 3, num_layers=2),
    kvcache.CacheConfig("f8E5M2", 2, 64, kind="continuous", num_layers=2),
    kvcache.CacheConfig("i8", 1, 8, kind="continuous", mla=True, block_tokens=64),
]


@pytest.mark.parametrize("index", range(len(RAW_CONFIGS)))
@pytest.mark.parametrize("target", TARGETS)
def test_raw_storage_kernel_ops_match_the_reference(target, index):
    """store_ragged, gather_ragged and copy_pages move the stored codes of a
    raw storage cache bit for bit (no attention: it needs values)."""
    config = RAW_CONFIGS[index]
    step = RawStep(config, 500 + index,
                   block_tokens=None if config.has_pages else config.block_tokens or 8)
    module = TARGETS[target](builders.kernels(config), checked=index % 2 == 0)
    assert "attention" not in builders.kernel_names(config)
    check_ragged_ops(module, step)
    if config.has_pages:
        cache = step.cache
        used = sorted(set(cache.lookup_table.ravel().tolist()))
        spare = sorted(set(range(cache.num_pages)) - set(used))
        pairs = np.array(list(zip(spare[:2], used[:2])), np.int32).reshape(-1, 2)
        expected = cache.copy_pages(pairs).blocks
        module.copy_pages(*cache.arguments(), pairs)
        np.testing.assert_array_equal(cache.blocks, expected)


@pytest.mark.parametrize("seed", CONTINUOUS_SEEDS)
@pytest.mark.parametrize("target", TARGETS)
def test_continuous_kernel_ops_match_the_reference(target, seed):
    config, block_tokens = CONTINUOUS_CONFIGS[seed]
    step = Step(config, seed, block_tokens)
    assert step.cache.block_tokens == block_tokens
    module = TARGETS[target](builders.kernels(config), checked=seed % 3 == 0)
    check_ragged_ops(module, step)


DECODE_CONFIGS = {
    "paged": kvcache.CacheConfig("f16", num_heads=2, head_size=64, page_size=16,
                                 num_layers=2, q_heads=8),
    "continuous": kvcache.CacheConfig("f16", num_heads=2, head_size=64,
                                      num_layers=2, q_heads=8, kind="continuous",
                                      block_tokens=64)}


@pytest.mark.parametrize("kind", DECODE_CONFIGS)
@pytest.mark.parametrize("workspace", [False, True])
@pytest.mark.parametrize("target", TARGETS)
def test_decode_step_matches_the_reference(target, workspace, kind):
    config = DECODE_CONFIGS[kind]
    rng = np.random.default_rng(7)
    cache = testing.random_cache(config, [40, 0, 17], [1, 1, 1], rng)
    q = testing.random_rows(rng, 3, 8, 64, "f16")
    new_keys = testing.random_rows(rng, 3, 2, 64, "f16")
    new_values = testing.random_rows(rng, 3, 2, 64, "f16")
    offsets = testing.row_offsets([1, 1, 1])
    out = np.zeros((3, 8, 64), np.float16)
    stored, expected = reference.decode_step(cache, 1, q, new_keys, new_values,
                                             offsets, out, config.default_scale)
    module = TARGETS[target](builders.decode_step(config, workspace=workspace))
    extra = [np.zeros(3 * 8 * 66 * 16, np.float32)] if workspace else []
    module.decode_step(*cache.arguments(), 1, q, new_keys, new_values, offsets, out,
                    *extra)
    np.testing.assert_array_equal(cache.blocks, stored.blocks)
    assert attention_error(expected, out, "f16") <= ATTENTION_TOLERANCE["f16"]


@pytest.mark.parametrize("kind", DECODE_CONFIGS)
@pytest.mark.parametrize("target", TARGETS)
def test_mla_decode_step_matches_the_reference(target, kind):
    shape = dict(page_size=4) if kind == "paged" else dict(kind=kind)
    config = kvcache.CacheConfig("bf16", num_heads=1, head_size=72, mla=True,
                                 **shape)
    rng = np.random.default_rng(3)
    cache = testing.random_cache(config, [9, 2], [1, 2], rng, num_layers=2)
    new = testing.random_rows(rng, 3, 1, 72, "bf16")
    offsets = testing.row_offsets([1, 2])
    ctx_offsets = testing.row_offsets([10, 4])
    context = np.zeros((14, 1, 72), np.uint16)
    stored = cache.key_cache(0).store_ragged(new, offsets)
    expected = reference.gather_ragged(stored.key_cache(0), ctx_offsets, context)
    module = TARGETS[target](builders.decode_step(config))
    module.decode_step(*cache.arguments(), 0, new, offsets, context, ctx_offsets)
    np.testing.assert_array_equal(cache.blocks, stored.blocks)
    np.testing.assert_array_equal(context, expected)


# PTX: one compile of each config's kernels (the slowest part of the suite).
@pytest.mark.parametrize("config", [CONFIGS[seed] for seed in SEEDS] +
                         [CONTINUOUS_CONFIGS[seed][0] for seed in CONTINUOUS_SEEDS],
                         ids=config_id)
def test_kernel_ops_compile_to_ptx(config):
    ptx = kvcache.compile_ptx(builders.kernels(config), chip="sm_90")
    expected = sorted(name for names in builders.kernel_names(config).values()
                      for name in names)
    assert sorted(kvcache.kernel_names(ptx)) == expected
    assert ".target sm_90" in ptx


def test_decode_step_compiles_for_sm_80():
    config = kvcache.CacheConfig("bf16", 8, 128, 16, q_heads=32)
    ptx = kvcache.compile_ptx(builders.decode_step(config, workspace=True),
                              chip="sm_80", opt_level=2)
    assert ".target sm_80" in ptx
    assert kvcache.kernel_names(ptx) == [
        "decode_step_store_ragged", "decode_step_store_ragged_0",
        "decode_step_attention_ragged", "decode_step_attention_tiles",
        "decode_step_attention_merge"]


@pytest.mark.parametrize("target,chip", [("cpu", None), ("emulated-gpu", "sm_90"),
                                         ("emulated-gpu", "sm_75")])
def test_attention_reads_each_cache_through_its_own_table(target, chip):
    # K from one collection, V from another with the same lengths but its
    # own (different) page placement: V[b, j] is read through V's table, on
    # the CPU, on tensor cores (sm_90) and on the path without cp.async
    # (sm_75).
    config = kvcache.CacheConfig("f16", num_heads=2, head_size=64, page_size=16,
                                 num_layers=2, q_heads=8)
    rng = np.random.default_rng(11)
    lengths, new = [40, 0, 70], [1, 3, 1]
    key_cache = testing.random_cache(config, lengths, new, rng)
    value_cache = testing.random_cache(config, lengths, new, rng)
    assert not np.array_equal(key_cache.lookup_table, value_cache.lookup_table)
    text = builders.attention_ragged(config, "attention")
    second = ("%blocks_v: {0}, %cache_lengths_v: memref<?xi32>, %lookup_table_v: "
              "memref<?x?xi32>, %max_seq_length_v: i32, %max_cache_length_v: i32, ")
    blocks_type = text.split("%blocks: ")[1].split(", %cache_lengths")[0]
    collection_type = "!kvcache.paged_collection<f16, num_heads = 2, head_size = 64, page_size = 16>"
    text = text.replace("%layer: index", second.format(blocks_type) + "%layer: index")
    text = text.replace(
        "  %value_cache = kvcache.get_value_cache %collection[",
        f"  %collection_v = kvcache.paged_collection %blocks_v, %cache_lengths_v, "
        f"%lookup_table_v, %max_seq_length_v, %max_cache_length_v : {blocks_type}, "
        f"memref<?xi32>, memref<?x?xi32> -> {collection_type}\n"
        "  %value_cache = kvcache.get_value_cache %collection_v[")
    q = testing.random_rows(rng, sum(new), 8, 64, "f16")
    offsets = testing.row_offsets(new)
    out = np.zeros((sum(new), 8, 64), np.float16)
    layer = 1
    expected = reference.attention_ragged(
        q, key_cache.key_cache(layer), value_cache.value_cache(layer), offsets, out,
        config.default_scale)
    options = {} if target == "cpu" else {"chip": chip}
    module = TARGETS[target](builders.module(text), **options)
    module.attention(*key_cache.arguments(), *value_cache.arguments(), layer, q,
                     offsets, out)
    assert attention_error(expected, out, "f16") <= ATTENTION_TOLERANCE["f16"]


@pytest.mark.parametrize("head_size", [1, 3, 5, 6, 12, 24, 40, 96, 256])
def test_cpu_attention_blocks_at_every_head_size(head_size):
    """The CPU key loop reduces a block of 8 keys' dot products with one
    shuffle tree over partial sums of the largest power of two of at most
    16 lanes that divides head_size (1, 2, 4, 8 or 16 here): contexts of 7
    (no full block), 8, 9 and 37 keys, GQA 3 (passes of 3 heads), f32 and
    bf16, against the reference."""
    for dtype in ("f32", "bf16"):
        config = kvcache.CacheConfig(dtype, 2, head_size, 4, num_layers=1, q_heads=6)
        rng = np.random.default_rng(head_size)
        lengths, new = [6, 7, 0, 35], [1, 1, 9, 2]
        cache = testing.random_cache(config, lengths, new, rng)
        offsets = testing.row_offsets(new)
        q = testing.random_rows(rng, sum(new), 6, head_size, dtype)
        out = np.zeros_like(q)
        expected = reference.attention_ragged(
            q, cache.key_cache(0), cache.value_cache(0), offsets, np.zeros_like(q),
            config.default_scale)
        kvcache.CPUModule(builders.attention_ragged(config, "attention"), threads=1).attention(
            *cache.arguments(), 0, q, offsets, out)
        assert attention_error(expected, out, dtype) <= ATTENTION_TOLERANCE[dtype], dtype
