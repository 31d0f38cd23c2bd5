# -*- Python -*-
# lit configuration of the kvcache-mlir tests.

import os
import shutil
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "KVCACHE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "kvcache_lit_formats.py",
                   "Inputs", "consumer", "lib"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kvcache_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.llvm_shlib_ext))
config.substitutions.append(("%kvcache_src_root", config.kvcache_src_root))
config.substitutions.append(("%kvcache_obj_root", config.kvcache_obj_root))
config.substitutions.append(("%mlir_lib_dir", config.mlir_lib_dir))
config.substitutions.append(("%c_compiler", config.c_compiler))
config.substitutions.append(("%cxx_compiler", config.cxx_compiler))
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(config.mlir_lib_dir, "libmlir_c_runner_utils" + config.llvm_shlib_ext)))
config.substitutions.append(
    ("%mlir_runner_utils",
     os.path.join(config.mlir_lib_dir, "libmlir_runner_utils" + config.llvm_shlib_ext)))
# The GPU emulator's runtime, for mlir-runner's -shared-libs.
config.substitutions.append(
    ("%kvcache_emulator",
     os.path.join(config.kvcache_obj_root, "lib",
                  "libKVCacheGPUEmulator" + config.llvm_shlib_ext)))
# mlir-runner with the emulator and MLIR's runner utilities, for the
# programs of kvcache-to-emulated-gpu: `%emu_run FILE -e main`.
config.substitutions.append(
    ("%emu_run",
     "{} -entry-point-result=void -shared-libs={},{},{}".format(
         os.path.join(config.llvm_tools_dir, "mlir-runner"),
         os.path.join(config.mlir_lib_dir, "libmlir_c_runner_utils" + config.llvm_shlib_ext),
         os.path.join(config.mlir_lib_dir, "libmlir_runner_utils" + config.llvm_shlib_ext),
         os.path.join(config.kvcache_obj_root, "lib",
                      "libKVCacheGPUEmulator" + config.llvm_shlib_ext))))
# The LLVM OpenMP runtime (libomp-22-dev) for programs lowered with
# kvcache-to-cpu{parallel=true}: `REQUIRES: libomp`, then
# `-shared-libs=...,%libomp`. It is in the install list, so it is only
# missing on a machine set up by hand; those tests are then unsupported.
libomp = os.path.join(config.mlir_lib_dir, "libomp" + config.llvm_shlib_ext)
if os.path.exists(libomp):
    config.available_features.add("libomp")
    config.substitutions.append(("%libomp", libomp))
# OpenMPI (libopenmpi-dev, openmpi-bin) for the page transfers between
# processes: `REQUIRES: mpi`, then `%mpirun2 mlir-runner ...
# -shared-libs=...,%libmpi` runs two processes (`%mpirun_n N ...`: N).
# Both are in the install list; a machine set up by hand without them
# reports the tests UNSUPPORTED.
mpirun = shutil.which("mpirun")
libmpi = next((path for path in ("/usr/lib/x86_64-linux-gnu/libmpi.so",
                                 "/usr/lib/aarch64-linux-gnu/libmpi.so",
                                 "/usr/lib64/openmpi/lib/libmpi.so")
               if os.path.exists(path)), None)
if mpirun and libmpi:
    config.available_features.add("mpi")
    # Root (containers) needs --allow-run-as-root; --oversubscribe lets two
    # processes share one core; when one aborts (a checked-mode report) the
    # other is killed at once instead of after a second's grace.
    as_root = " --allow-run-as-root" if os.geteuid() == 0 else ""
    mpirun_n = (mpirun + as_root + " --oversubscribe"
                " --mca odls_base_sigkill_timeout 0 -np")
    config.substitutions.append(("%mpirun2", mpirun_n + " 2"))
    # `%mpirun_n N ...`: N processes.
    config.substitutions.append(("%mpirun_n", mpirun_n))
    config.substitutions.append(("%libmpi", libmpi))
