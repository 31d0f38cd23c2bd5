"""attention_ragged's optional clauses and merge_states (docs/Contract.md
3.3) compiled for the CPU, against kvcache.reference: windows smaller than,
equal to and larger than the context, chunk boundaries inside and at page
edges, soft caps with large scores, ALiBi, dominant sinks, lse, noncausal
rows, every clause together, GQA 1/4/8, pages of 1 and 16, decode and
prefill rows; merge_states of a prefix and a suffix equal to attention over
both. Every clause and merge_states also on the emulated GPU (both
attention kernels, split or not), where keys outside the window are never
read."""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import (CacheConfig, builders, dtypes, reference,  # noqa: E402
                     testing)
from attention_checks import (LSE_TOLERANCE, TOLERANCE,  # noqa: E402,F401
                              assert_close, clause_operands)

HEAD_SIZE = 16


def make_case(rng, dtype, page_size, q_heads, lengths, new, kind="paged"):
    config = CacheConfig(dtype, num_heads=2, head_size=HEAD_SIZE,
                         page_size=page_size if kind == "paged" else None,
                         num_layers=2, q_heads=q_heads, kind=kind)
    cache = testing.random_cache(config, lengths, new, rng)
    q = testing.random_rows(rng, sum(new), q_heads, HEAD_SIZE, dtype)
    return config, cache, q, testing.row_offsets(new)


def run(config, cache, q, offsets, clauses, rng, scale=0.5):
    """(out, lse) of the compiled function and of the reference."""
    q_heads = config.query_heads
    operands, attributes = clause_operands(rng, clauses, q_heads)
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


