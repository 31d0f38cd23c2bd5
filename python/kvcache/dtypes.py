"""Element types of KV caches in numpy: the storage dtypes, the fp8 and int8
codecs and the quantized caches' arithmetic (docs/Contract.md 2.2), written
from the formats' bit fields, with no compiler code.

Element types of the cache and their numpy storage: f32 and f16 are numpy's
float32 and float16; bf16 is stored as uint16 bits (numpy has no bfloat16),
f8E4M3FN and f8E5M2 as uint8 codes, i8 as int8. `to_float32` and
`from_float32` convert (round to nearest even; fp8 and i8 saturate);
`quantize`, `dequantize`, `dynamic_scale` and `group_scales` are the
arithmetic of quantized caches.

    codes = dtypes.quantize(values, "f8E4M3FN", scale)
    values = dtypes.dequantize(codes, "f8E4M3FN", scale)
    bits = dtypes.from_float32(values, "bf16")        # uint16

`ARRAY_DTYPES` says which numpy dtypes hold the elements of a memref of an
MLIR element type (what kvcache.abi and kvcache.CPUModule accept).

Formerly in kvcache.reference, which still re-exports every name.
"""

import numpy as np

from .config import ELEMENT_TYPES

__all__ = ["ARRAY_DTYPES", "FP8_FORMATS", "MAX_FINITE", "dequantize",
           "dynamic_scale", "fp8_encode", "fp8_values", "from_float32",
           "group_scales", "i8_encode", "quantize", "storage_dtype",
           "to_float32"]

# MLIR element type -> the numpy dtypes (names) whose arrays a memref of it
# takes: the storage dtype first, then those of the same width read as its
# bits (bf16 and fp8 have no numpy dtype).
ARRAY_DTYPES = {
    "f32": ("float32",), "f64": ("float64",), "f16": ("float16",),
    "bf16": ("uint16", "int16"), "f8E4M3FN": ("uint8", "int8"),
    "f8E5M2": ("uint8", "int8"),
    "i1": ("bool", "uint8", "int8"), "i8": ("int8", "uint8"),
    "i16": ("int16", "uint16"), "i32": ("int32", "uint32"),
    "i64": ("int64", "uint64"), "index": ("int64", "uint64"),
}


def storage_dtype(dtype):
    """The numpy dtype that stores elements of `dtype` ("f16", "bf16", ...)."""
    if dtype not in ELEMENT_TYPES:
        raise ValueError(f"unknown element type {dtype!r}")
    return np.dtype(ELEMENT_TYPES[dtype])


# The 8-bit float formats (docs/Contract.md 2.2): exponent and mantissa bits,
# exponent bias, and whether the all-ones exponent holds numbers (E4M3FN:
# only S.1111.111 is NaN, no infinities) or infinities and NaNs (E5M2, as
# IEEE 754).
FP8_FORMATS = {"f8E4M3FN": (4, 3, 7, False), "f8E5M2": (5, 2, 15, True)}
# The largest finite magnitude of each storage type (saturation bound).
MAX_FINITE = {"f8E4M3FN": 448.0, "f8E5M2": 57344.0, "i8": 127.0}


