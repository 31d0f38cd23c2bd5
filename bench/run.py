#!/usr/bin/env python3
"""The benchmark suite: one command, a report with ratios and plots.

    /usr/bin/python3 bench/run.py [--quick] [--build build]

Writes bench/report.md and bench/plots/*.png. Sections:
  1. compiler: kvcache-opt (kvcache-to-cpu) and kvcache-compile on generated
     modules of 1k, 10k and 100k ops (time per op, ratio to linear growth),
     and the time to compile a full decode step to PTX;
  2. CPU kernels: each kernel op's bandwidth / memcpy bandwidth of the same
     bytes in the same run (bench/cpu/run.py), attention against a plain
     loop nest of the same math on a contiguous cache;
  3. PTX quality per kernel: registers, spills, 128-bit accesses, inner-loop
     instruction count (ptxas -v and the PTX text);
  4. GPU: the results of bench/gpu/run.sh when a GPU run left them in
     bench/gpu/results/, else "not measured";
  5. GPU kernels, emulated: traffic and coalescing of every kernel op from
     the GPU emulator's profile (bench/emulated.py);
  6. quantized caches: decode attention over an fp8 cache against an f16
     one, CPU time and emulated GPU traffic (bench/quantized.py);
  7. attention variants: CPU decode attention with a 4096-key window over
     32k-token contexts against none, time ratio and key ratio
     (bench/window.py);
  8. CPU attention against peers: ours, numpy, PyTorch (when installed) and
     a copy of the K+V bytes on the same data (bench/attention_peers.py);
  9. the GPU emulator's speed: thread switches and checked accesses per CPU
     second on emulated kernel tests (bench/emulator_speed.py);
 10. the argument checks' cost: a CPU decode step of batch 64 with and
     without the check routine run before each call (bench/check_cost.py);
 11. prefill: CPU prefill GFLOP/s (causal FLOPs) against the f32 GEMM rate
     measured in the same run and against PyTorch, CPU decode against a
     copy of its K/V on every core, the emulated GPU's loaded bytes against
     a kernel of packed 128-row query tiles, and the static model of the
     attention key loop per mma.sync (bench/prefill.py);
 12. MLA decode (mla_attention_ragged) on the emulated GPU: traffic against
     the latent rows read once (bench/mla.py).
Every figure is the min and the median of several repetitions; on these
shared CPUs only ratios measured side by side are meaningful.
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LLVM = "/usr/lib/llvm-22"
RUNNER_LIBS = f"{LLVM}/lib/libmlir_c_runner_utils.so,{LLVM}/lib/libmlir_runner_utils.so"
sys.path.insert(0, os.path.join(HERE, "cpu"))
from emulated import emulated_section  # noqa: E402  (bench/, the script's directory)
from quantized import quantized_section  # noqa: E402
from window import window_section  # noqa: E402
from attention_peers import attention_peers_section  # noqa: E402
from emulator_speed import emulator_speed_section  # noqa: E402
from check_cost import check_cost_section  # noqa: E402
from prefill import prefill_section  # noqa: E402
from mla import mla_section  # noqa: E402


def timed(command, reps, stdin=None):
    """(min, median) wall seconds of `command` over `reps` runs."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run(command, input=stdin, check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


# ---------------------------------------------------------------------------
# 1. Compiler scaling
# ---------------------------------------------------------------------------
CACHE = "!kvcache.paged_cache<f16, num_heads = 8, head_size = 128, page_size = 16>"


