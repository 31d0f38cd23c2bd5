"""kvcache.rope_ragged on the CPU (builders.rope_ragged) against the numpy
reference and against PyTorch code written the way Meta's Llama reference
(complex products: torch.polar, torch.view_as_complex; interleaved pairs)
and Hugging Face's `apply_rotary_pos_emb` (rotate_half; half style) compute
rotary embedding: both styles, partial rotary, explicit positions, in place,
GQA, MLA and a tensor-scaled fp8 cache; and the GPU kernel on the
emulator against the same reference. (A position past the table under
checked mode: test/Integration/CPU/rope-checked.mlir.) f32 matches bit for bit (both
PyTorch formulas round each product and sum to f32, as the op does); f16
and bf16 match the reference bit for bit and PyTorch within its rounding."""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")
torch = pytest.importorskip("torch")

import kvcache  # noqa: E402
from kvcache import builders, dtypes, reference, testing  # noqa: E402

CACHE_LENGTHS = [5, 0, 9]
NEW_LENGTHS = [2, 3, 1]
TABLE_ROWS = 24


def cos_sin_table(rotary_dims, rows=TABLE_ROWS, base=10000.0):
    """[rows, R] f32 of (cos t_i, sin t_i) pairs as Meta's Llama builds its
    frequencies (torch.polar of the position times theta_i), and the
    complex table itself."""
    freqs = 1.0 / (base ** (torch.arange(0, rotary_dims, 2).float() / rotary_dims))
    angles = torch.outer(torch.arange(rows).float(), freqs)
    freqs_cis = torch.polar(torch.ones_like(angles), angles)
    table = torch.view_as_real(freqs_cis).reshape(rows, rotary_dims)
    return table.numpy().copy(), freqs_cis


def meta_llama(x, freqs_cis, rotary_dims):
    """Meta's Llama `apply_rotary_emb` on the last rotary_dims elements:
    interleaved pairs as complex numbers times e^(i t)."""
    x = x.clone()
    tail = x[..., -rotary_dims:].float().reshape(*x.shape[:-1], -1, 2)
    rotated = torch.view_as_real(torch.view_as_complex(tail) *
                                 freqs_cis[:, None, :]).flatten(-2)
    x[..., -rotary_dims:] = rotated.type_as(x)
    return x


def hugging_face(x, table, rotary_dims):
    """Hugging Face's `apply_rotary_pos_emb` (rotate_half) on the last
    rotary_dims elements, cos and sin in x's dtype as it computes them."""
    cos = torch.from_numpy(table[:, 0::2].copy())
    sin = torch.from_numpy(table[:, 1::2].copy())
    cos = torch.cat([cos, cos], -1)[:, None, :].to(x.dtype)
    sin = torch.cat([sin, sin], -1)[:, None, :].to(x.dtype)

    def rotate_half(v):
        first, second = v[..., : v.shape[-1] // 2], v[..., v.shape[-1] // 2:]
        return torch.cat((-second, first), dim=-1)

    x = x.clone()
    tail = x[..., -rotary_dims:]
    x[..., -rotary_dims:] = tail * cos + rotate_half(tail) * sin
    return x


TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16,
                "bf16": torch.bfloat16}


def to_torch(rows, dtype):
    """Rows of `dtype` (bf16 as uint16 bits) as a torch tensor."""
    if dtype == "bf16":
        return torch.from_numpy(dtypes.to_float32(rows, "bf16")).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(rows))


def to_numpy(tensor, dtype):
    """The inverse of to_torch."""
    if dtype == "bf16":
        return dtypes.from_float32(tensor.float().numpy(), "bf16")
    return tensor.numpy()


