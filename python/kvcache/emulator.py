"""Run kvcache IR with its kernels on the GPU emulator, in-process.

`EmulatedGPUModule(ir)` lowers the IR with the `kvcache-to-emulated-gpu`
pipeline: the kernel ops become GPU kernels exactly as for `kvcache-to-ptx`,
then `kvcache-emulate-nvvm` turns the kernels into CPU code that runs on
libKVCacheGPUEmulator.so (the threads of a block as fibers, with checks of
races, shared-memory bounds, uninitialized shared reads, barriers, shuffles
and cp.async). Host functions keep their `kvcache-to-cpu` signatures, so the
module is called exactly like a CPUModule (see kvcache.cpu):

    gpu = kvcache.EmulatedGPUModule(builders.store_ragged(config))
    gpu.store_ragged(*cache.arguments(), layer, new_rows, row_offsets)

Arguments that break the kernel ops' rules raise kvcache.CheckError before
any kernel runs, as on a CPUModule (each function's check routine runs
first; with checked=True the checks of what a function computes itself
too). A failed check of the emulator or a device assert (checked=True,
assert_write_mode = 1: the kernels' own checks of each access) raises
kvcache.EmulatorError with the emulator's reports; the interpreter goes on
and the module can be called again. With KVCACHE_EMU_ON_ERROR=continue
in the environment, failed checks are recorded, the kernels run on, and the
error is raised when the call returns. KVCACHE_EMU_ORDER (forward, reverse,
random:<seed>: the order threads and blocks run in) and KVCACHE_EMU_PROFILE
(a file for the traffic profile) work as under mlir-runner; they are read at
each launch.
"""

import os

from . import _kvcache
from .compiler import check_gpu_options, lower_to_emulated_gpu, parse
from .cpu import CompiledModule
from .errors import EmulatorError  # noqa: F401  (raised by the extension)

__all__ = ["EmulatedGPUModule", "EmulatorError", "find_emulator_library"]


def _library_candidates():
    name = _kvcache.EMULATOR_LIBRARY_NAME
    here = os.path.dirname(os.path.abspath(_kvcache.__file__))
    return [os.path.join(here, name),                         # next to it
            os.path.join(_kvcache.EMULATOR_BUILD_DIR, name),  # build's lib/
            os.path.join(_kvcache.INSTALL_LIBDIR, name)]      # installed


def find_emulator_library():
    """Path of the GPU emulator runtime: $KVCACHE_GPU_EMULATOR_LIBRARY when
    set, else the first of: next to the extension, the build's lib directory,
    the installed lib directory. FileNotFoundError when there is none."""
    explicit = os.environ.get("KVCACHE_GPU_EMULATOR_LIBRARY")
    candidates = [explicit] if explicit else _library_candidates()
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        "cannot find the GPU emulator runtime: none of "
        f"{', '.join(candidates)} exists; build the KVCacheGPUEmulator target "
        "(the normal build does) or set KVCACHE_GPU_EMULATOR_LIBRARY to the "
        f"path of {_kvcache.EMULATOR_LIBRARY_NAME}")


class EmulatedGPUModule(CompiledModule):
    """Functions of kvcache IR whose kernels run on the GPU emulator.

    ir:          MLIR text or a kvcache.Module (func.func functions; kernel
                 ops, gpu.launch or gpu.module kernels launched from them;
                 tensor-level functions as for CPUModule)
    chip:        the GPU the kernels are built for (sm_XX), as compile_ptx
    checked:     run-time checks: those of the kernel ops' operands that
                 the function computes itself, before anything runs
                 (kvcache.CheckError), and of every access in the
                 kernels, device asserts (EmulatorError)
    opt_level:   LLVM optimization level (0-3) of the JIT that compiles
                 the host code and the emulated kernels
    shared_libs: libraries to load besides the emulator (default: MLIR's
                 runner utils)
    library:     path of libKVCacheGPUEmulator.so (default:
                 find_emulator_library())
    linalg_to_gpu: the linalg ops run as GPU kernels too
                 (kvcache-to-emulated-gpu{linalg-to-gpu=true}); by default
                 they are host code

    `module.<name>(*args)` or `module.call(name, *args)` calls function
    `name`; `module.lowered` is the LLVM-dialect module that was compiled.
    """

    def __init__(self, ir, chip="sm_90", checked=False, opt_level=2,
                 shared_libs=None, library=None, filename="<string>",
                 linalg_to_gpu=False):
        check_gpu_options(chip, opt_level)
        library = library or find_emulator_library()
        if not os.path.isfile(library):
            raise FileNotFoundError(f"no GPU emulator runtime at {library}")
        source = parse(ir, filename)
        lowered = lower_to_emulated_gpu(source, chip, opt_level, checked,
                                        linalg_to_gpu=linalg_to_gpu)
        super().__init__(source, lowered, opt_level, shared_libs, library)
        self.chip = chip
        self.library = library

    def call(self, name, *args):
        # The runtime exits the process on a bad KVCACHE_EMU_ORDER: say it
        # here instead.
        order = os.environ.get("KVCACHE_EMU_ORDER", "")
        if (order not in ("", "forward", "reverse") and
                not order.startswith("random")):
            raise ValueError(f"KVCACHE_EMU_ORDER={order} is not one of "
                             "forward, reverse, random:<seed>")
        return super().call(name, *args)
