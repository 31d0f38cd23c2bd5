"""Section 11 of the benchmark report: prefill (several query rows per
sequence), on the CPU against the machine's GEMM rate and PyTorch, decode
against a copy of its K/V on every core, and on the emulated GPU the bytes
loaded against a kernel that packs query tiles.

The model throughout: 32 query heads on 8 KV heads x 128 (GQA 4), page 16,
pages shuffled over the blocks (as an allocator leaves them).

CPU (`attention_ragged` through `kvcache.CPUModule`, every core: the
default, `parallel=true`), f32 and bf16:

- prefill, 2 sequences x 1024 new tokens (nothing cached) and 1 sequence of
  128 new over 4096 cached: ms, and GFLOP/s counting the causal work only,

      FLOPs = 4 x head_size x q_heads x sum over rows of the keys the row sees

  (q K^T and P V, a multiply and an add each), as a ratio to the machine's
  f32 GEMM rate measured in the same run (torch.matmul of two 2048 x 2048
  f32 matrices, 2 x 2048^3 FLOPs, with as many threads as cores, through
  whatever BLAS torch loaded, OpenBLAS's AVX-512 kernels asked for where it
  does not know the CPU (see _ask_openblas_for_avx512); numpy.matmul when
  torch is missing), and
  PyTorch as a peer (per sequence: matmul, causal mask, softmax, matmul on
  K/V already gathered contiguous, in the case's type, the same threads).
  Targets (issue 34): >= 0.7 of the GEMM rate, ahead of PyTorch;
- decode, 8 x 2048 and 32 x 4096 (one row per sequence): time against a
  copy of the same K/V bytes on every core (torch `copy_` with as many
  threads as cores; numpy.copyto, one thread, when torch is missing).
  Target: <= 1.1x the copy.

The contenders of a case run in turn, one call each per round, a pause of
0.3 s before each call (so the idle threads of the previous one, OpenMP's
and OpenBLAS's spin-waits, have gone to sleep); the first round is dropped;
min and median of the rest. Ours is checked against numpy (attention on
the gathered K/V in f32) before timing: f32 2e-5, bf16 1.6e-2.

Emulated GPU (`kvcache.EmulatedGPUModule`, sm_90 plan, the profile of
KVCACHE_EMU_PROFILE: docs/Contract.md 8.4), bf16, no workspace (one launch
each): (a) 2 sequences of 256 and 192 new tokens, nothing cached; (b) 1
sequence of 128 new over 512 cached; (c) 4 sequences of 300 new over 1000
cached (6 minutes of emulation on 2 cores with the query-tile kernel, 18 with
the decode kernel: not with --quick). Reported: the
global bytes the launches load (the threads' requests, `global_load_bytes`,
and 32 x the sectors they touch) against the packed-tile reference,
computed here: a tile packs 128 (token, query head) rows of one sequence
and KV head (128 / GQA = 32 tokens) and reads q once and each K/V row once
per tile that sees it (causal: a tile sees the keys up to its last row),

    reference = q bytes + sum over (sequence, KV head, tile) of
                (cached + last row of the tile + 1) x head_size x 2 (K, V) x 2 B

Target: <= 1.15x. For context, also the ratio to K/V read once + q once.
Checked against kvcache.reference (bf16 1.6e-2).

Static model (sm_90, ptxas -v): the key loop of today's attention kernel
(bench/gpu/model.py) at head 128, bf16, GQA 4: PTX instructions per
mma.sync and per mma.sync whose 16 rows all hold queries, stages in flight,
registers, spills. Target of the query-tile kernel: <= 4 instructions per
full mma.sync, >= 2 stages, 0 spills.

Run alone: `/usr/bin/python3 bench/prefill.py [--build DIR] [--quick]`.
"""

import ctypes
import os
import statistics
import sys
import time

