"""The parameters of a paged KV cache (docs/Contract.md, sections 1 and 2).

A `CacheConfig` names what the `!kvcache.paged_collection` type fixes
(element type, KV heads, head size, page size, mla, assert_write_mode) plus
two things the IR builders need: the number of layers (static or dynamic in
the `blocks` type) and the number of query heads of attention.
"""

import math
from dataclasses import dataclass
from typing import Optional

__all__ = ["CacheConfig", "ELEMENT_TYPES"]

# Element types of the cache and the numpy dtype that stores them. numpy has
# no bfloat16 nor float8: those are stored as raw bits (uint16, uint8);
# kvcache.reference converts them.
ELEMENT_TYPES = {"f32": "float32", "f16": "float16", "bf16": "uint16",
                 "f8E4M3FN": "uint8"}


@dataclass(frozen=True)
class CacheConfig:
    """One model's KV cache.

    dtype:             "f32", "f16", "bf16" or "f8E4M3FN" (the lowerings
                       reject f8E4M3FN until it has scales)
    num_heads:         KV heads
    head_size:         elements per head row
    page_size:         tokens per page
    num_layers:        layers in `blocks`, or None for a dynamic dimension
    q_heads:           query heads of attention (a multiple of num_heads;
                       default num_heads, GQA when larger)
    mla:               one K-only cache (kv_dim 1), as DeepSeek's MLA
    assert_write_mode: 1 checks every write at run time
    """

    dtype: str = "f16"
    num_heads: int = 8
    head_size: int = 128
    page_size: int = 16
    num_layers: Optional[int] = None
    q_heads: Optional[int] = None
    mla: bool = False
    assert_write_mode: int = 0

    def __post_init__(self):
        if self.dtype not in ELEMENT_TYPES:
            raise ValueError(f"dtype must be one of {sorted(ELEMENT_TYPES)}, "
                             f"got {self.dtype!r}")
        for name in ("num_heads", "head_size", "page_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.num_layers is not None and (not isinstance(self.num_layers, int)
                                            or self.num_layers <= 0):
            raise ValueError(f"num_layers must be a positive integer or None, "
                             f"got {self.num_layers!r}")
        if self.q_heads is not None and (
                not isinstance(self.q_heads, int) or self.q_heads <= 0
                or self.q_heads % self.num_heads):
            raise ValueError(f"q_heads must be a positive multiple of num_heads "
                             f"({self.num_heads}), got {self.q_heads!r}")
        if self.assert_write_mode not in (0, 1):
            raise ValueError(f"assert_write_mode must be 0 or 1, got "
                             f"{self.assert_write_mode!r}")

    @property
    def kv_dim(self):
        """2 (K and V), or 1 for an mla cache."""
        return 1 if self.mla else 2

    @property
    def query_heads(self):
        return self.q_heads or self.num_heads

    @property
    def group_size(self):
        """Query heads per KV head (GQA)."""
        return self.query_heads // self.num_heads

    @property
    def default_scale(self):
        """1 / sqrt(head_size), rounded to f32 and printed exactly."""
        return float(f"{1.0 / math.sqrt(self.head_size):.9g}")

    @property
    def numpy_dtype(self):
        """The numpy dtype that stores one element (raw bits for bf16, f8)."""
        import numpy as np
        return np.dtype(ELEMENT_TYPES[self.dtype])

    def type_parameters(self):
        """`f16, num_heads = 8, head_size = 128, page_size = 16[, ...]`."""
        text = (f"{self.dtype}, num_heads = {self.num_heads}, head_size = "
                f"{self.head_size}, page_size = {self.page_size}")
        if self.mla:
            text += ", mla = true"
        if self.assert_write_mode:
            text += f", assert_write_mode = {self.assert_write_mode}"
        return text
