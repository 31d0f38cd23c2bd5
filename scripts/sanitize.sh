#!/usr/bin/env bash
# Builds kvcache-mlir in build-asan/ with AddressSanitizer and UBSan
# (KVCACHE_ENABLE_SANITIZERS=ON, clang-22) and runs the whole lit suite
# against that build: every kvcache-opt and kvcache-compile in the tests is
# the instrumented one. libMLIR.so is not instrumented, nor is the JIT code
# that mlir-runner executes.
#
# ASAN_OPTIONS (unless set): detect_leaks=0, because MLIR and LLVM keep
# registrations and interned storage in process-lifetime globals that
# LeakSanitizer reports at exit; allow_user_poisoning=0, because LLVM's
# BumpPtrAllocator inlined into our instrumented code poisons slabs that the
# allocator's uninstrumented copies in libMLIR.so then hand out without
# unpoisoning (false use-after-poison reports). Both sanitizers abort on a
# report (abort_on_error=1): a report exits with a signal, which `not` in a
# RUN line counts as a failure, where a plain exit status 1 would pass a
# test that expects an error.
# Everything links the shared ASan runtime (-shared-libasan), and the lit run
# preloads it (LD_PRELOAD): the pybind11 extension is instrumented too and
# loads into Debian's python3, which is not, so the runtime must be in the
# process before python starts; preloading one shared runtime everywhere
# keeps the instrumented tools that the Python tests start compatible with
# it (a static runtime in an executable refuses a preloaded one).
# KVCACHE_SANITIZE_PYTHON=OFF leaves the Python package out.
# Extra arguments go to lit (e.g. a test path, or --filter=Dialect).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvcache_install_packages

build=$KVCACHE_ROOT/build-asan
runtime_dir=$("$LLVM_PREFIX/bin/clang" -print-runtime-dir)
asan_runtime=$runtime_dir/libclang_rt.asan-x86_64.so
link_flags="-shared-libasan -Wl,-rpath,$runtime_dir"
start=$(date +%s)
cmake -G Ninja -S "$KVCACHE_ROOT" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
  -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" \
  -DCMAKE_C_FLAGS=-gline-tables-only \
  -DCMAKE_CXX_FLAGS=-gline-tables-only \
  -DCMAKE_EXE_LINKER_FLAGS="$link_flags" \
  -DCMAKE_SHARED_LINKER_FLAGS="$link_flags" \
  -DCMAKE_MODULE_LINKER_FLAGS="$link_flags" \
  -DLLVM_USE_LINKER=lld \
  -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
  -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
  -DKVCACHE_ENABLE_SANITIZERS=ON \
  -DKVCACHE_ENABLE_PYTHON="${KVCACHE_SANITIZE_PYTHON:-ON}" \
  >/dev/null
# Everything (the install test installs every library), and what the tests
# run.
cmake --build "$build" --target all kvcache-test-deps
built=$(date +%s)
echo "-- build took $(( built - start )) s"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
export ASAN_SYMBOLIZER_PATH=$LLVM_PREFIX/bin/llvm-symbolizer
log=$(mktemp)
status=0
LD_PRELOAD=$asan_runtime "$LLVM_PREFIX/bin/lit" -v "$@" "$build/test" 2>&1 |
  tee "$log" || status=$?
reports=$(grep -cE '^(==[0-9]+==ERROR: AddressSanitizer|.*runtime error:)' "$log" || true)
passed=$(sed -nE 's/^ *Passed *: *([0-9]+).*/\1/p' "$log" | tail -1)
failed=$(grep -hoE '^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *: *[0-9]+' "$log" |
  awk -F: '{s += $2} END {print s + 0}' || true)
rm -f "$log"
echo "-- lit took $(( $(date +%s) - built )) s"
echo "${passed:-0} passed, ${failed} failed, ${reports} sanitizer reports"
exit "$status"
