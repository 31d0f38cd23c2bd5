"""The attention tests' comparison with the reference: tolerances per
element type and the check of (out, lse) against the reference's; the
random operands of attention's optional clauses; and the CPU kernels' run
of attention_ragged against the reference over a list of clause sets."""

import numpy as np

from kvcache import dtypes

TOLERANCE = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}
LSE_TOLERANCE = 1e-4


def assert_close(got, expected, dtype, lse_tolerance=LSE_TOLERANCE):
    """`got` = (out, lse) within TOLERANCE[dtype] (out) and lse_tolerance
    (finite lse) of `expected`; infinite lse exactly where expected."""
    (out, lse), (expected_out, expected_lse) = got, expected
    error = np.abs(dtypes.to_float32(out, dtype) -
                   dtypes.to_float32(expected_out, dtype)).max()
    assert error <= TOLERANCE[dtype], error
    finite = np.isfinite(expected_lse)
    np.testing.assert_array_equal(np.isfinite(lse), finite)
    np.testing.assert_array_equal(lse[~finite], expected_lse[~finite])
    assert np.abs(lse[finite] - expected_lse[finite]).max(initial=0) <= lse_tolerance


def clause_operands(rng, clauses, q_heads):
    """(operands, attributes) of attention's optional clauses in `clauses`:
    random `sinks` and `alibi` arrays (one f32 per query head), and the
    attribute clauses (`window`, `chunk`, `noncausal`, `softcap`) as given."""
    operands = {}
    if clauses.get("sinks"):
        operands["sinks"] = rng.uniform(-2, 2, q_heads).astype(np.float32)
    if clauses.get("alibi"):
        operands["alibi"] = rng.uniform(0, 0.5, q_heads).astype(np.float32)
    attributes = {k: v for k, v in clauses.items()
                  if k in ("window", "chunk", "noncausal", "softcap")}
    return operands, attributes


# Clause sets of the CPU kernels' tests (test_attention_tiles.py,
# test_attention_decode.py): windows and chunks that start inside a tile or
# a block of keys, noncausal, sinks, ALiBi, soft caps, and mixes.
CLAUSES = [
    {"window": 1}, {"window": 5}, {"window": 40}, {"window": 1000},
    {"chunk": 7}, {"chunk": 16}, {"noncausal": True}, {"sinks": True},
    {"noncausal": True, "sinks": True}, {"window": 9, "sinks": True},
    {"alibi": True}, {"chunk": 16, "alibi": True, "sinks": True},
    {"noncausal": True, "alibi": True}, {"softcap": 2.0},
    {"softcap": 0.5, "window": 9, "alibi": True}, {"softcap": 30.0, "chunk": 16, "sinks": True},
]


def config_of(dtype, page_size, num_heads, q_heads, head_size, **kwargs):
    """A paged CacheConfig of 2 layers for the CPU kernels' tests."""
    from kvcache import CacheConfig
    return CacheConfig(dtype, num_heads=num_heads, head_size=head_size,
                       page_size=page_size, num_layers=2, q_heads=q_heads, **kwargs)


def attend(config, cached, new, rng, clauses=(), scale=0.5, threads=None,
           cpu_features="host"):
    """(out, lse) of attention_ragged (with `clauses`, lse) compiled for the
    CPU (`threads`, `cpu_features`: kvcache.CPUModule's) over a random cache
    of `config` (`cached` tokens and `new` rows per sequence), and of the
    reference."""
    import kvcache
    from kvcache import builders, reference, testing
    cache = testing.random_cache(config, cached, new, rng)
    q = testing.random_rows(rng, sum(new), config.query_heads, config.head_size,
                            config.rows_element)
    offsets = testing.row_offsets(new)
    operands, attributes = clause_operands(rng, dict(clauses), config.query_heads)
    ir = builders.attention_ragged(config, "attention", scale=scale, lse=True,
                                   sinks="sinks" in operands,
                                   alibi="alibi" in operands, **attributes)
    out = np.full_like(q, 3)
    lse = np.full((q.shape[0], config.query_heads), 7, np.float32)
    expected = reference.attention_ragged(
        q, cache.key_cache(1), cache.value_cache(1), offsets, np.full_like(q, 3),
        scale, lse=np.full_like(lse, 7), **attributes, **operands)
    kvcache.CPUModule(ir, threads=threads, cpu_features=cpu_features).attention(
        *cache.arguments(), 1, q, offsets, out, *operands.values(), lse)
    return (out, lse), expected


def assert_same_on_every_core(config, cached, new):
    """attend's (out, lse) on every core and on one thread are the same bits
    (the tasks write disjoint rows)."""
    serial, _ = attend(config, cached, new, np.random.default_rng(12), threads=1)
    parallel, _ = attend(config, cached, new, np.random.default_rng(12))
    for got, expected in zip(parallel, serial):
        np.testing.assert_array_equal(got, expected)
