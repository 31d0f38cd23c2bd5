"""Section 6 of the benchmark report: decode attention over a quantized cache
against the same attention over an f16 cache.

Both caches hold the same geometry (2 KV heads x 128, GQA 4, page 16, four
sequences of 16 to 3000 cached tokens, one decode row each); the quantized
one stores f8E4M3FN codes with token_head scales and takes f16 q and out.
Two figures per pair, each measured side by side in one run:

  - CPU: `attention_ragged` through `kvcache-to-cpu` (kvcache.CPUModule, one
    thread): rounds of alternating calls in each of 5 Python processes
    (buffers placed anew in each), the median of all rounds' fp8 / f16
    time ratios (issue target: <= 1, fp8 no slower);
  - emulated GPU: the emulator's traffic (32 x load + store sectors) of the
    attention launch, fp8 / f16 (issue target: <= 0.55).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from section_cli import import_package

from emulated import _aligned  # noqa: E402  (bench/, the script's directory)

HEADS, HEAD_SIZE, GROUP, PAGE = 2, 128, 4, 16
LENGTHS = [1000, 255, 16, 3000]


def _module_text(dtype, scales):
    """@attention over layer 0 of a paged collection of `dtype` (with
    `scales`, or None), f16 q and out; its arguments are the collection's
    operands, then q, offsets, out."""
    pages = sum(-(-(n + 1) // PAGE) for n in LENGTHS) + 2
    suffix = f", scales = {scales}" if scales else ""
    ctype = (f"!kvcache.paged_collection<{dtype}, num_heads = {HEADS}, head_size = "
             f"{HEAD_SIZE}, page_size = {PAGE}{suffix}>")
    cache = ctype.replace("paged_collection", "paged_cache")
    blocks = f"memref<{pages}x2x1x{PAGE}x{HEADS}x{HEAD_SIZE}x{dtype}>"
    smem = f"memref<{pages}x2x1x{PAGE}x{HEADS}xf32>"
    rows = f"memref<?x{HEADS * GROUP}x{HEAD_SIZE}xf16>"
    scales_argument = f", %scales: {smem}" if scales else ""
    scales_operand = ", %scales" if scales else ""
    scales_type = f", {smem}" if scales else ""
    text = (f"func.func @attention(%blocks: {blocks}, %lengths: memref<?xi32>, "
            f"%table: memref<?x?xi32>, %msl: i32, %mcl: i32{scales_argument}, "
            f"%q: {rows}, %offsets: memref<?xi32>, %out: {rows}) {{\n"
            f"  %c = kvcache.paged_collection %blocks, %lengths, %table, %msl, %mcl"
            f"{scales_operand} : {blocks}, memref<?xi32>, memref<?x?xi32>{scales_type}"
            f" -> {ctype}\n"
            f"  %c0 = arith.constant 0 : index\n"
            f"  %k = kvcache.get_key_cache %c[%c0] : {ctype}\n"
            f"  %v = kvcache.get_value_cache %c[%c0] : {ctype}\n"
            f"  kvcache.attention_ragged %q, %k, %v, %offsets, %out {{scale = 0.0883883 : f32}}"
            f" : {rows}, {cache}, {cache}, memref<?xi32>, {rows}\n"
            f"  return\n}}\n")
    return text, pages


class _Case:
    """The data of one cache (f16, or f8E4M3FN token_head)."""

    def __init__(self, np, kvcache, quantized, rng):
        self.quantized = quantized
        dtype, scales = ("f8E4M3FN", "token_head") if quantized else ("f16", None)
        self.text, pages = _module_text(dtype, scales)
        shape = (pages, 2, 1, PAGE, HEADS, HEAD_SIZE)
        values = rng.uniform(-1, 1, shape).astype(np.float32)
        if quantized:
            self.scales = np.full(shape[:-1], 1 / 448, np.float32)
            self.blocks = kvcache.dtypes.quantize(values, dtype, self.scales[..., None]).view(
                np.dtype("uint8"))
        else:
            self.scales = None
            self.blocks = values.astype(np.float16)
        table = np.zeros((len(LENGTHS), max(-(-(n + 1) // PAGE) for n in LENGTHS)), np.int32)
        next_page = 0
        for b, n in enumerate(LENGTHS):
            for j in range(-(-(n + 1) // PAGE)):
                table[b, j] = next_page
                next_page += 1
        self.table = table
        self.lengths = np.array(LENGTHS, np.int32)
        self.offsets = np.arange(len(LENGTHS) + 1, dtype=np.int32)
        self.q = rng.uniform(-1, 1, (len(LENGTHS), HEADS * GROUP, HEAD_SIZE)).astype(np.float16)
        self.out = np.zeros_like(self.q)

    def arguments(self):
        scales = [self.scales] if self.quantized else []
        return [self.blocks, self.lengths, self.table, 1, max(LENGTHS) + 1, *scales,
                self.q, self.offsets, self.out]

    def align(self, np):
        """Every buffer 256-byte aligned, as a GPU allocator gives (the
        emulator counts the sectors an access touches)."""
        for name in ("blocks", "scales", "table", "lengths", "offsets", "q", "out"):
            if getattr(self, name) is not None:
                setattr(self, name, _aligned(np, getattr(self, name)))


def _make_cases(np, kvcache):
    """The f16 and fp8 cases (the same data in every process), aligned."""
    rng = np.random.default_rng(0)
    cases = {name: _Case(np, kvcache, name == "fp8", rng) for name in ("f16", "fp8")}
    for case in cases.values():
        case.align(np)
    return cases


def _cpu_rounds(build, reps, rounds):
    """This process's CPU timings: `rounds` rounds, each timing both caches
    alternately (best of `reps` calls each), one thread; the per-round
    times of each case (s) and the rounds' fp8 / f16 ratios."""
    np, kvcache, _, _ = import_package(build, [])
    cases = _make_cases(np, kvcache)
    cpu = {name: kvcache.CPUModule(case.text, threads=1) for name, case in cases.items()}
    result = {name: [] for name in cases}
    result["ratios"] = []
    for _ in range(rounds):
        best = {name: float("inf") for name in cases}
        for _ in range(reps + 1):
            for name, case in cases.items():
                start = time.perf_counter()
                cpu[name].attention(*case.arguments())
                best[name] = min(best[name], time.perf_counter() - start)
        for name in cases:
            result[name].append(best[name])
        result["ratios"].append(best["fp8"] / best["f16"])
    return result


