#!/usr/bin/env python3
"""store_ragged with the rope(...) clause against the plain store of the same
rows, on the CPU (one thread), as a time ratio from one run.

One module holds both functions (builders.store_ragged with and without the
clause); each call stores `--rows` new rows of 8 heads x 128 into a paged
cache (page 16) of a batch of 8 sequences. The two are timed alternately,
`--reps` calls each, and the best time of each is kept (these shared CPUs
are noisy: only the ratio of one run means something).

    PYTHONPATH=build/python KVCACHE_BIN=build/bin /usr/bin/python3 bench/rope_store.py
"""

import argparse
import time

import numpy as np

import kvcache
from kvcache import builders, testing

CASES = [  # (dtype, scales, rows_dtype, style, rotary_dims)
    ("f16", None, None, "half", 128),
    ("f16", None, None, "interleaved", 128),
    ("bf16", None, None, "half", 64),
    ("f8E4M3FN", "token_head", "f16", "half", 128),
]


def measure(case, rows, reps, batch=8):
    dtype, scales, rows_dtype, style, rotary_dims = case
    config = kvcache.CacheConfig(dtype, num_heads=8, head_size=128, page_size=16,
                                 num_layers=1, scales=scales, rows_dtype=rows_dtype)
    module = kvcache.CPUModule(builders.module(
        builders.store_ragged(config, name="plain"),
        builders.store_ragged(config, name="rope", style=style,
                              rotary_dims=rotary_dims)), threads=1)
    rng = np.random.default_rng(0)
    per_sequence = rows // batch
    cache = testing.random_cache(config, [0] * batch, [per_sequence] * batch, rng,
                                 num_layers=1)
    offsets = testing.row_offsets([per_sequence] * batch)
    new = testing.random_rows(rng, rows, 8, 128, config.rows_element)
    table = rng.uniform(-1, 1, (per_sequence, rotary_dims)).astype(np.float32)
    arguments = [*cache.arguments(), 0, new, offsets]
    calls = {"plain": lambda: module.plain(*arguments),
             "rope": lambda: module.rope(*arguments, table)}
    best = {name: float("inf") for name in calls}
    for _ in range(reps):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    print(f"| cache | rows | style | rotary_dims | plain (ms) | rope (ms) | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for case in CASES:
        best = measure(case, args.rows, args.reps)
        dtype, scales, rows_dtype, style, rotary_dims = case
        cache = dtype + (f" {scales}" if scales else "")
        print(f"| {cache} | {rows_dtype or dtype} | {style} | {rotary_dims} | "
              f"{best['plain'] * 1e3:.3f} | {best['rope'] * 1e3:.3f} | "
              f"{best['rope'] / best['plain']:.2f} |")


if __name__ == "__main__":
    main()
