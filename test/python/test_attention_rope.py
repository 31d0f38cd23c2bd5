"""The rope(...) clause of attention_ragged and mla_attention_ragged on q
(docs/Contract.md 3.3) on the CPU and on the emulated GPU: each case runs
the op with the clause on q, and the same op without it on q rotated by the
numpy rope reference (reference.rope_rows, as rope_ragged writes q_out),
which must agree bit for bit (the kernels rotate q where they load it and
round it once to q's type, as rope_ragged does); and both against the
reference attention of the rotated q (reference.attention_ragged with
cos_sin), within the attention tolerances. Both styles, partial rotary,
explicit positions, GQA, decode rows and prefill rows (the CPU's row-tile
kernel, the GPU's query tiles), a quantized cache, MLA (the last 64 of 576
rotate). Each target compiles one module of every case it runs."""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import CacheConfig, builders, dtypes, reference, testing  # noqa: E402
from attention_checks import TOLERANCE, assert_close  # noqa: E402
from sampling import SAMPLE  # noqa: E402

CACHE_LENGTHS = [5, 0, 9]
TABLE_ROWS = 64
POSITIONS_SEED = 3


def config_of(dtype, head_size, num_heads, q_heads, **kwargs):
    return CacheConfig(dtype, num_heads=num_heads, head_size=head_size,
                       page_size=4, num_layers=2, q_heads=q_heads, **kwargs)


# name: (config, style, rotary_dims, positions, new rows per sequence,
#        v_head_size (MLA) or None)
CASES = {
    # CPU: the per-row loop; GPU: the CUDA-core kernel.
    "f32_interleaved_decode": (config_of("f32", 16, 2, 8), "interleaved", 16,
                               False, [1, 1, 1], None),
    # CPU: the row-tile kernel (20 rows x 4 heads) and the per-row loop.
    "f32_half_partial_prefill": (config_of("f32", 16, 2, 8), "half", 8, True,
                                 [20, 3, 1], None),
    # GPU: tensor cores, the query-tile kernel (q's A fragments from global
    # memory) and the decode kernel (q staged in shared memory).
    "f16_half_tensor_cores": (config_of("f16", 64, 2, 8), "half", 32, True,
                              [20, 1, 3], None),
    "bf16_interleaved_gqa": (config_of("bf16", 64, 1, 16), "interleaved", 64,
                             False, [1, 2, 1], None),
    "fp8_token_head_interleaved": (
        config_of("f8E4M3FN", 64, 2, 4, scales="token_head", rows_dtype="f16"),
        "interleaved", 16, True, [4, 1, 2], None),
    # An odd offset o = 3: chunks of one element.
    "f32_odd_offset": (config_of("f32", 11, 1, 2), "interleaved", 8, False,
                       [2, 1, 1], None),
    # 9 pairs, all of the head rotary: pieces of single elements, not of 9
    # (found by the fuzzer: a piece of 9 would cut a pair).
    "f32_interleaved_odd_pairs": (config_of("f32", 18, 2, 4), "interleaved", 18,
                                  False, [1, 3, 1], None),
    # MLA: the 64 rope elements of 576 rotate (GPU: the tensor-core decode
    # kernel, q's dims split over the warps, A fragments from global memory).
    "bf16_mla": (config_of("bf16", 576, 1, 64, mla=True), "interleaved", 64,
                 True, [1, 2, 1], 512),
}


def builder(config, name, v_head_size, **rope):
    if v_head_size is None:
        return builders.attention_ragged(config, name, scale=0.25, **rope)
    return builders.mla_attention_ragged(config, v_head_size, name,
                                         scale=0.25, **rope)


TARGETS = {"cpu": kvcache.CPUModule, "emulated_gpu": kvcache.EmulatedGPUModule}
# (case, target) pairs that run. Under the sanitizers (sampling.py) every
# (N+1)-th, so that both targets take part, and each target's module holds
# only its cases (compiling every case took most of the time there).
RUNS = [(name, target) for name in CASES for target in TARGETS]
if SAMPLE > 1:
    RUNS = RUNS[::SAMPLE + 1]
# The case test_emulated_gpu_position_past_the_table_asserts calls.
ASSERT_CASE = "f32_half_partial_prefill"


