"""Launch arguments of kernels compiled by kvcache-mlir (docs/Contract.md,
section 7; docs/KernelABI.md).

A kernel parameter of type `!kvcache.paged_cache` becomes five values: the
layer's `blocks` view (a 4-D memref `[num_pages, page_size, num_heads,
head_size]`), `cache_lengths` (1-D), `lookup_table` (2-D), `max_seq_length`
and `max_cache_length` (u32). A `!kvcache.paged_collection` becomes the 6-D
`blocks`, the same metadata and the two u32 scalars. The continuous kind
(`!kvcache.continuous_cache`, `!kvcache.continuous_collection`) is the same
with `[num_blocks, block_tokens, ...]` blocks and a 1-D lookup table
(`kind="continuous"`). Each memref then expands to MLIR's descriptor:
allocated pointer, aligned pointer, offset, sizes, strides (all u64, offset
and strides in elements). An `index` is a u64, an `i32` a u32.

So a kernel `(!kvcache.paged_cache, memref<?x8x128xf16>)` takes
11 + 5 + 7 + 2 = 25 parameters for the cache, then 9 for the memref; with a
`!kvcache.continuous_cache` 11 + 5 + 5 + 2 = 23, then 9. Collections:
15 + 5 + 7 + 2 = 29 (paged), 15 + 5 + 5 + 2 = 27 (continuous).

A quantized cache (a type with `scales`, docs/Contract.md 2.2) has a sixth
value, its f32 scales (`scales=`): the whole array for a collection
(tensor `[num_layers, kv_dim]` 7 parameters, token_head 5-D 13, block<G>
6-D 15); for a layer cache the view at `[*, kv, layer, ...]` (token_head
`[blocks, tokens, H]` 9, block<G> `[blocks, tokens, H, D/G]` 11) or, for
tensor scales, the 0-D element `[layer, kv]` (3: two pointers and the
offset). A paged_cache with token_head scales is thus 25 + 9 = 34.

Arrays are anything exposing `__cuda_array_interface__` (cupy, torch on the
GPU) or `__array_interface__` (numpy, for tests). Nothing here needs a GPU
or a CUDA toolkit.

    args = KernelArgs().cache(blocks, cache_lengths, lookup_table,
                              max_seq_length, max_cache_length,
                              kv=0, layer=3).index(batch).memref(out)
    kernel(grid, block, args.values())            # cupy.RawKernel
    params = args.ctypes_pointers()               # cuLaunchKernel kernelParams

A continuous cache: `.cache(..., kind="continuous")` (a 1-D lookup_table),
e.g. `.cache(*cache.arguments(), kv=0, layer=3, kind=cache.kind)` with a
kvcache.reference.ContinuousCache. A quantized one:
`.cache(*cache.arguments()[:5], kv=0, layer=3, kind=cache.kind,
scales=cache.scales)`, `.collection(*cache.arguments()[:5],
kind=cache.kind, scales=cache.scales)`.
"""

import ctypes

import numpy as np

__all__ = ["ArrayInfo", "KernelArgs", "array_info", "cache_params",
           "collection_params", "continuous_cache_params",
           "continuous_collection_params", "memref_params",
           "paged_cache_params", "paged_collection_params"]


class ArrayInfo:
    """Address, shape and element strides of an array; `typestr` the
    array interface's element type ("<f4", ...) when known."""

    def __init__(self, pointer, shape, strides, itemsize, typestr=None):
        self.pointer = int(pointer)
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)  # in elements
        self.itemsize = int(itemsize)
        self.typestr = typestr


