"""Run kvcache IR on the CPU, in-process, on numpy arrays or torch tensors.

`CPUModule(ir)` lowers the IR with the `kvcache-to-cpu` pipeline and compiles
it with MLIR's ExecutionEngine (LLVM's JIT). Its functions are then called
like Python functions; memref arguments take numpy arrays, CPU torch
tensors or any host array kvcache.arrays reads (DLPack, array interface),
and the memref descriptors point into the arrays (nothing is copied:
outputs are written in place):

    cpu = kvcache.CPUModule(builders.store_ragged(config))
    cpu.store_ragged(*cache.arguments(), layer, new_rows, row_offsets)

Arguments are passed as the compiler lowers them: `module.abi[name]` holds
each argument's kvcache.abi.ArgumentABI, which its type interfaces describe
(so any collection kind that implements them, the test dialect's included,
is passed the same way). By the function's MLIR signature:
    memref<...>                 an array of that rank, element type (bf16:
                                uint16 bits or a torch.bfloat16 tensor; fp8:
                                uint8 codes) and static sizes; an identity
                                layout needs a C-contiguous array, a
                                `strided<...>` one any strides it allows; at
                                least 16-byte aligned (docs/Contract.md 1);
                                in host memory (TypeError for a CUDA or meta
                                tensor)
    a collection type           a cache object (kvcache.caches.PagedCache,
                                ContinuousCache: its arguments()) or the
                                tuple of its lowered values, in the order of
                                the type's getLoweredNames: (blocks,
                                cache_lengths, lookup_table, max_seq_length,
                                max_cache_length) for !kvcache.paged_collection
                                and !kvcache.continuous_collection
    a layer cache type          a kvcache.caches.CacheView (cache.key_cache(l))
                                or the collection's tuple with kv and layer
                                added: (..., kv, layer)
    a type with `scales`        the same with the float32 scales array last:
                                (..., max_cache_length, scales) for a
                                collection, (..., kv, layer, scales) for a
                                layer cache, or a quantized cache object
                                (docs/Contract.md 2.2)
    index, iN                   an int;  f32, f64: a float
A function may return nothing or one index/integer/f32/f64 scalar.

Arguments that break the kernel ops' rules (docs/Contract.md 5: offsets
past the rows, a layer or page out of range, lengths past a sequence's
capacity, ...) raise kvcache.CheckError before anything is written: every
function with kernel ops has a check routine, `kvcache_check_<name>`, that
the compiler adds and the module runs on the same values before each call
(`module.checks` names those functions). Checks of what a function computes
itself run inside it with checked=True, and raise the same way.
"""

import functools
import os

from . import _kvcache
from .arguments import ArgumentABI
from .arrays import HOST_DEVICES, array_info
from .caches import ContinuousCache, PagedCache
from .compiler import check_opt_level, lower_to_cpu, parse_bufferized

__all__ = ["CPUModule", "CompiledModule", "OPENMP_RUNTIME", "RUNNER_UTILS",
           "default_cpu_threads", "host_cpu_features"]

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


def host_cpu_features():
    """The CPU features LLVM finds on this machine (sorted names without a
    sign, e.g. "avx512bf16"): what the JIT compiles for, and what
    kvcache-to-cpu{cpu-features=host} names."""
    return list(_kvcache.host_cpu_features())


def _check_cpu_features(cpu_features):
    """A CPUModule runs on this CPU: a feature named with + that this CPU
    lacks would make the JIT stop the process (LLVM cannot select its
    instructions), so it is a ValueError here."""
    if not isinstance(cpu_features, str) or cpu_features.strip() in ("", "host"):
        return
    host = set(host_cpu_features())
    missing = [name.strip()[1:] for name in cpu_features.split(",")
               if name.strip().startswith("+") and name.strip()[1:] not in host]
    if missing:
        raise ValueError(
            f"CPUModule: cpu_features {cpu_features!r} names {', '.join(missing)}, "
            f"which this CPU does not have (kvcache.cpu.host_cpu_features() lists "
            f"its features); the module is compiled for this CPU: pass "
            f"cpu_features=\"host\" (the default) or \"\"")


_ALIGNMENT = 16