def module_text(names):
    functions = []
    for name in names:
        config, style, rotary, positions, _, v_head_size = CASES[name]
        functions.append(builder(config, name, v_head_size, style=style,
                                 rotary_dims=rotary, positions=positions))
        functions.append(builder(config, name + "_plain", v_head_size))
    return builders.module(*functions)


@pytest.fixture(scope="module")
def modules():
    cases = {target: [name for name in CASES if (name, target) in RUNS]
             for target in TARGETS}
    if ASSERT_CASE not in cases["emulated_gpu"]:
        cases["emulated_gpu"].append(ASSERT_CASE)
    return {target: TARGETS[target](module_text(cases[target]), checked=True)
            for target in TARGETS}


def run(module, name, seed=0):
    """(out with the clause, out of the plain op on q rotated by the
    reference, the reference's out, the reference's out without rotation,
    q after the call, q given)."""
    config, style, rotary, positions, new, v_head_size = CASES[name]
    rng = np.random.default_rng(seed)
    cache = testing.random_cache(config, CACHE_LENGTHS, new, rng)
    offsets = testing.row_offsets(new)
    rows, dtype = int(offsets[-1]), config.rows_element
    q = testing.random_rows(rng, rows, config.query_heads, config.head_size,
                            dtype)
    table = rng.uniform(-1, 1, (TABLE_ROWS, rotary)).astype(np.float32)
    given = (rng.integers(0, TABLE_ROWS, rows).astype(np.int32)
             if positions else None)
    view = cache.key_cache(1)
    out_heads = v_head_size or config.head_size
    out = np.zeros((rows, config.query_heads, out_heads), q.dtype)
    if v_head_size is None:
        attend = lambda q_, **rope: reference.attention_ragged(  # noqa: E731
            q_, view, cache.value_cache(1), offsets, out, 0.25, **rope)
    else:
        attend = lambda q_, **rope: reference.mla_attention_ragged(  # noqa: E731
            q_, view, offsets, out, 0.25, v_head_size, **rope)
    expected = attend(q, cos_sin=table, style=style, positions=given)
    unrotated = attend(q)
    q_given = q.copy()
    got = out.copy()
    extra = [table] + ([given] if positions else [])
    getattr(module, name)(*cache.arguments(), 1, q, offsets, got, *extra)
    rotated_q = reference.rope_rows(view, q_given, offsets, table, style, given)
    plain = out.copy()
    getattr(module, name + "_plain")(*cache.arguments(), 1, rotated_q, offsets,
                                     plain)
    return got, plain, expected, unrotated, q, q_given


def error(a, b, dtype):
    return np.abs(dtypes.to_float32(a, dtype) - dtypes.to_float32(b, dtype)).max()


@pytest.mark.parametrize("name, target", RUNS)
def test_matches_rotated_queries_attended(modules, target, name):
    got, plain, expected, unrotated, q, q_given = run(modules[target], name)
    dtype = CASES[name][0].rows_element
    # The clause equals rope_ragged's q_out attended, bit for bit.
    np.testing.assert_array_equal(got, plain)
    rows = np.zeros((got.shape[0], got.shape[1]), np.float32)
    assert_close((got, rows), (expected, rows), dtype)
    np.testing.assert_array_equal(q, q_given)  # q is only read
    # The rotation matters: without it the result is far off.
    assert error(unrotated, expected, dtype) > 10 * TOLERANCE[dtype]


def test_emulated_gpu_position_past_the_table_asserts(modules):
    config, _, rotary, _, new, _ = CASES["f32_half_partial_prefill"]
    cache = testing.random_cache(config, CACHE_LENGTHS, new,
                                 np.random.default_rng(0))
    offsets = testing.row_offsets(new)
    rows = int(offsets[-1])
    q = np.zeros((rows, config.query_heads, config.head_size), np.float32)
    positions = np.full(rows, 4, np.int32)
    with pytest.raises(kvcache.EmulatorError) as raised:
        modules["emulated_gpu"].f32_half_partial_prefill(
            *cache.arguments(), 1, q, offsets, np.zeros_like(q),
            np.zeros((4, rotary), np.float32), positions)
    assert "assert" in raised.value.kinds
    assert "rotary position is out of range" in raised.value.reports[0]
