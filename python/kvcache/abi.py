"""Launch arguments of kernels compiled by kvcache-mlir (docs/Contract.md,
section 7; docs/KernelABI.md).

The compiler says how each argument lowers: `describe_type(text)` (and
`kvcache.Module.abi()` for every function of a module) asks the type
interfaces of a kvcache type (`KVCollectionTypeInterface`,
`KVCacheTypeInterface`: `getLoweredTypes`, `getLoweredNames`) for its
values and describes each from its MLIR type, as an `ArgumentABI` of
`ValueABI`s. So any collection kind that implements the interfaces packs
the same way, and nothing here knows a kind's layout (they live in
kvcache.arguments and are re-exported here):

    argument = abi.describe_type("!kvcache.paged_cache<f16, num_heads = 8, "
                                 "head_size = 128, page_size = 16>")
    [v.name for v in argument.values]
    # ['blocks', 'cache_lengths', 'lookup_table', 'max_seq_length',
    #  'max_cache_length']
    params = argument.params(cache.key_cache(3).parameters())

A collection argument takes its values in order (`cache.arguments()`); a
layer cache the collection's values, then `kv` and `layer`, then a
quantized cache's `scales` (`view.parameters()`): its values named
"blocks" and "scales" are the layer's views of the collection's,
`blocks[:, kv, layer]` and `scales[:, kv, layer]` (`scales[layer, kv]`, a
0-D view, for tensor scales), as the lowering slices them (docs/Contract.md
7.1). Each memref then expands to MLIR's descriptor: allocated pointer,
aligned pointer, offset, sizes, strides (all u64, offset and strides in
elements). An `index` is a u64, an `i32` a u32.

So a kernel `(!kvcache.paged_cache, memref<?x8x128xf16>)` takes
11 + 5 + 7 + 2 = 25 parameters for the cache, then 9 for the memref; with a
`!kvcache.continuous_cache` 11 + 5 + 5 + 2 = 23, then 9. Collections:
15 + 5 + 7 + 2 = 29 (paged), 15 + 5 + 5 + 2 = 27 (continuous). A quantized
cache's scales add tensor 7, token_head 13, block<G> 15 to a collection,
3, 9, 11 to a layer cache (a paged_cache with token_head scales is 34).

Arrays are what kvcache.arrays reads: anything exposing
`__cuda_array_interface__` (cupy) or `__array_interface__`, torch tensors
(on any device), DLPack producers, numpy arrays (for tests). Describing a
type needs the compiler extension (kvcache._kvcache); packing and
KernelArgs' memref, index, i32 and f32 do not, and nothing here needs a GPU
or a CUDA toolkit.

    args = KernelArgs().cache(blocks, cache_lengths, lookup_table,
                              max_seq_length, max_cache_length,
                              kv=0, layer=3).index(batch).memref(out)
    kernel(grid, block, args.values())            # cupy.RawKernel
    params = args.ctypes_pointers()               # cuLaunchKernel kernelParams

`.cache(..., kind=...)` and `.collection(..., kind=...)` take the values
of a `!kvcache.<kind>_cache` or `_collection` ("paged" or "continuous"),
e.g. `.cache(*cache.arguments(), kv=0, layer=3, kind=cache.kind)` with a
kvcache.caches.ContinuousCache, and a quantized one's scales as `scales=`:
`.collection(*cache.arguments()[:5], kind=cache.kind, scales=cache.scales)`.
The type is built from the arrays' shapes and described by the compiler,
and the arrays are checked against it and against each other, as far as
their extents and dtypes tell (the contents of device arrays are not
read): ranks, static sizes, strides and element types; a quantized cache's
scales against its blocks (shape, f32) and its blocks of 1-byte codes; kv
and layer of a layer cache against the blocks; max_cache_length (read
unsigned: -1 is 2^32 - 1) at most a sequence's capacity, the lookup
table's columns x page_size (block_tokens for a continuous cache). A
failure is a ValueError (ArgumentTypeError, also a TypeError, for an
element type) naming the value and both extents. Without the extension (a
source checkout on a GPU machine where nothing is built) the arrays are
packed as given, their relations and element types still checked.
`.argument(argument, value)` packs a value for any ArgumentABI (its
arrays checked against the description).
"""

import ctypes
import importlib.util

import numpy as np

from .arguments import (LAYER_VIEWS, ArgumentABI, ArrayInfo,  # noqa: F401
                        ValueABI, array_info, describe_type, memref_params)