from attention_peers import (GROUP, HEAD_SIZE, HEADS, PAGE, Q_HEADS, TOLERANCE,
                             _case, _causal_masks, _import_torch,
                             _numpy_attention, _torch_attention)
from emulated import _aligned, _Runner
from section_cli import import_package

HERE = os.path.dirname(os.path.abspath(__file__))
SKYLAKEX_FLAGS = {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"}


def _ask_openblas_for_avx512():
    """OpenBLAS 0.3.21 (Debian 12) does not know recent Xeons (family 6 model
    207 here) and falls back to its SSE3 "Prescott" kernels, 5x below the
    machine (33 against 180 GFLOP/s a core): on a CPU with SkylakeX's AVX-512
    subsets, ask for those kernels unless the environment names a core. Run
    before numpy is first imported (bench/run.py imports this module first),
    so numpy and torch in every section load OpenBLAS with it."""
    try:
        with open("/proc/cpuinfo") as info:
            flags = next((set(line.split()) for line in info
                          if line.startswith("flags")), set())
    except OSError:
        return
    if SKYLAKEX_FLAGS <= flags:
        named = os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
        if named.lower() in ("haswell", "zen", "sandybridge", "prescott", "nehalem"):
            global GEMM_UNDERSTATED
            GEMM_UNDERSTATED = (f"the environment names OpenBLAS core {named}, without "
                                "AVX-512 on a CPU that has it: the GEMM rate is understated "
                                "(OPENBLAS_CORETYPE=SkylakeX for this machine's)")


GEMM_UNDERSTATED = ""


_ask_openblas_for_avx512()
PREFILL = [  # (name, batch, cached tokens per sequence, new rows per sequence)
    ("prefill 2 x 1024", 2, 0, 1024),
    ("prefill 128 over 4096 cached", 1, 4096, 128),
]
DECODE = [("decode 8 x 2048", 8, 2047, 1), ("decode 32 x 4096", 32, 4095, 1)]
EMULATED = [  # (name, cached per sequence, new per sequence, quick)
    ("(a) 2 x (256, 192) new, nothing cached", [0, 0], [256, 192], True),
    ("(b) 128 new over 512 cached", [512], [128], True),
    ("(c) 4 x 300 new over 1000 cached", [1000] * 4, [300] * 4, False),
]
TILE_ROWS = 128  # (token, query head) rows of a packed tile
GEMM_SIZE = 2048
PAUSE_S = 0.3
ELEMENT_BYTES = {"f32": 4, "bf16": 2}


def _alternating(calls, reps):
    """{name: (min s, median s)} of `calls` run in turn, one call each per
    round after a pause, over `reps` rounds after a dropped first one."""
    times = {name: [] for name in calls}
    for round_ in range(reps + 1):
        for name, call in calls.items():
            time.sleep(PAUSE_S)
            start = time.perf_counter()
            call()
            if round_:
                times[name].append(time.perf_counter() - start)
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}