def array_info(array):
    """ArrayInfo of a cupy/torch/numpy array, or an ArrayInfo unchanged."""
    if isinstance(array, ArrayInfo):
        return array
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        interface = getattr(array, "__array_interface__", None)
    if interface is None:
        raise TypeError(
            f"{type(array).__name__} is not an array: pass a cupy, torch or "
            "numpy array, or a kvcache.abi.ArrayInfo")
    itemsize = np.dtype(interface["typestr"]).itemsize
    shape = interface["shape"]
    byte_strides = interface.get("strides")
    if byte_strides is None:  # C-contiguous
        byte_strides, step = [], itemsize
        for size in reversed(shape):
            byte_strides.insert(0, step)
            step *= size
    for stride in byte_strides:
        if stride % itemsize:
            raise ValueError("array strides must be whole elements")
    return ArrayInfo(interface["data"][0], shape,
                     [s // itemsize for s in byte_strides], itemsize,
                     interface["typestr"])


def memref_params(array, offset=0, shape=None, strides=None):
    """The descriptor fields of a memref over `array`: allocated pointer,
    aligned pointer, offset, sizes..., strides... (all u64). `offset`,
    `shape` and `strides` (in elements) describe a view of it."""
    info = array_info(array)
    shape = info.shape if shape is None else shape
    strides = info.strides if strides is None else strides
    if len(shape) != len(strides):
        raise ValueError("shape and strides must have the same rank")
    fields = [info.pointer, info.pointer, offset, *shape, *strides]
    return [np.uint64(v) for v in fields]


# Per kind: the lookup table's rank and the names of blocks' dims 0 and 3.
_LAYOUTS = {"paged": (2, "num_pages", "page_size"),
            "continuous": (1, "num_blocks", "block_tokens")}


def _layout(kind):
    if not isinstance(kind, str):
        raise TypeError(f"kind must be one of {', '.join(map(repr, _LAYOUTS))}, "
                        f"got a {type(kind).__name__}: pass a quantized cache's "
                        "scales as scales=..., after the five values")
    if kind not in _LAYOUTS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, _LAYOUTS))}, "
                         f"got {kind!r}")
    return _LAYOUTS[kind]


def _check_metadata(cache_lengths, lookup_table, kind):
    rank = _layout(kind)[0]
    lengths, table = array_info(cache_lengths), array_info(lookup_table)
    if len(lengths.shape) != 1 or lengths.itemsize != 4:
        raise ValueError("cache_lengths must be a 1-D array of 32-bit ints")
    if len(table.shape) != rank or table.itemsize != 4:
        message = (f"lookup_table of a {kind} cache must be a {rank}-D array "
                   "of 32-bit ints")
        other = [k for k, layout in _LAYOUTS.items()
                 if layout[0] == len(table.shape) and k != kind]
        if other:
            message += (f" (a {len(table.shape)}-D table is a {other[0]} "
                        f"cache's: pass kind={other[0]!r})")
        raise ValueError(message)
    for name, info in (("cache_lengths", lengths), ("lookup_table", table)):
        expected = [1] if len(info.shape) == 1 else [info.shape[1], 1]
        if list(info.strides) != expected and 0 not in info.shape:
            raise ValueError(f"{name} must be contiguous (row-major)")
    return lengths, table


def _metadata_params(cache_lengths, lookup_table, max_seq_length,
                     max_cache_length, kind):
    lengths, table = _check_metadata(cache_lengths, lookup_table, kind)
    return (memref_params(lengths) + memref_params(table) +
            [np.uint32(max_seq_length), np.uint32(max_cache_length)])


def _check_blocks(blocks, kind):
    _, blocks_name, tokens_name = _layout(kind)
    info = array_info(blocks)
    if len(info.shape) != 6:
        raise ValueError(
            f"blocks must be 6-D [{blocks_name}, kv_dim, num_layers, "
            f"{tokens_name}, num_heads, head_size], got shape {info.shape}")
    _, _, _, _, num_heads, head_size = info.shape
    if info.strides[3:] != (num_heads * head_size, head_size, 1):
        raise ValueError(f"the inner dims [{tokens_name}, num_heads, "
                         "head_size] of blocks must be contiguous")
    return info


# The scales' kind by their rank (docs/Contract.md 2.2).
_SCALES_RANKS = {2: "tensor", 5: "token_head", 6: "block<G>"}


