"""kvcache-mlir from Python.

    import kvcache
    from kvcache import builders, reference

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
    cache = reference.random_cache(config, [5, 40], [1, 1])   # codes + scales
    cpu = kvcache.CPUModule(builders.store_ragged(config))
    cpu.store_ragged(*cache.arguments(), layer, rows, row_offsets)

Modules:
    config     CacheConfig: the cache's kind (paged or continuous), shapes,
               element type and scales
    builders   IR text of the kernel ops and of a decode step, from a CacheConfig
    reference  numpy model of docs/Contract.md 1, 2.2 and 3.3 (no compiler
               code): PagedCache, ContinuousCache, quantized or not
    attention_reference  its attention_ragged with the optional clauses
               (window, chunk, noncausal, softcap, alibi, sinks, lse),
               key_range and merge_states (re-exported by reference)
    compiler   parse / verify / print / run_pipeline / compile_ptx (extension)
    cpu        CPUModule: in-process CPU execution on numpy arrays (extension)
    emulator   EmulatedGPUModule: the same calls, the kernels run on the GPU
               emulator with its checks (extension)
    abi        launch-argument packer of the kernels (docs/KernelABI.md)
    errors     CompileError: MLIR diagnostics with their locations;
               EmulatorError: the GPU emulator's reports

The compiler, CPU and emulator parts need the extension `_kvcache`, built into
build/python/kvcache by the normal build (use PYTHONPATH=build/python); the
others are plain Python + numpy and also work from the source tree.
"""

import importlib.util

from . import abi, builders, reference  # noqa: F401
from . import attention_reference  # noqa: F401  (loaded by reference, after it)
from .config import CacheConfig  # noqa: F401
from .errors import CompileError, Diagnostic, EmulatorError  # noqa: F401

__all__ = ["CacheConfig", "CompileError", "Diagnostic", "EmulatorError", "abi",
           "attention_reference", "builders", "reference"]
_EXTENSION_NAMES = ("Module", "compile_ptx", "kernel_names", "lower_to_cpu",
                    "lower_to_emulated_gpu", "parse", "run_pipeline", "verify",
                    "CPUModule", "EmulatedGPUModule", "compiler", "cpu",
                    "emulator")

if importlib.util.find_spec(f"{__name__}._kvcache") is not None:
    from . import compiler, cpu, emulator  # noqa: F401
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
