"""Quantized caches from Python (docs/Contract.md 2.2): CacheConfig's scales
through the compiler, the builders' functions on kvcache.reference's
quantized caches on the CPU and the GPU emulator, and cache-typed arguments
(the sixth value of the ABI) passed from Python."""

import subprocess

import numpy as np
import pytest
from kvcache_tools import find_tool

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import (CacheConfig, builders, dtypes, reference,  # noqa: E402
                     testing)
from kvcache.config import parse_type  # noqa: E402

STORAGE = ["f8E4M3FN", "f8E5M2", "i8"]
SCALES = ["tensor", "token_head", "block<8>"]
TARGETS = {"cpu": kvcache.CPUModule, "emulated-gpu": kvcache.EmulatedGPUModule}
# Worst absolute error of attention outputs in [-1, 1] (f32 online softmax
# vs the float64 reference, then one rounding to q's type).
ATTENTION_TOLERANCE = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}
SENTINEL = 7.0


ROUND_TRIP = [
    CacheConfig("f8E4M3FN", 8, 128, 16, scales="token_head"),
    CacheConfig("f8E5M2", 2, 64, 4, scales="tensor", mla=True, assert_write_mode=1),
    CacheConfig("i8", 4, 64, kind="continuous", scales="block< 16 >"),
    CacheConfig("i8", 1, 8, 2, scales="block<8>", assert_write_mode=1),
]


@pytest.mark.parametrize("config", ROUND_TRIP, ids=lambda c: c.type_parameters())
def test_scales_print_as_mlir_prints_them(config):
    # The type texts of the config, parsed and printed by the compiler
    # (in-process and kvcache-opt), come back unchanged.
    collection, cache = builders.collection_type(config), builders.cache_type(config)
    ir = f"func.func @f(%c: {collection}, %k: {cache}) {{\n  return\n}}\n"
    printed = str(kvcache.parse(ir))
    assert f"%arg0: {collection}, %arg1: {cache})" in printed
    tool = find_tool("kvcache-opt")
    if tool is not None:
        result = subprocess.run([tool, "-"], input=ir, check=True,
                                capture_output=True, text=True).stdout
        assert f"%arg0: {collection}, %arg1: {cache})" in result
    types = kvcache.parse(ir).functions()[0][2]
    assert [parse_type(t) for t in types] == [
        (CacheConfig(config.dtype, config.num_heads, config.head_size,
                     config.page_size, mla=config.mla, kind=config.kind,
                     assert_write_mode=config.assert_write_mode,
                     scales=config.scales), role)
        for role in ("collection", "cache")]


def case_config(dtype, scales):
    """A small config per storage type x scales kind, the rows' type, the
    kind and the layers varying with the case."""
    index = STORAGE.index(dtype) * 3 + SCALES.index(scales)
    continuous = index % 2 == 1
    return CacheConfig(dtype, num_heads=2, head_size=16,
                       page_size=None if continuous else 4,
                       num_layers=None if index % 3 == 0 else 2, q_heads=4,
                       kind="continuous" if continuous else "paged",
                       block_tokens=8 if continuous and index % 4 == 1 else None,
                       scales=scales, rows_dtype=["f32", "f16", "bf16"][index % 3])


def assert_same_cache(actual, expected):
    """Codes bit for bit, scales exactly."""
    np.testing.assert_array_equal(actual.blocks.view(np.uint8),
                                  expected.blocks.view(np.uint8))
    np.testing.assert_array_equal(actual.scales.view(np.uint32),
                                  expected.scales.view(np.uint32))


