"""The attention tests' comparison with the reference: tolerances per
element type and the check of (out, lse) against the reference's; and the
random operands of attention's optional clauses."""

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
