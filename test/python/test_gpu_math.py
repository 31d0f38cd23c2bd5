"""Math ops in GPU kernels (kvcache-lower-gpu-math): a linalg.generic of
every op that the pass lowers without libdevice, run as a kernel on the GPU
emulator (linalg-to-gpu), against numpy and Python's math module in f64.
The exact ops (absf, floor, ..., sqrt, fma) must be correctly rounded; the
polynomial approximations (exp, log, tanh, erf, ...) within the f32 ulp
bounds measured for them; f16 and bf16 go through f32 and must round like
the f32 result. sin, which the pass leaves to libdevice, is the emulator's
__nv_sinf. One compiled module serves every case."""

import math

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import dtypes  # noqa: E402

# op: (f64 reference, max error in f32 ulp of the reference)
UNARY = {
    "exp": (np.exp, 1.0),
    "expm1": (np.expm1, 2.0),
    "log": (np.log, 1.0),
    "log2": (np.log2, 1.0),
    "log1p": (np.log1p, 2.0),
    "tanh": (np.tanh, 4.0),
    "erf": (np.vectorize(math.erf), 3.0),
    "erfc": (np.vectorize(math.erfc), 2.0),
    "sqrt": (np.sqrt, 0.5),
    "rsqrt": (lambda v: 1.0 / np.sqrt(v), 1.5),
    "absf": (np.abs, 0.0),
    "floor": (np.floor, 0.0),
    "ceil": (np.ceil, 0.0),
    "trunc": (np.trunc, 0.0),
    "roundeven": (np.rint, 0.0),
    "round": (lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5), 0.0),
    "sin": (np.sin, 1.0),
}
HALF_OPS = ["exp", "tanh", "sqrt"]


def unary_ir():
    """@unary(x, out_0, ..., out_N-1): out_i = UNARY's op i of x, one
    linalg.generic; @binary(x, y, fma, copysign); @half(x16, xb16, ...):
    HALF_OPS on f16 and on bf16."""
    ops = list(UNARY)
    n = len(ops)
    ident = ", ".join(["affine_map<(i) -> (i)>"] * (n + 1))
    outs = ", ".join(f"%o{i}" for i in range(n))
    body = "\n".join(f"      %r{i} = math.{op} %a : f32"
                     for i, op in enumerate(ops))
    f32s = ", ".join(["f32"] * n)
    vec = "memref<?xf32>"
    half_body = []
    for t, ty in (("h", "f16"), ("b", "bf16")):
        for op in HALF_OPS:
            half_body.append(f"      %{t}{op} = math.{op} %{t} : {ty}")
    half_results = ", ".join(f"%{t}{op}" for t in "hb" for op in HALF_OPS)
    half_types = ", ".join(["f16"] * 3 + ["bf16"] * 3)
    half_outs = ", ".join(f"%p{i}" for i in range(6))
    half_memrefs = ", ".join(["memref<?xf16>"] * 3 + ["memref<?xbf16>"] * 3)
    half_args = ", ".join(f"%p{i}: {t}" for i, t in
                          enumerate(["memref<?xf16>"] * 3 +
                                    ["memref<?xbf16>"] * 3))
    half_bb = ", ".join(f"%q{i}: {t}" for i, t in
                        enumerate(["f16"] * 3 + ["bf16"] * 3))
    return f"""
func.func @unary(%x: {vec}, {", ".join(f"%o{i}: {vec}" for i in range(n))}) {{
  linalg.generic {{indexing_maps = [{ident}], iterator_types = ["parallel"]}}
      ins(%x : {vec}) outs({outs} : {", ".join([vec] * n)}) {{
    ^bb0(%a: f32, {", ".join(f"%b{i}: f32" for i in range(n))}):
{body}
      linalg.yield {", ".join(f"%r{i}" for i in range(n))} : {f32s}
  }}
  return
}}
func.func @binary(%x: {vec}, %y: {vec}, %fma: {vec}, %sign: {vec}) {{
  linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>,
      affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
      iterator_types = ["parallel"]}}
      ins(%x, %y : {vec}, {vec}) outs(%fma, %sign : {vec}, {vec}) {{
    ^bb0(%a: f32, %b: f32, %c: f32, %d: f32):
      %f = math.fma %a, %b, %a : f32
      %s = math.copysign %a, %b : f32
      linalg.yield %f, %s : f32, f32
  }}
  return
}}
func.func @half(%x16: memref<?xf16>, %xb16: memref<?xbf16>, {half_args}) {{
  linalg.generic {{indexing_maps = [{", ".join(["affine_map<(i) -> (i)>"] * 8)}],
      iterator_types = ["parallel"]}}
      ins(%x16, %xb16 : memref<?xf16>, memref<?xbf16>)
      outs({half_outs} : {half_memrefs}) {{
    ^bb0(%h: f16, %b: bf16, {half_bb}):
{chr(10).join(half_body)}
      linalg.yield {half_results} : {half_types}
  }}
  return
}}
"""