def float_rows(rng, count, heads, config):
    """Rows of config.rows_element, values in [-2, 2) (beyond a tensor
    scale's range: saturated)."""
    values = rng.uniform(-2, 2, (count, heads, config.head_size))
    return dtypes.from_float32(values.astype(np.float32), config.rows_element)


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("dtype", STORAGE)
def test_builders_on_quantized_caches(dtype, scales, target):
    # Every function of builders.kernels(config) on a random quantized
    # cache, against the reference: stores quantize (codes bit for bit,
    # scales exactly), gathers dequantize, copy_pages moves the scales,
    # attention (with and without a workspace) reads K/V dequantized.
    config = case_config(dtype, scales)
    module = TARGETS[target](builders.kernels(config))
    rng = np.random.default_rng(STORAGE.index(dtype) * 3 + SCALES.index(scales))
    lengths, new = [5, 0, 3], [1, 3, 2]
    cache = testing.random_cache(config, lengths, new, rng, num_layers=2)
    layer, offsets = 1, testing.row_offsets(new) + 1
    for name, view in (("store_keys", cache.key_cache(layer)),
                       ("store_values", cache.value_cache(layer))):
        rows = float_rows(rng, 7, 2, config)
        expected = view.store_ragged(rows, offsets)
        getattr(module, name)(*cache.arguments(), layer, rows, offsets)
        assert_same_cache(cache, expected)
    ctx = testing.row_offsets([6, 3, 5]) + 2
    out = dtypes.from_float32(np.full((17, 2, 16), SENTINEL, np.float32),
                              config.rows_element)
    expected = reference.gather_ragged(cache.value_cache(layer), ctx, out)
    module.gather_values(*cache.arguments(), layer, out, ctx)
    np.testing.assert_array_equal(out, expected)
    check_attention(module, config, cache, layer, offsets, rng)
    if config.has_pages:
        pairs = np.array([[int(cache.lookup_table[1, 0]),
                           int(cache.lookup_table[0, 1])]], np.int32)
        expected = cache.copy_pages(pairs)
        module.copy_pages(*cache.arguments(), pairs)
        assert_same_cache(cache, expected)


def check_attention(module, config, cache, layer, offsets, rng):
    element = config.rows_element
    q = float_rows(rng, 7, 4, config)
    out = np.zeros_like(q)
    expected = reference.attention_ragged(
        q, cache.key_cache(layer), cache.value_cache(layer), offsets, out,
        config.default_scale)
    for extra in ((), (np.zeros(7 * 4 * 18 * 16, np.float32),)):
        name = "attention_split" if extra else "attention"
        out[...] = 0
        getattr(module, name)(*cache.arguments(), layer, q, offsets, out, *extra)
        error = np.abs(dtypes.to_float32(out, element) -
                       dtypes.to_float32(expected, element)).max()
        assert error <= ATTENTION_TOLERANCE[element], (name, error)


@pytest.mark.parametrize("target", list(TARGETS))
def test_decode_step_and_rows_of_codes(target):
    # decode_step on a quantized cache; then a config whose rows are the
    # codes: store/gather copy them raw, the scales untouched.
    config = CacheConfig("f8E4M3FN", 2, 16, 4, num_layers=2, q_heads=4,
                         scales="block<8>", rows_dtype="bf16")
    rng = np.random.default_rng(7)
    cache = testing.random_cache(config, [2, 6], [2, 1], rng)
    offsets = testing.row_offsets([2, 1])
    q, keys, values = (float_rows(rng, 3, h, config) for h in (4, 2, 2))
    out = np.zeros_like(q)
    expected, expected_out = reference.decode_step(
        cache, 0, q, keys, values, offsets, out, config.default_scale)
    TARGETS[target](builders.decode_step(config)).decode_step(
        *cache.arguments(), 0, q, keys, values, offsets, out)
    assert_same_cache(cache, expected)
    error = np.abs(dtypes.to_float32(out, "bf16") -
                   dtypes.to_float32(expected_out, "bf16")).max()
    assert error <= ATTENTION_TOLERANCE["bf16"]
    codes = CacheConfig("f8E4M3FN", 2, 16, 4, scales="block<8>",
                        rows_dtype="f8E4M3FN")
    module = TARGETS[target](builders.kernels(codes))
    rows = rng.integers(0, 256, (3, 2, 16), dtype=np.uint8)
    expected = cache.key_cache(1).store_ragged(rows, offsets)
    module.store_keys(*cache.arguments(), 1, rows, offsets)
    assert_same_cache(cache, expected)
    out = np.zeros((11, 2, 16), np.uint8)
    module.gather_keys(*cache.arguments(), 1, out, testing.row_offsets([4, 7]))
    np.testing.assert_array_equal(out, reference.gather_ragged(
        cache.key_cache(1), testing.row_offsets([4, 7]), np.zeros_like(out)))


