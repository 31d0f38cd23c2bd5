"""Run kvcache IR on the CPU, in-process, on numpy arrays.

`CPUModule(ir)` lowers the IR with the `kvcache-to-cpu` pipeline and compiles
it with MLIR's ExecutionEngine (LLVM's JIT). Its functions are then called
like Python functions; memref arguments take numpy arrays, and the memref
descriptors point into the arrays (nothing is copied: outputs are written in
place):

    cpu = kvcache.CPUModule(builders.store_ragged(config))
    cpu.store_ragged(*cache.arguments(), layer, new_rows, row_offsets)

Argument types, by the function's MLIR signature:
    memref<...>                 a numpy array of that rank, element type
                                (bf16: uint16 bits) and static sizes; an
                                identity layout needs a C-contiguous array, a
                                `strided<...>` one any strides it allows; at
                                least 16-byte aligned (docs/Contract.md 1)
    !kvcache.paged_collection   a reference.PagedCache or the tuple
                                (blocks, cache_lengths, lookup_table,
                                 max_seq_length, max_cache_length)
    !kvcache.paged_cache        a reference.CacheView (cache.key_cache(l)) or
                                the tuple (..., kv, layer)
    !kvcache.continuous_collection, !kvcache.continuous_cache
                                the same, with a reference.ContinuousCache
                                (a 1-D lookup_table)
    a type with `scales`        the same with the float32 scales array last:
                                (..., max_cache_length, scales) for a
                                collection, (..., kv, layer, scales) for a
                                layer cache, or a quantized reference cache
                                (docs/Contract.md 2.2)
    index, iN                   an int;  f32, f64: a float
A function may return nothing or one index/integer/f32/f64 scalar.
"""

import functools
import os
import re

import numpy as np

from . import _kvcache, abi
from .compiler import check_opt_level, lower_to_cpu, parse
from .config import parse_type

__all__ = ["CPUModule", "CompiledModule", "OPENMP_RUNTIME", "RUNNER_UTILS",
           "default_cpu_threads"]

# MLIR's runtime helpers (vector.print, memref printing), when installed.
RUNNER_UTILS = [path for path in (
    "/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so",
    "/usr/lib/llvm-22/lib/libmlir_runner_utils.so") if os.path.exists(path)]

# The LLVM OpenMP runtime (Debian's libomp-22-dev) that code lowered with
# kvcache-to-cpu{parallel=true} calls, or None when it is not installed.
OPENMP_RUNTIME = next((path for path in (
    "/usr/lib/llvm-22/lib/libomp.so", "/usr/lib/llvm-22/lib/libomp.so.5")
    if os.path.exists(path)), None)


def default_cpu_threads():
    """The threads a CPUModule uses when none are given: the environment
    variable KVCACHE_CPU_THREADS when set (1: serial code), else None (every
    core, as the OpenMP runtime counts them; OMP_NUM_THREADS applies)."""
    value = os.environ.get("KVCACHE_CPU_THREADS", "").strip()
    if not value:
        return None
    try:
        threads = int(value)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"KVCACHE_CPU_THREADS must be an integer >= 1, "
                         f"got {value!r}")
    return threads


# MLIR element type -> numpy dtypes accepted for it.
_ELEMENT_DTYPES = {
    "f32": ["float32"], "f64": ["float64"], "f16": ["float16"],
    "bf16": ["uint16", "int16"], "f8E4M3FN": ["uint8", "int8"],
    "f8E5M2": ["uint8", "int8"],
    "i1": ["bool", "uint8", "int8"], "i8": ["int8", "uint8"],
    "i16": ["int16", "uint16"], "i32": ["int32", "uint32"],
    "i64": ["int64", "uint64"], "index": ["int64", "uint64"],
}
_INTEGER_TYPES = {"index", "i1", "i8", "i16", "i32", "i64"}
_FLOAT_TYPES = {"f32", "f64"}
_ALIGNMENT = 16


