#!/usr/bin/env bash
# Installs what is missing, builds kvcache-mlir and runs it on the bundled
# example: the IR is parsed, verified, canonicalized and printed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvcache_install_packages
kvcache_build --target kvcache-opt
example="$KVCACHE_ROOT/examples/decode_step.mlir"
echo "== $example, canonicalized by kvcache-opt"
"$KVCACHE_BUILD/bin/kvcache-opt" --canonicalize --cse "$example"
