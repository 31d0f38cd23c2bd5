"""attention_ragged's optional clauses and merge_states (docs/Contract.md
3.3) compiled for the CPU, against kvcache.reference: windows smaller than,
equal to and larger than the context, chunk boundaries inside and at page
edges, soft caps with large scores, ALiBi, dominant sinks, lse, noncausal
rows, every clause together, GQA 1/4/8, pages of 1 and 16, decode and
prefill rows; merge_states of a prefix and a suffix equal to attention over
both. window and chunk also on the emulated GPU (both attention kernels,
split or not), where keys outside the window are never read."""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import CacheConfig, builders, reference  # noqa: E402

HEAD_SIZE = 16
TOLERANCE = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}
LSE_TOLERANCE = 1e-4


def make_case(rng, dtype, page_size, q_heads, lengths, new, kind="paged"):
    config = CacheConfig(dtype, num_heads=2, head_size=HEAD_SIZE,
                         page_size=page_size if kind == "paged" else None,
                         num_layers=2, q_heads=q_heads, kind=kind)
    cache = reference.random_cache(config, lengths, new, rng)
    q = reference.random_rows(rng, sum(new), q_heads, HEAD_SIZE, dtype)
    return config, cache, q, reference.row_offsets(new)


def run(config, cache, q, offsets, clauses, rng, scale=0.5):
    """(out, lse) of the compiled function and of the reference."""
    q_heads = config.query_heads
    operands = {}
    if clauses.get("sinks"):
        operands["sinks"] = rng.uniform(-2, 2, q_heads).astype(np.float32)
    if clauses.get("alibi"):
        operands["alibi"] = rng.uniform(0, 0.5, q_heads).astype(np.float32)
    attributes = {k: v for k, v in clauses.items()
                  if k in ("window", "chunk", "noncausal", "softcap")}
    lse = np.full((q.shape[0], q_heads), 7, np.float32)
    ir = builders.attention_ragged(
        config, "attention", scale=scale, lse=True,
        sinks="sinks" in operands, alibi="alibi" in operands, **attributes)
    out = np.full_like(q, 3)
    expected_out, expected_lse = reference.attention_ragged(
        q, cache.key_cache(1), cache.value_cache(1), offsets, out, scale,
        lse=lse, **attributes, **operands)
    kvcache.CPUModule(ir).attention(*cache.arguments(), 1, q, offsets, out,
                                    *operands.values(), lse)
    return (out, lse), (expected_out, expected_lse)


def assert_close(got, expected, dtype):
    (out, lse), (expected_out, expected_lse) = got, expected
    error = np.abs(reference.to_float32(out, dtype) -
                   reference.to_float32(expected_out, dtype)).max()
    assert error <= TOLERANCE[dtype], error
    finite = np.isfinite(expected_lse)
    np.testing.assert_array_equal(np.isfinite(lse), finite)
    np.testing.assert_array_equal(lse[~finite], expected_lse[~finite])
    assert np.abs(lse[finite] - expected_lse[finite]).max(initial=0) <= LSE_TOLERANCE


CLAUSES = [
    {},
    {"window": 1}, {"window": 5}, {"window": 16}, {"window": 40}, {"window": 1000},
    {"chunk": 1}, {"chunk": 7}, {"chunk": 16}, {"chunk": 32},
    {"softcap": 0.5}, {"softcap": 30.0},
    {"alibi": True}, {"sinks": True},
    {"noncausal": True}, {"noncausal": True, "sinks": True, "alibi": True},
    {"window": 9, "softcap": 2.0, "alibi": True, "sinks": True},
    {"chunk": 16, "softcap": 1.0, "alibi": True, "sinks": True},
]


@pytest.mark.parametrize("clauses", CLAUSES, ids=lambda c: "-".join(c) or "plain")
@pytest.mark.parametrize("page_size, q_heads", [(16, 2), (1, 8), (16, 16)])
def test_clauses_against_the_reference(clauses, page_size, q_heads):
    # Sequences of 0, 16 (one page), 37 cached tokens; decode and prefill
    # rows (a prefill of 20 crosses page and chunk edges).
    rng = np.random.default_rng(len(clauses) * 31 + page_size + q_heads)
    case = make_case(rng, "f32", page_size, q_heads, [0, 16, 37], [20, 1, 3])
    assert_close(*run(*case, clauses, rng), "f32")


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_all_clauses_in_f16_and_bf16(dtype):
    rng = np.random.default_rng(5)
    case = make_case(rng, dtype, 16, 8, [3, 50], [4, 1])
    assert_close(*run(*case, {"window": 12, "softcap": 3.0, "alibi": True,
                              "sinks": True}, rng), dtype)