def run(config, style, rotary_dims, positions=None, in_place=False, seed=0,
        target=kvcache.CPUModule):
    """A step's keys stored, then rope_ragged on `target` in checked mode:
    (q, q_out, the cache before, the cache after, the reference's q_out and
    cache, row offsets, table)."""
    rng = np.random.default_rng(seed)
    cache = testing.random_cache(config, CACHE_LENGTHS, NEW_LENGTHS, rng)
    offsets = testing.row_offsets(NEW_LENGTHS)
    rows = int(offsets[-1])
    q = testing.random_rows(rng, rows, config.query_heads, config.head_size,
                            config.rows_element)
    table, freqs_cis = cos_sin_table(rotary_dims)
    q_out = np.full_like(q, 7)
    module = target(builders.rope_ragged(
        config, rotary_dims=rotary_dims, style=style,
        positions=positions is not None, in_place=in_place), checked=True)
    layer = 1
    expected_q, expected_cache = reference.rope_ragged(
        q, cache.key_cache(layer), offsets, table, style, positions,
        q if in_place else q_out)
    arguments = [*cache.arguments(), layer, q, offsets, table]
    if not in_place:
        arguments.append(q_out)
    if positions is not None:
        arguments.append(positions)
    before = cache.copy()
    q_given = q.copy()
    module.rope_ragged(*arguments)
    return dict(q=q_given, q_after=q, q_out=q if in_place else q_out,
                before=before,
                after=cache, expected_q=expected_q,
                expected_cache=expected_cache, offsets=offsets, table=table,
                freqs_cis=freqs_cis)


def config_of(dtype, head_size=64, num_heads=2, q_heads=4, **kwargs):
    return kvcache.CacheConfig(dtype, num_heads=num_heads, head_size=head_size,
                               page_size=4, num_layers=2, q_heads=q_heads,
                               **kwargs)


def stored_keys(cache, offsets, layer=1):
    """The step's key rows [T, H, D] as stored (positions cache_length + i)."""
    view = cache.key_cache(layer)
    return np.stack([view.row(b, CACHE_LENGTHS[b] + r - int(offsets[b]))
                     for b in range(len(NEW_LENGTHS))
                     for r in range(int(offsets[b]), int(offsets[b + 1]))])


def step_positions(offsets):
    return np.array([CACHE_LENGTHS[b] + r - int(offsets[b])
                     for b in range(len(NEW_LENGTHS))
                     for r in range(int(offsets[b]), int(offsets[b + 1]))])


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("style", ["interleaved", "half"])
@pytest.mark.parametrize("rotary_dims", [64, 16])
def test_matches_reference_and_leaves_the_rest(dtype, style, rotary_dims):
    r = run(config_of(dtype), style, rotary_dims)
    np.testing.assert_array_equal(r["q_out"], r["expected_q"])
    np.testing.assert_array_equal(r["after"].blocks, r["expected_cache"].blocks)
    # Only the step's key rows changed, and only their rotated elements.
    changed = r["after"].blocks != r["before"].blocks
    step = np.zeros_like(changed)
    view = r["after"].key_cache(1)
    for b, length in enumerate(CACHE_LENGTHS):
        for t in range(length, length + NEW_LENGTHS[b]):
            page, slot = view.cache.lookup(b, t)
            step[page, 0, 1, slot, :, -rotary_dims:] = True
    assert changed.any() and not (changed & ~step).any()
    np.testing.assert_array_equal(r["q_after"], r["q"])  # q_out is not q
    assert not np.array_equal(r["q_out"], r["q"])
    np.testing.assert_array_equal(r["q_out"][..., :64 - rotary_dims],
                                  r["q"][..., :64 - rotary_dims])


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("rotary_dims", [64, 32])
def test_meta_llama_interleaved(dtype, rotary_dims):
    r = run(config_of(dtype), "interleaved", rotary_dims)
    where = torch.from_numpy(step_positions(r["offsets"]))
    freqs = r["freqs_cis"][where]
    q = to_torch(r["q"], dtype)
    keys = to_torch(stored_keys(r["before"], r["offsets"]), dtype)
    expected_q = to_numpy(meta_llama(q, freqs, rotary_dims), dtype)
    expected_k = to_numpy(meta_llama(keys, freqs, rotary_dims), dtype)
    # Meta's formula rounds once to the dtype from f32, as the op does.
    np.testing.assert_array_equal(r["q_out"], expected_q)
    np.testing.assert_array_equal(stored_keys(r["after"], r["offsets"]),
                                  expected_k)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("rotary_dims", [64, 32])
