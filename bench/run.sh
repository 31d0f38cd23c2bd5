#!/usr/bin/env bash
# The benchmark suite in one command (not part of the tests):
#   bash bench/run.sh [--quick]
# Builds what is missing, installs Debian's matplotlib if needed, and writes
# bench/report.md and bench/plots/*.png (about 5-8 minutes on 2 cores; --quick
# about one).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
KVCACHE_PACKAGES+=(python3-matplotlib)
kvcache_install_packages
kvcache_build --target kvcache-opt --target kvcache-compile --target kvcache-python-package
exec /usr/bin/python3 "$KVCACHE_ROOT/bench/run.py" --build "$KVCACHE_BUILD" "$@"