# Parallel regions of the tests are short and lit runs several tests at
# once: OpenMP threads sleep as soon as a region ends instead of spinning
# for 200 ms on cores that other tests need.
config.environment["KMP_BLOCKTIME"] = "0"
# MLIR's own mlir-opt (Debian's, not kvcache-opt) and our plugin for it.
config.substitutions.append(("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")))
config.substitutions.append(
    ("%kvcache_plugin",
     os.path.join(config.kvcache_obj_root, "lib", "KVCachePlugin" + config.llvm_shlib_ext)))
# Independent numpy references run on Debian's interpreter, which has numpy.
config.substitutions.append(("%python", "/usr/bin/python3"))

# scripts/sanitize.sh sets KVCACHE_TEST_SAMPLE=N: the slowest tests then run
# a sample, every N-th (test/python/sampling.py, the lit.local.cfg files of
# test/python, test/Integration/CPU and test/Integration/GPU/Emulated); the
# others are reported UNSUPPORTED, as are the tests that need ptxas. Stage 1
# of scripts/test.sh runs them all.
config.kvcache_test_sample = max(
    int(os.environ.get("KVCACHE_TEST_SAMPLE", "1") or 1), 1)
# Tests whose time goes to other tools (ptxas, cmake, the GPU check's
# script), not to our instrumented code, say `UNSUPPORTED: sampled`: they
# run in stage 1 only.
if config.kvcache_test_sample > 1:
    config.available_features.add("sampled")
# The test formats of those lit.local.cfg files (kvcache_lit_formats.py).
sys.path.insert(0, config.test_source_root)

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                     # scripts/sanitize.sh: the pytest suite
                                     # runs a sample (test/python/sampling.py)
                                     "KVCACHE_TEST_SAMPLE"])
llvm_config.use_default_substitutions()
# `not`, `count` and FileCheck anywhere in a RUN line, as upstream MLIR has.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.kvcache_tools_dir, config.llvm_tools_dir]
tools = [
    "kvcache-compile",
    "kvcache-lsp-server",
    "kvcache-opt",
    "kvcache-reduce",
    ToolSubst("mlir-opt", unresolved="ignore"),
    ToolSubst("mlir-lsp-server", unresolved="ignore"),
    ToolSubst("mlir-runner", unresolved="ignore"),
    ToolSubst("mlir-translate", unresolved="ignore"),
    # test/lib/Emulator, in test builds only (feature emulator-test-host).
    ToolSubst("kvcache-emulator-test-host", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# PTX is checked with NVIDIA's assembler where it is installed. Tests that
# need it say `REQUIRES: ptxas` and are reported UNSUPPORTED elsewhere, and
# under the sanitizers (KVCACHE_TEST_SAMPLE > 1): their time goes to ptxas,
# and the kernels they compile go through the instrumented pipeline in the
# PTX-test twins (test/python/test_ptx_test_twins.py). Stage 1 runs them.
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None
)
if ptxas and config.kvcache_test_sample == 1:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# libdevice, which gpu-module-to-binary links into kernels that call
# __nv_* functions (the math ops that kvcache-lower-gpu-math leaves, such
# as math.sin) when CUDA_HOME names the toolkit holding it: `env
# CUDA_HOME=%cuda_home kvcache-compile ...` in tests that say `REQUIRES:
# libdevice`. (A ptxas alone, as some machines have, has none.)
for toolkit in ([os.path.dirname(os.path.dirname(os.path.realpath(ptxas)))]
                if ptxas else []) + ["/usr/local/cuda"]:
    if os.path.isfile(os.path.join(toolkit, "nvvm", "libdevice",
                                   "libdevice.10.bc")):
        config.available_features.add("libdevice")
        config.substitutions.append(("%cuda_home", toolkit))
        break

# The test dialects of test/lib are in kvcache-opt only in test builds
# (KVCACHE_INCLUDE_TESTS); without them the tests of test/TestDialect are
# unsupported (its lit.local.cfg).
if config.kvcache_include_tests:
    config.available_features.add("test-dialect")
    config.available_features.add("emulator-test-host")
