"""kvcache.mla_attention_ragged (absorbed MLA decode, docs/Contract.md 4.7)
compiled for the CPU in checked mode, against the numpy reference
(reference.mla_attention_ragged: attention with the latent rows as keys and
their first v_head_size elements as values): 16, 64 and 128 query heads
over one latent head, pages of 1, 4 and 64, 1-4 query rows per sequence
(causal among them), contexts from 0 to 4000 tokens, the CPU kernels (the
row-tile kernel; the per-row passes of the decode kernel at 8 and 160
heads), clauses, and
an fp8 latent cache with token_head scales. And the GPU kernel on the
emulator (the CUDA-core kernel, which reads each latent row once for the
scores and the values): several rows per sequence, output slices that
straddle v_head_size, clauses, and long contexts split over the workspace
(the merge kernel checked to run); at head sizes of 64, 128 and 256 the
tensor-core kernels, which read p.V's fragments from the K tiles; at 576
the tensor-core decode kernel at 32, 64 and 128 heads (blocks of up to 64
heads: one block per row at 32 and 64 heads, two at 128; four blocks of 32
at 128 heads with ALiBi and sinks), in three thread orders."""

import functools
import json

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import CacheConfig, builders, reference, testing  # noqa: E402
from attention_checks import assert_close, clause_operands  # noqa: E402


def run(config, v_head_size, lengths, new, clauses, seed, scale=0.125,
        target=kvcache.CPUModule, workspace=0, with_lse=True):
    """(out, lse) of the compiled function (on `target`; with a workspace of
    `workspace` floats; without `with_lse`, a function without lse, whose lse
    is the reference's) and of the reference over a random latent cache with
    `lengths` cached and `new` rows per sequence."""
    rng = np.random.default_rng(seed)
    cache = testing.random_cache(config, lengths, new, rng)
    offsets = testing.row_offsets(new)
    rows, q_heads = sum(new), config.query_heads
    q = testing.random_rows(rng, rows, q_heads, config.head_size,
                            config.rows_element)
    operands, attributes = clause_operands(rng, clauses, q_heads)
    out = testing.random_rows(rng, rows, q_heads, v_head_size,
                              config.rows_element)
    lse = np.full((rows, q_heads), 7, np.float32)
    expected = reference.mla_attention_ragged(
        q, cache.key_cache(1), offsets, out, scale, v_head_size, lse=lse,
        **attributes, **operands)
    ir = builders.mla_attention_ragged(
        config, v_head_size, "attention", scale=scale, lse=with_lse,
        workspace=workspace > 0, sinks="sinks" in operands,
        alibi="alibi" in operands, **attributes)
    scratch = [np.zeros(workspace, np.float32)] if workspace else []
    target(ir, checked=True).attention(
        *cache.arguments(), 1, q, offsets, out, *scratch, *operands.values(),
        *([lse] if with_lse else []))
    return (out, lse if with_lse else expected[1]), expected


def latent(dtype, q_heads, page_size, head_size=48, **kwargs):
    return CacheConfig(dtype, num_heads=1, head_size=head_size,
                       page_size=page_size, num_layers=2, q_heads=q_heads,
                       mla=True, **kwargs)


# (dtype, q heads, page size, v_head_size, clauses): one module each.
CASES = [
    ("f32", 16, 4, 32, {}),
    ("f32", 64, 1, 16, {"softcap": 2.0, "sinks": True}),
    ("bf16", 128, 64, 32, {"window": 7, "alibi": True}),
    ("f16", 16, 4, 48, {"noncausal": True, "sinks": True}),
    # Fewer than 16 lanes, or more than 128 heads: the per-row passes of
    # the decode kernel (8 heads each), its V chunks the latent rows' start.
    ("f32", 8, 4, 32, {"window": 7, "sinks": True}),
    ("bf16", 160, 16, 16, {}),
]


@pytest.mark.parametrize("dtype, q_heads, page_size, v_head_size, clauses",
                         CASES, ids=lambda c: str(c))