_module = []


def module():
    if not _module:
        _module.append(kvcache.EmulatedGPUModule(unary_ir(),
                                                 linalg_to_gpu=True))
    return _module[0]


def inputs():
    """f32 arguments across the ranges: linear near 0, logarithmic up to
    1e30 of both signs, halves (round's and roundeven's ties), signed
    zeros."""
    return np.concatenate([
        np.linspace(-80, 80, 2001), np.logspace(-30, 30, 301),
        -np.logspace(-30, 30, 61),
        [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5]]).astype(np.float32)


def ulp_errors(got, ref):
    """|got - ref| in f32 ulps of ref where ref is a finite normal f32 (0
    elsewhere); and whether got is NaN and inf exactly where ref is."""
    with np.errstate(all="ignore"):
        ref32 = ref.astype(np.float32)
        normal = (np.isfinite(ref32) &
                  (np.abs(ref32) >= np.finfo(np.float32).tiny))
        ulp = np.spacing(np.abs(ref32)).astype(np.float64)
        errors = np.where(normal, np.abs(got.astype(np.float64) - ref) / ulp,
                          0.0)
    specials = (np.array_equal(np.isnan(got), np.isnan(ref32)) and
                np.array_equal(np.isinf(got) & ~normal,
                               np.isinf(ref32) & ~normal))
    return errors, specials, int(normal.sum())


@pytest.fixture(scope="module")
def unary_results():
    x = inputs()
    outs = [np.zeros_like(x) for _ in UNARY]
    module().unary(x, *outs)
    return x, dict(zip(UNARY, outs))


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_op_within_its_ulp_bound(unary_results, op):
    x, results = unary_results
    reference, bound = UNARY[op]
    with np.errstate(all="ignore"):
        expected = reference(x.astype(np.float64))
    errors, specials_match, compared = ulp_errors(results[op], expected)
    assert specials_match, f"math.{op}: NaN or inf where the reference has none"
    assert compared > 100
    assert errors.max() <= bound, (
        f"math.{op}: {errors.max():.2f} ulp at x = {x[np.argmax(errors)]}")


def test_fma_and_copysign_exact():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(513).astype(np.float32) * 1e3
    y = rng.standard_normal(513).astype(np.float32)
    fma, sign = np.zeros_like(x), np.zeros_like(x)
    module().binary(x, y, fma, sign)
    # One rounding of the exact f64 product-sum (exact for f32 operands).
    expected = (x.astype(np.float64) * y + x).astype(np.float32)
    np.testing.assert_array_equal(fma, expected)
    np.testing.assert_array_equal(sign, np.copysign(x, y))


def test_half_types_round_the_f32_result():
    x = np.linspace(-8, 8, 257).astype(np.float32)
    x16 = x.astype(np.float16)
    xb16 = dtypes.from_float32(x, "bf16")
    outs = [np.zeros_like(x16) for _ in HALF_OPS]
    outs += [np.zeros_like(xb16) for _ in HALF_OPS]
    module().half(x16, xb16, *outs)
    for i, op in enumerate(HALF_OPS):
        reference = UNARY[op][0]
        with np.errstate(all="ignore"):
            wide16 = reference(x16.astype(np.float64))
            wideb16 = reference(dtypes.to_float32(xb16, "bf16").astype(np.float64))
        # f32 within its bound, then one rounding: the f16 (bf16) result is
        # the rounded reference or its neighbour where the f32 error
        # crossed a rounding boundary; compare in f16 (bf16) ulps.
        got16 = outs[i].astype(np.float64)
        finite = np.isfinite(wide16)
        with np.errstate(all="ignore"):
            ulp16 = np.spacing(np.abs(wide16.astype(np.float16)))
        ulp16 = ulp16.astype(np.float64)
        assert np.all(np.abs(got16 - wide16)[finite] <= ulp16[finite]), op
        gotb16 = dtypes.to_float32(outs[3 + i], "bf16").astype(np.float64)
        ulpb16 = np.abs(wideb16) * 2.0 ** -7
        finite = np.isfinite(wideb16)
        assert np.all(np.abs(gotb16 - wideb16)[finite] <=
                      np.maximum(ulpb16, 2.0 ** -133)[finite]), op
