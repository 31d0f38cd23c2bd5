# Shared set-up for scripts/demo.sh and scripts/test.sh: installs the Debian
# packages the build needs (only those missing), then configures and builds.
# Sourced, not run.

KVCACHE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KVCACHE_BUILD=${KVCACHE_BUILD:-$KVCACHE_ROOT/build}
LLVM_PREFIX=/usr/lib/llvm-22

KVCACHE_PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
  ninja-build cmake git python3-dev pybind11-dev python3-pybind11
  python3-numpy python3-pytest
)

kvcache_install_packages() {
  local missing=()
  for pkg in "${KVCACHE_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "-- installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

kvcache_build() {
  if [ ! -f "$KVCACHE_BUILD/build.ninja" ]; then
    cmake -G Ninja -S "$KVCACHE_ROOT" -B "$KVCACHE_BUILD" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
      -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" \
      -DLLVM_USE_LINKER=lld \
      -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
      -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
      >/dev/null
  fi
  cmake --build "$KVCACHE_BUILD" "$@"
}
