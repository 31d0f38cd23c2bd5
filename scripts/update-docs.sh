#!/usr/bin/env bash
# Regenerates the ODS reference documents into docs/ (run after editing .td).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvcache_build --target mlir-doc
cp -r "$KVCACHE_BUILD/docs/." "$KVCACHE_ROOT/docs/"
echo "-- docs/ updated from ODS"
