"""The tensor-core attention kernels' online softmax (docs/Design.md, "The
online softmax of the tensor-core kernels"): a row's exponentials use a max
that the row takes only when its max grows past it by more than 8 (log2
domain); only then are its output and sum rescaled, behind a branch. Scores
made to grow along the keys (the branch taken every step or two, the
probabilities up to 2^8 in f16 and bf16 between), to fall (taken at the
first step only) and to jump at one late key, on the query-tile kernel (64
and 32 keys a step), the decode kernel (with a workspace: the partial
states keep the max they used; over an fp8 cache, whose kernel rescales
after the probabilities are packed) and MLA's 576/512 decode kernel, on
the emulated GPU against the reference."""

import json

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import CacheConfig, builders, dtypes, reference, testing  # noqa: E402
from kvcache.dtypes import MAX_FINITE, quantize, storage_dtype  # noqa: E402
from attention_checks import assert_close  # noqa: E402

LAYER = 1
SCALE = 0.3
# Element `dim` of each key: 0.5 t grows the scores by 0.5 x 0.3 x log2(e)
# = 0.22 a key (log2 domain), 7 in 32 keys, 14 in 64: past the threshold
# of 8 every step or two, the max in between up to 8 behind.
PROFILES = {
    "growing": lambda t: 0.5 * t,
    "falling": lambda t: -0.5 * t,
    "late-jump": lambda t: 80.0 if t == 230 else 0.0,
}


def shape_scores(cache, q, lengths, dim, profile, dtype):
    """Sets element `dim` of every query to 1 and of key t (every head) of
    each sequence to profile(t): the scores follow the profile along the
    keys, plus the random rest of the dot product."""
    view = cache.key_cache(LAYER)
    for b, length in enumerate(lengths):
        for t in range(length):
            view.row(b, t)[:, dim] = dtypes.from_float32(
                np.float32(profile(t)), dtype)
    q[..., dim] = dtypes.from_float32(np.float32(1), dtype)


def shape_quantized_scores(cache, q, lengths, dim, profile, dtype):
    """shape_scores over a cache with token_head scales: each key row
    requantized with the scale of its new amax."""
    view = cache.key_cache(LAYER)
    for b, length in enumerate(lengths):
        for t in range(length):
            values = view.values(b, t).copy()
            values[:, dim] = profile(t)
            scales = np.abs(values).max(axis=1) / np.float32(MAX_FINITE[dtype])
            view.scale_row(b, t)[:] = scales
            view.row(b, t)[:] = quantize(values, dtype, scales[:, None]).view(
                storage_dtype(dtype))
    q[..., dim] = dtypes.from_float32(np.float32(1), "f16")


def launch(module, args, monkeypatch, tmp_path):
    """Calls module.attention(*args); returns the kernels launched."""
    profile = tmp_path / "profile.jsonl"
    monkeypatch.setenv("KVCACHE_EMU_PROFILE", str(profile))
    module.attention(*args)
    monkeypatch.delenv("KVCACHE_EMU_PROFILE")
    return [json.loads(line)["kernel"]
            for line in profile.read_text().splitlines()]


# (dtype, head_size, group, cached, new, clauses, workspace, kernel):
# the query-tile kernel at 64 keys a step (f16, causal GQA 4 at head 128)
# and at 32 (bf16, noncausal), the decode kernel split over a workspace.
ATTENTION_CASES = [
    ("f16", 128, 4, [260], [40], {}, False, "attention_attention_tiles"),
    ("bf16", 128, 4, [260], [40], {"noncausal": True}, False,
     "attention_attention_tiles"),
    ("f16", 128, 4, [700, 77], [1, 1], {}, True,
     "attention_attention_ragged"),
]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("case", ATTENTION_CASES,
                         ids=lambda c: f"{c[0]}-{c[-1].split('_')[-1]}"
                                       f"{'-workspace' if c[6] else ''}"
                                       f"{'-noncausal' if c[5] else ''}")
