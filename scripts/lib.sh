# Shared set-up for the scripts: installs the Debian packages the build needs
# (only those missing), then configures and builds. Sourced, not run.

KVCACHE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KVCACHE_BUILD=${KVCACHE_BUILD:-$KVCACHE_ROOT/build}
LLVM_PREFIX=/usr/lib/llvm-22

KVCACHE_PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
  libclang-rt-22-dev libomp-22-dev libopenmpi-dev openmpi-bin
  ninja-build cmake git python3-dev pybind11-dev python3-pybind11
  python3-numpy python3-pytest python3-torch
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

# Sets LIT_PASSED and LIT_FAILED (failed, unresolved, timed out and
# unexpectedly passed tests) from the output of `lit -v` in file $1.
kvcache_lit_counts() {
  LIT_PASSED=$(sed -nE 's/^ *Passed *: *([0-9]+).*/\1/p' "$1" | tail -1)
  LIT_PASSED=${LIT_PASSED:-0}
  LIT_FAILED=$(grep -hoE '^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *: *[0-9]+' "$1" |
    awk -F: '{s += $2} END {print s + 0}' || true)
}

# The instrumented build in build-asan/ that scripts/sanitize.sh and
# scripts/fuzz.sh share: ASan + UBSan on everything we compile
# (KVCACHE_ENABLE_SANITIZERS=ON), libFuzzer coverage instrumentation
# (-fsanitize=fuzzer-no-link) so the same libraries serve the fuzz target
# kvcache-fuzz (KVCACHE_ENABLE_FUZZER=ON). libMLIR.so is not instrumented.
# Everything links the shared ASan runtime (-shared-libasan): the pybind11
# extension is instrumented too and loads into Debian's python3, which is
# not, so the runtime must be preloaded there (KVCACHE_ASAN_RUNTIME), and a
# static runtime in an executable would refuse a preloaded one. Every process
# of that build runs with the runtime preloaded (it must come first). The ASan
# runtime provides the coverage callbacks for everything but kvcache-fuzz.
KVCACHE_ASAN_BUILD=${KVCACHE_ASAN_BUILD:-$KVCACHE_ROOT/build-asan}

# Sets KVCACHE_ASAN_RUNTIME_DIR and KVCACHE_ASAN_RUNTIME (after the packages
# are installed: clang-22 answers).
kvcache_find_asan_runtime() {
  KVCACHE_ASAN_RUNTIME_DIR=$("$LLVM_PREFIX/bin/clang" -print-runtime-dir)
  KVCACHE_ASAN_RUNTIME=$KVCACHE_ASAN_RUNTIME_DIR/libclang_rt.asan-x86_64.so
}

kvcache_configure_sanitizers() {
  kvcache_find_asan_runtime
  local runtime_dir=$KVCACHE_ASAN_RUNTIME_DIR
  local link_flags="-shared-libasan -Wl,-rpath,$runtime_dir"
  local cflags="-fsanitize=fuzzer-no-link -gline-tables-only"
  cmake -G Ninja -S "$KVCACHE_ROOT" -B "$KVCACHE_ASAN_BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$LLVM_PREFIX/bin/clang" \
    -DCMAKE_CXX_COMPILER="$LLVM_PREFIX/bin/clang++" \
    -DCMAKE_C_FLAGS="$cflags" \
    -DCMAKE_CXX_FLAGS="$cflags" \
    -DCMAKE_EXE_LINKER_FLAGS="$link_flags" \
    -DCMAKE_SHARED_LINKER_FLAGS="$link_flags" \
    -DCMAKE_MODULE_LINKER_FLAGS="$link_flags" \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    -DKVCACHE_ENABLE_SANITIZERS=ON \
    -DKVCACHE_ENABLE_FUZZER=ON \
    -DKVCACHE_ENABLE_PYTHON="${KVCACHE_SANITIZE_PYTHON:-ON}" \
    >/dev/null
}
