"""How each argument of a compiled function is passed (docs/Contract.md 7.4):
the compiler's description of an argument, and the packing of values by it.

`describe_type(text)` (and `kvcache.Module.abi()` for every function of a
module) asks the type interfaces of a kvcache type
(`KVCollectionTypeInterface`, `KVCacheTypeInterface`: `getLoweredTypes`,
`getLoweredNames`) for its values and describes each from its MLIR type, as
an `ArgumentABI` of `ValueABI`s. So any collection kind that implements the
interfaces packs the same way, and nothing here knows a kind's layout.
`ArgumentABI.params(value)` checks a value against the description and
expands it to the function's parameters; CPUModule, EmulatedGPUModule and
kvcache.abi.KernelArgs all pack through it. `ArrayInfo`/`array_info`
(kvcache.arrays) read an array's address, shape, strides, elements and
device from numpy, torch, DLPack producers and array interfaces;
`memref_params` gives a memref's descriptor fields.

Describing a type needs the compiler extension (kvcache._kvcache), imported
when first used; the rest is plain Python + numpy.
"""

import functools

import numpy as np

from .arrays import NON_NUMPY_ELEMENTS, ArrayInfo, array_info, c_strides
from .config import scales_shape_of_blocks
from .dtypes import ARRAY_DTYPES
from .errors import ArgumentTypeError

__all__ = ["ArgumentABI", "ArrayInfo", "ValueABI", "array_info",
           "describe_type", "memref_params"]


_U64 = (1 << 64) - 1


def memref_params(array, offset=0, shape=None, strides=None):
    """The descriptor fields of a memref over `array`: allocated pointer,
    aligned pointer, offset, sizes..., strides... (all u64; a negative
    stride modulo 2^64). `offset`, `shape` and `strides` (in elements)
    describe a view of it."""
    info = array_info(array)
    shape = info.shape if shape is None else shape
    strides = info.strides if strides is None else strides
    if len(shape) != len(strides):
        raise ValueError("shape and strides must have the same rank")
    fields = [info.pointer, info.pointer, offset, *shape, *strides]
    return list(np.array([v & _U64 for v in fields], np.uint64))


def _dims(sizes):
    """`[?, 2, 8]`: static sizes or strides, `?` for dynamic ones."""
    return "[" + ", ".join("?" if s is None else str(s) for s in sizes) + "]"


# What a scalar parameter of `bits` bits is packed as: the bits, unsigned;
# floats as themselves.
_UNSIGNED = {1: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32,
             64: np.uint64}
_FLOATS = {32: np.float32, 64: np.float64}