def test_attention_against_the_reference(case, profile, monkeypatch,
                                         tmp_path):
    dtype, head_size, group, cached, new, clauses, workspace, kernel = case
    config = CacheConfig(dtype, num_heads=2, head_size=head_size,
                         page_size=16, num_layers=2, q_heads=2 * group)
    rng = np.random.default_rng(len(profile) + sum(cached))
    cache = testing.random_cache(config, cached, new, rng)
    offsets = testing.row_offsets(new)
    q = testing.random_rows(rng, sum(new), config.query_heads, head_size,
                            dtype)
    lengths = [c + n for c, n in zip(cached, new)]
    shape_scores(cache, q, lengths, 0, PROFILES[profile], dtype)
    out = np.zeros_like(q)
    lse = np.full((sum(new), config.query_heads), 7, np.float32)
    expected = reference.attention_ragged(
        q, cache.key_cache(LAYER), cache.value_cache(LAYER), offsets,
        np.zeros_like(q), SCALE, lse=np.zeros_like(lse), **clauses)
    module = kvcache.EmulatedGPUModule(builders.attention_ragged(
        config, "attention", scale=SCALE, workspace=workspace, lse=True,
        **clauses))
    extra = ((np.zeros(sum(new) * config.query_heads * (head_size + 2) * 4,
                       np.float32),) if workspace else ())
    kernels = launch(module, (*cache.arguments(), LAYER, q, offsets, out,
                              *extra, lse), monkeypatch, tmp_path)
    assert kernels[0] == kernel
    assert ("attention_attention_merge" in kernels) == workspace
    assert_close((out, lse), expected, dtype)


@pytest.mark.parametrize("profile", PROFILES)
def test_mla_latent_rows_against_the_reference(profile, monkeypatch,
                                               tmp_path):
    # DeepSeek's 576 / 512 at 16 heads; the profile in a rope element (576 -
    # 1), which the values (the first 512) do not hold.
    config = CacheConfig("bf16", num_heads=1, head_size=576, page_size=64,
                         num_layers=2, q_heads=16, mla=True)
    rng = np.random.default_rng(len(profile))
    cached, new = [300], [1]
    cache = testing.random_cache(config, cached, new, rng)
    offsets = testing.row_offsets(new)
    q = testing.random_rows(rng, 1, 16, 576, "bf16")
    shape_scores(cache, q, [301], 575, PROFILES[profile], "bf16")
    out = np.zeros((1, 16, 512), np.uint16)
    lse = np.full((1, 16), 7, np.float32)
    expected = reference.mla_attention_ragged(
        q, cache.key_cache(LAYER), offsets, np.zeros_like(out), SCALE, 512,
        lse=np.zeros_like(lse))
    module = kvcache.EmulatedGPUModule(builders.mla_attention_ragged(
        config, 512, "attention", scale=SCALE, lse=True))
    kernels = launch(module, (*cache.arguments(), LAYER, q, offsets, out, lse),
                     monkeypatch, tmp_path)
    assert kernels == ["attention_mla_attention_ragged"]
    assert_close((out, lse), expected, "bf16")


@pytest.mark.parametrize("profile", PROFILES)
def test_quantized_decode_against_the_reference(profile, monkeypatch,
                                                tmp_path):
    # fp8 K/V with token_head scales, f16 q: the decode kernel dequantizes
    # in the loop and rescales after the probabilities are packed.
    config = CacheConfig("f8E4M3FN", num_heads=2, head_size=64, page_size=16,
                         num_layers=2, q_heads=8, scales="token_head",
                         rows_dtype="f16")
    rng = np.random.default_rng(len(profile))
    cached, new = [700, 77], [1, 1]
    cache = testing.random_cache(config, cached, new, rng)
    offsets = testing.row_offsets(new)
    q = testing.random_rows(rng, 2, 8, 64, "f16")
    shape_quantized_scores(cache, q, [701, 78], 0, PROFILES[profile],
                           "f8E4M3FN")
    out = np.zeros_like(q)
    lse = np.full((2, 8), 7, np.float32)
    expected = reference.attention_ragged(
        q, cache.key_cache(LAYER), cache.value_cache(LAYER), offsets,
        np.zeros_like(q), SCALE, lse=np.zeros_like(lse))
    module = kvcache.EmulatedGPUModule(builders.attention_ragged(
        config, "attention", scale=SCALE, workspace=True, lse=True))
    assert "__kvemu_mma" in str(module.lowered)   # the tensor-core kernel
    workspace = np.zeros(2 * 8 * 66 * 4, np.float32)
    kernels = launch(module, (*cache.arguments(), LAYER, q, offsets, out,
                              workspace, lse), monkeypatch, tmp_path)
    assert kernels == ["attention_attention_ragged",
                       "attention_attention_merge"]
    # The kernel rounds the dequantized K/V to f16 before its mma (as
    # test_attention_variants' quantized cases): lse within 1e-3.
    assert_close((out, lse), expected, "f16", lse_tolerance=1e-3)