def fp8_values(dtype):
    """float64 [256]: the value of each code of an fp8 type (NaN for its NaN
    codes, +-inf for E5M2's infinities), decoded from the bit fields."""
    exponent_bits, mantissa_bits, bias, ieee = FP8_FORMATS[dtype]
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exponent = (codes >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = codes & ((1 << mantissa_bits) - 1)
    fraction = mantissa / float(1 << mantissa_bits)
    normal = np.ldexp(1.0 + fraction, exponent - bias)
    subnormal = np.ldexp(fraction, 1 - bias)
    values = sign * np.where(exponent == 0, subnormal, normal)
    top = exponent == (1 << exponent_bits) - 1
    if ieee:
        values = np.where(top & (mantissa == 0), sign * np.inf, values)
        values = np.where(top & (mantissa != 0), np.nan, values)
    else:
        values = np.where(top & (mantissa == (1 << mantissa_bits) - 1), np.nan,
                          values)
    return values


def fp8_encode(values, dtype):
    """float32/float64 values to fp8 codes (uint8): round to the nearest
    representable value, ties to the even code, then saturate to
    +-max_finite (+-inf included); the sign of zero kept; NaN to the type's
    NaN code with its sign (E4M3FN 0x7F, E5M2 0x7E)."""
    values = np.asarray(values, dtype=np.float64)
    table = fp8_values(dtype)
    # The non-negative finite codes in increasing order: 0x00 .. up to the
    # largest finite one (codes and values both increase).
    positive = [c for c in range(128) if np.isfinite(table[c])]
    magnitudes = table[positive]
    top = magnitudes[-1]
    magnitude = np.minimum(np.abs(np.nan_to_num(values, nan=0.0)), top)
    upper = np.searchsorted(magnitudes, magnitude)  # first >= magnitude
    upper = np.minimum(upper, len(magnitudes) - 1)
    lower = np.maximum(upper - 1, 0)
    below = magnitude - magnitudes[lower]
    above = magnitudes[upper] - magnitude
    codes = np.array(positive)
    pick_upper = (above < below) | ((above == below) & (codes[upper] % 2 == 0))
    pick_upper |= magnitudes[upper] == magnitude
    chosen = np.where(pick_upper, codes[upper], codes[lower])
    sign = np.signbit(values).astype(np.int64) << 7
    nan_code = 0x7F if dtype == "f8E4M3FN" else 0x7E
    result = np.where(np.isnan(values), nan_code, chosen) | sign
    return result.astype(np.uint8)


def i8_encode(values):
    """float values to int8: round half to even, saturate to +-127; NaN to
    0 (docs/Contract.md 2.2)."""
    values = np.asarray(values, dtype=np.float64)
    rounded = np.clip(np.round(np.nan_to_num(values, nan=0.0)), -127, 127)
    return rounded.astype(np.int8)


def to_float32(values, dtype):
    """Elements stored as `dtype` to float32 (exact): bf16 bits, fp8 codes,
    or int8 integers."""
    values = np.asarray(values)
    if dtype == "bf16":
        return (values.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dtype in ("f32", "f16"):
        return values.astype(np.float32)
    if dtype in FP8_FORMATS:
        return fp8_values(dtype)[values.astype(np.uint8)].astype(np.float32)
    if dtype == "i8":
        return values.astype(np.float32)
    raise ValueError(f"no conversion for {dtype!r}")


def from_float32(values, dtype):
    """float32 values rounded (to nearest even) to `dtype`'s storage; fp8
    and i8 saturate (fp8_encode, i8_encode)."""
    values = np.asarray(values, dtype=np.float32)
    if dtype == "bf16":
        bits = values.view(np.uint32).astype(np.int64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        nan = np.isnan(values)
        return np.where(nan, 0x7FC0, rounded & 0xFFFF).astype(np.uint16)
    if dtype in ("f32", "f16"):
        return values.astype(storage_dtype(dtype))
    if dtype in FP8_FORMATS:
        return fp8_encode(values, dtype)
    if dtype == "i8":
        return i8_encode(values)
    raise ValueError(f"no conversion for {dtype!r}")


def quantize(values, dtype, scale):
    """Codes of storage type `dtype` for float32 `values` at `scale`
    (docs/Contract.md 2.2): saturate(rne(value / scale)), the quotient the
    correctly rounded float32 division; fp8 codes as uint8, i8 as int8."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        quotient = np.asarray(values, np.float32) / np.float32(scale)
    if dtype == "i8":
        return i8_encode(quotient)
    return fp8_encode(quotient, dtype)


def dynamic_scale(values, dtype):
    """The scale store_ragged computes for one group of float32 `values`
    (token_head: a head's row; block<G>: G elements): amax / max_finite in
    float32, amax over the non-NaN magnitudes, 1 when amax is 0."""
    magnitudes = np.abs(np.asarray(values, np.float32))
    magnitudes = magnitudes[~np.isnan(magnitudes)]
    amax = np.float32(magnitudes.max()) if magnitudes.size else np.float32(0)
    if amax == 0:
        return np.float32(1)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.float32(amax / np.float32(MAX_FINITE[dtype]))


def dequantize(codes, dtype, scale):
    """float32 values of `codes` at `scale`: stored * scale in float32."""
    with np.errstate(over="ignore", invalid="ignore"):
        return to_float32(codes, dtype) * np.float32(scale)


def group_scales(values, dtype):
    """dynamic_scale of each group along the last axis of `values`
    ([..., G] -> [...], float32): amax / max_finite over the non-NaN
    magnitudes, 1 where amax is 0."""
    magnitudes = np.abs(np.asarray(values, np.float32))
    amax = np.where(np.isnan(magnitudes), np.float32(0), magnitudes).max(axis=-1)
    with np.errstate(over="ignore", invalid="ignore"):
        scales = amax / np.float32(MAX_FINITE[dtype])
    return np.where(amax == 0, np.float32(1), scales).astype(np.float32)