def test_large_scores_are_soft_capped():
    # Scores up to ~1e4 before the cap: tanh saturates, nothing overflows.
    rng = np.random.default_rng(6)
    config, cache, q, offsets = make_case(rng, "f32", 16, 4, [20], [2])
    q = q * np.float32(100)
    got, expected = run(config, cache, q, offsets, {"softcap": 5.0}, rng, scale=100.0)
    assert np.all(np.isfinite(got[0]))
    assert_close(got, expected, "f32")


def test_dominant_sinks():
    # A sink of 50 against scores near 0: out ~ 0, lse ~ 50.
    rng = np.random.default_rng(7)
    config, cache, q, offsets = make_case(rng, "f32", 16, 4, [10], [1])
    sinks = np.full(4, 50, np.float32)
    ir = builders.attention_ragged(config, "attention", scale=0.5, sinks=True, lse=True)
    out, lse = np.zeros_like(q), np.zeros((1, 4), np.float32)
    kvcache.CPUModule(ir).attention(*cache.arguments(), 1, q, offsets, out, sinks, lse)
    assert np.abs(out).max() < 1e-18
    np.testing.assert_allclose(lse, 50, atol=1e-5)


def test_noncausal_rows_without_cached_tokens_are_zero():
    # noncausal: a sequence with nothing cached has no keys: out 0, lse -inf.
    rng = np.random.default_rng(8)
    config, cache, q, offsets = make_case(rng, "f32", 16, 2, [0, 5], [2, 1])
    got, expected = run(config, cache, q, offsets, {"noncausal": True}, rng)
    assert np.all(got[0][:2] == 0) and np.all(got[1][:2] == -np.inf)
    assert_close(got, expected, "f32")


def test_continuous_cache_with_a_window():
    rng = np.random.default_rng(9)
    case = make_case(rng, "f32", None, 4, [30, 4], [1, 2], kind="continuous")
    assert_close(*run(*case, {"window": 8, "alibi": True}, rng), "f32")


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_cascade_merge_equals_attention_over_prefix_and_suffix(dtype):
    # A shared prefix of 40 tokens stored once as sequence 0 of its own
    # cache, attended noncausally by every row; each sequence's own tokens
    # attended causally in another cache; merge_states in place gives
    # attention over prefix + own tokens.
    rng = np.random.default_rng(10)
    q_heads, own, new = 4, [3, 0, 7], [1, 2, 1]
    prefix_config, prefix, _, _ = make_case(rng, dtype, 16, q_heads, [40], [0])
    config, suffix, q, offsets = make_case(rng, dtype, 16, q_heads, own, new)
    rows = q.shape[0]
    # All rows in the prefix's one sequence.
    prefix_offsets = np.array([0, rows], np.int32)
    prefix_out, prefix_lse = np.zeros_like(q), np.zeros((rows, q_heads), np.float32)
    kvcache.CPUModule(builders.attention_ragged(
        prefix_config, "attention", scale=0.5, noncausal=True, lse=True)).attention(
            *prefix.arguments(), 1, q, prefix_offsets, prefix_out, prefix_lse)
    own_out, own_lse = np.zeros_like(q), np.zeros((rows, q_heads), np.float32)
    kvcache.CPUModule(builders.attention_ragged(
        config, "attention", scale=0.5, lse=True)).attention(
            *suffix.arguments(), 1, q, offsets, own_out, own_lse)
    merge = kvcache.CPUModule(builders.merge_states(config))
    expected_out, expected_lse = reference.merge_states(
        prefix_out, prefix_lse, own_out, own_lse, dtype)
    merge.merge_states(prefix_out, prefix_lse, own_out, own_lse, prefix_out, prefix_lse)
    np.testing.assert_allclose(reference.to_float32(prefix_out, dtype),
                               reference.to_float32(expected_out, dtype),
                               atol=TOLERANCE[dtype])
    np.testing.assert_allclose(prefix_lse, expected_lse, atol=LSE_TOLERANCE)
    # ... which is attention over the prefix followed by the own tokens.
    whole = prefix_config.__class__(**{**prefix_config.__dict__, "num_layers": 2})
    keys = [np.concatenate([prefix.key_cache(1).tokens(0, 40),
                            suffix.key_cache(1).tokens(b, own[b] + new[b])])
            for b in range(3)]
    values = [np.concatenate([prefix.value_cache(1).tokens(0, 40),
                              suffix.value_cache(1).tokens(b, own[b] + new[b])])
              for b in range(3)]
    q32 = reference.to_float32(q, dtype).astype(np.float64)
    kv_head = np.arange(q_heads) // (q_heads // 2)
    for b in range(3):
        for r in range(offsets[b], offsets[b + 1]):
            p = 40 + own[b] + r - offsets[b]
            scores = np.einsum("hd,jhd->hj", q32[r], keys[b][:p + 1, kv_head]) * 0.5
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            plain = np.einsum("hj,jhd->hd", weights, values[b][:p + 1, kv_head])
            np.testing.assert_allclose(reference.to_float32(prefix_out[r], dtype), plain,
                                       atol=2 * TOLERANCE[dtype])
    del whole


