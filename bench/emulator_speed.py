#!/usr/bin/env python3
"""Section 9 of the benchmark report: the GPU emulator's speed, thread
switches and checked memory accesses per CPU second in kernels, on the
emulated kernel tests; optionally against another build of the runtime,
side by side.

    /usr/bin/python3 bench/emulator_speed.py [--build build] [--baseline LIB]
        [--runs 5] [--quick] [TEST.mlir ...]

Each workload is a test of test/Integration/GPU/Emulated (by default the
five in WORKLOADS): its module is lowered once, with the build's kvcache-opt
and the options of the test's first kvcache-opt RUN line, and the result is
run by mlir-runner with KVCACHE_EMU_STATS=1 `--runs` times, alternating the
build's libKVCacheGPUEmulator.so (A) and `--baseline` (B: the library of
another build, e.g. of an earlier commit; both run the same lowered code).
The emulator's statistics line at exit gives the CPU seconds of the thread
that ran the kernels (neighbours on a shared machine count less than in
wall time), the thread switches and the checked accesses. Printed: the
medians of the rates, and the median over the A/B pairs of B's kernel time
over A's (> 1: A is faster). Both libraries must print the same program
output, or the script stops.
"""

import os
import re
import shlex
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LLVM = "/usr/lib/llvm-22"
EMULATED = os.path.join(ROOT, "test", "Integration", "GPU", "Emulated")
# The tests with the most time in kernels: switch-bound (a long context),
# access-bound (f32, bf16 tensor cores) and both.
WORKLOADS = [
    "attention-group-1-head-size-64-f16-long.mlir",
    "attention-group-4-head-size-128-f32.mlir",
    "attention-group-16-head-size-128-f16-tensor-cores.mlir",
    "attention-group-32-head-size-64-f32.mlir",
    "attention-group-64-head-size-128-bf16-tensor-cores.mlir",
]
STATS = re.compile(r"kvcache gpu emulator: (\d+) launches, (\d+) blocks, (\d+) "
                   r"threads, (\d+) thread switches, (\d+) memory accesses "
                   r"checked, ([0-9.]+) CPU seconds in kernels")


def lowering_command(test, kvcache_opt, output):
    """The test's first kvcache-opt RUN line, on `test`, writing `output`."""
    with open(test) as file:
        for line in file:
            if "RUN:" in line and "kvcache-opt" in line:
                words = shlex.split(line.split("RUN:", 1)[1])
                break
        else:
            raise SystemExit(f"{test}: no kvcache-opt RUN line")
    words = words[words.index("kvcache-opt") + 1:]
    words = [test if w == "%s" else output if w == "%t.mlir" else w
             for w in words]
    return [kvcache_opt] + words


def run(lowered, library):
    """(statistics, stdout) of one run of `lowered` on `library`."""
    libs = ",".join([f"{LLVM}/lib/libmlir_c_runner_utils.so",
                     f"{LLVM}/lib/libmlir_runner_utils.so", library])
    result = subprocess.run(
        [f"{LLVM}/bin/mlir-runner", lowered, "-e", "main",
         "-entry-point-result=void", f"-shared-libs={libs}"],
        env=dict(os.environ, KVCACHE_EMU_STATS="1", KVCACHE_EMU_ORDER="forward"),
        capture_output=True, text=True, check=True)
    match = STATS.search(result.stderr)
    if not match:
        raise SystemExit(f"no statistics from {library}:\n{result.stderr}")
    switches, accesses = int(match.group(4)), int(match.group(5))
    return {"switches": switches, "accesses": accesses,
            "seconds": float(match.group(6))}, result.stdout


def measure(test, build, libraries, runs, directory):
    """Each library's statistics of `runs` alternating runs of `test`."""
    lowered = os.path.join(directory, os.path.basename(test))
    subprocess.run(lowering_command(test, os.path.join(build, "bin", "kvcache-opt"),
                                    lowered), check=True)
    results = {library: [] for library in libraries}
    outputs = set()
    for _ in range(runs):
        for library in libraries:
            stats, output = run(lowered, library)
            results[library].append(stats)
            outputs.add(output)
    if len(outputs) != 1:
        raise SystemExit(f"{test}: the libraries print different results")
    return [results[library] for library in libraries]


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def rate(runs, key):
    """Median of `key` per CPU second, in millions."""
    return statistics.median(r[key] / r["seconds"] for r in runs) / 1e6


def emulator_speed_section(build, quick, lines, baseline=None, runs=None,
                           tests=None):
    runs = runs or (1 if quick else 3)
    tests = tests or [os.path.join(EMULATED, name)
                      for name in (WORKLOADS[:2] if quick else WORKLOADS)]
    libraries = [os.path.join(build, "lib", "libKVCacheGPUEmulator.so")]
    header = ("| workload | switches | checked accesses | CPU s in kernels "
              "| M switches/s | M accesses/s |")
    if baseline:
        libraries.append(baseline)
        header += (" CPU s, baseline | M switches/s, baseline "
                   "| M accesses/s, baseline | baseline / this (time) |")
    lines += ["## 9. Emulator speed", "",
              "Emulated kernel tests run by mlir-runner on libKVCacheGPUEmulator.so "
              "(bench/emulator_speed.py): CPU seconds in kernels from KVCACHE_EMU_STATS=1, "
              f"medians of {runs} runs" + (", alternating with the baseline library"
                                           if baseline else "") + ".", "",
              header, "|" + " --- |" * header.count(" |")]
    with tempfile.TemporaryDirectory() as directory:
        for test in tests:
            results = measure(test, build, libraries, runs, directory)
            a = results[0]
            row = (f"| {os.path.basename(test)} | {median(a, 'switches'):,.0f} "
                   f"| {median(a, 'accesses'):,.0f} | {median(a, 'seconds'):.3f} "
                   f"| {rate(a, 'switches'):.2f} | {rate(a, 'accesses'):.2f} |")
            if baseline:
                b = results[1]
                ratio = statistics.median(y["seconds"] / x["seconds"]
                                          for x, y in zip(a, b))
                row += (f" {median(b, 'seconds'):.3f} | {rate(b, 'switches'):.2f} "
                        f"| {rate(b, 'accesses'):.2f} | {ratio:.2f} |")
            lines.append(row)
    lines.append("")


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--baseline", help="another libKVCacheGPUEmulator.so")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("tests", nargs="*")
    args = parser.parse_args()
    lines = []
    emulator_speed_section(os.path.abspath(args.build), args.quick, lines,
                           args.baseline, args.runs, args.tests)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