from .config import (ELEMENT_TYPES, KINDS, STORAGE_TYPES, CacheConfig,
                     scales_kind_of_shape)
from .dtypes import ARRAY_DTYPES
from .errors import ArgumentTypeError

__all__ = ["ArgumentABI", "ArrayInfo", "KernelArgs", "ValueABI", "array_info",
           "cache_params", "collection_params", "continuous_cache_params",
           "continuous_collection_params", "describe_type", "memref_params",
           "paged_cache_params", "paged_collection_params"]


# The kinds' functions (paged_cache_params, ...): the type built from the
# arrays' shapes, described by the compiler.


def _check_kind(kind):
    if not isinstance(kind, str):
        raise TypeError(f"kind must be one of {', '.join(map(repr, KINDS))}, "
                        f"got a {type(kind).__name__}: pass a quantized cache's "
                        "scales as scales=..., after the five values")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}, "
                         f"got {kind!r}")


# The element type a type is built with for blocks of each width: only the
# width matters to the parameters.
_ELEMENT_OF_WIDTH = {1: "i8", 2: "f16", 4: "f32"}


def _has_extension():
    return importlib.util.find_spec(f"{__package__}._kvcache") is not None


def _kind_argument(kind, role, fields):
    """The ArgumentABI of `!kvcache.<kind>_<role>` for the arrays of
    `fields` (by name); without the extension, _undescribed_argument."""
    blocks = array_info(fields["blocks"])
    if len(blocks.shape) != 6:
        raise ValueError(
            "blocks must be 6-D [num_blocks, kv_dim, num_layers, tokens, "
            f"num_heads, head_size] (tokens: a page's or block's), got shape "
            f"{blocks.shape}")
    num_blocks, kv_dim, _, tokens, num_heads, head_size = blocks.shape
    scales_kind = None
    if "scales" in fields:
        scales_kind = scales_kind_of_shape(array_info(fields["scales"]).shape,
                                           head_size)
    if not _has_extension():
        return _undescribed_argument(kind, role, fields, scales_kind)
    has_pages = CacheConfig(kind=kind).has_pages
    config = CacheConfig(
        "i8" if scales_kind else _ELEMENT_OF_WIDTH.get(blocks.itemsize, "f32"),
        num_heads, head_size, tokens if has_pages else None, mla=kv_dim == 1,
        kind=kind, scales=scales_kind)
    return describe_type(f"!kvcache.{kind}_{role}<{config.type_parameters()}>")


# The element types of the values the undescribed argument knows (section
# 1 of docs/Contract.md; the blocks' are checked by _check_blocks_element).
_UNDESCRIBED_ELEMENTS = {"cache_lengths": "i32", "lookup_table": "i32",
                         "scales": "f32"}


def _undescribed_argument(kind, role, fields, scales_kind):
    """Without the compiler extension (a source checkout, e.g. on a GPU
    machine where nothing is built): an ArgumentABI that takes the fields
    as they are given, each array as a memref of any shape and strides (a
    layer's blocks and scales viewed as always; the metadata of i32 and the
    scales of f32 elements), each int as an i32. Of the relations, the
    scales' shape, the blocks' elements and max_cache_length against a
    sequence's capacity are checked (_kind_params)."""
    values = []
    for name, field in fields.items():
        if name in ("kv", "layer"):
            continue
        if isinstance(field, (int, np.integer)):
            values.append({"name": name, "type": "i32", "kind": "scalar",
                           "element": "i32", "bits": 32, "integer": True,
                           "float": False})
            continue
        rank = len(array_info(field).shape)
        if role == "cache" and name in LAYER_VIEWS:
            rank = 0 if name == "scales" and rank == 2 else rank - 2
        element = _UNDESCRIBED_ELEMENTS.get(name)
        values.append({"name": name, "type": "memref", "kind": "memref",
                       "element": element, "bits": element and 32,
                       "integer": element == "i32", "float": element == "f32",
                       "rank": rank, "shape": [None] * rank,
                       "strides": [None] * rank, "offset": None,
                       "identity": False, "layout": "strided",
                       "memory_space": None})
    cache = {"kind": kind, "role": role, "scales": scales_kind}
    return ArgumentABI({"type": f"!kvcache.{kind}_{role}", "cache": cache,
                        "values": values})


