"""The parameters of a KV cache (docs/Contract.md, sections 1 and 2).

A `CacheConfig` names what the collection type fixes (kind, element type, KV
heads, head size, page size of a paged cache, mla, assert_write_mode, the
scales of a quantized cache) plus what the IR builders need besides: the
number of layers and, for a continuous cache, the token slots of a block
(each static or dynamic in the `blocks` type), the number of query heads of
attention, and the element type of the rows the kernel ops read and write.

Two kinds of collection (MAX's `KVCollectionT` implementations):

    "paged"       !kvcache.paged_collection: sequences own pages of
                  page_size tokens, found through a [batch, max_pages]
                  lookup table
    "continuous"  !kvcache.continuous_collection (continuous batching):
                  sequence b owns one block of block_tokens token slots,
                  blocks[lookup_table[b]], with a [batch] lookup table
"""

import math
import re
from dataclasses import dataclass
from typing import Optional

__all__ = ["CacheConfig", "ELEMENT_TYPES", "FLOAT_TYPES", "KINDS",
           "SCALES_KINDS", "STORAGE_TYPES", "parse_type", "scales_kind_of_shape",
           "scales_shape_of_blocks"]

# Element types of the cache and the numpy dtype that stores them. numpy has
# no bfloat16 nor float8: those are stored as raw bits (uint16, uint8);
# kvcache.reference converts them. f8E4M3FN, f8E5M2 and i8 are the storage
# types of quantized caches; without scales a cache of them is raw (its
# stored codes are moved unchanged, and attention does not take it).
ELEMENT_TYPES = {"f32": "float32", "f16": "float16", "bf16": "uint16",
                 "f8E4M3FN": "uint8", "f8E5M2": "uint8", "i8": "int8"}
FLOAT_TYPES = ("f32", "f16", "bf16")
STORAGE_TYPES = ("f8E4M3FN", "f8E5M2", "i8")
# The scales of a quantized cache (docs/Contract.md 2.2): one per layer and
# K/V, one per token and head, or one per G consecutive elements of a head.
SCALES_KINDS = ("tensor", "token_head", "block<G>")
_BLOCK_SCALES = re.compile(r"block\s*<\s*(\d+)\s*>")

# Collection kinds (the type's prefix, MAX's `name_str`).
KINDS = ("paged", "continuous")
DEFAULT_PAGE_SIZE = 16


