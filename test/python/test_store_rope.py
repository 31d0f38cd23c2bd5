"""kvcache.store_ragged with the clause rope(...) (docs/Contract.md 3.3) on
the CPU and on the emulated GPU, against the numpy reference (the rows
rotated by reference.rope_rows, then stored by view.store_ragged): both
styles, partial rotary, explicit positions, chunks of one element, float
caches and quantized ones (token_head, block<G>, tensor scales). Each target compiles one module of
every case."""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import builders, reference, testing  # noqa: E402

CACHE_LENGTHS = [5, 0, 9]
NEW_LENGTHS = [2, 3, 1]
POSITIONS = np.array([3, 0, 23, 11, 11, 2], np.int32)
TABLE_ROWS = 24


def config_of(dtype, head_size=64, num_heads=2, **kwargs):
    return kvcache.CacheConfig(dtype, num_heads=num_heads, head_size=head_size,
                               page_size=4, num_layers=2, **kwargs)


# name: (config, style, rotary_dims, positions)
CASES = {
    "f16_interleaved": (config_of("f16"), "interleaved", 64, False),
    "bf16_half_partial": (config_of("bf16"), "half", 16, True),
    "f32_interleaved_partial": (config_of("f32", head_size=24, num_heads=1),
                                "interleaved", 8, True),
    "fp8_token_head_half": (config_of("f8E4M3FN", scales="token_head",
                                      rows_dtype="f16"), "half", 32, False),
    "i8_block_interleaved": (config_of("i8", scales="block<16>",
                                       rows_dtype="bf16"), "interleaved", 48,
                             True),
    "fp8_tensor_half": (config_of("f8E5M2", scales="tensor", rows_dtype="f32"),
                        "half", 64, True),
    # On the GPU 3 chunks of half pairs per head (not a divisor of a warp).
    "f16_half_thirds": (config_of("f16"), "half", 48, False),
    # Rows of 512 chunks: the GPU moves the rotary part in 2 passes.
    "f32_half_wide": (config_of("f32", head_size=1024), "half", 1024, True),
    # An odd offset o = 5: chunks of one element, interleaved partners read.
    "f16_odd_head_interleaved": (config_of("f16", head_size=9, num_heads=1),
                                 "interleaved", 4, False),
}


def module_text():
    return builders.module(*(
        builders.store_ragged(config, name=name, style=style,
                              rotary_dims=rotary_dims, positions=positions)
        for name, (config, style, rotary_dims, positions) in CASES.items()))


@pytest.fixture(scope="module")
def modules():
    text = module_text()
    return {"cpu": kvcache.CPUModule(text, checked=True),
            "emulated_gpu": kvcache.EmulatedGPUModule(text, checked=True)}


def run(module, name, seed=0):
    """(cache after the call, the reference's cache, rows given, rows after)."""
    config, style, rotary_dims, positions = CASES[name]
    rng = np.random.default_rng(seed)
    cache = testing.random_cache(config, CACHE_LENGTHS, NEW_LENGTHS, rng)
    offsets = testing.row_offsets(NEW_LENGTHS)
    rows = testing.random_rows(rng, int(offsets[-1]), config.num_heads,
                               config.head_size, config.rows_element)
    table = rng.uniform(-1, 1, (TABLE_ROWS, rotary_dims)).astype(np.float32)
    given = POSITIONS if positions else None
    layer = 1
    view = cache.key_cache(layer)
    rotated = reference.rope_rows(view, rows, offsets, table, style, given)
    expected = view.store_ragged(rotated, offsets)
    arguments = [*cache.arguments(), layer, rows, offsets, table]
    if positions:
        arguments.append(POSITIONS)
    rows_given = rows.copy()
    getattr(module, name)(*arguments)
    return cache, expected, rows_given, rows, rotated


@pytest.mark.parametrize("target", ["cpu", "emulated_gpu"])
@pytest.mark.parametrize("name", list(CASES))
def test_matches_reference(modules, target, name):
    cache, expected, rows_given, rows, rotated = run(modules[target], name)
    np.testing.assert_array_equal(cache.blocks, expected.blocks)
    if expected.scales is not None:
        np.testing.assert_array_equal(cache.scales, expected.scales)
    np.testing.assert_array_equal(rows, rows_given)  # the rows are only read
    # The reference did rotate: the stored rows are not the rows given.
    assert not np.array_equal(rotated, rows_given)
    rotary_dims = CASES[name][2]
    offset = rows.shape[-1] - rotary_dims
    np.testing.assert_array_equal(rotated[..., :offset],
                                  rows_given[..., :offset])


def test_reference_rotates_at_the_rotary_position():
    config, style, rotary_dims, _ = CASES["f32_interleaved_partial"]
    cache = testing.random_cache(config, CACHE_LENGTHS, NEW_LENGTHS,
                                 np.random.default_rng(1))
    offsets = testing.row_offsets(NEW_LENGTHS)
    rows = np.ones((6, 1, 24), np.float32)
    table = np.random.default_rng(2).uniform(-1, 1, (TABLE_ROWS, 8)).astype(
        np.float32)
    view = cache.key_cache(1)
    rotated = reference.rope_rows(view, rows, offsets, table, style, POSITIONS)
    np.testing.assert_array_equal(rotated[2],
                                  reference.rotate(rows[2], table[23], style))
    # Without positions: row 2 (sequence 1, first row) at cache_length 0.
    rotated = reference.rope_rows(view, rows, offsets, table, style)
    np.testing.assert_array_equal(rotated[2],
                                  reference.rotate(rows[2], table[0], style))


def test_emulated_gpu_position_past_the_table_asserts(modules):
    # (The CPU's check stops the process:
    # test/Integration/CPU/store-rope-checked.mlir.)
    config, _, rotary_dims, _ = CASES["bf16_half_partial"]
    cache = testing.random_cache(config, CACHE_LENGTHS, NEW_LENGTHS,
                                 np.random.default_rng(0))
    offsets = testing.row_offsets(NEW_LENGTHS)
    rows = np.zeros((6, config.num_heads, config.head_size), np.uint16)
    table = np.zeros((4, rotary_dims), np.float32)
    with pytest.raises(kvcache.EmulatorError) as raised:
        modules["emulated_gpu"].bf16_half_partial(*cache.arguments(), 1, rows,
                                                  offsets, table, POSITIONS)
    assert raised.value.kinds == ["assert"]
    assert "rotary position is out of range" in raised.value.reports[0]