def test_against_the_reference(dtype, q_heads, page_size, v_head_size,
                               clauses):
    # Sequences of 0, 9 and 37 cached tokens; 3, 1, 4 and 2 rows (decode
    # and several query tokens: multi-token prediction).
    got, expected = run(latent(dtype, q_heads, page_size), v_head_size,
                        [0, 9, 37, 5], [3, 1, 4, 2], clauses, seed=q_heads)
    assert_close(got, expected, dtype)


def test_deepseek_shape_over_a_long_context():
    # DeepSeek's latent rows (576 = 512 + 64 rope elements), 16 heads, a
    # context of 4000 tokens next to a short one.
    config = latent("bf16", 16, 64, head_size=576)
    got, expected = run(config, 512, [4000, 1], [1, 2], {}, seed=3,
                        scale=576 ** -0.5)
    assert_close(got, expected, "bf16")


def test_fp8_latent_cache_with_token_head_scales():
    config = latent("f8E4M3FN", 16, 4, scales="token_head", rows_dtype="bf16")
    got, expected = run(config, 32, [30, 2], [2, 1], {}, seed=4)
    assert_close(got, expected, "bf16")


def test_builder_refuses_the_wrong_cache():
    with pytest.raises(ValueError, match="mla_attention_ragged takes"):
        builders.mla_attention_ragged(CacheConfig("f16", 2, 16, page_size=4),
                                      8)
    with pytest.raises(ValueError, match="attention_ragged does not take"):
        builders.attention_ragged(latent("f16", 16, 4))


# (dtype, q heads, page size, head_size, v_head_size, clauses, lengths,
# rows): one module each. Head 48 has lanes of 3 elements: v_head_size 40
# ends inside one.
# Head sizes of 64, 128, 256 take the tensor-core kernels (decode: the
# query heads as M rows; several rows of a sequence: query tiles), p.V read
# from the K tiles; DeepSeek's 576 / 512 the decode kernel with q's dims
# split over the warps of each 16-head tile, at 32 heads in one block per
# row, at 128 with ALiBi and sinks in four (blocks of 32 heads: those
# clauses leave a block of 64 too few registers; several rows of a
# sequence).
GPU_CASES = [
    ("f32", 16, 4, 48, 40, {}, [0, 9, 37], [3, 1, 4]),
    ("bf16", 128, 1, 64, 48, {"sinks": True, "window": 5}, [5, 40], [1, 2]),
    ("f16", 64, 64, 64, 32, {"alibi": True, "softcap": 3.0}, [70, 2], [4, 1]),
    ("bf16", 16, 64, 128, 64, {}, [0, 9, 300], [3, 1, 2]),
    ("f16", 128, 16, 64, 64, {"sinks": True}, [5, 40], [1, 1]),
    ("bf16", 32, 64, 576, 512, {"alibi": True, "softcap": 3.0}, [0, 9, 300],
     [1, 1, 1]),
    ("bf16", 128, 64, 576, 512, {"alibi": True, "sinks": True, "window": 90},
     [40, 200], [2, 1]),
]


@pytest.mark.parametrize("dtype, q_heads, page_size, head_size, v_head_size, "
                         "clauses, lengths, new", GPU_CASES,
                         ids=lambda c: str(c))
def test_emulated_gpu_against_the_reference(dtype, q_heads, page_size,
                                            head_size, v_head_size, clauses,
                                            lengths, new):
    config = latent(dtype, q_heads, page_size, head_size=head_size)
    got, expected = run(config, v_head_size, lengths, new, clauses,
                        seed=q_heads, target=kvcache.EmulatedGPUModule)
    assert_close(got, expected, dtype)


def test_emulated_gpu_splits_a_long_context(tmp_path, monkeypatch):
    # DeepSeek's rows at 64 heads (one block of 64 per row), a context of
    # 600 split over the workspace: the attention kernel writes partial
    # states, the merge kernel combines them (both in the launch profile).
    profile = tmp_path / "profile.jsonl"
    monkeypatch.setenv("KVCACHE_EMU_PROFILE", str(profile))
    config = latent("bf16", 64, 64, head_size=576)
    got, expected = run(config, 512, [600, 3], [1, 2], {}, seed=5,
                        scale=576 ** -0.5, target=kvcache.EmulatedGPUModule,
                        workspace=1 << 20)
    assert_close(got, expected, "bf16")
    launches = [json.loads(line) for line in profile.read_text().splitlines()]
    names = [launch["kernel"] for launch in launches]
    assert any("mla_attention_ragged" in name for name in names), names
    assert any("attention_merge" in name for name in names), names
    grid = next(launch["grid"] for launch in launches
                if "mla_attention_ragged" in launch["kernel"])
    assert grid[1:] == [1, 2], grid


