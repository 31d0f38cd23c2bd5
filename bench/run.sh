#!/usr/bin/env bash
# The benchmark suite in one command (not part of the tests):
#   bash bench/run.sh [--quick]
# Builds what is missing, installs Debian's matplotlib and the peers of the
# CPU attention sections (python3-torch; libopenblas0-pthread, without which
# numpy and torch use the reference BLAS, ~30x slower) if needed, saying so,
# and writes bench/report.md and bench/plots/*.png (about 15-20 minutes on 2
# cores, most of it the emulated prefill of section 11; --quick about three).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
KVCACHE_PACKAGES+=(python3-matplotlib python3-torch libopenblas0-pthread)
kvcache_install_packages
kvcache_build --target kvcache-opt --target kvcache-compile --target kvcache-python-package
exec /usr/bin/python3 "$KVCACHE_ROOT/bench/run.py" --build "$KVCACHE_BUILD" "$@"