class ValueABI:
    """One value an argument lowers to, as the compiler describes it from
    its MLIR type (docs/KernelABI.md):

    name      the type interface's name ("blocks", "cache_lengths", ...;
              "" for an argument that is its own value)
    type      the MLIR type, printed (for messages)
    kind      "memref" or "scalar"
    element   a memref's element type, or the scalar type ("f16", "i32",
              "index", ...); `bits` its width, `integer` / `float` its class
    memrefs:  rank; shape and strides (None for a dynamic size or stride;
              strides None for a layout without them); offset (None when
              dynamic); identity (the identity layout); layout ("identity",
              "strided", ...); memory_space (None for the default)
    """

    def __init__(self, description):
        for key, value in description.items():
            setattr(self, key, value)
        if self.kind == "memref":
            self.shape = tuple(self.shape)
            if self.strides is not None:
                self.strides = tuple(self.strides)

    def __repr__(self):
        return f"ValueABI({self.name!r}, {self.type!r})"

    @property
    def dtypes(self):
        """The numpy dtype names whose arrays hold this memref's elements."""
        return ARRAY_DTYPES.get(self.element, ())

    def params(self, value, where=None, to_info=None):
        """The parameters of `value` (an array for a memref, an int or float
        for a scalar) after `check`. `where` starts the messages of errors
        (default: the type); `to_info(array, where)` makes the ArrayInfo
        (default: array_info)."""
        where = where or self.type
        if self.kind == "scalar":
            return [self.scalar(value, where)]
        info = to_info(value, where) if to_info else array_info(value, where)
        self.check(info, where)
        return memref_params(info)

    def scalar(self, value, where):
        """`value` as the parameter of this scalar type: the low `bits` of
        an int (unsigned), or the float rounded to f32 / f64."""
        if self.integer:
            if not isinstance(value, (int, np.integer)):
                raise TypeError(f"{where} takes an int, got "
                                f"{type(value).__name__}")
            return _UNSIGNED[self.bits](int(value) & ((1 << self.bits) - 1))
        if self.float and self.bits in _FLOATS:
            return _FLOATS[self.bits](value)
        raise TypeError(f"{where}: {self.type} values cannot be passed from "
                        "Python")

    def check_rank(self, info, where, noun="array", whose=""):
        """ValueError unless the array `info` has this memref's rank;
        `whose` follows the noun in the message."""
        if len(info.shape) != self.rank:
            raise ValueError(f"{where} needs a {self.rank}-D {noun}{whose}, "
                             f"got shape {info.shape}")

    def check(self, info, where, noun="array", element=True):
        """ValueError (ArgumentTypeError for the elements) unless the array
        `info` (an ArrayInfo) fits this memref type: its rank, static
        sizes, elements (unless not `element`; any of their width without
        a typestr), and static strides (all of them row-major for the
        identity layout)."""
        self.check_rank(info, where, noun)
        if any(size not in (None, actual)
               for size, actual in zip(self.shape, info.shape)):
            raise ValueError(f"{where} needs {noun} of shape "
                             f"{_dims(self.shape)}, got {info.shape}")
        if element:
            self._check_element(info, where, noun)
        if self.strides is None:
            raise TypeError(f"{where}: {self.type} has a layout without "
                            "strides: it cannot be passed from Python")
        if self.offset not in (None, 0):
            raise ValueError(f"{where}: {self.type} has a static offset: pass "
                             "its base array instead")
        if 0 in info.shape:
            return
        expected = c_strides(info.shape) if self.identity else self.strides
        for axis, (size, stride) in enumerate(zip(info.shape, info.strides)):
            if expected[axis] not in (None, stride) and size > 1:
                layout = ("the identity layout (row-major)" if self.identity
                          else f"the static strides {_dims(self.strides)}")
                raise ValueError(f"{where}: {noun} must be contiguous as "
                                 f"{self.type} says ({layout}): its stride "
                                 f"{axis} is {stride} elements, not "
                                 f"{expected[axis]}")

    @functools.cached_property
    def _numpy_dtypes(self):
        return frozenset(np.dtype(name) for name in self.dtypes)

    def _check_element(self, info, where, noun):
        """Elements numpy has a dtype for by it; others (a torch bf16
        tensor's) by their element type; an ArrayInfo that names neither
        by width."""
        if self.element is None:  # undescribed: any element type
            return
        if info.element is not None:
            if info.element == self.element:
                return
        elif info.dtype is not None:
            if info.dtype in self._numpy_dtypes:
                return
        elif self.bits is not None and info.itemsize * 8 == max(self.bits, 8):
            return
        accepted = " or ".join(self.dtypes + tuple(
            [self.element] if self.element in NON_NUMPY_ELEMENTS else []))
        raise ArgumentTypeError(f"{where} needs {noun} of {self.element} "
                                f"elements ({accepted or 'no numpy dtype'}), "
                                f"got {info.type_name}")


# The values of a layer cache that are views of the collection's: they
# take the collection's array and kv and layer (docs/Contract.md 7.1).
LAYER_VIEWS = ("blocks", "scales")


def _layer_view(name, info, kv, layer):
    """(view, offset): the layer's view of a collection's `blocks` or
    `scales` (ArrayInfo), `[:, kv, layer]`, or for 2-D (tensor) scales
    the 0-D `[layer, kv]`; `offset` in elements from info's pointer."""
    if name == "scales" and len(info.shape) == 2:
        shape, strides = (), ()
        offset = layer * info.strides[0] + kv * info.strides[1]
    else:
        shape = (info.shape[0],) + info.shape[3:]
        strides = (info.strides[0],) + info.strides[3:]
        offset = kv * info.strides[1] + layer * info.strides[2]
    return info.with_layout(shape, strides), offset