@dataclass(frozen=True)
class CacheConfig:
    """One model's KV cache.

    dtype:             "f32", "f16", "bf16", or a storage type of
                       quantized caches, "f8E4M3FN", "f8E5M2" or "i8"
                       (with `scales` a quantized cache; without, a raw
                       one: store/gather/copy move its codes, attention
                       does not take it)
    num_heads:         KV heads
    head_size:         elements per head row
    page_size:         tokens per page of a paged cache (default 16); a
                       continuous cache has no pages: leave it out (None)
    num_layers:        layers in `blocks`, or None for a dynamic dimension
    q_heads:           query heads of attention (a multiple of num_heads;
                       default num_heads, GQA when larger)
    mla:               one K-only cache (kv_dim 1), as DeepSeek's MLA
    assert_write_mode: 1 checks every write at run time
    kind:              "paged" (default) or "continuous"
    block_tokens:      continuous caches only: token slots of each
                       sequence's block (the longest sequence a block
                       holds) in the `blocks` type, or None for a dynamic
                       dimension. Not a type parameter: the collection type
                       has none of it.
    scales:            storage types only: None (a raw cache), "tensor"
                       (one scale per layer and K/V), "token_head" (one
                       per token and head) or "block<G>" (one per G
                       consecutive elements of a head, G dividing
                       head_size); docs/Contract.md section 2.2. The
                       collection then takes a sixth operand, the f32
                       scales memref of shape `scales_shape(...)`.
    rows_dtype:        element type of the rows of store_ragged and
                       gather_ragged and of attention's q/out. A float or
                       raw cache's rows are of its dtype (None or dtype).
                       A quantized cache takes "f32" (the default, None),
                       "f16" or "bf16" rows (stored quantized, gathered
                       dequantized), or its dtype (the codes, copied raw;
                       attention then needs float rows). Not a type
                       parameter.

        CacheConfig("f16", 8, 128, 16)                           # paged
        CacheConfig("f16", 8, 128, kind="continuous", block_tokens=4096)
        CacheConfig("f8E4M3FN", 8, 128, 16, scales="token_head",
                    rows_dtype="bf16")                           # quantized
    """

    dtype: str = "f16"
    num_heads: int = 8
    head_size: int = 128
    page_size: Optional[int] = None
    num_layers: Optional[int] = None
    q_heads: Optional[int] = None
    mla: bool = False
    assert_write_mode: int = 0
    kind: str = "paged"
    block_tokens: Optional[int] = None
    scales: Optional[str] = None
    rows_dtype: Optional[str] = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}, "
                             f"got {self.kind!r}")
        if self.dtype not in ELEMENT_TYPES:
            raise ValueError(f"dtype must be one of {sorted(ELEMENT_TYPES)}, "
                             f"got {self.dtype!r}")
        if self.kind == "paged":
            if self.page_size is None:
                object.__setattr__(self, "page_size", DEFAULT_PAGE_SIZE)
            if self.block_tokens is not None:
                raise ValueError("block_tokens is a parameter of continuous "
                                 "caches (kind='continuous'); a paged cache "
                                 "has page_size")
        elif self.page_size is not None:
            raise ValueError("a continuous cache has no pages: leave page_size "
                             f"out (got {self.page_size!r}); block_tokens "
                             "sets the token slots of a sequence's block")
        for name in ("num_heads", "head_size") + (
                ("page_size",) if self.has_pages else ()):
            value = getattr(self, name)
            if not _is_positive_int(value):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name in ("num_layers", "block_tokens"):
            value = getattr(self, name)
            if value is not None and not _is_positive_int(value):
                raise ValueError(f"{name} must be a positive integer or None, "
                                 f"got {value!r}")
        if self.q_heads is not None and (
                not _is_positive_int(self.q_heads)
                or self.q_heads % self.num_heads):
            raise ValueError(f"q_heads must be a positive multiple of num_heads "
                             f"({self.num_heads}), got {self.q_heads!r}")
        if self.assert_write_mode not in (0, 1):
            raise ValueError(f"assert_write_mode must be 0 or 1, got "
                             f"{self.assert_write_mode!r}")
        self._check_scales()
        self._check_rows_dtype()

    def _check_scales(self):
        """Checks `scales` (docs/Contract.md 4.1) and normalizes the
        spelling of block<G>."""
        if self.scales is None:
            return
        if not isinstance(self.scales, str):
            raise ValueError(f"scales must be None, 'tensor', 'token_head' or "
                             f"'block<G>', got {self.scales!r}")
        if self.dtype not in STORAGE_TYPES:
            raise ValueError(f"scales need a storage type ({', '.join(STORAGE_TYPES)}"
                             f"), got dtype {self.dtype!r}: {self.dtype} caches "
                             "hold values, not codes; drop scales")
        block = _BLOCK_SCALES.fullmatch(self.scales.strip())
        if block:
            group = int(block.group(1))
            if group <= 0 or self.head_size % group:
                raise ValueError(f"the G of scales='block<G>' must be a positive "
                                 f"integer dividing head_size ({self.head_size}), "
                                 f"got {self.scales!r}")
            object.__setattr__(self, "scales", f"block<{group}>")
        elif self.scales not in ("tensor", "token_head"):
            raise ValueError("scales must be None, 'tensor', 'token_head' or "
                             "'block<G>' (G a positive integer dividing "
                             f"head_size), got {self.scales!r}")

    def _check_rows_dtype(self):
        if self.rows_dtype in (None, self.dtype):
            return
        if self.scales is None:
            raise ValueError(f"rows_dtype: the rows of {self.dtype} caches "
                             f"without scales are {self.dtype} (leave rows_dtype "
                             f"out), got {self.rows_dtype!r}; only a cache with "
                             "scales takes f32, f16 or bf16 rows")
        if self.rows_dtype not in FLOAT_TYPES:
            raise ValueError(f"rows_dtype of quantized {self.dtype} caches must "
                             f"be 'f32', 'f16', 'bf16' or {self.dtype!r} (its "
                             f"codes), got {self.rows_dtype!r}")

    @property
    def has_pages(self):
        """True for a paged cache (copy_pages applies), False otherwise."""
        return self.kind == "paged"

    @property
    def kv_dim(self):
        """2 (K and V), or 1 for an mla cache."""
        return 1 if self.mla else 2

    @property
    def is_raw_storage(self):
        """A cache of stored codes (f8E4M3FN, f8E5M2, i8) without scales."""
        return self.dtype in STORAGE_TYPES and self.scales is None

    @property
    def is_quantized(self):
        """A cache of a storage type with scales."""
        return self.scales is not None

    @property
    def has_attention(self):
        """Whether attention_ragged takes this cache: not mla, not raw
        storage (quantized caches are read dequantized)."""
        return not self.mla and not self.is_raw_storage

    @property
    def rows_element(self):
        """The element type of the kernel ops' rows (store_ragged,
        gather_ragged, attention's q and out): rows_dtype, or by default
        dtype ("f32" for a quantized cache)."""
        if self.rows_dtype is not None:
            return self.rows_dtype
        return "f32" if self.is_quantized else self.dtype

    @property
    def scale_group(self):
        """Elements of a head that share one scale: G of block<G>,
        head_size for token_head; None for tensor scales or none."""
        if self.scales == "token_head":
            return self.head_size
        block = _BLOCK_SCALES.fullmatch(self.scales or "")
        return int(block.group(1)) if block else None

    def scales_shape(self, num_blocks=None, num_layers=None, tokens=None):
        """The shape of the scales memref (docs/Contract.md 2.2): tensor
        `[num_layers, kv_dim]`; token_head `[num_blocks, kv_dim,
        num_layers, tokens, num_heads]`; block<G> the same then
        `head_size / G`. num_layers defaults to config.num_layers, tokens
        (slots of a page or block) to page_size or block_tokens; the
        per-page kinds need num_blocks (pages of a paged cache)."""
        if self.scales is None:
            raise ValueError(f"{self.dtype} caches without scales have no "
                             "scales memref")
        layers = self.num_layers if num_layers is None else num_layers
        if layers is None:
            raise ValueError("scales_shape needs num_layers (the config's is "
                             "None)")
        if tokens is None:
            tokens = self.page_size if self.has_pages else self.block_tokens
        if self.scales != "tensor" and (num_blocks is None or tokens is None):
            raise ValueError(f"{self.scales} scales are per page or block: "
                             "scales_shape needs num_blocks, and tokens when "
                             "block_tokens is None")
        return scales_shape_of_blocks(self.scales, (
            num_blocks, self.kv_dim, layers, tokens, self.num_heads,
            self.head_size))

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

    @property
    def lookup_table_rank(self):
        """2 ([batch, max_pages]) for a paged cache, 1 ([batch]) for a
        continuous one."""
        return 2 if self.has_pages else 1

    def type_parameters(self):
        """`f16, num_heads = 8, head_size = 128, page_size = 16[, ...]`
        (no page_size for a continuous cache)."""
        text = (f"{self.dtype}, num_heads = {self.num_heads}, head_size = "
                f"{self.head_size}")
        if self.has_pages:
            text += f", page_size = {self.page_size}"
        if self.mla:
            text += ", mla = true"
        if self.assert_write_mode:
            text += f", assert_write_mode = {self.assert_write_mode}"
        if self.scales is not None:
            text += f", scales = {self.scales}"
        return text