def cache_typed_module(config):
    """@store_view: a layer-cache argument; @store_collection: a
    collection argument, its layer's K (both store float32 rows)."""
    collection, cache = builders.collection_type(config), builders.cache_type(config)
    rows = builders.rows_type(config)
    store = (f"kvcache.store_ragged %k, %rows, %offsets : {cache}, {rows}, "
             "memref<?xi32>")
    return (f"func.func @store_view(%k: {cache}, %rows: {rows}, "
            f"%offsets: memref<?xi32>) {{\n  {store}\n  return\n}}\n"
            f"func.func @store_collection(%c: {collection}, %layer: index, "
            f"%rows: {rows}, %offsets: memref<?xi32>) {{\n"
            f"  %k = kvcache.get_key_cache %c[%layer] : {collection}\n"
            f"  {store}\n  return\n}}\n")


@pytest.mark.parametrize("scales", SCALES)
def test_cache_typed_arguments(scales):
    # Functions taking !kvcache.paged_cache / paged_collection with scales:
    # a CacheView (8 values) and a PagedCache (6), or the tuples.
    config = CacheConfig("i8", 2, 16, 4, scales=scales)
    module = kvcache.CPUModule(cache_typed_module(config))
    rng = np.random.default_rng(len(scales))
    cache = testing.random_cache(config, [3, 6], [2, 1], rng, num_layers=2)
    offsets = testing.row_offsets([2, 1])
    for call in range(4):
        rows = float_rows(rng, 3, 2, config)
        expected = cache.key_cache(1).store_ragged(rows, offsets)
        if call == 0:
            module.store_view(cache.key_cache(1), rows, offsets)
        elif call == 1:
            module.store_view(cache.key_cache(1).parameters(), rows, offsets)
        elif call == 2:
            module.store_collection(cache, 1, rows, offsets)
        else:
            module.store_collection(cache.arguments(), 1, rows, offsets)
        assert_same_cache(cache, expected)


def test_cache_typed_argument_errors():
    config = CacheConfig("f8E5M2", 2, 16, 4, scales="token_head")
    module = kvcache.CPUModule(cache_typed_module(config))
    cache = testing.random_cache(config, [3], [1], num_layers=1)
    rows, offsets = np.zeros((1, 2, 16), np.float32), np.array([0, 1], np.int32)
    fields = list(cache.arguments())
    with pytest.raises(TypeError, match=r"argument 0 of @store_collection: "
                       r".* takes a quantized caches.PagedCache or \(blocks, "
                       r".*max_cache_length, scales\), got 5 values"):
        module.store_collection(fields[:5], 0, rows, offsets)
    with pytest.raises(TypeError, match=r"takes a quantized caches.CacheView "
                       r"or \(.*kv, layer, scales\), got 7 values"):
        module.store_view(cache.key_cache(0).parameters()[:7], rows, offsets)
    for bad, error, message in [
            (fields[5].astype(np.float64), TypeError, r"needs scales of f32 "
             r"elements \(float32\), got float64"),
            (fields[5][:, :, :, :2], ValueError, r"needs token_head scales of "
             r"shape \(\d+, 2, 1, 4, 2\), got \(\d+, 2, 1, 2, 2\)"),
            (np.ones((1, 2), np.float32), ValueError, "needs token_head scales"),
            (np.asfortranarray(fields[5]), ValueError, r"scales must be "
             r"contiguous as .* says \(the static strides \[\?, \?, \?, 2, 1\]\)")]:
        with pytest.raises(error, match=message):
            module.store_collection(fields[:5] + [bad], 0, rows, offsets)
    plain = kvcache.CPUModule(cache_typed_module(CacheConfig("f16", 2, 16, 4)))
    with pytest.raises(TypeError, match=r"takes a caches.PagedCache or .*"
                       r"max_cache_length\), got 6 values"):
        plain.store_collection(cache, 0, rows.astype(np.float16), offsets)


