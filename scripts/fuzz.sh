#!/usr/bin/env bash
# Builds the libFuzzer target kvcache-fuzz in build-asan/ (clang-22, ASan,
# UBSan, our libraries instrumented for coverage; the build scripts/sanitize.sh
# uses, see scripts/lib.sh) and fuzzes it for a bounded time from a seed
# corpus cut from the lit tests. Prints the number of
# executions; exits non-zero when the fuzzer finds a crash, a sanitizer
# report, a time-out or an out-of-memory (the input is left in
# build-asan/fuzz/artifacts/).
#
#   KVCACHE_FUZZ_TIME=60      seconds of fuzzing after the seeds' replay
#   KVCACHE_FUZZ_INPUT_TIMEOUT=30  seconds one input may take (-timeout)
#   KVCACHE_FUZZ_JOBS=1       parallel fuzzing processes (-fork)
#   KVCACHE_FUZZ_KEEP_CORPUS  keep build-asan/fuzz/corpus from the last run
#                             (default: start from the seeds each time)
#   extra arguments are passed to the fuzzer, e.g. -seed=1 or -runs=N
# kvcache-fuzz itself reads KVCACHE_FUZZ_VERBOSE, KVCACHE_FUZZ_SERIALIZE and
# KVCACHE_FUZZ_ALL_PIPELINES (tools/kvcache-fuzz/kvcache-fuzz.cpp).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvcache_install_packages

build=$KVCACHE_ASAN_BUILD
work=$build/fuzz
fuzz_time=${KVCACHE_FUZZ_TIME:-60}
# Per input: a hang is far longer; the slowest seed takes 6.4 s under the
# sanitizers (each input goes through four single passes and one of the
# three whole pipelines, see kvcache-fuzz.cpp).
input_timeout=${KVCACHE_FUZZ_INPUT_TIMEOUT:-30}
jobs=${KVCACHE_FUZZ_JOBS:-1}

start=$(date +%s)
kvcache_find_asan_runtime
[ -f "$build/build.ninja" ] || kvcache_configure_sanitizers
cmake --build "$build" --target kvcache-fuzz
echo "-- build took $(( $(date +%s) - start )) s"

rm -rf "$work/seeds" "$work/artifacts"
[ -n "${KVCACHE_FUZZ_KEEP_CORPUS:-}" ] || rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
/usr/bin/python3 "$KVCACHE_ROOT/scripts/make-fuzz-corpus.py" "$work/seeds" "$KVCACHE_ROOT"

# The target sets its own ASan defaults (no leak checks, no manual poisoning:
# see __asan_default_options in kvcache-fuzz.cpp); -detect_leaks=0 stops
# libFuzzer from running each input twice to look for leaks.
export ASAN_SYMBOLIZER_PATH=$LLVM_PREFIX/bin/llvm-symbolizer
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
log=$work/fuzz.log
fork=()
# One process: the script stops it (SIGTERM) fuzz_time s after libFuzzer has
# replayed the seeds (its INITED line), so the replay of ~1000 seeds (about
# 3 min under the sanitizers on 2 cores) does not eat the fuzzing time, as
# -max_total_time, counted from the start, would. With -fork, libFuzzer's
# own limit.
# A backstop in case the signal never comes: an hour more.
limit=(-max_total_time=$(( fuzz_time + 3600 )))
if [ "$jobs" -gt 1 ]; then
  fork=(-fork="$jobs" -ignore_crashes=0)
  limit=(-max_total_time="$fuzz_time")
fi
status=0
start=$(date +%s)
LD_PRELOAD=$KVCACHE_ASAN_RUNTIME "$build/bin/kvcache-fuzz" \
  "${limit[@]}" -rss_limit_mb=4096 -timeout="$input_timeout" -detect_leaks=0 \
  -dict="$KVCACHE_ROOT/tools/kvcache-fuzz/kvcache.dict" \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
  "${fork[@]}" "$@" "$work/corpus" "$work/seeds" >"$log" 2>&1 &
pid=$!
interrupted=
if [ "$jobs" -le 1 ]; then
  while kill -0 "$pid" 2>/dev/null && ! grep -q INITED "$log"; do sleep 1; done
  replayed=$(date +%s)
  echo "-- seeds replayed in $(( replayed - start )) s"
  while kill -0 "$pid" 2>/dev/null &&
    [ $(( $(date +%s) - replayed )) -lt "$fuzz_time" ]; do sleep 1; done
  # SIGTERM, not SIGINT: a background job of a non-interactive shell
  # ignores SIGINT.
  kill -TERM "$pid" 2>/dev/null && interrupted=1
fi
wait "$pid" || status=$?
# Our interrupt: libFuzzer prints its final stats and exits with 72.
if [ -n "$interrupted" ] && [ "$status" -eq 72 ]; then
  status=0
fi

runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
[ -n "$runs" ] || runs=$(sed -nE 's/^Done ([0-9]+) runs.*/\1/p' "$log" | tail -1)
if [ "$status" -ne 0 ]; then
  tail -n 40 "$log"
  # The input itself, then what went wrong: the same seed need not find it
  # again elsewhere (coverage differs with the addresses of pointer-keyed
  # maps), so the input in the log is what reproduces it on another
  # machine, e.g. CI's.
  for input in "$work/artifacts/"*; do
    [ -f "$input" ] || continue
    echo "-- the input, $input ($(wc -c <"$input") bytes; replay:" \
      "KVCACHE_FUZZ_VERBOSE=1 KVCACHE_FUZZ_ALL_PIPELINES=1" \
      "LD_PRELOAD=$KVCACHE_ASAN_RUNTIME $build/bin/kvcache-fuzz FILE):"
    head -c 12000 "$input"
    echo
    echo "-- end of the input"
  done
  echo "-- the failure:"
  grep -m 5 -E '^kvcache-fuzz: BUG|ERROR: (AddressSanitizer|libFuzzer)|runtime error|^==[0-9]+==ERROR' "$log" |
    cut -c 1-400 || true
  echo "kvcache-fuzz: FAILED (exit $status) after ${runs:-?} executions;" \
    "input in $work/artifacts/, log in $log"
  ls "$work/artifacts/"
  exit "$status"
fi
grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs|kvcache-fuzz: )' "$log" | tail -3 || true
echo "kvcache-fuzz: ${runs:-?} executions (the seeds included), ${fuzz_time} s" \
  "after the seeds, no crash" \
  "(corpus: $(ls "$work/corpus" | wc -l) new inputs)"