class _MemRefType:
    """Shape, element type and layout of a `memref<...>` type string."""

    def __init__(self, text):
        match = re.fullmatch(r"memref<(.*)>", text.strip())
        if not match:
            raise ValueError(f"not a memref type: {text}")
        body = match.group(1)
        shape, _, layout = body.partition(",")
        *dims, self.element = shape.strip().split("x")
        self.text = text
        self.shape = [None if d == "?" else int(d) for d in dims]
        self.strides, self.offset, self.identity = None, 0, True
        layout = layout.strip()
        if layout:
            strided = re.match(r"strided<\[([^\]]*)\](?:,\s*offset:\s*([?\d-]+))?>",
                               layout)
            if not strided:
                raise ValueError(f"{text}: only identity and strided<...> "
                                 "layouts in the default memory space are "
                                 "supported from Python")
            self.identity = False
            self.strides = [None if s.strip() == "?" else int(s)
                            for s in strided.group(1).split(",") if s.strip()]
            offset = strided.group(2)
            self.offset = None if offset == "?" else int(offset or 0)

    def check(self, array, what):
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{what}: expected a numpy array for {self.text}, "
                            f"got {type(array).__name__}")
        if array.ndim != len(self.shape):
            raise ValueError(f"{what}: {self.text} needs a {len(self.shape)}-D "
                             f"array, got shape {array.shape}")
        if array.dtype.name not in _ELEMENT_DTYPES.get(self.element, []):
            raise TypeError(f"{what}: {self.text} needs "
                            f"{' or '.join(_ELEMENT_DTYPES.get(self.element, ['?']))} "
                            f"elements, got {array.dtype}")
        for axis, (size, expected) in enumerate(zip(array.shape, self.shape)):
            if expected is not None and size != expected:
                raise ValueError(f"{what}: dimension {axis} of {self.text} is "
                                 f"{expected}, the array has shape {array.shape}")
        strides = _element_strides(array, what)
        if array.size == 0:
            return strides
        if self.identity and not array.flags.c_contiguous:
            raise ValueError(f"{what}: {self.text} has the identity layout: "
                             "pass a C-contiguous array (np.ascontiguousarray)")
        if self.strides is not None:
            for axis, (stride, expected) in enumerate(zip(strides, self.strides)):
                if expected is not None and stride != expected and array.shape[axis] > 1:
                    raise ValueError(f"{what}: stride {axis} of {self.text} is "
                                     f"{expected} elements, the array's is {stride}")
        if self.offset not in (None, 0):
            raise ValueError(f"{what}: {self.text} has a static offset: pass "
                             "its base array instead")
        if array.ctypes.data % _ALIGNMENT:
            raise ValueError(f"{what}: the array is not {_ALIGNMENT}-byte "
                             "aligned (docs/Contract.md, section 1); "
                             "pass a copy")
        return strides


