#!/usr/bin/env python3
"""attention_ragged with the rope(...) clause on q against the same op
without it, on the CPU (one thread) and on the emulated GPU, as time ratios
from one run, and the PTX instructions of their GPU kernels.

One module per target holds both functions (builders.attention_ragged with
and without the clause): bf16, 8 KV heads x 128, 32 query heads, page 16;
a decode step (8 sequences of `--context` cached tokens, one row each) and
a prefill (one sequence of `--prefill` rows, nothing cached). The two are
timed alternately, `--reps` calls each, and the best time of each is kept
(these shared CPUs are noisy: only the ratio of one run means something);
then the PTX instructions (sm_90) of each kernel of both functions.

    PYTHONPATH=build/python KVCACHE_BIN=build/bin /usr/bin/python3 bench/rope_attention.py
"""

import argparse
import re
import time

import numpy as np

import kvcache
from kvcache import builders, testing

ROTARY_DIMS = 64


def step(config, lengths, new, rng):
    """The arguments of one call: (plain, with the clause)."""
    cache = testing.random_cache(config, lengths, new, rng, num_layers=1)
    offsets = testing.row_offsets(new)
    rows = int(offsets[-1])
    q = testing.random_rows(rng, rows, config.query_heads, config.head_size,
                            config.rows_element)
    table = rng.uniform(-1, 1, (max(lengths) + max(new), ROTARY_DIMS))
    arguments = [*cache.arguments(), 0, q, offsets, np.zeros_like(q)]
    return arguments, arguments + [table.astype(np.float32)]


def best_times(module, calls, reps):
    best = {name: float("inf") for name in calls}
    for _ in range(reps):
        for name, arguments in calls.items():
            start = time.perf_counter()
            getattr(module, name)(*arguments)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def ptx_instructions(text):
    """{kernel: PTX instructions (statements) of its body} for sm_90."""
    counts, kernel = {}, None
    for line in kvcache.compile_ptx(text, chip="sm_90").splitlines():
        match = re.match(r"\s*\.visible\s+\.entry\s+([\w$]+)", line)
        if match:
            kernel = match.group(1)
            counts[kernel] = 0
        elif kernel and line.strip().endswith(";") and \
                not line.strip().startswith("."):
            counts[kernel] += 1
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--prefill", type=int, default=256)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    config = kvcache.CacheConfig("bf16", num_heads=8, head_size=128,
                                 page_size=16, num_layers=1, q_heads=32)
    text = builders.module(
        builders.attention_ragged(config, name="plain"),
        builders.attention_ragged(config, name="rope", style="half",
                                  rotary_dims=ROTARY_DIMS))
    rng = np.random.default_rng(0)
    steps = {"decode": step(config, [args.context] * 8, [1] * 8, rng),
             "prefill": step(config, [0], [args.prefill], rng)}
    targets = {"cpu": kvcache.CPUModule(text, threads=1),
               "emulated gpu": kvcache.EmulatedGPUModule(text)}
    print("| target | step | plain (ms) | rope (ms) | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for target, module in targets.items():
        for name, (plain, rope) in steps.items():
            best = best_times(module, {"plain": plain, "rope": rope},
                              args.reps if target == "cpu" else 2)
            print(f"| {target} | {name} | {best['plain'] * 1e3:.2f} | "
                  f"{best['rope'] * 1e3:.2f} | "
                  f"{best['rope'] / best['plain']:.3f} |")
    print()
    print("| kernel | PTX instructions |")
    print("| --- | --- |")
    for kernel, count in sorted(ptx_instructions(text).items()):
        print(f"| {kernel} | {count} |")

if __name__ == "__main__":
    main()