def test_hugging_face_half(dtype, rotary_dims):
    r = run(config_of(dtype), "half", rotary_dims)
    table = r["table"][step_positions(r["offsets"])]
    q = to_torch(r["q"], dtype)
    keys = to_torch(stored_keys(r["before"], r["offsets"]), dtype)
    got_q = dtypes.to_float32(r["q_out"], dtype)
    got_k = dtypes.to_float32(stored_keys(r["after"], r["offsets"]), dtype)
    want_q = hugging_face(q, table, rotary_dims).float().numpy()
    want_k = hugging_face(keys, table, rotary_dims).float().numpy()
    if dtype == "f32":
        np.testing.assert_array_equal(got_q, want_q)
        np.testing.assert_array_equal(got_k, want_k)
        return
    # Hugging Face rounds cos, sin, each product and the sum to the dtype:
    # a few units of its last place on values below 2 in magnitude.
    tolerance = {"f16": 4e-3, "bf16": 3e-2}[dtype]
    np.testing.assert_allclose(got_q, want_q, atol=tolerance)
    np.testing.assert_allclose(got_k, want_k, atol=tolerance)


@pytest.mark.parametrize("style", ["interleaved", "half"])
def test_positions_and_in_place(style):
    positions = np.array([3, 0, 23, 11, 11, 2], np.int32)
    r = run(config_of("f32", head_size=24, num_heads=1, q_heads=3), style, 8,
            positions=positions, in_place=True)
    np.testing.assert_array_equal(r["q_out"], r["expected_q"])
    np.testing.assert_array_equal(r["after"].blocks, r["expected_cache"].blocks)
    # Row 2 at table row 23, not its storage position.
    table = r["table"]
    np.testing.assert_array_equal(
        r["q_out"][2], reference.rotate(r["q"][2], table[23], style))


def test_mla_rotates_the_last_64_of_576():
    config = config_of("bf16", head_size=576, num_heads=1, q_heads=2, mla=True)
    r = run(config, "interleaved", 64)
    np.testing.assert_array_equal(r["q_out"], r["expected_q"])
    np.testing.assert_array_equal(r["after"].blocks, r["expected_cache"].blocks)
    np.testing.assert_array_equal(r["q_out"][..., :512], r["q"][..., :512])


def test_tensor_scale_reencodes():
    config = config_of("f8E4M3FN", scales="tensor", rows_dtype="f32")
    r = run(config, "half", 32)
    np.testing.assert_array_equal(r["q_out"], r["expected_q"])
    np.testing.assert_array_equal(r["after"].blocks, r["expected_cache"].blocks)
    assert not np.array_equal(r["after"].blocks, r["before"].blocks)



@pytest.mark.parametrize("style", ["interleaved", "half"])
def test_continuous_cache(style):
    config = kvcache.CacheConfig("f16", num_heads=2, head_size=32, num_layers=2,
                                 q_heads=2, kind="continuous", block_tokens=16)
    r = run(config, style, 16)
    np.testing.assert_array_equal(r["q_out"], r["expected_q"])
    np.testing.assert_array_equal(r["after"].blocks, r["expected_cache"].blocks)
    assert not np.array_equal(r["after"].blocks, r["before"].blocks)


# The GPU kernel (kvcache-to-emulated-gpu, the emulator's checks on) gives
# the CPU's bits.
GPU_CASES = [("f32", "interleaved", 64, False, False),
             ("bf16", "half", 16, True, False),
             ("f16", "interleaved", 32, False, True)]


@pytest.mark.parametrize("dtype,style,rotary_dims,positions,in_place", GPU_CASES)
def test_emulated_gpu(dtype, style, rotary_dims, positions, in_place):
    given = np.array([3, 0, 23, 11, 11, 2], np.int32) if positions else None
    r = run(config_of(dtype), style, rotary_dims, positions=given,
            in_place=in_place, target=kvcache.EmulatedGPUModule)
    np.testing.assert_array_equal(r["q_out"], r["expected_q"])
    np.testing.assert_array_equal(r["after"].blocks, r["expected_cache"].blocks)


def test_emulated_gpu_mla_and_tensor_scale():
    for config, style, rotary_dims in (
            (config_of("bf16", head_size=576, num_heads=1, q_heads=2, mla=True),
             "interleaved", 64),
            (config_of("f8E4M3FN", scales="tensor", rows_dtype="f32"), "half", 32)):
        r = run(config, style, rotary_dims, target=kvcache.EmulatedGPUModule)
        np.testing.assert_array_equal(r["q_out"], r["expected_q"])
        np.testing.assert_array_equal(r["after"].blocks,
                                      r["expected_cache"].blocks)