def _element_strides(array, what):
    strides = []
    for stride in array.strides:
        if stride % array.itemsize:
            raise ValueError(f"{what}: array strides must be whole elements")
        strides.append(stride // array.itemsize)
    return strides


def _check_collection(fields, config, type_text, what):
    """The blocks and lookup table of `fields` (a collection's five values
    first) against the type."""
    blocks, lookup_table = fields[0], fields[2]
    rank = config.lookup_table_rank
    if np.ndim(lookup_table) != rank:
        raise ValueError(f"{what}: {type_text} needs a {rank}-D lookup_table "
                         f"(a {config.kind} cache's), got shape "
                         f"{np.shape(lookup_table)}")
    if not isinstance(blocks, np.ndarray) or blocks.ndim != 6:
        raise ValueError(f"{what}: blocks must be a 6-D numpy array")
    # Dims the type fixes; None: free, named in order by `names`.
    tokens = config.page_size if config.has_pages else None
    expected = [None, config.kv_dim, None, tokens, config.num_heads,
                config.head_size]
    names = ["pages" if config.has_pages else "blocks", "layers", "block_tokens"]
    if any(size not in (None, actual)
           for size, actual in zip(expected, blocks.shape)):
        shape = ", ".join(str(size) if size is not None else names.pop(0)
                          for size in expected)
        raise ValueError(f"{what}: {type_text} needs blocks of shape "
                         f"[{shape}], got {blocks.shape}")
    if blocks.dtype.name not in _ELEMENT_DTYPES[config.dtype]:
        raise TypeError(f"{what}: {type_text} needs "
                        f"{_ELEMENT_DTYPES[config.dtype][0]} blocks, got "
                        f"{blocks.dtype}")
    if blocks.size and blocks.ctypes.data % _ALIGNMENT:
        raise ValueError(f"{what}: blocks is not {_ALIGNMENT}-byte aligned")


def _check_scales(scales, blocks, config, type_text, what):
    """The scales array of a quantized cache against its type and blocks
    (docs/Contract.md 2.2)."""
    if not isinstance(scales, np.ndarray) or scales.dtype != np.float32:
        raise TypeError(f"{what}: the scales of {type_text} must be a float32 "
                        "numpy array, got "
                        f"{getattr(scales, 'dtype', type(scales).__name__)}")
    shape = config.scales_shape(blocks.shape[0], blocks.shape[2],
                                blocks.shape[3])
    if scales.shape != shape:
        raise ValueError(f"{what}: {type_text} with blocks of shape "
                         f"{blocks.shape} needs {config.scales} scales of "
                         f"shape {shape}, got {scales.shape}")
    inner = scales.shape[1:] if config.scales == "tensor" else scales.shape[3:]
    strides = _element_strides(scales, what)[-len(inner):]
    for axis, (size, stride) in enumerate(zip(inner, strides)):
        if size > 1 and stride != int(np.prod(inner[axis + 1:])):
            raise ValueError(f"{what}: the dims of the scales of {type_text} "
                             "after num_layers must be contiguous (row-major)")
    if scales.size and scales.ctypes.data % _ALIGNMENT:
        raise ValueError(f"{what}: scales is not {_ALIGNMENT}-byte aligned")


def _fields(value, method, count, type_text, what, forms):
    """The fields of a cache argument: value.<method>() or the tuple."""
    fields = getattr(value, method)() if hasattr(value, method) else tuple(value)
    if len(fields) != count:
        raise TypeError(f"{what}: {type_text} takes {forms}, got "
                        f"{len(fields)} values")
    return fields


def _flatten_cache(type_text, value, what):
    """The values of a kvcache collection or layer-cache argument, or None
    when `type_text` is no such type."""
    parsed = parse_type(type_text)
    if parsed is None:
        return None
    config, role = parsed
    scaled = config.scales is not None
    tail = ", scales)" if scaled else ")"
    cache_class = ("a quantized " if scaled else "a ") + "reference." + (
        "CacheView" if role == "cache" else
        {"paged": "PagedCache", "continuous": "ContinuousCache"}[config.kind])
    if role == "collection":
        fields = _fields(value, "arguments", 5 + scaled, type_text, what,
                         f"{cache_class} or (blocks, cache_lengths, "
                         f"lookup_table, max_seq_length, max_cache_length{tail}")
        params = fields[:5]
    else:
        fields = _fields(value, "parameters", 7 + scaled, type_text, what,
                         f"{cache_class} or (blocks, cache_lengths, "
                         "lookup_table, max_seq_length, max_cache_length, kv, "
                         f"layer{tail}")
        params = fields[:7]
    _check_collection(fields, config, type_text, what)
    scales = fields[-1] if scaled else None
    if scaled:
        _check_scales(scales, fields[0], config, type_text, what)
    if role == "collection":
        return abi.collection_params(*params, kind=config.kind, scales=scales)
    return abi.cache_params(*params, kind=config.kind, scales=scales)


def _flatten(type_text, value, what):
    """The LLVM-level values of one argument (docs/Contract.md section 7 for
    the kvcache types, MLIR's memref descriptor expansion for memrefs)."""
    if type_text.startswith("memref<"):
        strides = _MemRefType(type_text).check(value, what)
        pointer = value.ctypes.data
        return [pointer, pointer, 0, *value.shape, *strides]
    cache = _flatten_cache(type_text, value, what)
    if cache is not None:
        return cache
    if type_text in _INTEGER_TYPES:
        if not isinstance(value, (int, np.integer)):
            raise TypeError(f"{what}: {type_text} takes an int, got "
                            f"{type(value).__name__}")
        return [int(value)]
    if type_text in _FLOAT_TYPES:
        return [float(value)]
    raise TypeError(f"{what}: arguments of type {type_text} cannot be passed "
                    "from Python")


class CompiledModule:
    """Functions of kvcache IR lowered to the LLVM dialect and compiled
    in-process by MLIR's ExecutionEngine, called with numpy arrays. The
    subclasses choose the lowering: CPUModule (kvcache-to-cpu) and
    kvcache.EmulatedGPUModule (kvcache-to-emulated-gpu); the host functions
    have the same signatures under both, so calls are the same.

    `module.<name>(*args)` or `module.call(name, *args)` calls function
    `name`; `module.lowered` is the LLVM-dialect module that was compiled.
    """

    def __init__(self, source, lowered, opt_level, shared_libs,
                 emulator_library=""):
        """`source`: the parsed input (its func.func signatures are the
        calling convention); `lowered`: its LLVM-dialect lowering;
        `emulator_library`: the GPU emulator runtime to load and trap
        failures of, or "" for none."""
        self.signatures = {name: (arguments, results)
                           for name, kind, arguments, results in source.functions()
                           if kind == "func.func"}
        self.lowered = lowered
        libs = RUNNER_UTILS if shared_libs is None else list(shared_libs)
        self._engine = _kvcache.JitModule(lowered, opt_level, libs,
                                          emulator_library)

    def call(self, name, *args):
        """Calls function `name`: one Python value per MLIR argument."""
        if name not in self.signatures:
            raise KeyError(f"no func.func @{name} in the module (functions: "
                           f"{', '.join(sorted(self.signatures))})")
        arguments, _ = self.signatures[name]
        if len(args) != len(arguments):
            raise TypeError(f"@{name} takes {len(arguments)} arguments "
                            f"({', '.join(arguments)}), got {len(args)}")
        flat = []
        for position, (type_text, value) in enumerate(zip(arguments, args)):
            flat += _flatten(type_text, value, f"argument {position} of @{name}")
        return self._engine.invoke(name, flat)

    def __getattr__(self, name):
        signatures = self.__dict__.get("signatures", {})
        if name in signatures:
            return functools.partial(self.call, name)
        raise AttributeError(name)

    def __dir__(self):
        return list(super().__dir__()) + list(self.signatures)


class CPUModule(CompiledModule):
    """Functions of kvcache IR compiled for this CPU.

    ir:          MLIR text or a kvcache.Module (func.func functions)
    checked:     run-time checks of every access (kvcache-to-cpu{checked});
                 a failed check prints to stderr and aborts the process
    opt_level:   LLVM optimization level of the JIT (0-3)
    shared_libs: libraries to load (default: MLIR's runner utils; the
                 OpenMP runtime is added when the code is parallel)
    threads:     None (default): every core (kvcache-to-cpu{parallel=true},
                 as many threads as the OpenMP runtime has: the cores, or
                 OMP_NUM_THREADS), or KVCACHE_CPU_THREADS when that is set;
                 1: serial code, no OpenMP; N > 1: N threads

    The kernel ops' outer loops (sequences, (sequence, KV head) pairs of
    attention, page pairs, merge rows) are what runs in parallel; every
    output element is computed by one thread in the same order as the serial
    code, so results do not depend on `threads`.

    `module.<name>(*args)` or `module.call(name, *args)` calls function
    `name`; `module.lowered` is the LLVM-dialect module that was compiled;
    `module.threads` the threads asked for (None: the runtime's default).
    """

    def __init__(self, ir, checked=False, opt_level=2, shared_libs=None,
                 filename="<string>", threads=None):
        check_opt_level(opt_level)
        if threads is None:
            threads = default_cpu_threads()
        if threads is not None and (not isinstance(threads, int) or
                                    isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be None or an int >= 1, "
                             f"got {threads!r}")
        parallel = threads != 1
        if parallel and OPENMP_RUNTIME is None:
            raise FileNotFoundError(
                "CPUModule: parallel code needs the LLVM OpenMP runtime "
                "/usr/lib/llvm-22/lib/libomp.so (apt-get install "
                "libomp-22-dev), or pass threads=1 for serial code")
        self.threads = threads
        source = parse(ir, filename)
        libs = list(RUNNER_UTILS if shared_libs is None else shared_libs)
        if parallel:
            libs.append(OPENMP_RUNTIME)
        lowered = lower_to_cpu(source, checked, parallel=parallel,
                               threads=threads or 0)
        super().__init__(source, lowered, opt_level, libs)
