#!/usr/bin/env bash
# Installs what is missing, builds kvcache-mlir and runs every test:
#   1. the lit suite (FileCheck, CPU execution, ptxas, pytest, the install
#      test) against the regular build in build/;
#   2. the same suite against an ASan + UBSan build in build-asan/
#      (scripts/sanitize.sh);
#   3. a bounded libFuzzer run, 60 s from seed 1 (scripts/fuzz.sh, same
#      build; KVCACHE_FUZZ_SEED and KVCACHE_FUZZ_TIME change them).
# KVCACHE_TEST_QUICK=1 runs only the first stage. The last lines sum up each
# stage; the very last, `N passed, N failed`, counts the lit tests of stage
# 1 as passed and adds to the failed count the tests that failed under the
# sanitizers and a failed fuzz run (as one). The exit status is non-zero
# when any stage fails.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvcache_install_packages
start=$(date +%s)
# Everything (the install test packages the whole build), then what only
# the tests use.
kvcache_build
kvcache_build --target kvcache-test-deps
echo "-- build took $(( $(date +%s) - start )) s"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"$LLVM_PREFIX/bin/lit" -v "$KVCACHE_BUILD/test" 2>&1 | tee "$log" || status=$?
kvcache_lit_counts "$log"
passed=$LIT_PASSED
failed=$LIT_FAILED
summary=("tests: ${passed} passed, ${failed} failed")

if [ -z "${KVCACHE_TEST_QUICK:-}" ]; then
  echo "== stage 2: the lit suite under ASan + UBSan (scripts/sanitize.sh)"
  stage=$(date +%s)
  sanitize_status=0
  bash "$KVCACHE_ROOT/scripts/sanitize.sh" 2>&1 | tee "$log" || sanitize_status=$?
  summary+=("sanitizers: $(tail -1 "$log") ($(( $(date +%s) - stage )) s)")
  [ "$sanitize_status" -eq 0 ] || status=$sanitize_status
  sanitize_failed=$(sed -nE 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/p' "$log" | tail -1)
  if [ -n "$sanitize_failed" ]; then
    failed=$(( failed + sanitize_failed ))
  elif [ "$sanitize_status" -ne 0 ]; then
    failed=$(( failed + 1 )) # the build failed
  fi

  echo "== stage 3: fuzzing for ${KVCACHE_FUZZ_TIME:-60} s (scripts/fuzz.sh)"
  stage=$(date +%s)
  fuzz_status=0
  # A fixed seed: the same inputs in every run of the test command, so a
  # failure reproduces; scripts/fuzz.sh alone draws a new seed each time.
  bash "$KVCACHE_ROOT/scripts/fuzz.sh" -seed="${KVCACHE_FUZZ_SEED:-1}" 2>&1 |
    tee "$log" || fuzz_status=$?
  summary+=("fuzzing: $(grep -E '^kvcache-fuzz: ' "$log" | tail -1 || true) ($(( $(date +%s) - stage )) s)")
  if [ "$fuzz_status" -ne 0 ]; then
    status=$fuzz_status
    failed=$(( failed + 1 ))
  fi
fi

echo "-- total $(( $(date +%s) - start )) s"
printf '%s\n' "${summary[@]}"
echo "${passed} passed, ${failed} failed"
exit "$status"
