"""kvcache-mlir from Python.

    import kvcache
    from kvcache import builders, reference, testing

    config = kvcache.CacheConfig("f16", num_heads=8, head_size=128,
                                 page_size=16, q_heads=32)
    ir = builders.decode_step(config)            # kvcache IR, no hand-written MLIR
    kvcache.verify(ir)
    cpu = kvcache.CPUModule(ir)                  # kvcache-to-cpu + LLVM JIT
    gpu = kvcache.EmulatedGPUModule(ir)          # the kernels on the GPU emulator
    ptx = kvcache.compile_ptx(ir, chip="sm_90")  # kvcache-to-ptx

    # continuous batching: one block of token slots per sequence
    config = kvcache.CacheConfig("f16", num_heads=8, head_size=128,
                                 kind="continuous", block_tokens=4096)

    # a quantized cache: fp8 codes and one f32 scale per token and head
    # (docs/Contract.md 2.2); bf16 rows are quantized on store, dequantized
    # on gather; the functions take the scales after max_cache_length
    config = kvcache.CacheConfig("f8E4M3FN", num_heads=8, head_size=128,
                                 scales="token_head", rows_dtype="bf16")
    cache = testing.random_cache(config, [5, 40], [1, 1])     # codes + scales
    cpu = kvcache.CPUModule(builders.store_ragged(config))
    cpu.store_ragged(*cache.arguments(), layer, rows, row_offsets)
    expected = cache.key_cache(layer).store_ragged(rows, row_offsets)

Modules, each importable alone (none imports another that imports it):
    config     CacheConfig: the cache's kind (paged or continuous), shapes,
               element type and scales
    builders   IR text of the kernel ops and of a decode step, from a CacheConfig
    dtypes     element types in numpy: storage dtypes, the bf16/fp8/int8
               codecs (to_float32, from_float32), quantize, dequantize
    caches     the cache objects CPUModule takes (PagedCache,
               ContinuousCache, CacheView), a numpy model of docs/Contract.md
               1 and 2.2; their writes (view.store_ragged, cache.copy_pages)
               return new caches
    reference  the numpy oracle of the kernel ops (docs/Contract.md 3.3, no
               compiler code): gather_ragged, decode_step, and
               attention_ragged, key_range, merge_states (from
               attention_reference, with the optional clauses); it still
               re-exports the names that moved to dtypes, caches and testing
    testing    random test data: random_cache, random_rows, row_offsets
    serving    a serving loop's state: PageAllocator (reference-counted
               pages), BatchState (sequences added, forked, finished) and
               each step's metadata (Step: cache_lengths, lookup_table,
               row_offsets, max lengths, copy-on-write copy_pairs)
    compiler   parse / verify / print / run_pipeline / compile_ptx (extension)
    cpu        CPUModule: in-process CPU execution on numpy arrays (extension)
    emulator   EmulatedGPUModule: the same calls, the kernels run on the GPU
               emulator with its checks (extension)
    arguments  each argument as the compiler describes it (describe_type,
               Module.abi: ArgumentABI, ValueABI) and its packing
    arrays     the arrays the modules take, read in place: numpy arrays,
               torch tensors (bf16 as itself; torch is optional, never
               imported here), DLPack producers, array interfaces
    abi        the launch-argument packer of the kernels (KernelArgs;
               docs/KernelABI.md); re-exports arguments' names
    errors     CompileError: MLIR diagnostics with their locations;
               CheckError: arguments that break the kernel ops' rules
               (raised before anything is written); EmulatorError: the GPU
               emulator's reports; ArgumentTypeError

The compiler, CPU and emulator parts need the extension `_kvcache`, built into
build/python/kvcache by the normal build (use PYTHONPATH=build/python); the
others are plain Python + numpy and also work from the source tree.
"""

import importlib.util

from . import (abi, arrays, attention_reference, builders,  # noqa: F401
               caches, dtypes, reference, serving, testing)
from .config import CacheConfig  # noqa: F401
from .errors import (ArgumentTypeError, CheckError,  # noqa: F401
                     CompileError, Diagnostic, EmulatorError)

__all__ = ["ArgumentTypeError", "CacheConfig", "CheckError", "CompileError",
           "Diagnostic", "EmulatorError", "abi", "arrays",
           "attention_reference", "builders", "caches", "dtypes", "reference",
           "serving", "testing"]
_EXTENSION_NAMES = ("Module", "compile_ptx", "describe_type", "kernel_names",
                    "lower_to_cpu", "lower_to_emulated_gpu", "parse",
                    "run_pipeline", "verify", "CPUModule", "EmulatedGPUModule",
                    "compiler", "cpu", "emulator")

if importlib.util.find_spec(f"{__name__}._kvcache") is not None:
    from . import compiler, cpu, emulator  # noqa: F401
    from .arguments import describe_type  # noqa: F401
    from .compiler import (Module, compile_ptx, kernel_names,  # noqa: F401
                           lower_to_cpu, lower_to_emulated_gpu, parse,
                           run_pipeline, verify)
    from .cpu import CPUModule  # noqa: F401
    from .emulator import EmulatedGPUModule  # noqa: F401
    __all__ += _EXTENSION_NAMES
else:
    def __getattr__(name):
        if name in _EXTENSION_NAMES:
            raise ImportError(
                f"kvcache.{name} needs the compiler extension kvcache._kvcache, "
                f"which is not next to {__file__}: build the "
                "kvcache-python-package target and put build/python on "
                "PYTHONPATH")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
