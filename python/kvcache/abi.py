"""Launch arguments of kernels compiled by kvcache-mlir (docs/Contract.md,
section 7; docs/KernelABI.md).

A kernel parameter of type `!kvcache.paged_cache` becomes five values: the
layer's `blocks` view (a 4-D memref `[num_pages, page_size, num_heads,
head_size]`), `cache_lengths` (1-D), `lookup_table` (2-D), `max_seq_length`
and `max_cache_length` (u32). A `!kvcache.paged_collection` becomes the 6-D
`blocks`, the same metadata and the two u32 scalars. Each memref then expands
to MLIR's descriptor: allocated pointer, aligned pointer, offset, sizes,
strides (all u64, offset and strides in elements). An `index` is a u64, an
`i32` a u32.

So a kernel `(!kvcache.paged_cache, memref<?x8x128xf16>)` takes
11 + 5 + 7 + 2 = 25 parameters for the cache, then 9 for the memref.

Arrays are anything exposing `__cuda_array_interface__` (cupy, torch on the
GPU) or `__array_interface__` (numpy, for tests). Nothing here needs a GPU
or a CUDA toolkit.

    args = KernelArgs().cache(blocks, cache_lengths, lookup_table,
                              max_seq_length, max_cache_length,
                              kv=0, layer=3).index(batch).memref(out)
    kernel(grid, block, args.values())            # cupy.RawKernel
    params = args.ctypes_pointers()               # cuLaunchKernel kernelParams
"""

import ctypes

import numpy as np

__all__ = ["ArrayInfo", "KernelArgs", "array_info", "memref_params",
           "paged_cache_params", "paged_collection_params"]


class ArrayInfo:
    """Address, shape and element strides of an array."""

    def __init__(self, pointer, shape, strides, itemsize):
        self.pointer = int(pointer)
        self.shape = tuple(int(s) for s in shape)
        self.strides = tuple(int(s) for s in strides)  # in elements
        self.itemsize = int(itemsize)


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
                     [s // itemsize for s in byte_strides], itemsize)


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


def _check_metadata(cache_lengths, lookup_table):
    lengths, table = array_info(cache_lengths), array_info(lookup_table)
    if len(lengths.shape) != 1 or lengths.itemsize != 4:
        raise ValueError("cache_lengths must be a 1-D array of 32-bit ints")
    if len(table.shape) != 2 or table.itemsize != 4:
        raise ValueError("lookup_table must be a 2-D array of 32-bit ints")
    for name, info in (("cache_lengths", lengths), ("lookup_table", table)):
        expected = [1] if len(info.shape) == 1 else [info.shape[1], 1]
        if list(info.strides) != expected and 0 not in info.shape:
            raise ValueError(f"{name} must be contiguous (row-major)")
    return lengths, table


def _metadata_params(cache_lengths, lookup_table, max_seq_length,
                     max_cache_length):
    lengths, table = _check_metadata(cache_lengths, lookup_table)
    return (memref_params(lengths) + memref_params(table) +
            [np.uint32(max_seq_length), np.uint32(max_cache_length)])


def _check_blocks(blocks):
    info = array_info(blocks)
    if len(info.shape) != 6:
        raise ValueError(
            "blocks must be 6-D [num_pages, kv_dim, num_layers, page_size, "
            f"num_heads, head_size], got shape {info.shape}")
    _, _, _, page_size, num_heads, head_size = info.shape
    if info.strides[3:] != (num_heads * head_size, head_size, 1):
        raise ValueError("the inner dims [page_size, num_heads, head_size] of "
                         "blocks must be contiguous")
    return info


def paged_collection_params(blocks, cache_lengths, lookup_table,
                            max_seq_length, max_cache_length):
    """The 29 parameters of one `!kvcache.paged_collection` argument."""
    info = _check_blocks(blocks)
    return memref_params(info) + _metadata_params(
        cache_lengths, lookup_table, max_seq_length, max_cache_length)


def paged_cache_params(blocks, cache_lengths, lookup_table, max_seq_length,
                       max_cache_length, kv=0, layer=0):
    """The 25 parameters of one `!kvcache.paged_cache` argument: K (kv=0) or
    V (kv=1) of `layer`, as `get_key_cache`/`get_value_cache` return it."""
    info = _check_blocks(blocks)
    num_pages, kv_dim, num_layers, page_size, num_heads, head_size = info.shape
    if not 0 <= kv < kv_dim:
        raise ValueError(f"kv={kv} out of range for kv_dim {kv_dim}")
    if not 0 <= layer < num_layers:
        raise ValueError(f"layer={layer} out of range for {num_layers} layers")
    offset = kv * info.strides[1] + layer * info.strides[2]
    view = memref_params(
        info, offset=offset,
        shape=(num_pages, page_size, num_heads, head_size),
        strides=(info.strides[0], num_heads * head_size, head_size, 1))
    return view + _metadata_params(cache_lengths, lookup_table,
                                   max_seq_length, max_cache_length)


class KernelArgs:
    """Builds the flat parameter list of a kernel, argument by argument, in
    the order of the kernel's signature."""

    def __init__(self):
        self._values = []

    def cache(self, blocks, cache_lengths, lookup_table, max_seq_length,
              max_cache_length, kv=0, layer=0):
        self._values += paged_cache_params(blocks, cache_lengths,
                                           lookup_table, max_seq_length,
                                           max_cache_length, kv, layer)
        return self

    def collection(self, blocks, cache_lengths, lookup_table, max_seq_length,
                   max_cache_length):
        self._values += paged_collection_params(
            blocks, cache_lengths, lookup_table, max_seq_length,
            max_cache_length)
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