def _cpu_rounds_in_process(build, reps, rounds):
    """_cpu_rounds in a new Python process (its JSON on stdout)."""
    code = (f"import json, sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import quantized; print(json.dumps(quantized._cpu_rounds({build!r}, {reps}, {rounds})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def quantized_section(build, quick, lines):
    lines += ["## 6. Quantized caches: decode attention, fp8 against f16", "",
              f"`attention_ragged`, {HEADS} KV heads x {HEAD_SIZE}, GQA {GROUP}, page {PAGE}, "
              f"contexts {', '.join(map(str, LENGTHS))} (one decode row each): an f16 cache "
              "against an f8E4M3FN cache with token_head scales (f16 q and out), measured side by "
              "side in one run (bench/quantized.py). Targets (issue 16): CPU fp8 / f16 time <= 1; "
              "emulated GPU fp8 / f16 traffic <= 0.55.", ""]
    imported = import_package(build, lines)
    if imported is None:
        return
    np, kvcache, builders, _ = imported
    cases = _make_cases(np, kvcache)
    reps, rounds, processes = (3, 3, 1) if quick else (7, 25, 5)
    # Each process times its rounds (`_cpu_rounds`) on buffers placed anew
    # (address-space randomization): on this host one process's ratio can
    # differ from the next one's by 0.2 while its own rounds agree.
    runs = [_cpu_rounds_in_process(build, reps, rounds) for _ in range(processes)]
    ratios = [r for run in runs for r in run["ratios"]]
    times = {name: [t for run in runs for t in run[name]] for name in cases}
    lo = {name: min(t) for name, t in times.items()}
    median = {name: statistics.median(t) for name, t in times.items()}
    per_process = ", ".join(f"{statistics.median(run['ratios']):.2f}" for run in runs)
    lines += ["| target | f16 | fp8 token_head | fp8 / f16 |", "| --- | --- | --- | --- |",
              f"| CPU (`kvcache-to-cpu`, one thread), ms, min / median of {rounds} rounds "
              f"(best of {reps} calls each) in each of {processes} processes; ratio: median "
              f"of all rounds' ratios [lowest, highest] (each process's median) | "
              f"{lo['f16'] * 1e3:.2f} / {median['f16'] * 1e3:.2f} | "
              f"{lo['fp8'] * 1e3:.2f} / {median['fp8'] * 1e3:.2f} | "
              f"{statistics.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}] "
              f"({per_process}) |"]
    traffic, requested, directory = {}, {}, tempfile.mkdtemp()
    for name, case in cases.items():
        module = kvcache.EmulatedGPUModule(case.text)
        path = os.path.join(directory, f"{name}.jsonl")
        os.environ["KVCACHE_EMU_PROFILE"] = path
        try:
            module.attention(*case.arguments())
        finally:
            del os.environ["KVCACHE_EMU_PROFILE"]
        with open(path) as f:
            launches = [json.loads(line) for line in f]
        traffic[name] = sum(32 * (launch["load_sectors"] + launch["store_sectors"])
                            for launch in launches)
        requested[name] = sum(launch["global_load_bytes"] for launch in launches)
    lines += [f"| emulated GPU (sm_90 plan), traffic bytes | {traffic['f16']:,} | "
              f"{traffic['fp8']:,} | {traffic['fp8'] / traffic['f16']:.2f} |",
              f"| emulated GPU, requested load bytes | {requested['f16']:,} | "
              f"{requested['fp8']:,} | {requested['fp8'] / requested['f16']:.2f} |", ""]
    print("\n".join(lines[-6:]), flush=True)


if __name__ == "__main__":
    from section_cli import run_section
    run_section(quantized_section, __doc__.splitlines()[0])