def _host_info(array, where):
    """The ArrayInfo of a memref argument of in-process code: an array in
    host memory (numpy, a CPU torch tensor, any kvcache.arrays producer),
    at least 16-byte aligned (docs/Contract.md, section 1)."""
    info = array_info(array, where)
    if info.device not in HOST_DEVICES:
        memory = (f"in {info.device} memory" if info.device else
                  "an ArrayInfo, whose memory is not known to be the host's")
        raise TypeError(f"{where}: the array is {memory}; the compiled code "
                        "runs on the host: pass a CPU array (tensor.cpu(), "
                        "then copy the outputs back)")
    if 0 not in info.shape and info.pointer % _ALIGNMENT:
        raise ValueError(f"{where}: the array is not {_ALIGNMENT}-byte "
                         "aligned (docs/Contract.md, section 1); pass a copy")
    return info


# The cache objects (kvcache.caches) of each kind, named in messages.
_CACHE_CLASSES = {cls.kind: cls.__name__ for cls in (PagedCache, ContinuousCache)}


def _takes(argument):
    """The objects a kvcache argument takes besides its tuple, for messages:
    "a quantized caches.PagedCache or ", "a caches.CacheView or ", ..."""
    kind = argument.cache["kind"]
    if kind not in _CACHE_CLASSES:
        method = "arguments" if argument.role == "collection" else "parameters"
        return f"an object with {method}() or "
    name = "CacheView" if argument.role == "cache" else _CACHE_CLASSES[kind]
    quantized = "quantized " if argument.cache["scales"] is not None else ""
    return f"a {quantized}caches.{name} or "


def _flatten(argument, value, prefix):
    """The LLVM-level values of one argument (docs/Contract.md section 7 for
    the kvcache types, MLIR's memref descriptor expansion for memrefs), by
    the compiler's description (kvcache.abi.ArgumentABI)."""
    if argument.cache is not None:
        return argument.params(value, prefix, _takes(argument), _host_info)
    lowered = argument.values[0] if argument.values else None
    if lowered is not None and lowered.kind == "memref" and lowered.memory_space:
        raise TypeError(f"{prefix}{argument.type}: memrefs outside the "
                        "default memory space cannot be passed from Python")
    return argument.params(value, prefix, to_info=_host_info)


class CompiledModule:
    """Functions of kvcache IR lowered to the LLVM dialect and compiled
    in-process by MLIR's ExecutionEngine, called with host arrays (numpy,
    torch: kvcache.arrays). The subclasses choose the lowering: CPUModule
    (kvcache-to-cpu) and kvcache.EmulatedGPUModule (kvcache-to-emulated-gpu);
    the host functions have the same signatures under both, so calls are the
    same.

    `module.<name>(*args)` or `module.call(name, *args)` calls function
    `name`; `module.lowered` is the LLVM-dialect module that was compiled;
    `module.signatures[name]` its argument and result types (text) and
    `module.abi[name]` its arguments as the compiler lowers them
    (kvcache.abi.ArgumentABI); `module.checks` the functions checked before
    each call (kvcache.CheckError when a check fails: nothing was written).
    """

    def __init__(self, source, lowered, opt_level, shared_libs,
                 emulator_library=""):
        """`source`: the parsed input (its func.func signatures, bufferized,
        are the calling convention); `lowered`: its LLVM-dialect lowering;
        `emulator_library`: the GPU emulator runtime to load, each call
        then running in its capture mode (the failures it records are
        raised as kvcache.EmulatorError once the call returns), or "" for
        none."""
        # The pipelines bufferize a tensor-level input first: its functions
        # are called as kvcache-bufferize leaves them (memrefs, the outputs
        # passed as arguments; docs/Contract.md 3.5).
        interface = source.clone()
        interface.run_pipeline("kvcache-bufferize")
        self.signatures = {name: (arguments, results)
                           for name, kind, arguments, results
                           in interface.functions() if kind == "func.func"}
        self.abi = {name: [ArgumentABI(argument) for argument in arguments]
                    for name, arguments in interface.abi()}
        self.lowered = lowered
        libs = RUNNER_UTILS if shared_libs is None else list(shared_libs)
        self._engine = _kvcache.JitModule(lowered, opt_level, libs,
                                          emulator_library)
        self.checks = frozenset(self._engine.checked_functions())

    def call(self, name, *args):
        """Calls function `name`: one Python value per MLIR argument. Its
        check routine runs first, on the same values (kvcache.CheckError,
        and nothing runs, when it fails)."""
        return self._engine.invoke(name, self._values(name, args))

    def _values(self, name, args):
        """The LLVM-level values of a call of `name` with `args`, checked
        against the arguments' descriptions (kvcache.arguments)."""
        if name not in self.signatures:
            raise KeyError(f"no func.func @{name} in the module (functions: "
                           f"{', '.join(sorted(self.signatures))})")
        arguments = self.abi[name]
        if len(args) != len(arguments):
            types = ", ".join(argument.type for argument in arguments)
            raise TypeError(f"@{name} takes {len(arguments)} arguments "
                            f"({types}), got {len(args)}")
        flat = []
        for position, (argument, value) in enumerate(zip(arguments, args)):
            flat += _flatten(argument, value,
                             f"argument {position} of @{name}: ")
        return flat

    def __getattr__(self, name):
        signatures = self.__dict__.get("signatures", {})
        if name in signatures:
            return functools.partial(self.call, name)
        raise AttributeError(name)

    def __dir__(self):
        return list(super().__dir__()) + list(self.signatures)


