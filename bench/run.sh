#!/usr/bin/env bash
# The benchmark suite in one command (not part of the tests):
#   bash bench/run.sh [--quick]
# Builds what is missing, installs Debian's matplotlib and the peers of the
# CPU attention sections (python3-torch; libopenblas0-pthread, without which
# numpy and torch use the reference BLAS, ~30x slower) if needed, saying so,
# and writes bench/report.md and bench/plots/*.png (about 30 minutes on 2
# cores, 18 of them the emulated prefill of 4 x 300 rows in section 11, which
# --quick leaves out; --quick about five).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
KVCACHE_PACKAGES+=(python3-matplotlib python3-torch libopenblas0-pthread)
kvcache_install_packages
kvcache_build --target kvcache-opt --target kvcache-compile --target kvcache-python-package
exec /usr/bin/python3 "$KVCACHE_ROOT/bench/run.py" --build "$KVCACHE_BUILD" "$@"
