#!/usr/bin/env bash
# Installs what is missing, builds kvcache-mlir and runs it on the bundled
# examples: IR in, lowered IR (LLVM dialect, executed on the CPU) and PTX out.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kvcache_install_packages
kvcache_build --target kvcache-opt --target kvcache-compile --target KVCacheGPUEmulator

bin="$KVCACHE_BUILD/bin"
examples="$KVCACHE_ROOT/examples"
out="$KVCACHE_BUILD/demo"
mkdir -p "$out"

echo "== 1. examples/decode_step.mlir: parsed, verified, canonicalized"
"$bin/kvcache-opt" -canonicalize -cse "$examples/decode_step.mlir"

echo
echo "== 2. examples/cache_roundtrip_cpu.mlir: kvcache-to-cpu, then mlir-runner"
"$bin/kvcache-opt" -kvcache-to-cpu "$examples/cache_roundtrip_cpu.mlir" \
  -o "$out/cache_roundtrip_cpu.llvm.mlir"
echo "lowered IR: $out/cache_roundtrip_cpu.llvm.mlir ($(wc -l <"$out/cache_roundtrip_cpu.llvm.mlir") lines); the lookup of @append_token:"
grep -m 3 -E "llvm.(lshr|and|load).*: (i32|!llvm.ptr -> i32)" "$out/cache_roundtrip_cpu.llvm.mlir" || true
echo "executed (page, slot, then head 1 of each appended token):"
"$LLVM_PREFIX/bin/mlir-runner" -e main -entry-point-result=void \
  -shared-libs="$LLVM_PREFIX/lib/libmlir_c_runner_utils.so,$LLVM_PREFIX/lib/libmlir_runner_utils.so" \
  "$out/cache_roundtrip_cpu.llvm.mlir"

echo
echo "== 3. examples/decode_step.mlir: kvcache-compile to PTX (sm_90), one kernel per kernel op"
"$bin/kvcache-compile" "$examples/decode_step.mlir" -o "$out/decode_step.ptx"
echo "PTX: $out/decode_step.ptx ($(wc -l <"$out/decode_step.ptx") lines); kernels:"
grep -E "^\.visible \.entry" "$out/decode_step.ptx"

echo "The same step on a continuous-batching cache (examples/continuous_decode_step.mlir):"
"$bin/kvcache-compile" "$examples/continuous_decode_step.mlir" -o "$out/continuous_decode_step.ptx"
grep -E "^\.visible \.entry" "$out/continuous_decode_step.ptx"

echo
echo "== 4. examples/read_keys_gpu.mlir: a user kernel written with access ops, to PTX"
"$bin/kvcache-compile" "$examples/read_keys_gpu.mlir" -o "$out/read_keys_gpu.ptx"
echo "PTX: $out/read_keys_gpu.ptx ($(wc -l <"$out/read_keys_gpu.ptx") lines); kernels and global accesses:"
grep -E "^\.visible \.entry|ld\.global|st\.global" "$out/read_keys_gpu.ptx"
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$ptxas" ]; then
  echo "ptxas -arch=sm_90 -v:"
  "$ptxas" -arch=sm_90 -v "$out/read_keys_gpu.ptx" -o "$out/read_keys_gpu.cubin" 2>&1 |
    grep -E "Compiling|registers|spill"
else
  echo "(ptxas not installed: PTX not assembled; users need no CUDA toolkit)"
fi

echo
echo "== 5. examples/read_keys_gpu.mlir: the same kernel run on the emulated GPU (no GPU needed)"
"$bin/kvcache-opt" -kvcache-to-emulated-gpu "$examples/read_keys_gpu.mlir" \
  -o "$out/read_keys_gpu.emulated.mlir"
echo "lowered IR: $out/read_keys_gpu.emulated.mlir; executed by the emulator with race, barrier and"
echo "cp.async checks (head 0 element 0, then head 7 element 127, of each gathered token):"
rm -f "$out/read_keys_gpu.profile.json"
KVCACHE_EMU_PROFILE="$out/read_keys_gpu.profile.json" "$LLVM_PREFIX/bin/mlir-runner" -e main \
  -entry-point-result=void \
  -shared-libs="$LLVM_PREFIX/lib/libmlir_c_runner_utils.so,$LLVM_PREFIX/lib/libmlir_runner_utils.so,$KVCACHE_BUILD/lib/libKVCacheGPUEmulator.so" \
  "$out/read_keys_gpu.emulated.mlir" | tail -n +2
echo "traffic profile of the launch (KVCACHE_EMU_PROFILE):"
cat "$out/read_keys_gpu.profile.json"
