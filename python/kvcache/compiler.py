"""Parse, verify, print, run pass pipelines and compile to PTX, in-process.

`ir` arguments are MLIR text or a `Module`. Failures raise
`kvcache.CompileError` with MLIR's diagnostics and their locations.

    module = kvcache.parse(text, filename="step.mlir")
    print(module)                                  # the verified IR
    lowered = kvcache.run_pipeline(text, "kvcache-expand-accesses,cse")
    ptx = kvcache.compile_ptx(text, chip="sm_90")
    emulated = kvcache.lower_to_emulated_gpu(text)  # kernels on the emulator
"""

import re

from . import _kvcache
from .errors import CompileError  # noqa: F401  (raised by the extension)

__all__ = ["Module", "compile_ptx", "kernel_names", "lower_to_cpu",
           "lower_to_emulated_gpu", "parse", "run_pipeline", "verify"]

Module = _kvcache.Module
Module.__doc__ = """A parsed and verified `builtin.module`.

    str(module), module.to_string(generic=False, debug_info=False)
    module.verify()                       raises CompileError
    module.clone()
    module.run_pipeline("canonicalize,cse")   in place
    module.functions()                    [(name, "func.func"|"llvm.func",
                                            [argument types], [result types])]
    module.abi()                          [(name, [argument descriptions])]
                                          of each func.func: what its
                                          arguments lower to, as the type
                                          interfaces say (kvcache.abi wraps
                                          them as ArgumentABI)
"""

_CHIP = re.compile(r"sm_[0-9]+[a-z]?$")


def parse(ir, filename="<string>"):
    """A verified Module from MLIR text (`filename` names it in locations);
    a Module is returned as is."""
    if isinstance(ir, Module):
        return ir
    if not isinstance(ir, str):
        raise TypeError(f"expected MLIR text or a kvcache.Module, got "
                        f"{type(ir).__name__}")
    return Module.parse(ir, filename)


def verify(ir, filename="<string>"):
    """Raises CompileError unless `ir` parses and verifies."""
    parse(ir, filename).verify()


def _copy(ir, filename):
    return parse(ir, filename).clone() if isinstance(ir, Module) else parse(ir, filename)


def run_pipeline(ir, pipeline, filename="<string>"):
    """Runs a textual pass pipeline, as `kvcache-opt --pass-pipeline` takes it
    (`builtin.module(...)` may be left out: "canonicalize,cse",
    "kvcache-to-cpu{checked=true}"). Text in, text out; a Module in, a new
    Module out (the input is left unchanged)."""
    module = _copy(ir, filename)
    module.run_pipeline(pipeline)
    return module if isinstance(ir, Module) else str(module)


def parse_bufferized(ir, filename="<string>"):
    """A new Module: `ir` parsed and bufferized (kvcache-bufferize, docs/
    Contract.md section 3.5). A tensor-level function then takes buffers,
    and the caller's buffers for its results that return an argument (the
    cache it updates, its outputs); a module without tensors is unchanged.
    The compiled modules call functions with these signatures."""
    module = _copy(ir, filename)
    module.run_pipeline("kvcache-bufferize")
    return module


def check_opt_level(opt_level):
    """ValueError unless `opt_level` is an LLVM optimization level."""
    if opt_level not in (0, 1, 2, 3):
        raise ValueError(f"opt_level must be 0-3, got {opt_level!r}")


def check_gpu_options(chip, opt_level):
    """ValueError unless `chip` is sm_XX and `opt_level` 0-3."""
    if not isinstance(chip, str) or not _CHIP.match(chip):
        raise ValueError(f"chip must look like 'sm_90', got {chip!r}")
    check_opt_level(opt_level)


def compile_ptx(ir, chip="sm_90", opt_level=3, checked=False,
                filename="<string>", linalg_to_gpu=False):
    """The PTX of every kernel of `ir` (kernel ops and gpu.modules), through
    the kvcache-to-ptx pipeline, as one string: what `kvcache-compile` writes.
    With `linalg_to_gpu` the linalg ops are kernels too (the pipeline's
    option). No CUDA toolkit is needed."""
    check_gpu_options(chip, opt_level)
    module = _copy(ir, filename)
    module.lower_to_ptx(chip, opt_level, bool(checked), bool(linalg_to_gpu))
    ptx = module.collect_ptx()
    if not ptx:
        raise CompileError(
            f"{filename}: error: no GPU kernels to compile: the input has no "
            "gpu.module, gpu.launch or kvcache kernel op",
            [("error", filename, "no GPU kernels to compile", [])])
    return ptx


def lower_to_cpu(ir, checked=False, filename="<string>", parallel=False,
                 threads=0, cpu_features=""):
    """A new Module in the LLVM dialect (the kvcache-to-cpu pipeline).

    parallel:     the kernel ops' outer loops run on every core (OpenMP; the
                  code then needs the LLVM OpenMP runtime,
                  kvcache.cpu.OPENMP_RUNTIME)
    threads:      with parallel, the threads of each parallel loop (0: the
                  OpenMP runtime's default, every core or OMP_NUM_THREADS)
    cpu_features: the CPU the code will run on (kvcache-to-cpu{cpu-features}):
                  "" (default) any x86-64 or AArch64 CPU, "host" this
                  machine, or LLVM feature names each with + or -,
                  comma-separated (e.g. "+avx512bf16")
    """
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 0:
        raise ValueError(f"threads must be an int >= 0, got {threads!r}")
    if not isinstance(cpu_features, str) or any(c in cpu_features for c in "{} "):
        raise ValueError(f"cpu_features must be a string of LLVM feature names "
                         f"without spaces or braces, got {cpu_features!r}")
    module = _copy(ir, filename)
    features = f" cpu-features={cpu_features}" if cpu_features else ""
    module.run_pipeline(f"kvcache-to-cpu{{checked={str(bool(checked)).lower()} "
                        f"parallel={str(bool(parallel)).lower()} "
                        f"threads={threads}{features}}}")
    return module


def lower_to_emulated_gpu(ir, chip="sm_90", opt_level=3, checked=False,
                          filename="<string>", linalg_to_gpu=False):
    """A new Module in the LLVM dialect (the kvcache-to-emulated-gpu
    pipeline): the kernels, as kvcache-to-ptx builds them for `chip`, become
    CPU code calling the GPU emulator runtime (libKVCacheGPUEmulator.so);
    host functions keep their kvcache-to-cpu signatures. `linalg_to_gpu`:
    the linalg ops run as kernels too (the pipeline's option)."""
    check_gpu_options(chip, opt_level)
    module = _copy(ir, filename)
    module.lower_to_emulated_gpu(chip, opt_level, bool(checked),
                                 bool(linalg_to_gpu))
    return module


def kernel_names(ptx):
    """Names of the `.visible .entry` kernels of a PTX string."""
    return re.findall(r"\.visible\s+\.entry\s+([A-Za-z_$][\w$]*)", ptx)