def test_emulated_gpu_position_past_the_table_asserts():
    config = config_of("f32", head_size=8, num_heads=1, q_heads=1)
    cache = testing.random_cache(config, [1], [1], np.random.default_rng(0))
    module = kvcache.EmulatedGPUModule(
        builders.rope_ragged(config, positions=True), checked=True)
    q = np.zeros((1, 1, 8), np.float32)
    table, _ = cos_sin_table(8, rows=4)
    with pytest.raises(kvcache.EmulatorError) as raised:
        module.rope_ragged(*cache.arguments(), 0, q, testing.row_offsets([1]),
                           table, q.copy(), np.array([4], np.int32))
    assert raised.value.kinds == ["assert"]
    assert ("rotary position is out of range (must be below max_positions "
            "(the rows of cos_sin))") in raised.value.reports[0]


def test_argument_checks_name_rope_operands():
    # positions with fewer rows than the batch: the argument checks stop
    # the call (capture mode) before anything is written.
    config = config_of("f32", head_size=8, num_heads=1, q_heads=1)
    cache = testing.random_cache(config, [1, 2], [1, 2], np.random.default_rng(0))
    module = kvcache.CPUModule(builders.rope_ragged(config, positions=True),
                               checked=True)
    q = np.ones((3, 1, 8), np.float32)
    table, _ = cos_sin_table(8, rows=8)
    before = cache.blocks.copy()
    with pytest.raises(kvcache.CheckError,
                       match=r"'positions' \(function argument \d+\) has 2 rows, "
                             r"but row_offsets\[2\] \(the end of the batch's "
                             r"rows\) is 3"):
        module.rope_ragged(*cache.arguments(), 0, q, testing.row_offsets([1, 2]),
                           table, q.copy(), np.array([0, 1], np.int32))
    np.testing.assert_array_equal(cache.blocks, before)


@pytest.mark.skipif(not kvcache._kvcache.HAS_TEST_DIALECTS,
                    reason="the extension was built without KVCACHE_INCLUDE_TESTS")
@pytest.mark.parametrize("target", ["cpu", "emulated_gpu"])
def test_csr_kind(target):
    """rope_ragged on the test dialect's CSR kind (test_kinds.py), reached
    through the type interfaces only: the same rows rotated."""
    from test_kinds import CACHE, CSRCache, D, H
    rows_type = f"memref<?x{H}x{D}xf32>"
    ir = f"""
func.func @rope(%cache: {CACHE}, %q: {rows_type}, %offsets: memref<?xi32>,
                %cos_sin: memref<?x{D}xf32>) {{
  kvcache.rope_ragged %q, %cache, %offsets, %cos_sin, %q
      {{rotary_dims = {D} : i64, style = "interleaved"}}
      : {rows_type}, {CACHE}, memref<?xi32>, memref<?x{D}xf32>, {rows_type}
  return
}}
"""
    module = (kvcache.CPUModule(ir, threads=1) if target == "cpu"
              else kvcache.EmulatedGPUModule(ir, checked=True))
    rng = np.random.default_rng(3)
    cache = CSRCache(rng)
    q = rng.uniform(-1, 1, (3, H, D)).astype(np.float32)
    table = rng.uniform(-1, 1, (8, D)).astype(np.float32)
    offsets = np.array([0, 2, 3], np.int32)
    expected_q, expected = q.copy(), cache.blocks.copy()
    for b, r in [(0, 0), (0, 1), (1, 2)]:
        s = cache.cache_lengths[b] + r - offsets[b]
        page, slot = cache.where(b, s)
        expected[page, 1, 1, slot] = reference.rotate(
            cache.blocks[page, 1, 1, slot], table[s], "interleaved")
        expected_q[r] = reference.rotate(q[r], table[s], "interleaved")
    module.rope(cache.arguments() + (1, 1), q, offsets, table)
    np.testing.assert_array_equal(q, expected_q)
    np.testing.assert_array_equal(cache.blocks, expected)