class ArgumentABI:
    """One argument of a function, as the compiler lowers it:

    type    the MLIR type, printed
    cache   None, or for a kvcache type what its type interfaces answer: a
            dict of kind ("paged", "continuous", or another kind's name),
            role ("collection" or "cache"), element_type, num_heads,
            head_size, page_size (None when dynamic), mla,
            assert_write_mode, scales (None, "tensor", "token_head",
            "block<G>")
    values  its ValueABIs: the lowered values of a kvcache type, the
            argument itself for a memref or scalar; None for a type that
            cannot be passed from Python
    """

    def __init__(self, description):
        self.type = description["type"]
        self.cache = description["cache"]
        values = description["values"]
        self.values = None if values is None else [ValueABI(v) for v in values]

    def __repr__(self):
        return f"ArgumentABI({self.type!r})"

    @property
    def role(self):
        """"collection", "cache" (a layer's K or V) or None."""
        return None if self.cache is None else self.cache["role"]

    @property
    def form(self):
        """The names of the fields a value of a kvcache argument is passed
        as: a collection's values, in order; a layer cache's values with kv
        and layer before a quantized cache's scales (the collection's
        values: its blocks and scales are sliced for the layer). None for
        other arguments."""
        if self.cache is None or self.values is None:
            return None
        names = [value.name for value in self.values]
        if self.role == "collection":
            return names
        scales = ["scales"] if "scales" in names else []
        return [n for n in names if n != "scales"] + ["kv", "layer"] + scales

    def params(self, value, prefix="", takes="", to_info=None):
        """The parameters of `value`: for a kvcache type the tuple of
        `form`, or an object with `arguments()` (a collection) or
        `parameters()` (a layer cache) that returns it; an array or number
        otherwise. `prefix` starts the messages of errors; `takes` names
        the objects accepted besides the tuple ("a PagedCache or ");
        `to_info(array, where)` makes each array's ArrayInfo (kvcache.cpu
        checks there that it is a host array)."""
        if self.values is None:
            raise TypeError(f"{prefix}arguments of type {self.type} cannot be "
                            "passed from Python")
        if self.cache is None:
            return self.values[0].params(value, prefix + self.type, to_info)
        method = "arguments" if self.role == "collection" else "parameters"
        fields = getattr(value, method)() if hasattr(value, method) else tuple(value)
        if len(fields) != len(self.form):
            raise TypeError(f"{prefix}{self.type} takes {takes}"
                            f"({', '.join(self.form)}), got {len(fields)} values")
        return self.pack(dict(zip(self.form, fields)), prefix, to_info)

    def pack(self, fields, prefix="", to_info=None, any_element=()):
        """The parameters of a kvcache argument from `fields`, a dict by the
        names of `form`; `to_info` as for `params`. The element types of
        the values named in `any_element` are not checked."""
        where = prefix + self.type
        to_info = to_info or array_info
        infos = {value.name: to_info(fields[value.name], f"{where} {value.name}")
                 for value in self.values if value.kind == "memref"}
        _check_scales(infos, self.cache["scales"], where)
        if self.role == "cache" and "blocks" in infos:
            _check_layer(fields, infos["blocks"].shape)
        # Every rank first: a kind mismatch shows as a table of another rank.
        arrays = {value.name: self._array(value, infos[value.name], fields,
                                          where)
                  for value in self.values if value.kind == "memref"}
        params = []
        for value in self.values:
            if value.kind == "scalar":
                params.append(value.scalar(fields[value.name],
                                           f"{where} {value.name}"))
                continue
            info, offset, noun = arrays[value.name]
            value.check(info, where, noun, value.name not in any_element)
            params += memref_params(info, offset=offset)
        return params

    def _array(self, value, info, fields, where):
        """(ArrayInfo, offset, noun) of the array `info` of memref `value`,
        its rank checked: a layer cache's blocks and scales are the layer's
        view of the collection's."""
        offset, noun = 0, value.name
        if self.role == "cache" and value.name in LAYER_VIEWS:
            rank = value.rank + 2 if value.name == "blocks" or value.rank else 2
            if len(info.shape) != rank:
                raise ValueError(
                    f"{where} needs the collection's {rank}-D {value.name}, "
                    f"the layer's view of which is [:, kv, layer], got shape "
                    f"{info.shape}")
            info, offset = _layer_view(value.name, info, fields["kv"],
                                       fields["layer"])
            noun += "[:, kv, layer]"
        value.check_rank(info, where, noun, f" (a {self.cache['kind']} cache's)")
        return info, offset, noun


def _check_layer(fields, blocks_shape):
    """kv and layer of a layer cache, against its collection's blocks."""
    kv, layer = fields["kv"], fields["layer"]
    for name, index in (("kv", kv), ("layer", layer)):
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(index).__name__}")
    if len(blocks_shape) >= 3:
        if not 0 <= kv < blocks_shape[1]:
            raise ValueError(f"kv={kv} out of range for kv_dim {blocks_shape[1]}")
        if not 0 <= layer < blocks_shape[2]:
            raise ValueError(f"layer={layer} out of range for {blocks_shape[2]} "
                             "layers")


def _check_scales(infos, scales, where):
    """ValueError unless the "scales" array of a quantized cache (`scales`
    names its kind: "tensor", "token_head", "block<G>") has the shape its
    6-D "blocks" give it (docs/Contract.md 2.2); `infos` the ArrayInfos by
    name."""
    if scales is None or "scales" not in infos:
        return
    blocks, info = infos["blocks"].shape, infos["scales"].shape
    if len(blocks) != 6:
        return  # the blocks' own check says what is wrong
    expected = scales_shape_of_blocks(scales, blocks)
    if info != expected:
        raise ValueError(f"{where} with blocks of shape {blocks} needs "
                         f"{scales} scales of shape {expected}, got {info}")


@functools.lru_cache(maxsize=None)
def describe_type(text):
    """The ArgumentABI of an argument of type `text` (MLIR's syntax), as
    the compiler's type interfaces lower it. Needs the compiler extension;
    kvcache.CompileError when `text` is no type."""
    from . import _kvcache  # the extension: a leaf, imported when used
    return ArgumentABI(_kvcache.describe_type(text))