def access_module(num_ops, gpu):
    """A module of about `num_ops` kvcache ops in functions of 10 ops."""
    body = []
    for f in range(max(num_ops // 10, 1)):
        ops = f"""
    %p{f}, %s{f} = kvcache.lookup %k[%b, %t] : {CACHE}
    %x{f} = kvcache.page_load %k[%p{f}, %s{f}, %h, %d] : {CACHE} -> vector<8xf16>
    kvcache.page_store %x{f}, %k[%p{f}, %s{f}, %h, %d] : {CACHE}, vector<8xf16>
    %y{f} = kvcache.load %k[%b, %h, %t, %d] : {CACHE} -> vector<8xf16>
    kvcache.store %y{f}, %k[%b, %h, %t, %d] : {CACHE}, vector<8xf16>
    %n{f} = kvcache.cache_length %k[%b] : {CACHE}
    %m{f} = kvcache.max_seq_length %k : {CACHE}
    %z{f} = kvcache.load %k[%b, %h, %n{f}, %d] : {CACHE} -> f16
    kvcache.store %z{f}, %k[%b, %h, %m{f}, %d] : {CACHE}, f16
    %q{f} = kvcache.max_cache_length %k : {CACHE}"""
        if gpu:
            body.append(f"  gpu.func @k{f}(%k: {CACHE}, %b: index, %t: index, %h: index, %d: index) kernel {{{ops}\n    gpu.return\n  }}")
        else:
            body.append(f"func.func @f{f}(%k: {CACHE}, %b: index, %t: index, %h: index, %d: index) {{{ops}\n  return\n}}")
    if gpu:
        return "module attributes {gpu.container_module} {\ngpu.module @kernels {\n" + "\n".join(body) + "\n}\n}\n"
    return "\n".join(body) + "\n"


def decoder_layer_times(build, tmp):
    """(sizes, (min, median) s) of kvcache-to-cpu on examples/decoder_layer
    at its default sizes and at Llama 3 8B's (32 query / 8 KV heads of 128;
    the hidden and MLP sizes are dynamic in the IR)."""
    source = os.path.join(ROOT, "examples", "decoder_layer", "decoder_layer.mlir")
    large = os.path.join(tmp, "layer_8b.mlir")
    emitted = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "decoder_layer", "run.py"), "--emit",
         "--kv-heads", "8", "--head-size", "128", "--hidden", "4096", "--mlp", "14336"],
        check=True, capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(build, "python")))
    open(large, "w").write(emitted.stdout)
    return [(label, timed([f"{build}/bin/kvcache-opt", path, "-kvcache-to-cpu", "-o", os.devnull], 5))
            for label, path in (("8 query / 2 KV heads of 32", source),
                                ("32 / 8 heads of 128", large))]