def _check_scales(scales, blocks, kind):
    """ArrayInfo of the f32 scales of a quantized cache whose blocks are
    `blocks` (an ArrayInfo), checked against them; the kind is read from
    the rank."""
    info = array_info(scales)
    names = _layout(kind)[1:]
    if info.itemsize != 4 or info.typestr not in (None, "<f4", "=f4", "f4"):
        raise ValueError("scales must be an array of f32 (float32), got "
                         f"{info.typestr or f'{info.itemsize}-byte elements'}")
    rank = len(info.shape)
    scales_kind = _SCALES_RANKS.get(rank)
    num_blocks, kv_dim, layers, tokens, heads, head_size = blocks.shape
    if scales_kind == "tensor":
        expected = (layers, kv_dim)
    else:
        expected = (num_blocks, kv_dim, layers, tokens, heads)
        if rank == 6 and info.shape[5] > 0 and head_size % info.shape[5] == 0:
            expected += (info.shape[5],)
    if scales_kind is None or info.shape != expected:
        raise ValueError(
            f"scales of blocks of shape {blocks.shape} must be [num_layers, "
            f"kv_dim] (tensor), [{names[0]}, kv_dim, num_layers, {names[1]}, "
            f"num_heads] (token_head) or the same then head_size / G "
            f"(block<G>), got shape {info.shape}")
    inner = info.shape[3:] if rank > 2 else info.shape[1:]
    for axis, size in enumerate(inner):
        stride = info.strides[rank - len(inner) + axis]
        if size > 1 and stride != int(np.prod(inner[axis + 1:])):
            raise ValueError(f"the dims of {scales_kind} scales after "
                             "num_layers must be contiguous (row-major)")
    return info


def _scales_view(info, kv, layer):
    """The descriptor fields of a layer's scales, `scales[*, kv, layer]`
    (token_head, block<G>) or the 0-D `scales[layer, kv]` (tensor)."""
    if len(info.shape) == 2:
        return memref_params(info, offset=layer * info.strides[0] +
                             kv * info.strides[1], shape=(), strides=())
    shape = (info.shape[0],) + info.shape[3:]
    strides = (info.strides[0],) + info.strides[3:]
    return memref_params(info, offset=kv * info.strides[1] +
                         layer * info.strides[2], shape=shape, strides=strides)


def collection_params(blocks, cache_lengths, lookup_table, max_seq_length,
                      max_cache_length, kind="paged", *, scales=None):
    """The parameters of one collection argument of `kind` ("paged": 29,
    "continuous": 27): blocks (6-D), cache_lengths, lookup_table, the two
    u32 scalars; then, for a quantized collection, its `scales` (tensor 7,
    token_head 13, block<G> 15)."""
    info = _check_blocks(blocks, kind)
    params = memref_params(info) + _metadata_params(
        cache_lengths, lookup_table, max_seq_length, max_cache_length, kind)
    if scales is not None:
        params += memref_params(_check_scales(scales, info, kind))
    return params


def cache_params(blocks, cache_lengths, lookup_table, max_seq_length,
                 max_cache_length, kv=0, layer=0, kind="paged", *,
                 scales=None):
    """The parameters of one layer-cache argument of `kind` ("paged": 25,
    "continuous": 23): K (kv=0) or V (kv=1) of `layer`, as
    `get_key_cache`/`get_value_cache` return it. The blocks view is 4-D
    `[blocks, tokens, num_heads, head_size]` at `blocks[*, kv, layer]`.
    A quantized cache's `scales` add the layer's view of them: tensor 3
    (the 0-D `scales[layer, kv]`), token_head 9, block<G> 11."""
    info = _check_blocks(blocks, kind)
    num_blocks, kv_dim, num_layers, tokens, num_heads, head_size = info.shape
    if not 0 <= kv < kv_dim:
        raise ValueError(f"kv={kv} out of range for kv_dim {kv_dim}")
    if not 0 <= layer < num_layers:
        raise ValueError(f"layer={layer} out of range for {num_layers} layers")
    offset = kv * info.strides[1] + layer * info.strides[2]
    view = memref_params(
        info, offset=offset,
        shape=(num_blocks, tokens, num_heads, head_size),
        strides=(info.strides[0], num_heads * head_size, head_size, 1))
    params = view + _metadata_params(cache_lengths, lookup_table,
                                     max_seq_length, max_cache_length, kind)
    if scales is not None:
        params += _scales_view(_check_scales(scales, info, kind), kv, layer)
    return params


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
