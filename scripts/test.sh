#!/usr/bin/env bash
# Installs what is missing, builds kvcache-mlir and runs every test.
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
status=0
"$LLVM_PREFIX/bin/lit" -v "$KVCACHE_BUILD/test" 2>&1 | tee "$log" || status=$?
passed=$(sed -nE 's/^ *Passed *: *([0-9]+).*/\1/p' "$log" | tail -1)
failed=$(grep -hoE '^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *: *[0-9]+' "$log" |
  awk -F: '{s += $2} END {print s + 0}' || true)
rm -f "$log"
echo "${passed:-0} passed, ${failed} failed"
exit "$status"