@pytest.mark.parametrize("backend", ["cpu", "emulated-gpu"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_cascade_merge_equals_attention_over_prefix_and_suffix(dtype, backend):
    # A shared prefix of 40 tokens stored once as sequence 0 of its own
    # cache, attended noncausally by every row; each sequence's own tokens
    # attended causally in another cache; merge_states in place gives
    # attention over prefix + own tokens.
    rng = np.random.default_rng(10)
    Module = kvcache.CPUModule if backend == "cpu" else kvcache.EmulatedGPUModule
    q_heads, own, new = 4, [3, 0, 7], [1, 2, 1]
    prefix_config, prefix, _, _ = make_case(rng, dtype, 16, q_heads, [40], [0])
    config, suffix, q, offsets = make_case(rng, dtype, 16, q_heads, own, new)
    rows = q.shape[0]
    # All rows in the prefix's one sequence (its max_seq_length says so:
    # the argument checks hold a call to it).
    prefix_offsets = np.array([0, rows], np.int32)
    prefix.max_seq_length = rows
    prefix_out, prefix_lse = np.zeros_like(q), np.zeros((rows, q_heads), np.float32)
    Module(builders.attention_ragged(
        prefix_config, "attention", scale=0.5, noncausal=True, lse=True)).attention(
            *prefix.arguments(), 1, q, prefix_offsets, prefix_out, prefix_lse)
    own_out, own_lse = np.zeros_like(q), np.zeros((rows, q_heads), np.float32)
    Module(builders.attention_ragged(
        config, "attention", scale=0.5, lse=True)).attention(
            *suffix.arguments(), 1, q, offsets, own_out, own_lse)
    merge = Module(builders.merge_states(config))
    expected_out, expected_lse = reference.merge_states(
        prefix_out, prefix_lse, own_out, own_lse, dtype)
    merge.merge_states(prefix_out, prefix_lse, own_out, own_lse, prefix_out, prefix_lse)
    np.testing.assert_allclose(dtypes.to_float32(prefix_out, dtype),
                               dtypes.to_float32(expected_out, dtype),
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
    q32 = dtypes.to_float32(q, dtype).astype(np.float64)
    kv_head = np.arange(q_heads) // (q_heads // 2)
    for b in range(3):
        for r in range(offsets[b], offsets[b + 1]):
            p = 40 + own[b] + r - offsets[b]
            scores = np.einsum("hd,jhd->hj", q32[r], keys[b][:p + 1, kv_head]) * 0.5
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
            plain = np.einsum("hj,jhd->hd", weights, values[b][:p + 1, kv_head])
            np.testing.assert_allclose(dtypes.to_float32(prefix_out[r], dtype), plain,
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


# Every clause on the emulated GPU: the CUDA-core kernel (f32, head 16) and
# the tensor-core kernel (f16, head 64), with and without a workspace (a
# 700-key context splits in 2: the sink joins once, in the merge kernel),
# decode and prefill rows, lse always written; a sequence with nothing
# cached gives noncausal rows without keys.
GPU_CLAUSES = [{"window": 1}, {"window": 37}, {"window": 600}, {"chunk": 16},
               {"chunk": 100}, {"softcap": 0.5}, {"softcap": 30.0},
               {"alibi": True}, {"sinks": True}, {"noncausal": True},
               {"noncausal": True, "sinks": True, "alibi": True},
               {"window": 9, "softcap": 2.0, "alibi": True, "sinks": True},
               {"chunk": 16, "softcap": 1.0, "alibi": True, "sinks": True}]


def clause_id(clauses):
    return "-".join(f"{k}{'' if v is True else v}" for k, v in clauses.items())


@pytest.mark.parametrize("workspace", [False, True], ids=["one-split", "workspace"])
@pytest.mark.parametrize("dtype, head_size", [("f32", 16), ("f16", 64)],
                         ids=["cuda-cores", "tensor-cores"])
@pytest.mark.parametrize("clauses", GPU_CLAUSES, ids=clause_id)
def test_clauses_on_the_emulated_gpu(clauses, dtype, head_size, workspace):
    q_heads = 8
    config = CacheConfig(dtype, num_heads=2, head_size=head_size, page_size=16,
                         num_layers=2, q_heads=q_heads)
    attributes = {k: v for k, v in clauses.items()
                  if k in ("window", "chunk", "noncausal", "softcap")}
    module = kvcache.EmulatedGPUModule(builders.attention_ragged(
        config, "attention", scale=0.3, workspace=workspace, lse=True,
        sinks="sinks" in clauses, alibi="alibi" in clauses, **attributes))
    assert ("__kvemu_mma" in str(module.lowered)) == (dtype == "f16")
    rng = np.random.default_rng(len(str(clauses)) + head_size)
    operands = {}
    if clauses.get("sinks"):
        operands["sinks"] = rng.uniform(-2, 2, q_heads).astype(np.float32)
    if clauses.get("alibi"):
        operands["alibi"] = rng.uniform(0, 0.5, q_heads).astype(np.float32)
    new = [1, 3, 20]
    cache = testing.random_cache(config, [700, 20, 0], new, rng)
    offsets = testing.row_offsets(new)
    q = testing.random_rows(rng, sum(new), q_heads, head_size, dtype)
    out = np.zeros_like(q)
    lse = np.full((sum(new), q_heads), 7, np.float32)
    expected = reference.attention_ragged(
        q, cache.key_cache(1), cache.value_cache(1), offsets, out, 0.3,
        lse=lse, **attributes, **operands)
    extra = ((np.zeros(sum(new) * q_heads * (head_size + 2) * 2, np.float32),)
             if workspace else ())
    module.attention(*cache.arguments(), 1, q, offsets, out, *extra,
                     *operands.values(), lse)
    assert_close((out, lse), expected, dtype)


@pytest.mark.parametrize("in_place", [False, True], ids=["separate", "in-place"])
@pytest.mark.parametrize("dtype, head_size", [("f32", 16), ("f16", 128), ("bf16", 64)])
def test_merge_states_on_the_emulated_gpu(dtype, head_size, in_place):
    check_merge_states(kvcache.EmulatedGPUModule, dtype, head_size, in_place)


# The CPU kernel loops over the head in chunks of the largest power of two
# dividing it, at most 64 elements: an odd head (chunks of 1), a head of 100
# (chunks of 4), MLA's 576 (nine chunks of 64), a head of 1000 (chunks of 8).
@pytest.mark.parametrize("dtype, head_size, in_place", [
    ("f32", 1, False), ("f16", 7, True), ("bf16", 100, False),
    ("f16", 576, True), ("f32", 1000, False)])
def test_merge_states_on_the_cpu_at_any_head_size(dtype, head_size, in_place):
    check_merge_states(kvcache.CPUModule, dtype, head_size, in_place)


def check_merge_states(module_class, dtype, head_size, in_place):
    # Random partial states with -inf log-sum-exps among them (one or both
    # partials empty), 70 rows over the grid's rows.
    rng = np.random.default_rng(head_size)
    config = CacheConfig(dtype, 2, head_size, 16, q_heads=4)
    shape = (70, 4, head_size)
    a = testing.random_rows(rng, 70, 4, head_size, dtype)
    b = testing.random_rows(rng, 70, 4, head_size, dtype)
    lse_a = rng.uniform(-20, 20, shape[:2]).astype(np.float32)
    lse_b = rng.uniform(-20, 20, shape[:2]).astype(np.float32)
    lse_a[rng.random(shape[:2]) < 0.2] = -np.inf
    lse_b[rng.random(shape[:2]) < 0.2] = -np.inf
    expected_out, expected_lse = reference.merge_states(a, lse_a, b, lse_b, dtype)
    module = module_class(builders.merge_states(config))
    if in_place:
        out, lse = a, lse_a
    else:
        out, lse = np.zeros_like(a), np.zeros_like(lse_a)
    module.merge_states(a, lse_a, b, lse_b, out, lse)
    error = np.abs(dtypes.to_float32(out, dtype) -
                   dtypes.to_float32(expected_out, dtype)).max()
    assert error <= TOLERANCE[dtype], error
    finite = np.isfinite(expected_lse)
    np.testing.assert_array_equal(np.isfinite(lse), finite)
    assert np.abs(lse[finite] - expected_lse[finite]).max() <= LSE_TOLERANCE


def profiled_launches(path, monkeypatch, call):
    """The emulator's profile records (one per launch) of `call()`."""
    import json
    monkeypatch.setenv("KVCACHE_EMU_PROFILE", str(path))
    call()
    monkeypatch.delenv("KVCACHE_EMU_PROFILE")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("context, window, kv_heads, page_size", [
    (4096, 256, 2, 16),
    # The figure the window exists for: keys 126976 .. 131071 of 131072.
    (131072, 4096, 1, 128),
])
def test_keys_outside_the_window_are_never_read(context, window, kv_heads,
                                                page_size, tmp_path, monkeypatch):
    # A decode row at position context - 1 with a window: the kernel copies
    # exactly the window's keys' K and V (the emulator's profile, cp.async
    # bytes), in the split kernels (workspace) too, and its output is the
    # reference's; without the window (the smaller case) every key's.
    config = CacheConfig("f16", num_heads=kv_heads, head_size=64,
                         page_size=page_size, num_layers=1, q_heads=4 * kv_heads)
    rng = np.random.default_rng(context)
    cache = testing.random_cache(config, [context - 1], [1], rng)
    q = testing.random_rows(rng, 1, 4 * kv_heads, 64, "f16")
    offsets = testing.row_offsets([1])
    row_bytes = 2 * kv_heads * 64 * 2                # K and V, f16
    runs = [({"window": window}, False), ({"window": window}, True)]
    if context <= 4096:
        runs.append(({}, False))
    for clauses, workspace in runs:
        module = kvcache.EmulatedGPUModule(builders.attention_ragged(
            config, "attention", scale=0.125, workspace=workspace, **clauses))
        out = np.zeros_like(q)
        extra = (np.zeros(4 * kv_heads * 66 * 16, np.float32),) if workspace else ()
        launches = profiled_launches(
            tmp_path / f"{len(clauses)}-{workspace}.jsonl", monkeypatch,
            lambda: module.attention(*cache.arguments(), 0, q, offsets, out, *extra))
        keys = clauses.get("window", context)
        assert sum(launch["cp_async_bytes"] for launch in launches) == keys * row_bytes
        # Split (keys-per-split 512): the merge kernel too.
        assert len(launches) == (2 if workspace and keys > 512 else 1)
        expected = reference.attention_ragged(
            q, cache.key_cache(0), cache.value_cache(0), offsets,
            np.zeros_like(q), 0.125, **clauses)
        error = np.abs(dtypes.to_float32(out, "f16") -
                       dtypes.to_float32(expected, "f16")).max()
        assert error <= TOLERANCE["f16"]


def run_every_operand_clause(module, config, dtype, rng, cached, new, layer,
                             scale, attributes):
    """(out, lse) of `module`'s attention with random sinks and ALiBi
    slopes, lse and a workspace of 4 splits, over a random cache of
    `cached` + `new` tokens per sequence; and the reference's."""
    q_heads, head_size = config.query_heads, config.head_size
    sinks = rng.uniform(-2, 2, q_heads).astype(np.float32)
    slopes = rng.uniform(0, 0.5, q_heads).astype(np.float32)
    cache = testing.random_cache(config, cached, new, rng)
    offsets = testing.row_offsets(new)
    q = testing.random_rows(rng, sum(new), q_heads, head_size, dtype)
    out, lse = np.zeros_like(q), np.zeros((sum(new), q_heads), np.float32)
    expected = reference.attention_ragged(
        q, cache.key_cache(layer), cache.value_cache(layer), offsets, out, scale,
        lse=lse, sinks=sinks, alibi=slopes, **attributes)
    workspace = np.zeros(sum(new) * q_heads * (head_size + 2) * 4, np.float32)
    module.attention(*cache.arguments(), layer, q, offsets, out, workspace, sinks,
                     slopes, lse)
    return (out, lse), expected


# All clauses together on the emulated GPU over page sizes 1, 16 and 128 and
# GQA groups 1, 4 and 8, on both kernels: rows at and across page and chunk
# edges (a prefill of 20 over 150 cached tokens), decode rows, a sequence
# with nothing cached.
GPU_COMBINATIONS = [
    {"window": 9, "softcap": 2.0, "alibi": True, "sinks": True},
    {"chunk": 128, "softcap": 1.0, "alibi": True, "sinks": True},
    {"noncausal": True, "softcap": 3.0, "alibi": True, "sinks": True},
]


@pytest.mark.parametrize("dtype, head_size", [("f32", 16), ("bf16", 64)],
                         ids=["cuda-cores", "tensor-cores"])
@pytest.mark.parametrize("page_size, group", [(1, 1), (16, 8), (128, 4), (128, 1)])
@pytest.mark.parametrize("clauses", GPU_COMBINATIONS, ids=clause_id)
def test_combined_clauses_over_pages_and_groups_on_the_emulated_gpu(
        clauses, page_size, group, dtype, head_size):
    kv_heads = 2
    q_heads = kv_heads * group
    config = CacheConfig(dtype, num_heads=kv_heads, head_size=head_size,
                         page_size=page_size, num_layers=1, q_heads=q_heads)
    attributes = {k: v for k, v in clauses.items()
                  if k in ("window", "chunk", "noncausal", "softcap")}
    module = kvcache.EmulatedGPUModule(builders.attention_ragged(
        config, "attention", scale=0.4, workspace=True, lse=True, sinks=True,
        alibi=True, **attributes))
    assert ("__kvemu_mma" in str(module.lowered)) == (dtype == "bf16")
    rng = np.random.default_rng(page_size * 10 + group)
    got, expected = run_every_operand_clause(module, config, dtype, rng, [150, 1200, 0],
                                             [20, 1, 2], 0, 0.4, attributes)
    assert_close(got, expected, dtype)


@pytest.mark.parametrize("dtype, head_size", [("f32", 16), ("f16", 64)],
                         ids=["cuda-cores", "tensor-cores"])
def test_large_scores_and_dominant_sinks_on_the_emulated_gpu(dtype, head_size):
    # Scores up to ~1e4 before a cap of 5 (tanh saturates to +-1, nothing
    # overflows), and a sink of 50 that outweighs every key (out ~ 0, lse ~
    # 50), split across blocks.
    config = CacheConfig(dtype, num_heads=2, head_size=head_size, page_size=16,
                         num_layers=1, q_heads=8)
    rng = np.random.default_rng(14)
    cache = testing.random_cache(config, [700], [2], rng)
    offsets = testing.row_offsets([2])
    q = dtypes.from_float32(
        dtypes.to_float32(testing.random_rows(rng, 2, 8, head_size, dtype), dtype) * 8,
        dtype)
    workspace = np.zeros(2 * 8 * (head_size + 2) * 4, np.float32)
    module = kvcache.EmulatedGPUModule(builders.attention_ragged(
        config, "attention", scale=100.0, softcap=5.0, workspace=True, lse=True))
    out, lse = np.zeros_like(q), np.zeros((2, 8), np.float32)
    expected = reference.attention_ragged(
        q, cache.key_cache(0), cache.value_cache(0), offsets, out, 100.0,
        softcap=5.0, lse=lse)
    module.attention(*cache.arguments(), 0, q, offsets, out, workspace, lse)
    assert np.all(np.isfinite(dtypes.to_float32(out, dtype)))
    assert_close((out, lse), expected, dtype)

    sinks = np.full(8, 50, np.float32)
    module = kvcache.EmulatedGPUModule(builders.attention_ragged(
        config, "attention", scale=0.5, sinks=True, workspace=True, lse=True))
    q = testing.random_rows(rng, 2, 8, head_size, dtype)   # scores below ~5
    out, lse = np.full_like(q, 3), np.zeros((2, 8), np.float32)
    module.attention(*cache.arguments(), 0, q, offsets, out, workspace, sinks, lse)
    assert np.abs(dtypes.to_float32(out, dtype)).max() < 1e-15
    np.testing.assert_allclose(lse, 50, atol=1e-5)


@pytest.mark.parametrize("backend", ["cpu", "emulated-gpu"])
@pytest.mark.parametrize("q_dtype, head_size", [("f32", 16), ("f16", 64)],
                         ids=["cuda-cores", "tensor-cores"])
@pytest.mark.parametrize("clauses", [
    {"window": 9, "softcap": 2.0, "alibi": True, "sinks": True},
    {"noncausal": True, "softcap": 3.0, "alibi": True, "sinks": True},
], ids=clause_id)
def test_clauses_over_a_quantized_cache(clauses, q_dtype, head_size, backend):
    # fp8 (E4M3FN) K/V with token_head scales, dequantized in the kernel
    # (on the GPU: f16 q takes the tensor-core kernel, f32 q the CUDA-core
    # one), split over a 700-key context; against the reference on the
    # dequantized values.
    q_heads = 8
    config = CacheConfig("f8E4M3FN", num_heads=2, head_size=head_size, page_size=16,
                         num_layers=2, q_heads=q_heads, scales="token_head",
                         rows_dtype=q_dtype)
    attributes = {k: v for k, v in clauses.items()
                  if k in ("window", "chunk", "noncausal", "softcap")}
    ir = builders.attention_ragged(config, "attention", scale=0.3, workspace=True,
                                   lse=True, sinks=True, alibi=True, **attributes)
    if backend == "cpu":
        module = kvcache.CPUModule(ir)
    else:
        module = kvcache.EmulatedGPUModule(ir)
        assert ("__kvemu_mma" in str(module.lowered)) == (q_dtype == "f16")
    rng = np.random.default_rng(head_size + len(clauses))
    got, expected = run_every_operand_clause(module, config, q_dtype, rng, [700, 20, 0],
                                             [1, 3, 20], 1, 0.3, attributes)
    # The tensor-core kernel rounds the dequantized K/V to q's f16 before
    # its mma (docs/Contract.md 2.2), so its scores, and lse, carry f16
    # rounding (measured 1.4e-4).
    assert_close(got, expected, q_dtype,
                 lse_tolerance=1e-3 if q_dtype == "f16" else LSE_TOLERANCE)