def _blas_library():
    """The BLAS libraries mapped into this process (Linux), with OpenBLAS's
    kernels, for the report."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps
                     if "blas" in line.lower() and "/" in line}
    except OSError:
        return "?"
    openblas = {path for path in paths if "openblas" in os.path.basename(path)}
    names = []
    for path in sorted(openblas or paths):
        try:
            core = ctypes.CDLL(path).openblas_get_corename
            core.restype = ctypes.c_char_p
            names.append(f"{os.path.basename(path)} ({core().decode()} kernels)")
        except (OSError, AttributeError):
            names.append(os.path.basename(path))
    return ", ".join(names) or "?"


class _Peers:
    """The GEMM, the copy and PyTorch, on torch with every core's threads or
    on numpy when torch is missing."""

    def __init__(self, np):
        self.np, self.torch = np, _import_torch()
        self.threads = os.cpu_count()
        if self.torch is not None:
            self.torch.set_num_threads(self.threads)
        rng = np.random.default_rng(5)
        a, b = (rng.uniform(-1, 1, (GEMM_SIZE, GEMM_SIZE)).astype(np.float32)
                for _ in range(2))
        if self.torch is None:
            self.gemm_inputs = (a, b, np.empty_like(a))
            self.gemm = lambda: np.matmul(*self.gemm_inputs[:2], out=self.gemm_inputs[2])
        else:
            t = self.torch
            self.gemm_inputs = (t.from_numpy(a), t.from_numpy(b), t.empty(a.shape))
            self.gemm = lambda: t.matmul(*self.gemm_inputs[:2], out=self.gemm_inputs[2])
        self.gemm()
        self.blas = _blas_library()

    def describe(self):
        if self.torch is None:
            return (f"numpy.matmul (PyTorch not installed), BLAS {self.blas}; copies "
                    "by numpy.copyto on one thread")
        return (f"torch {self.torch.__version__} with {self.threads} threads "
                f"(torch.set_num_threads), BLAS {self.blas}; copies by torch copy_"
                + (f"; {GEMM_UNDERSTATED}" if GEMM_UNDERSTATED else ""))

    def copy(self, nbytes):
        """A call copying `nbytes` (torch: every core; numpy: one thread)."""
        if self.torch is None:
            source = self.np.ones(nbytes, self.np.uint8)
            target = self.np.empty_like(source)
            return lambda: self.np.copyto(target, source)
        source = self.torch.ones(nbytes, dtype=self.torch.uint8)
        target = self.torch.empty_like(source)
        return lambda: target.copy_(source)

    def attention(self, dtype, q32, gathered, new, scale):
        """PyTorch's matmul, mask, softmax, matmul on the gathered K/V, or
        None without torch."""
        if self.torch is None:
            return None
        t = self.torch
        kind = t.float32 if dtype == "f32" else t.bfloat16
        tq = t.from_numpy(q32).to(kind)
        tkv = [(t.from_numpy(kv[0]).to(kind), t.from_numpy(kv[1]).to(kind))
               for kv in gathered]
        tout = t.zeros(tq.shape, dtype=kind)

        def call():
            with t.no_grad():
                _torch_attention(t, tq, tkv, new, scale, tout)
        return call


def _ours(np, kvcache, builders, dtype, case):
    """(call of ours on every core, q in f32, gathered K/V, max |error|
    against numpy, K+V bytes) of a CPU case."""
    name, batch, cached, new = case
    config = kvcache.CacheConfig(dtype, num_heads=HEADS, head_size=HEAD_SIZE,
                                 page_size=PAGE, num_layers=1, q_heads=Q_HEADS)
    module = kvcache.CPUModule(builders.attention_ragged(config, "attention"), opt_level=3)
    rng = np.random.default_rng(batch * 7 + new)
    cache, q, offsets, gathered = _case(np, kvcache, rng, dtype, batch, cached, new)
    arguments, out = cache.arguments(), np.zeros_like(q)
    call = lambda: module.attention(*arguments, 0, q, offsets, out)
    call()
    q32 = kvcache.dtypes.to_float32(q, dtype)
    expected = np.zeros(q32.shape, np.float32)
    transposed = [np.ascontiguousarray(kv[0].transpose(0, 2, 1)) for kv in gathered]
    _numpy_attention(np, q32, gathered, transposed, _causal_masks(np, gathered, new),
                     new, config.default_scale, expected)
    error = float(np.abs(kvcache.dtypes.to_float32(out, dtype) - expected).max())
    if error > TOLERANCE[dtype]:
        raise SystemExit(f"bench/prefill.py: {name} {dtype}: ours differs from numpy "
                         f"by {error:.2e} (> {TOLERANCE[dtype]:g})")
    kv_bytes = sum(kv.size for kv in gathered) * ELEMENT_BYTES[dtype]
    return call, q32, gathered, error, kv_bytes, config.default_scale


def causal_flops(batch, cached, new):
    """4 x head_size x q_heads x the keys the rows see (causal)."""
    keys = batch * (new * cached + new * (new + 1) // 2)
    return 4 * HEAD_SIZE * Q_HEADS * keys


def _cpu_prefill(np, kvcache, builders, peers, reps, lines):
    torch = peers.torch is not None
    lines += ["| case | type | GFLOP (causal) | ours ms | ours GFLOP/s | GEMM GFLOP/s "
              "| ours / GEMM (target >= 0.7) |" +
              (" PyTorch ms | PyTorch / ours time (target > 1) |" if torch else "") +
              " max error vs numpy |",
              "| --- | --- | --- | --- | --- | --- | --- |" + (" --- | --- |" if torch else "") +
              " --- |"]
    for case in PREFILL:
        for dtype in ("f32", "bf16"):
            call, q32, gathered, error, _, scale = _ours(np, kvcache, builders, dtype, case)
            calls = {"gemm": peers.gemm, "ours": call}
            rival = peers.attention(dtype, q32, gathered, case[3], scale)
            if rival is not None:
                calls["PyTorch"] = rival
            t = _alternating(calls, reps)
            flops = causal_flops(*case[1:])
            gemm_rate = 2 * GEMM_SIZE ** 3 / t["gemm"][0] / 1e9
            rate = flops / t["ours"][0] / 1e9
            row = (f"| {case[0]} | {dtype} | {flops / 1e9:.1f} | {t['ours'][0] * 1e3:.0f} / "
                   f"{t['ours'][1] * 1e3:.0f} | {rate:.1f} | {gemm_rate:.0f} | "
                   f"{rate / gemm_rate:.2f} |")
            if rival is not None:
                row += (f" {t['PyTorch'][0] * 1e3:.0f} / {t['PyTorch'][1] * 1e3:.0f} | "
                        f"{t['PyTorch'][0] / t['ours'][0]:.2f} |")
            lines.append(row + f" {error:.1e} |")
            print(lines[-1], flush=True)
    lines.append("")


def _cpu_decode(np, kvcache, builders, peers, reps, lines):
    lines += ["| case | type | K+V MiB | ours ms | copy ms | ours / copy (target <= 1.1) "
              "| max error vs numpy |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for case in DECODE:
        for dtype in ("f32", "bf16"):
            call, _, gathered, error, kv_bytes, _ = _ours(np, kvcache, builders, dtype, case)
            del gathered
            t = _alternating({"ours": call, "copy": peers.copy(kv_bytes)}, reps)
            lines.append(f"| {case[0]} | {dtype} | {kv_bytes / 2**20:.0f} | "
                         f"{t['ours'][0] * 1e3:.1f} / {t['ours'][1] * 1e3:.1f} | "
                         f"{t['copy'][0] * 1e3:.1f} / {t['copy'][1] * 1e3:.1f} | "
                         f"{t['ours'][0] / t['copy'][0]:.2f} | {error:.1e} |")
            print(lines[-1], flush=True)
    lines.append("")


def packed_tile_bytes(cached, new, element_bytes=2):
    """(the 128-row packed-tile reference's loads, K/V once + q once) in
    bytes: per sequence and KV head, tiles of 128 / GQA tokens, each reading
    the K/V rows up to its last row; q read once."""
    tokens = TILE_ROWS // GROUP
    row = HEAD_SIZE * element_bytes
    q = sum(new) * Q_HEADS * row
    tiles = sum(c + min(first + tokens, n) for c, n in zip(cached, new)
                for first in range(0, n, tokens))
    once = sum(c + n for c, n in zip(cached, new))
    return q + tiles * HEADS * 2 * row, q + once * HEADS * 2 * row


def _emulated(build, quick, lines):
    runner = _Runner(build)
    np, kv, b, r = runner.np, runner.kvcache, runner.builders, runner.reference
    config = kv.CacheConfig("bf16", num_heads=HEADS, head_size=HEAD_SIZE,
                            page_size=PAGE, num_layers=1, q_heads=Q_HEADS)
    module = kv.EmulatedGPUModule(b.attention_ragged(config))
    lines += ["| case | launches | grid | loaded bytes (requested) | 32 x load sectors "
              "| packed-tile reference | requested / reference (target <= 1.15) "
              "| requested / (K/V + q once) | max error vs reference | emulator s |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    skipped = []
    for name, cached, new, in_quick in EMULATED:
        if quick and not in_quick:
            skipped.append(name)
            continue
        cache = runner.cache(config, cached, new, sum(new))
        offsets = _aligned(np, r.row_offsets(new))
        q = _aligned(np, r.random_rows(np.random.default_rng(3), sum(new), Q_HEADS,
                                       HEAD_SIZE, "bf16"))
        out = _aligned(np, np.zeros(q.shape, q.dtype))
        start = time.perf_counter()
        launches, _ = runner.profiled(lambda: module.attention_ragged(
            *cache.arguments(), 0, q, offsets, out))
        seconds = time.perf_counter() - start
        expected = r.attention_ragged(q, cache.key_cache(0), cache.value_cache(0), offsets,
                                      np.zeros_like(q), config.default_scale)
        to_f32 = kv.dtypes.to_float32
        error = float(np.abs(to_f32(out, "bf16") - to_f32(expected, "bf16")).max())
        if error > TOLERANCE["bf16"]:
            raise SystemExit(f"bench/prefill.py: emulated {name}: differs from "
                             f"kvcache.reference by {error:.2e}")
        loaded = sum(launch["global_load_bytes"] for launch in launches)
        sectors = 32 * sum(launch["load_sectors"] for launch in launches)
        reference, once = packed_tile_bytes(cached, new)
        grids = ", ".join("x".join(str(v) for v in launch["grid"]) for launch in launches)
        lines.append(f"| {name} | {len(launches)} | {grids} | {loaded / 1e6:.1f} MB | "
                     f"{sectors / 1e6:.1f} MB | {reference / 1e6:.2f} MB | "
                     f"{loaded / reference:.2f} | {loaded / once:.0f} | {error:.1e} | "
                     f"{seconds:.0f} |")
        print(lines[-1], flush=True)
    lines.append("")
    for name in skipped:
        lines += [f"{name}: not run with --quick (minutes of emulation).", ""]


def _static_model(build, lines):
    """The key loops of the decode and the query-tile kernel from
    bench/gpu/model.py, or a 'not measured' line."""
    ptxas = "/usr/local/cuda/bin/ptxas"
    if not os.path.exists(ptxas):
        lines += ["Static model: not measured (ptxas is not installed).", ""]
        return
    sys.path.insert(0, os.path.join(HERE, "gpu"))
    import model
    text = model.attention_function("prefill", "bf16", HEADS, GROUP, PAGE)
    rows = {r["kernel"]: r for r in model.model(build, ptxas, text, {}, 6)
            if r["kind"] == "attention"}
    lines += [f"Static model, sm_90 (bench/gpu/model.py, `ptxas -v`), head {HEAD_SIZE}, "
              f"bf16, GQA {GROUP}, page {PAGE} (compiled with a workspace, as model.py's "
              "kernels: the key loops are the same without):", "",
              "| kernel | key loop PTX instructions | mma.sync | instructions per mma.sync "
              "| rows of an mma tile that hold queries | per mma.sync of 16 query rows "
              "(target <= 4) | the same without the rescale (common path) "
              "| stages in flight (target >= 2) | registers | spill bytes |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, useful in (("prefill_attention_ragged", min(GROUP, 16)),
                         ("prefill_attention_tiles", 16)):
        row = rows.get(name)
        mma = row.get("mma_per_iteration", 0) if row else 0
        if not mma:
            lines.append(f"| {name} | not measured: no key loop with mma.sync | | | | | | | | |")
            continue
        per_mma = row["loop_instructions"] / mma
        common = row.get("common_path_instructions", row["loop_instructions"]) / mma
        lines.append(f"| {name} | {row['loop_instructions']} | {mma} | {per_mma:.1f} | "
                     f"{useful} of 16 | {per_mma * 16 / useful:.1f} | "
                     f"{common * 16 / useful:.1f} | "
                     f"{row['stages_in_flight']:g} | {row['registers']} | "
                     f"{row['spill_bytes']} |")
    lines += ["", "A prefill row runs the query-tile kernel (its tile's 128 M rows are 32 "
              "rows x 4 heads); the decode kernel's row is for comparison. The key loop "
              "counts the rescale of the output, which a step skips unless a row's max "
              "grows by more than 2^8 (the first step of a tile, then rarely: the common "
              "path). Stages in "
              "flight count the K/V steps whose copies are pending while a step computes "
              "(model.py: the wait's pending groups over the groups of a step).", ""]


def prefill_section(build, quick, lines):
    first = len(lines)
    lines += ["## 11. Prefill: CPU against the GEMM rate, emulated GPU bytes against "
              "packed query tiles", "",
              f"{Q_HEADS} query heads on {HEADS} KV heads x {HEAD_SIZE} (GQA {GROUP}), page "
              f"{PAGE}, pages shuffled; ours is `attention_ragged` through "
              "`kvcache.CPUModule` on every core (bench/prefill.py, its docstring has the "
              "method). The contenders of a case run in turn, 0.3 s apart, in one run; "
              "ms min / median.", ""]
    imported = import_package(build, lines)
    if imported is None:
        return
    np, kvcache, builders, _ = imported
    reps = 3 if quick else 5
    peers = _Peers(np)
    flops = "4 x head_size x q_heads x sum over rows of the keys the row sees"
    lines += [f"### 11.1 CPU prefill ({os.cpu_count()} cores)", "",
              f"GFLOP/s count the causal work: {flops}. GEMM: f32 {GEMM_SIZE} x {GEMM_SIZE} "
              f"x {GEMM_SIZE} by {peers.describe()}, measured alternately with the case. "
              "PyTorch: per sequence matmul, causal mask, softmax, matmul on K/V already "
              "gathered contiguous (not timed), in the case's type. Targets (issue 34): "
              ">= 0.7 of the GEMM rate, ahead of PyTorch.", ""]
    _cpu_prefill(np, kvcache, builders, peers, reps, lines)
    if peers.torch is None:
        lines += ["PyTorch: not installed (Debian's `python3-torch`; `bash bench/run.sh` "
                  "installs it), so not measured in this run.", ""]
    lines += ["### 11.2 CPU decode against a copy on every core", "",
              f"One row per sequence; the copy moves the case's K+V bytes ({peers.describe()}). "
              "Target (issue 34): <= 1.1x the copy.", ""]
    _cpu_decode(np, kvcache, builders, peers, reps, lines)
    lines += ["### 11.3 Emulated GPU: bytes loaded against packed query tiles", "",
              "bf16, no workspace, one launch per case, `kvcache.EmulatedGPUModule` (sm_90 "
              "plan) with KVCACHE_EMU_PROFILE; loaded bytes summed over the launches. The "
              "reference packs 128 (token, query head) rows of one sequence and KV head (32 "
              "tokens) per tile and reads q once and each K/V row once per tile that sees it "
              "(up to the tile's last row). Target (issue 34): <= 1.15x the reference.", ""]
    _emulated(build, quick, lines)
    lines += ["### 11.4 Static model of the key loop", ""]
    _static_model(build, lines)
    print("\n".join(lines[first:]), flush=True)


if __name__ == "__main__":
    from section_cli import run_section
    run_section(prefill_section, __doc__.splitlines()[0])
