#!/usr/bin/env bash
# Builds kvcache-mlir in build-asan/ with AddressSanitizer and UBSan
# (KVCACHE_ENABLE_SANITIZERS=ON, clang-22; see scripts/lib.sh) and runs the
# whole lit suite against that build: every kvcache-opt and kvcache-compile in the tests is
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
# test that expects an error. quarantine_size_mb=16 (ASan's default is 256):
# freed memory is reused sooner, so a process touches fewer fresh pages
# (about a fifth of an emulated kernel test's time went to page faults);
# a use after free is still caught within the last 16 MiB freed.
# The build (ASan, UBSan, shared ASan runtime, coverage instrumentation for
# the fuzzer) is described in scripts/lib.sh; the lit run preloads the ASan
# runtime (LD_PRELOAD) for the Python tests.
# KVCACHE_SANITIZE_PYTHON=OFF leaves the Python package out.
# Extra arguments go to lit (e.g. a test path, or --filter=Dialect).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvcache_install_packages

start=$(date +%s)
kvcache_configure_sanitizers
# Everything (the install test installs every library), and what the tests
# run.
cmake --build "$KVCACHE_ASAN_BUILD" --target all kvcache-test-deps
built=$(date +%s)
echo "-- build took $(( built - start )) s"

# The slowest tests run a sample here, every eighth case or file
# (test/python/sampling.py, conftest.py, test/kvcache_lit_formats.py), and
# those whose time goes to other tools are left out (`UNSUPPORTED:
# sampled`, and the tests that need ptxas): the emulator is ~10x slower
# under ASan, and stage 1 of scripts/test.sh has run every case
# (docs/Maintainers.md).
export KVCACHE_TEST_SAMPLE=${KVCACHE_TEST_SAMPLE:-8}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allow_user_poisoning=0:abort_on_error=1:quarantine_size_mb=16}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
export ASAN_SYMBOLIZER_PATH=$LLVM_PREFIX/bin/llvm-symbolizer
log=$(mktemp)
status=0
LD_PRELOAD=$KVCACHE_ASAN_RUNTIME "$LLVM_PREFIX/bin/lit" -v "$@" \
  "$KVCACHE_ASAN_BUILD/test" 2>&1 |
  tee "$log" || status=$?
reports=$(grep -cE '^(==[0-9]+==ERROR: AddressSanitizer|.*runtime error:)' "$log" || true)
kvcache_lit_counts "$log"
rm -f "$log"
echo "-- lit took $(( $(date +%s) - built )) s"
echo "${LIT_PASSED} passed, ${LIT_FAILED} failed, ${reports} sanitizer reports"
exit "$status"
