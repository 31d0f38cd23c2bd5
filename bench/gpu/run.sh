#!/usr/bin/env bash
# The GPU check of kvcache-mlir's kernels, in one script.
#
#   bench/gpu/run.sh            on the build machine: compiles bench/gpu/kernels.mlir
#                               to PTX (bench/gpu/build/), assembles it with ptxas
#                               (sm_90, sm_80) when installed, and runs the kernels
#                               when a GPU is present; else says "no GPU".
#   OUT=dir bench/gpu/run.sh    on the GPU machine (bench/gpu/build carried there):
#                               nothing is built, the PTX is loaded with cupy,
#                               run on random paged caches and compared with a
#                               numpy model of docs/Contract.md section 1,
#                               then times the kernel-op and attention
#                               kernels against a device copy, and checks
#                               the fp8 kernels bit for bit;
#                               results in $OUT.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${KVCACHE_GPU_BUILD:-$here/build}
out=${OUT:-$build/results}
mkdir -p "$build" "$out"
ptx="$build/kernels.ptx"

compiler="${KVCACHE_BIN:-$root/build/bin}/kvcache-compile"
if [ -x "$compiler" ]; then
  echo "-- compiling bench/gpu/kernels.mlir to $ptx"
  "$compiler" "$here/kernels.mlir" -o "$ptx"
  "$compiler" "$here/kernels.mlir" --chip sm_80 -o "$build/kernels.sm_80.ptx"
  "$compiler" "$here/kernel_ops.mlir" -o "$build/kernel_ops.ptx"
  "$compiler" "$here/kernel_ops.mlir" --chip sm_80 -o "$build/kernel_ops.sm_80.ptx"
  "$compiler" "$here/attention.mlir" -o "$build/attention.ptx"
  "$compiler" "$here/attention.mlir" --chip sm_80 -o "$build/attention.sm_80.ptx"
  "$compiler" "$here/quantized.mlir" -o "$build/quantized.ptx"
  "$compiler" "$here/quantized.mlir" --chip sm_80 -o "$build/quantized.sm_80.ptx"
elif [ ! -f "$ptx" ]; then
  echo "error: no $ptx and no kvcache-compile to build it: run this script on the" \
    "build machine first (or carry bench/gpu/build)" >&2
  exit 1
fi

ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$ptxas" ]; then
  for chip in sm_90 sm_80; do
    suffix=""
    [ "$chip" = sm_80 ] && suffix=".sm_80"
    : >"$out/ptxas.$chip.txt"
    for name in kernels kernel_ops attention quantized; do
      file="$build/$name$suffix.ptx"
      [ -f "$file" ] || continue
      "$ptxas" -arch=$chip -v "$file" -o "$build/$name.$chip.cubin" 2>>"$out/ptxas.$chip.txt"
    done
    spills=$(grep -c "[1-9][0-9]* bytes spill" "$out/ptxas.$chip.txt" || true)
    echo "-- ptxas -arch=$chip: assembled, $spills functions with spills"
  done
else
  echo "-- ptxas not installed: PTX not assembled"
fi

python=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0" 2>/dev/null; then
    python=$candidate
    break
  fi
done
if [ -n "$python" ]; then
  echo "-- running the kernels on $("$python" -c 'import cupy; print(cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())')"
  "$python" "$here/check_kernels.py" "$ptx" "$out" | tee "$out/check_kernels.txt"
  echo "-- timing the kernel-op kernels against a device-to-device copy"
  "$python" "$here/bench_kernel_ops.py" "$build/kernel_ops.ptx" "$out" | tee "$out/bench_kernel_ops.txt"
  echo "-- attention: checked against numpy, then timed against a device copy"
  "$python" "$here/bench_attention.py" "$build/attention.ptx" "$out" | tee "$out/bench_attention.txt"
  echo "-- fp8 store_ragged and gather_ragged (sm_90 cvt instructions, sm_80 integer code): bit for bit against numpy"
  "$python" "$here/check_quantized.py" "$build/quantized.ptx" "$build/quantized.sm_80.ptx" "$out" \
    | tee "$out/check_quantized.txt"
else
  echo "no GPU: kernels compiled and assembled only, not run" | tee "$out/check_kernels.txt"
fi