def _kind_params(role, fields, kind, scales):
    """The parameters of the values of a `kind` collection or layer cache:
    `fields` by name, scales added when given."""
    _check_kind(kind)
    if scales is not None:
        fields = dict(fields, scales=scales)
    argument = _kind_argument(kind, role, fields)
    try:
        # The type's element type is made up from the blocks' width.
        params = argument.pack(fields, any_element=("blocks",))
    except ValueError as error:
        hint = _other_kind(kind, role, fields)
        raise type(error)(f"{error}{hint}") from None
    _check_blocks_element(fields)
    _check_capacity(fields, kind)
    return params


# The numpy dtypes of blocks: those of the cache's element types (bf16 as
# 16-bit integers, fp8 as 8-bit ones), of the storage types only for a
# quantized cache (its codes).
_BLOCKS_DTYPES = frozenset(np.dtype(name) for element in ELEMENT_TYPES
                           for name in ARRAY_DTYPES[element])
_CODES_DTYPES = frozenset(np.dtype(name) for element in STORAGE_TYPES
                          for name in ARRAY_DTYPES[element])


def _check_blocks_element(fields):
    """ArgumentTypeError unless the blocks hold the elements of a cache
    (the type built for them takes any of their width): 1-byte codes for a
    quantized one (with scales)."""
    blocks = array_info(fields["blocks"])
    quantized = "scales" in fields
    dtypes = _CODES_DTYPES if quantized else _BLOCKS_DTYPES
    if blocks.element is not None:  # a torch bf16 tensor's, ...
        if blocks.element in (STORAGE_TYPES if quantized else ELEMENT_TYPES):
            return
    elif blocks.dtype in dtypes or (blocks.dtype is None and
                                    blocks.itemsize in {d.itemsize for d in dtypes}):
        return
    what = ("the 1-byte codes (fp8 or i8) of a quantized cache" if quantized
            else "the elements of a cache (f32, f16, bf16, fp8 or i8)")
    raise ArgumentTypeError(f"blocks must hold {what}, got {blocks.type_name}")


def _check_capacity(fields, kind):
    """ValueError unless max_cache_length (an i32, read unsigned) is at most
    what a sequence holds (docs/Contract.md 1): the lookup table's columns
    x page_size (blocks dim 3) for a kind with pages, block_tokens (blocks
    dim 3) for a continuous cache."""
    tokens = array_info(fields["blocks"]).shape[3]
    table = array_info(fields["lookup_table"]).shape
    max_cache_length = int(fields["max_cache_length"]) & 0xFFFFFFFF
    if CacheConfig(kind=kind).has_pages:
        if len(table) != 2:
            return  # not described: the kind's rank is not checked
        capacity = table[1] * tokens
        holds = (f"the lookup_table's {table[1]} columns of pages of "
                 f"{tokens} tokens hold {capacity}")
    else:
        capacity = tokens
        holds = f"a block (blocks dim 3) holds {capacity} tokens"
    if max_cache_length > capacity:
        raise ValueError(f"max_cache_length is {max_cache_length}, more tokens "
                         f"than a sequence can have: {holds}")


def _other_kind(kind, role, fields):
    """' (the arrays are a <kind> cache's: pass kind=...)' when they fit
    another kind, else ''."""
    for other in KINDS:
        if other == kind or not _has_extension():
            continue
        try:
            _kind_argument(other, role, fields).pack(fields,
                                                     any_element=("blocks",))
        except (TypeError, ValueError):
            continue
        return f" (the arrays are a {other} cache's: pass kind={other!r})"
    return ""


def _metadata(blocks, cache_lengths, lookup_table, max_seq_length,
              max_cache_length):
    return {"blocks": blocks, "cache_lengths": cache_lengths,
            "lookup_table": lookup_table, "max_seq_length": max_seq_length,
            "max_cache_length": max_cache_length}


def collection_params(blocks, cache_lengths, lookup_table, max_seq_length,
                      max_cache_length, kind="paged", *, scales=None):
    """The parameters of one collection argument of `kind` ("paged": 29,
    "continuous": 27): blocks (6-D), cache_lengths, lookup_table, the two
    u32 scalars; then, for a quantized collection, its `scales` (tensor 7,
    token_head 13, block<G> 15)."""
    fields = _metadata(blocks, cache_lengths, lookup_table, max_seq_length,
                       max_cache_length)
    return _kind_params("collection", fields, kind, scales)