# DeepSeek's latent rows above 32 heads: blocks of 64 heads (four 16-head
# tiles of 2 warps each, 8 warps), one per row at 64 heads, two at 128,
# each reading the latent rows once; on sm_90 q's fragments from 8-byte
# loads traded within each quad, on sm_80 from 4-byte loads. (q heads,
# page size, cached, new rows, workspace, thread order, chip): contexts of
# 1 to ~300 tokens, 1-4 query rows per sequence; one context past
# keys-per-split (512), so that the workspace takes 2 splits and the merge
# kernel runs. Without lse on sm_80, where lse takes blocks of 32 heads.
WIDE_CASES = [
    (64, 64, [0, 300, 37], [1, 4, 2], False, "forward", "sm_90"),
    (64, 1, [120, 5], [2, 1], True, "reverse", "sm_90"),
    (128, 64, [9, 250], [3, 1], False, "random:7", "sm_90"),
    (128, 1, [530, 0], [1, 4], True, "random:11", "sm_90"),
    (64, 64, [200, 0], [2, 3], False, "reverse", "sm_80"),
]


@pytest.mark.parametrize("q_heads, page_size, lengths, new, workspace, order, "
                         "chip", WIDE_CASES, ids=lambda c: str(c))
def test_emulated_gpu_blocks_of_64_heads(q_heads, page_size, lengths, new,
                                         workspace, order, chip, tmp_path,
                                         monkeypatch):
    profile = tmp_path / "profile.jsonl"
    monkeypatch.setenv("KVCACHE_EMU_PROFILE", str(profile))
    monkeypatch.setenv("KVCACHE_EMU_ORDER", order)
    config = latent("bf16", q_heads, page_size, head_size=576)
    got, expected = run(config, 512, lengths, new, {}, seed=q_heads + page_size,
                        scale=576 ** -0.5,
                        target=functools.partial(kvcache.EmulatedGPUModule,
                                                 chip=chip),
                        workspace=(1 << 21) if workspace else 0,
                        with_lse=chip != "sm_80")
    assert_close(got, expected, "bf16")
    launches = [json.loads(line) for line in profile.read_text().splitlines()]
    main = next(launch for launch in launches
                if "mla_attention_ragged" in launch["kernel"])
    blocks = q_heads // 64
    splits = 2 if max(lengths) > 512 and workspace else 1
    assert main["block"] == [256, 1, 1], main
    assert main["grid"][1:] == [blocks, splits], main
    assert any("attention_merge" in launch["kernel"]
               for launch in launches) == (splits > 1)
    # Each block copies the latent rows its row's split sees once (whole
    # steps of 16 keys, zero-filled past the end): row i of a sequence with
    # c cached tokens sees c + i + 1 keys.
    steps = sum(splits * -(-(-(-(c + i + 1) // splits)) // 16)
                for c, n in zip(lengths, new) for i in range(n))
    assert main["cp_async_bytes"] <= blocks * steps * 16 * 576 * 2, main


def test_argument_checks_name_the_short_out():
    # The argument checks of attention_ragged serve the MLA op: an out with
    # fewer rows than row_offsets end at raises before anything is written.
    config = latent("f32", 16, 4)
    rng = np.random.default_rng(6)
    cache = testing.random_cache(config, [3, 4], [1, 2], rng)
    q = testing.random_rows(rng, 3, 16, 48, "f32")
    out = np.full((2, 16, 32), 5, np.float32)
    module = kvcache.CPUModule(builders.mla_attention_ragged(
        config, 32, "attention"))
    with pytest.raises(kvcache.CheckError, match="'out'.* has 2 rows"):
        module.attention(*cache.arguments(), 1, q, testing.row_offsets([1, 2]),
                         out)
    assert np.all(out == 5)