def test_merge_states_of_empty_partials():
    # Both -inf: out 0 and lse -inf; one -inf: the other state exactly.
    config = CacheConfig("f32", 2, HEAD_SIZE, 16, q_heads=2)
    a = np.full((2, 2, HEAD_SIZE), 5, np.float32)
    b = np.arange(2 * 2 * HEAD_SIZE, dtype=np.float32).reshape(2, 2, HEAD_SIZE)
    lse_a = np.array([[-np.inf, -np.inf], [-np.inf, 1.5]], np.float32)
    lse_b = np.array([[-np.inf, 2.0], [-np.inf, -np.inf]], np.float32)
    out, lse = np.zeros_like(a), np.zeros_like(lse_a)
    kvcache.CPUModule(builders.merge_states(config)).merge_states(a, lse_a, b, lse_b, out, lse)
    assert np.all(out[0, 0] == 0) and np.all(out[1, 0] == 0)
    np.testing.assert_array_equal(out[0, 1], b[0, 1])
    np.testing.assert_array_equal(out[1, 1], a[1, 1])
    np.testing.assert_array_equal(lse, [[-np.inf, 2.0], [-np.inf, 1.5]])


# window and chunk on the emulated GPU: the CUDA-core kernel (f32, head 16)
# and the tensor-core kernel (f16, head 64), with and without a workspace
# (a 700-key context splits in 2), decode and prefill rows.
GPU_CLAUSES = [{"window": 1}, {"window": 37}, {"window": 600}, {"chunk": 16},
               {"chunk": 100}]


@pytest.mark.parametrize("workspace", [False, True], ids=["one-split", "workspace"])
@pytest.mark.parametrize("dtype, head_size", [("f32", 16), ("f16", 64)],
                         ids=["cuda-cores", "tensor-cores"])
@pytest.mark.parametrize("clauses", GPU_CLAUSES, ids=lambda c: f"{next(iter(c))}-{next(iter(c.values()))}")
def test_window_and_chunk_on_the_emulated_gpu(clauses, dtype, head_size, workspace):
    config = CacheConfig(dtype, num_heads=2, head_size=head_size, page_size=16,
                         num_layers=2, q_heads=8)
    module = kvcache.EmulatedGPUModule(builders.attention_ragged(
        config, "attention", scale=0.3, workspace=workspace, **clauses))
    assert ("__kvemu_mma" in str(module.lowered)) == (dtype == "f16")
    rng = np.random.default_rng(len(str(clauses)) + head_size)
    new = [1, 3, 20]
    cache = reference.random_cache(config, [700, 20, 0], new, rng)
    offsets = reference.row_offsets(new)
    q = reference.random_rows(rng, sum(new), 8, head_size, dtype)
    out = np.zeros_like(q)
    expected = reference.attention_ragged(q, cache.key_cache(1), cache.value_cache(1),
                                          offsets, out, 0.3, **clauses)
    extra = (np.zeros(sum(new) * 8 * (head_size + 2) * 2, np.float32),) if workspace else ()
    module.attention(*cache.arguments(), 1, q, offsets, out, *extra)
    error = np.abs(reference.to_float32(out, dtype) -
                   reference.to_float32(expected, dtype)).max()
    assert error <= TOLERANCE[dtype]


def test_keys_outside_the_window_are_never_read(tmp_path, monkeypatch):
    # A decode row over 4096 keys with a window of 256: the kernel copies
    # 256 keys' K and V, not 4096 (the emulator's profile, cp.async bytes).
    config = CacheConfig("f16", num_heads=2, head_size=64, page_size=16,
                         num_layers=1, q_heads=8)
    rng = np.random.default_rng(12)
    cache = reference.random_cache(config, [4095], [1], rng)
    q = reference.random_rows(rng, 1, 8, 64, "f16")
    copied = {}
    for name, clauses in (("plain", {}), ("window", {"window": 256})):
        module = kvcache.EmulatedGPUModule(builders.attention_ragged(
            config, "attention", **clauses))
        profile = tmp_path / f"{name}.jsonl"
        monkeypatch.setenv("KVCACHE_EMU_PROFILE", str(profile))
        module.attention(*cache.arguments(), 0, q, reference.row_offsets([1]),
                         np.zeros_like(q))
        monkeypatch.delenv("KVCACHE_EMU_PROFILE")
        import json
        copied[name] = sum(json.loads(line)["cp_async_bytes"]
                           for line in profile.read_text().splitlines())
    row_bytes = 2 * 2 * 64 * 2                       # K and V, 2 heads, f16
    assert copied["plain"] == 4096 * row_bytes
    assert copied["window"] == 256 * row_bytes        # keys 3840 .. 4095