def cache_params(blocks, cache_lengths, lookup_table, max_seq_length,
                 max_cache_length, kv=0, layer=0, kind="paged", *,
                 scales=None):
    """The parameters of one layer-cache argument of `kind` ("paged": 25,
    "continuous": 23): K (kv=0) or V (kv=1) of `layer`, as
    `get_key_cache`/`get_value_cache` return it. The blocks view is 4-D
    `[blocks, tokens, num_heads, head_size]` at `blocks[*, kv, layer]`.
    A quantized cache's `scales` add the layer's view of them: tensor 3
    (the 0-D `scales[layer, kv]`), token_head 9, block<G> 11."""
    fields = _metadata(blocks, cache_lengths, lookup_table, max_seq_length,
                       max_cache_length)
    fields.update(kv=kv, layer=layer)
    return _kind_params("cache", fields, kind, scales)


def paged_collection_params(blocks, cache_lengths, lookup_table,
                            max_seq_length, max_cache_length):
    """The 29 parameters of one `!kvcache.paged_collection` argument."""
    return collection_params(blocks, cache_lengths, lookup_table,
                             max_seq_length, max_cache_length, "paged")


def paged_cache_params(blocks, cache_lengths, lookup_table, max_seq_length,
                       max_cache_length, kv=0, layer=0):
    """The 25 parameters of one `!kvcache.paged_cache` argument: K (kv=0) or
    V (kv=1) of `layer`, as `get_key_cache`/`get_value_cache` return it."""
    return cache_params(blocks, cache_lengths, lookup_table, max_seq_length,
                        max_cache_length, kv, layer, "paged")


def continuous_collection_params(blocks, cache_lengths, lookup_table,
                                 max_seq_length, max_cache_length):
    """The 27 parameters of one `!kvcache.continuous_collection` argument
    (its lookup_table is 1-D: 5 descriptor fields)."""
    return collection_params(blocks, cache_lengths, lookup_table,
                             max_seq_length, max_cache_length, "continuous")


def continuous_cache_params(blocks, cache_lengths, lookup_table,
                            max_seq_length, max_cache_length, kv=0, layer=0):
    """The 23 parameters of one `!kvcache.continuous_cache` argument: K
    (kv=0) or V (kv=1) of `layer`; the view is
    `[num_blocks, block_tokens, num_heads, head_size]`."""
    return cache_params(blocks, cache_lengths, lookup_table, max_seq_length,
                        max_cache_length, kv, layer, "continuous")


class KernelArgs:
    """Builds the flat parameter list of a kernel, argument by argument, in
    the order of the kernel's signature."""

    def __init__(self):
        self._values = []

    def argument(self, argument, value):
        """An argument of any type: `argument` an ArgumentABI (or a type's
        text, described by the compiler), `value` as ArgumentABI.params
        takes it."""
        if isinstance(argument, str):
            argument = describe_type(argument)
        self._values += argument.params(value)
        return self

    def cache(self, blocks, cache_lengths, lookup_table, max_seq_length,
              max_cache_length, kv=0, layer=0, kind="paged", *, scales=None):
        """A `!kvcache.<kind>_cache` argument (cache_params); `scales` for
        a quantized one."""
        self._values += cache_params(blocks, cache_lengths, lookup_table,
                                     max_seq_length, max_cache_length, kv,
                                     layer, kind, scales=scales)
        return self

    def collection(self, blocks, cache_lengths, lookup_table, max_seq_length,
                   max_cache_length, kind="paged", *, scales=None):
        """A `!kvcache.<kind>_collection` argument (collection_params);
        `scales` for a quantized one."""
        self._values += collection_params(blocks, cache_lengths, lookup_table,
                                          max_seq_length, max_cache_length,
                                          kind, scales=scales)
        return self

    def memref(self, array):
        self._values += memref_params(array)
        return self

    def index(self, value):
        self._values.append(np.uint64(value))
        return self

    def i32(self, value):
        self._values.append(np.uint32(np.int64(value) & 0xFFFFFFFF))
        return self

    def f32(self, value):
        self._values.append(np.float32(value))
        return self

    def values(self):
        """The parameters as numpy scalars (cupy.RawKernel arguments)."""
        return tuple(self._values)

    def ctypes_pointers(self):
        """`void **kernelParams` for cuLaunchKernel. Keep the returned
        object alive until the launch has been issued."""
        holders = []
        for value in self._values:
            ctype = {np.dtype(np.uint64): ctypes.c_uint64,
                     np.dtype(np.uint32): ctypes.c_uint32,
                     np.dtype(np.float32): ctypes.c_float}[value.dtype]
            holders.append(ctype(value.item()))
        pointers = (ctypes.c_void_p * len(holders))(
            *[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in holders])
        pointers._holders = holders  # keep the values alive with the array
        return pointers

    def __len__(self):
        return len(self._values)