def _is_positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def scales_shape_of_blocks(scales, blocks_shape):
    """The shape of the `scales` ("tensor", "token_head", "block<G>") of a
    quantized cache whose blocks have shape `blocks_shape` (docs/Contract.md
    2.2): tensor `[num_layers, kv_dim]`; token_head `[num_blocks, kv_dim,
    num_layers, tokens, num_heads]`; block<G> the same then head_size / G."""
    num_blocks, kv_dim, layers, tokens, heads, head_size = blocks_shape
    if scales == "tensor":
        return (layers, kv_dim)
    shape = (num_blocks, kv_dim, layers, tokens, heads)
    if scales == "token_head":
        return shape
    return shape + (head_size // int(_BLOCK_SCALES.fullmatch(scales).group(1)),)


def scales_kind_of_shape(shape, head_size):
    """The scales kind of a quantized cache's scales array of `shape`
    (docs/Contract.md 2.2), by its rank: 2-D tensor, 5-D token_head, 6-D
    block<G> with G = head_size / the last dim."""
    if len(shape) not in (2, 5, 6):
        raise ValueError("scales must be 2-D (tensor), 5-D (token_head) or 6-D "
                         f"(block<G>), got shape {shape}")
    if len(shape) < 6:
        return "tensor" if len(shape) == 2 else "token_head"
    if shape[5] == 0 or head_size % shape[5]:
        raise ValueError(f"the last dim of block<G> scales, head_size / G, must "
                         f"divide head_size ({head_size}), got shape {shape}")
    return f"block<{head_size // shape[5]}>"


def parse_type(text):
    """(CacheConfig, "collection" or "cache") of a collection or layer cache
    type of a kind CacheConfig models (`!kvcache.paged_collection<...>`,
    `!kvcache.continuous_cache<...>`, ...), as the compiler reads it: its
    type interfaces answer (kvcache.abi.describe_type; needs the compiler
    extension). None for any other type, or text that is no type. The
    config has the type's parameters; num_layers, q_heads and block_tokens,
    which the type does not fix, are None (rows_dtype too)."""
    from . import _kvcache  # the extension: a leaf, imported when used
    from .errors import CompileError
    try:
        cache = _kvcache.describe_type(text)["cache"]
    except CompileError:
        return None
    if cache is None or cache["kind"] not in KINDS:
        return None
    config = CacheConfig(cache["element_type"], cache["num_heads"],
                         cache["head_size"], cache["page_size"],
                         mla=cache["mla"], kind=cache["kind"],
                         assert_write_mode=cache["assert_write_mode"],
                         scales=cache["scales"])
    return config, cache["role"]
