#!/bin/sh
# Interestingness test of kvcache-reduce.mlir: interesting (exit 1, as
# mlir-reduce wants) while the candidate still verifies with kvcache-opt and
# still copies pages.
if "$KVCACHE_OPT" "$1" > /dev/null 2>&1 && grep -q 'kvcache.copy_pages' "$1"; then
  exit 1
fi
exit 0