class CPUModule(CompiledModule):
    """Functions of kvcache IR compiled for this CPU.

    ir:          MLIR text or a kvcache.Module (func.func functions; a
                 tensor-level one is bufferized first and called with
                 buffers, the caller's for the results it drops:
                 kvcache.compiler.parse_bufferized)
    checked:     run-time checks of every access (kvcache-to-cpu{checked}):
                 the kernel ops' checks of what a function computes itself
                 raise kvcache.CheckError (nothing written, the module
                 usable); a failed check of an access op the IR holds
                 (kvcache.load, kvcache.store, ...: assert_write_mode = 1
                 included) still prints to stderr and aborts the process.
                 The checks of the arguments run before every call either
                 way
    opt_level:   LLVM optimization level of the JIT (0-3)
    shared_libs: libraries to load (default: MLIR's runner utils; the
                 OpenMP runtime is added when the code is parallel)
    threads:     None (default): every core (kvcache-to-cpu{parallel=true},
                 as many threads as the OpenMP runtime has: the cores, or
                 OMP_NUM_THREADS), or KVCACHE_CPU_THREADS when that is set;
                 1: serial code, no OpenMP; N > 1: N threads
    cpu_features: the CPU features the code may use beyond the baseline
                 (kvcache-to-cpu{cpu-features}): "host" (default: the JIT
                 compiles for this machine), "" for none, or LLVM feature
                 names each with + or -, comma-separated, that this CPU has
                 (host_cpu_features(); another is a ValueError). On a CPU
                 with AVX512-BF16 the decode kernel dots bf16 q and K rows
                 with vdpbf16ps (a different order of additions than
                 without it)

    The kernel ops' outer loops (sequences, (sequence, KV head, tile of
    rows) triples of attention, or sequences with every KV head for a decode
    batch of at least 4 sequences per thread, page pairs, merge rows) are
    what runs in parallel; every
    output element is computed by one thread in the same order as the serial
    code, so results do not depend on `threads`.

    `module.<name>(*args)` or `module.call(name, *args)` calls function
    `name`; `module.lowered` is the LLVM-dialect module that was compiled;
    `module.threads` the threads asked for (None: the runtime's default).
    """

    def __init__(self, ir, checked=False, opt_level=2, shared_libs=None,
                 filename="<string>", threads=None, cpu_features="host"):
        check_opt_level(opt_level)
        if threads is None:
            threads = default_cpu_threads()
        if threads is not None and (not isinstance(threads, int) or
                                    isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be None or an int >= 1, "
                             f"got {threads!r}")
        _check_cpu_features(cpu_features)
        parallel = threads != 1
        if parallel and OPENMP_RUNTIME is None:
            raise FileNotFoundError(
                "CPUModule: parallel code needs the LLVM OpenMP runtime "
                "/usr/lib/llvm-22/lib/libomp.so (apt-get install "
                "libomp-22-dev), or pass threads=1 for serial code")
        self.threads = threads
        source = parse_bufferized(ir, filename)
        libs = list(RUNNER_UTILS if shared_libs is None else shared_libs)
        if parallel:
            libs.append(OPENMP_RUNTIME)
        lowered = lower_to_cpu(source, checked, parallel=parallel,
                               threads=threads or 0, cpu_features=cpu_features)
        super().__init__(source, lowered, opt_level, libs)