def compiler_section(build, quick, lines, plots):
    sizes = [1000, 10000] if quick else [1000, 10000, 100000]
    reps = 2 if quick else 3
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            cpu_file, gpu_file = os.path.join(tmp, f"cpu{n}.mlir"), os.path.join(tmp, f"gpu{n}.mlir")
            open(cpu_file, "w").write(access_module(n, gpu=False))
            open(gpu_file, "w").write(access_module(n, gpu=True))
            opt = timed([f"{build}/bin/kvcache-opt", cpu_file, "-kvcache-to-cpu", "-o", os.devnull], reps)
            ptx_reps = 1 if n >= 100000 else reps
            ptx = timed([f"{build}/bin/kvcache-compile", gpu_file, "-o", os.path.join(tmp, "o.ptx")], ptx_reps)
            rows.append((n, opt, ptx))
            print(f"compiler: {n} ops: kvcache-to-cpu {opt[0]:.2f} s, kvcache-compile {ptx[0]:.2f} s", flush=True)
        step = timed([f"{build}/bin/kvcache-compile", os.path.join(ROOT, "examples", "decode_step.mlir"),
                      "-o", os.path.join(tmp, "step.ptx")], 3)
        layers = decoder_layer_times(build, tmp)
    base = rows[0]
    lines += ["## 1. Compiler", "",
              f"Generated modules of N kvcache ops (functions of 10 ops; for PTX, `gpu.func` kernels). "
              f"Wall time of the whole tool run, min / median of {reps} runs (1 run for PTX at 100k). "
              "'vs linear' is (time / N) / (time at 1k / 1k): 1.0 is linear growth.", "",
              "| ops | kvcache-opt -kvcache-to-cpu (s) | us/op | vs linear | kvcache-compile (s) | us/op | vs linear |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for n, opt, ptx in rows:
        lines.append(f"| {n} | {opt[0]:.2f} / {opt[1]:.2f} | {opt[0] / n * 1e6:.0f} | "
                     f"{(opt[0] / n) / (base[1][0] / base[0]):.2f} | {ptx[0]:.2f} / {ptx[1]:.2f} | "
                     f"{ptx[0] / n * 1e6:.0f} | {(ptx[0] / n) / (base[2][0] / base[0]):.2f} |")
    lines += ["", f"Full decode step (`examples/decode_step.mlir`: 2 store_ragged, attention with "
              f"workspace, a user function) to PTX with kvcache-compile: "
              f"{step[0]:.2f} s (min), {step[1]:.2f} s (median of 3).", "",
              "The decoder layer of examples/decoder_layer (linalg on tensors: RMSNorm, projections, "
              "rotary embedding, SwiGLU; store_ragged x 2, attention_ragged) through "
              "`kvcache-opt <file> -kvcache-to-cpu` (bufferization included), min / median of 5: "
              + "; ".join(f"{name} {t[0]:.2f} / {t[1]:.2f} s" for name, t in layers) + ".", ""]
    plots.append(("compiler_scaling", [r[0] for r in rows],
                  {"kvcache-to-cpu us/op": [r[1][0] / r[0] * 1e6 for r in rows],
                   "kvcache-compile us/op": [r[2][0] / r[0] * 1e6 for r in rows]},
                  "ops in the module", "microseconds per op"))


# ---------------------------------------------------------------------------
# 2. CPU kernels
# ---------------------------------------------------------------------------
def attention_programs(context, batch, reps):
    """Paged attention through kvcache vs a plain loop nest of the same math on
    contiguous K/V, both timed in one program."""
    H, D, HQ, P = 8, 128, 32, 16
    pages = batch * (context // P + 1) + 1
    cache = f"!kvcache.paged_cache<f32, num_heads = {H}, head_size = {D}, page_size = {P}>"
    coll = f"!kvcache.paged_collection<f32, num_heads = {H}, head_size = {D}, page_size = {P}>"
    return f"""
func.func private @rtclock() -> f64
func.func @paged(%q: memref<{batch}x{HQ}x{D}xf32>, %k: {cache}, %v: {cache}, %rows: memref<?xi32>, %out: memref<{batch}x{HQ}x{D}xf32>) -> f64 {{
  %t0 = func.call @rtclock() : () -> f64
  kvcache.attention_ragged %q, %k, %v, %rows, %out {{scale = 0.0883883 : f32}} : memref<{batch}x{HQ}x{D}xf32>, {cache}, {cache}, memref<?xi32>, memref<{batch}x{HQ}x{D}xf32>
  %t1 = func.call @rtclock() : () -> f64
  %dt = arith.subf %t1, %t0 : f64
  return %dt : f64
}}
// The same math on contiguous K, V [batch, context + 1, H, D], straightforward loops.
func.func @plain(%q: memref<{batch}x{HQ}x{D}xf32>, %kk: memref<{batch}x{context + 1}x{H}x{D}xf32>, %vv: memref<{batch}x{context + 1}x{H}x{D}xf32>, %out: memref<{batch}x{HQ}x{D}xf32>) -> f64 {{
  %t0 = func.call @rtclock() : () -> f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cb = arith.constant {batch} : index
  %ch = arith.constant {HQ} : index
  %cd = arith.constant {D} : index
  %ct = arith.constant {context + 1} : index
  %cg = arith.constant {HQ // H} : index
  %scale = arith.constant 0.0883883 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloca() : memref<{D}xf32>
  scf.for %b = %c0 to %cb step %c1 {{
    scf.for %h = %c0 to %ch step %c1 {{
      %g = arith.divui %h, %cg : index
      scf.for %d = %c0 to %cd step %c1 {{
        memref.store %zero, %acc[%d] : memref<{D}xf32>
      }}
      %ml:2 = scf.for %t = %c0 to %ct step %c1 iter_args(%m = %ninf, %l = %zero) -> (f32, f32) {{
        %s = scf.for %d = %c0 to %cd step %c1 iter_args(%a = %zero) -> f32 {{
          %x = memref.load %q[%b, %h, %d] : memref<{batch}x{HQ}x{D}xf32>
          %y = memref.load %kk[%b, %t, %g, %d] : memref<{batch}x{context + 1}x{H}x{D}xf32>
          %p = arith.mulf %x, %y : f32
          %n = arith.addf %a, %p : f32
          scf.yield %n : f32
        }}
        %ss = arith.mulf %s, %scale : f32
        %m2 = arith.maximumf %m, %ss : f32
        %dm = arith.subf %m, %m2 : f32
        %c = math.exp %dm : f32
        %ds = arith.subf %ss, %m2 : f32
        %e = math.exp %ds : f32
        %lc = arith.mulf %l, %c : f32
        %l2 = arith.addf %lc, %e : f32
        scf.for %d = %c0 to %cd step %c1 {{
          %a = memref.load %acc[%d] : memref<{D}xf32>
          %w = memref.load %vv[%b, %t, %g, %d] : memref<{batch}x{context + 1}x{H}x{D}xf32>
          %ac = arith.mulf %a, %c : f32
          %ew = arith.mulf %e, %w : f32
          %a2 = arith.addf %ac, %ew : f32
          memref.store %a2, %acc[%d] : memref<{D}xf32>
        }}
        scf.yield %m2, %l2 : f32, f32
      }}
      scf.for %d = %c0 to %cd step %c1 {{
        %a = memref.load %acc[%d] : memref<{D}xf32>
        %o = arith.divf %a, %ml#1 : f32
        memref.store %o, %out[%b, %h, %d] : memref<{batch}x{HQ}x{D}xf32>
      }}
    }}
  }}
  %t1 = func.call @rtclock() : () -> f64
  %dt = arith.subf %t1, %t0 : f64
  return %dt : f64
}}
func.func @main() {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %reps = arith.constant {reps} : index
  %one = arith.constant 0.01 : f32
  %blocks = memref.alloc() : memref<{pages}x2x1x{P}x{H}x{D}xf32>
  linalg.fill ins(%one : f32) outs(%blocks : memref<{pages}x2x1x{P}x{H}x{D}xf32>)
  %kk = memref.alloc() : memref<{batch}x{context + 1}x{H}x{D}xf32>
  %vv = memref.alloc() : memref<{batch}x{context + 1}x{H}x{D}xf32>
  linalg.fill ins(%one : f32) outs(%kk : memref<{batch}x{context + 1}x{H}x{D}xf32>)
  linalg.fill ins(%one : f32) outs(%vv : memref<{batch}x{context + 1}x{H}x{D}xf32>)
  %q = memref.alloc() : memref<{batch}x{HQ}x{D}xf32>
  linalg.fill ins(%one : f32) outs(%q : memref<{batch}x{HQ}x{D}xf32>)
  %out = memref.alloc() : memref<{batch}x{HQ}x{D}xf32>
  %out2 = memref.alloc() : memref<{batch}x{HQ}x{D}xf32>
  %cb = arith.constant {batch} : index
  %cb1 = arith.constant {batch + 1} : index
  %pps = arith.constant {context // P + 1} : index
  %lengths = memref.alloc(%cb) : memref<?xi32>
  %table = memref.alloc(%cb, %pps) : memref<?x?xi32>
  %rows = memref.alloc(%cb1) : memref<?xi32>
  %ctx = arith.constant {context} : i32
  scf.for %b = %c0 to %cb step %c1 {{
    memref.store %ctx, %lengths[%b] : memref<?xi32>
    %b32 = arith.index_cast %b : index to i32
    memref.store %b32, %rows[%b] : memref<?xi32>
    scf.for %j = %c0 to %pps step %c1 {{
      %base = arith.muli %b, %pps : index
      %pg = arith.addi %base, %j : index
      %pg32 = arith.index_cast %pg : index to i32
      memref.store %pg32, %table[%b, %j] : memref<?x?xi32>
    }}
  }}
  %cbi = arith.constant {batch} : i32
  memref.store %cbi, %rows[%cb] : memref<?xi32>
  %s1 = arith.constant 1 : i32
  %mc = arith.constant {context + 1} : i32
  %c = kvcache.paged_collection %blocks, %lengths, %table, %s1, %mc : memref<{pages}x2x1x{P}x{H}x{D}xf32>, memref<?xi32>, memref<?x?xi32> -> {coll}
  %k = kvcache.get_key_cache %c[%c0] : {coll}
  %v = kvcache.get_value_cache %c[%c0] : {coll}
  scf.for %r = %c0 to %reps step %c1 {{
    %a = func.call @paged(%q, %k, %v, %rows, %out) : (memref<{batch}x{HQ}x{D}xf32>, {cache}, {cache}, memref<?xi32>, memref<{batch}x{HQ}x{D}xf32>) -> f64
    %p = func.call @plain(%q, %kk, %vv, %out2) : (memref<{batch}x{HQ}x{D}xf32>, memref<{batch}x{context + 1}x{H}x{D}xf32>, memref<{batch}x{context + 1}x{H}x{D}xf32>, memref<{batch}x{HQ}x{D}xf32>) -> f64
    vector.print str "PAGED "
    vector.print %a : f64
    vector.print str "PLAIN "
    vector.print %p : f64
    // Read both results, so that no computation is dead, and compare them.
    %last = arith.constant {batch - 1} : index
    %x = memref.load %out[%last, %c0, %c0] : memref<{batch}x{HQ}x{D}xf32>
    %y = memref.load %out2[%last, %c0, %c0] : memref<{batch}x{HQ}x{D}xf32>
    vector.print str "RESULTS "
    vector.print %x : f32
    vector.print %y : f32
  }}
  return
}}
"""


def cpu_section(build, quick, lines, plots):
    import run as cpu_bench  # bench/cpu/run.py
    cases = [
        ("store_ragged", "64 rows (decode)", dict(tokens=64, batch=64, pairs=1, layers=1)),
        ("store_ragged", "4096 rows", dict(tokens=4096, batch=64, pairs=1, layers=1)),
        ("gather_ragged", "4096 rows", dict(tokens=4096, batch=64, pairs=1, layers=1)),
        ("copy_pages", "64 pairs x 4 layers", dict(tokens=64, batch=64, pairs=64, layers=4)),
        # Quantized: f16 rows into / out of an f8E4M3FN token_head cache;
        # the memcpy moves the f16 rows' bytes (issue target >= 0.8).
        ("store_ragged", "4096 f16 rows -> fp8 token_head",
         dict(tokens=4096, batch=64, pairs=1, layers=1, storage="f8E4M3FN")),
        ("gather_ragged", "4096 fp8 token_head -> f16 rows",
         dict(tokens=4096, batch=64, pairs=1, layers=1, storage="f8E4M3FN")),
    ]
    if not quick:
        cases += [("gather_ragged", "131072 rows (256 MiB)", dict(tokens=131072, batch=64, pairs=1, layers=1)),
                  ("copy_pages", "512 pairs x 4 layers", dict(tokens=64, batch=64, pairs=512, layers=4))]
    reps = 4 if quick else 8
    lines += ["## 2. CPU kernels", "",
              "Each op lowered with `kvcache-to-cpu`, run by `mlir-runner -O3`; the memcpy is "
              "`memref.copy` of the same bytes (llvm.memcpy) timed alternately in the same process. "
              f"min / median of {reps - 1} repetitions (the first is dropped). Target: >= 0.90 "
              "(>= 0.8 for the quantizing and dequantizing fp8 rows, against the memcpy of their f16 bytes).", "",
              "| op | case | MiB | op GB/s (min time / median) | memcpy GB/s | ratio to memcpy |",
              "| --- | --- | --- | --- | --- | --- |"]
    names, ratios = [], []
    for op, label, shape in cases:
        r = cpu_bench.run_case(build, op, reps=reps, **shape)
        gbs = lambda s: r["bytes"] / s / 1e9
        ratio = r["copy_s"] / r["op_s"]
        lines.append(f"| {op} | {label} | {r['bytes'] / 2**20:.1f} | {gbs(r['op_s']):.1f} / "
                     f"{gbs(r['op_median_s']):.1f} | {gbs(r['copy_s']):.1f} / {gbs(r['copy_median_s']):.1f} | {ratio:.2f} |")
        names.append(f"{op}\n{label}")
        ratios.append(ratio)
        print(lines[-1], flush=True)
    plots.append(("cpu_kernel_ratio", names, {"ratio to memcpy": ratios}, None, "bandwidth / memcpy"))

    lines += ["", "Attention (f32, 8 KV heads x 128, GQA 4, decode: one row per sequence): "
              "`attention_ragged` through `kvcache-to-cpu` vs a straightforward scalar loop nest of the "
              "same math on contiguous K/V, same process, min / median.", "",
              "| batch | context | paged kvcache (ms) | plain loop nest (ms) | speed-up |",
              "| --- | --- | --- | --- | --- |"]
    for batch, context in ([(4, 512)] if quick else [(4, 512), (8, 2048)]):
        src = attention_programs(context, batch, 4)
        lowered = subprocess.run([f"{build}/bin/kvcache-opt", "-kvcache-to-cpu", "-"], input=src,
                                 capture_output=True, text=True, check=True).stdout
        out = subprocess.run([f"{LLVM}/bin/mlir-runner", "-e", "main", "-entry-point-result=void", "-O3",
                              f"-shared-libs={RUNNER_LIBS}"], input=lowered, capture_output=True,
                             text=True, check=True).stdout
        paged = [float(x) for x in re.findall(r"PAGED\s*([0-9.e+-]+)", out)][1:]
        plain = [float(x) for x in re.findall(r"PLAIN\s*([0-9.e+-]+)", out)][1:]
        lines.append(f"| {batch} | {context} | {min(paged) * 1e3:.1f} / {statistics.median(paged) * 1e3:.1f} | "
                     f"{min(plain) * 1e3:.1f} / {statistics.median(plain) * 1e3:.1f} | {min(plain) / min(paged):.2f} |")
        print(lines[-1], flush=True)
    lines.append("")


# ---------------------------------------------------------------------------
# 3. PTX quality
# ---------------------------------------------------------------------------
def ptx_section(build, lines):
    ptxas = "/usr/local/cuda/bin/ptxas"
    sources = [os.path.join(ROOT, "examples", "decode_step.mlir"), os.path.join(ROOT, "examples", "read_keys_gpu.mlir"),
               os.path.join(HERE, "gpu", "kernel_ops.mlir"), os.path.join(HERE, "gpu", "kernels.mlir"),
               os.path.join(HERE, "gpu", "attention.mlir")]
    lines += ["## 3. PTX quality (sm_90)", "",
              "From `kvcache-compile` and `ptxas -arch=sm_90 -v`: registers, spill bytes, 128-bit global "
              "accesses (ld/st.global.v4) and instructions of the last loop in the kernel (the PTX block between "
              "its label and its back-branch: the main loop for attention, the sequence search for the ragged copies).", "",
              "| kernel | registers | spill stores/loads | smem bytes | 128-bit global ld / st | last-loop instructions |",
              "| --- | --- | --- | --- | --- | --- |"]
    if not os.path.exists(ptxas):
        lines += ["", "ptxas not installed: not measured.", ""]
        return
    with tempfile.TemporaryDirectory() as tmp:
        for source in sources:
            ptx_file = os.path.join(tmp, "k.ptx")
            subprocess.run([f"{build}/bin/kvcache-compile", source, "-o", ptx_file], check=True)
            ptx = open(ptx_file).read()
            info = subprocess.run([ptxas, "-arch=sm_90", "-v", ptx_file, "-o", os.devnull],
                                  capture_output=True, text=True, check=True).stderr
            stats = {}
            for name, block in re.findall(r"Compiling entry function '(\w+)'.*?\n(.*?)(?=ptxas info    : Compiling|\Z)", info, re.S):
                regs = re.search(r"Used (\d+) registers", block)
                smem = re.search(r"(\d+) bytes smem", block)
                spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", block)
                stats[name] = (regs.group(1) if regs else "?", f"{spills.group(1)}/{spills.group(2)}" if spills else "?",
                               smem.group(1) if smem else "0")
            for entry in re.finditer(r"\.visible \.entry (\w+)\((.*?)\n}\n", ptx, re.S):
                name, body = entry.group(1), entry.group(2)
                loads = len(re.findall(r"ld\.global(\.nc)?\.v4\.", body))
                stores = len(re.findall(r"st\.global\.v4\.", body))
                inner = 0
                labels = list(re.finditer(r"^(\$L__BB\d+_\d+):", body, re.M))
                for label in reversed(labels):
                    branch = re.search(r"bra(\.uni)?\s+" + re.escape(label.group(1)) + ";", body[label.end():])
                    if branch:
                        segment = body[label.end():label.end() + branch.end()]
                        inner = len([l for l in segment.splitlines() if l.strip() and not l.strip().startswith(("$", "//", "{", "}"))])
                        break
                regs, spills, smem = stats.get(name, ("?", "?", "?"))
                lines.append(f"| {name} ({os.path.basename(source)}) | {regs} | {spills} | {smem} | {loads} / {stores} | {inner} |")
    lines.append("")


def model_section(build, lines):
    """3.1: bench/gpu/model.py's table (static model of the sm_90 kernels)."""
    lines += ["### 3.1 Static model of the GPU kernels (sm_90, H200)", "",
              "From `bench/gpu/model.py` (its docstring has the model): the main loop's PTX instructions "
              "per KB of the cache per warp for decode attention (head 128, every pass a large query "
              "group makes over K/V counted) and per 16 B per thread for the data ops (page 16, 8 heads "
              "of 128, f16; a 6-step batch search), blocks per SM, bytes in flight per SM and the issue "
              "bound `132 x 4 x 1.98e9 x 1024 / instructions per KB` as a ratio to a 4.3 TB/s device "
              "copy. `bench/gpu/model-limits.json` holds the figures test/Integration/GPU/gpu-model.test "
              "keeps from regressing.", ""]
    ptxas = "/usr/local/cuda/bin/ptxas"
    if not os.path.exists(ptxas):
        lines += ["ptxas not installed: not measured.", ""]
        return
    table = subprocess.run([sys.executable, os.path.join(HERE, "gpu", "model.py"), "--build", build,
                            "--ptxas", ptxas], capture_output=True, text=True, check=True).stdout
    lines += table.strip().splitlines() + [""]


# ---------------------------------------------------------------------------
# 4. GPU
# ---------------------------------------------------------------------------
def gpu_section(lines):
    results = os.path.join(HERE, "gpu", "build", "results")
    lines += ["## 4. GPU", ""]
    found = False
    for name in ("check_kernels.txt", "bench_kernel_ops.txt", "bench_attention.txt"):
        path = os.path.join(results, name)
        if os.path.exists(path) and "no GPU" not in open(path).read():
            found = True
            lines += [f"`{name}` (from `bench/gpu/run.sh` on a GPU machine):", "", "```", open(path).read().strip(), "```", ""]
    if not found:
        lines += ["Not measured: no GPU run has left results in bench/gpu/build/results/. "
                  "`bash bench/gpu/run.sh` on a GPU machine fills this section (check against a numpy "
                  "model, then kernel-op and attention bandwidth as ratios to a device copy).", ""]


def write_plots(plots, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ["(matplotlib is not installed: `apt-get install python3-matplotlib` for plots)"]
    os.makedirs(out_dir, exist_ok=True)
    refs = []
    for name, xs, series, xlabel, ylabel in plots:
        fig, ax = plt.subplots(figsize=(7, 4))
        for label, ys in series.items():
            if all(isinstance(x, (int, float)) for x in xs):
                ax.plot(xs, ys, marker="o", label=label)
                ax.set_xscale("log")
            else:
                ax.bar(range(len(xs)), ys, label=label)
                ax.set_xticks(range(len(xs)))
                ax.set_xticklabels(xs, fontsize=7)
                ax.axhline(0.9, color="gray", linestyle="--", linewidth=1)
        if xlabel:
            ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, name + ".png"), dpi=100)
        plt.close(fig)
        refs.append(f"![{name}](plots/{name}.png)")
    return refs


def _command_line():
    """The command as run, paths inside the repository relative to its root
    (the report names no path of the machine it ran on)."""
    def relative(arg):
        path = os.path.abspath(arg)
        inside = os.path.exists(path) and os.path.commonpath([path, ROOT]) == ROOT
        return os.path.relpath(path, ROOT) if inside else arg
    return " ".join(relative(arg) for arg in sys.argv)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--quick", action="store_true", help="smaller sizes (about a minute)")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    versions = subprocess.run([f"{build}/bin/kvcache-opt", "--version"], capture_output=True, text=True).stdout
    llvm_version = re.search(r"LLVM version ([\d.]+)", versions)
    lines = ["# kvcache-mlir benchmark report", "",
             f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
             f"- LLVM/MLIR {llvm_version.group(1) if llvm_version else '?'}, "
             f"git {subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}",
             f"- command: `{_command_line()}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", ""]
    plots = []
    start = time.time()
    compiler_section(build, args.quick, lines, plots)
    cpu_section(build, args.quick, lines, plots)
    ptx_section(build, lines)
    model_section(build, lines)
    gpu_section(lines)
    emulated_section(build, args.quick, lines)
    quantized_section(build, args.quick, lines)
    window_section(build, args.quick, lines)
    attention_peers_section(build, args.quick, lines)
    emulator_speed_section(build, args.quick, lines)
    check_cost_section(build, args.quick, lines)
    prefill_section(build, args.quick, lines)
    mla_section(build, args.quick, lines)
    lines += ["## Plots", ""] + write_plots(plots, os.path.join(HERE, "plots")) + [""]
    lines.append(f"Total benchmark time: {time.time() - start:.0f} s.")
    with open(os.path.join(HERE, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"-- wrote {os.path.join(HERE, 'report.md')}")


if __name__ == "__main__":
    main()