# Tensor-core attention over quantized caches (f16/bf16 q, head_size 64,
# 128 or 256, scale groups of 16 or more): the codes stream through shared
# memory and each thread dequantizes its chunks (stored * scale, rounded
# once to q's type) before the mma.sync fragments are read. A case per
# storage type x scales kind, a head of 64 with GQA 8, a split decode.
TENSOR_CORE_CASES = [
    (dtype, scales, "bf16" if dtype == "f8E5M2" else "f16", 128, 8, False)
    for dtype in STORAGE for scales in ("tensor", "token_head", "block<32>")] + [
    ("f8E4M3FN", "token_head", "f16", 64, 16, False),
    ("i8", "block<16>", "bf16", 128, 2, True)]


@pytest.mark.parametrize("dtype, scales, rows, head_size, q_heads, split",
                         TENSOR_CORE_CASES)
def test_tensor_core_attention_over_quantized_caches(dtype, scales, rows, head_size,
                                                     q_heads, split):
    config = CacheConfig(dtype, num_heads=2, head_size=head_size, page_size=16,
                         num_layers=2, q_heads=q_heads, scales=scales, rows_dtype=rows)
    module = kvcache.EmulatedGPUModule(
        builders.attention_ragged(config, "attention", workspace=split))
    assert "__kvemu_mma" in str(module.lowered)        # the tensor-core kernel
    rng = np.random.default_rng(len(dtype) + len(scales) + head_size)
    # Decode rows after 40 and 700 keys (many steps, a masked last step;
    # split in 2 with a workspace), a prefill of 20 rows on an empty cache.
    new = [1, 3, 20]
    extra = (np.zeros(sum(new) * q_heads * (head_size + 2) * 2, np.float32),) if split else ()
    # K and V are rounded to q's type once more than the reference's f32
    # dequantized values: within the f16 (bf16) attention tolerance.
    assert attention_error(module, config, [40, 700, 0], new, rng, extra) <= \
        ATTENTION_TOLERANCE[rows]


def attention_error(module, config, cached, new, rng, extra=()):
    """The largest error of `module.attention` on layer 1 of a random cache
    of `config` (`cached` tokens, `new` rows per sequence) against the
    reference, both rounded to the rows' type."""
    cache = testing.random_cache(config, cached, new, rng)
    offsets = testing.row_offsets(new)
    q = float_rows(rng, sum(new), config.q_heads, config)
    out = np.zeros_like(q)
    expected = reference.attention_ragged(
        q, cache.key_cache(1), cache.value_cache(1), offsets, out, config.default_scale)
    module.attention(*cache.arguments(), 1, q, offsets, out, *extra)
    rows = config.rows_element
    return np.abs(dtypes.to_float32(out, rows) -
                  dtypes.to_float32(expected, rows)).max()


# The CPU's key loop over a quantized cache: blocks of 8 keys (a token_head
# cache's K scales multiply the block's scores as one vector, its V scales
# the block's weights), then the keys left one at a time, for contexts that
# span many blocks, GQA 4, q and out of each float type.
CPU_KEY_BLOCK_CASES = [
    (dtype, scales, rows)
    for dtype in STORAGE for scales in ("tensor", "token_head", "block<16>")
    for rows in ["f32", "f16", "bf16"][:1 if scales == "block<16>" else 3]]


@pytest.mark.parametrize("dtype, scales, rows", CPU_KEY_BLOCK_CASES)
def test_cpu_attention_over_quantized_key_blocks(dtype, scales, rows):
    config = CacheConfig(dtype, num_heads=2, head_size=64, page_size=16, num_layers=2,
                         q_heads=8, scales=scales, rows_dtype=rows)
    module = kvcache.CPUModule(builders.attention_ragged(config, "attention"))
    rng = np.random.default_rng(len(dtype) + 3 * len(scales) + 7 * len(rows))
    # Decode rows after 40 and 77 keys (5 and 9 blocks, the second with 6
    # keys left), a prefill of 21 rows on an empty cache (0 to 2 blocks).
    assert attention_error(module, config, [40, 77, 0], [1, 1, 21], rng) <= \
        ATTENTION_TOLERANCE[rows]
