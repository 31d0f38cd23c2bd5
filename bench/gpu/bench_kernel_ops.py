"""GPU bandwidth of the kernel-op kernels (bench/gpu/kernel_ops.mlir), as a
ratio to a plain device-to-device copy of the same bytes timed in the same
run, plus absolute times. Needs a GPU and cupy.

Usage: bench_kernel_ops.py PTX OUT_DIR
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from kvcache.abi import KernelArgs  # noqa: E402

HEADS, DIM, PAGE = 8, 128, 16
ROW_BYTES = HEADS * DIM * 2
REPS = 20


def main(ptx_path, out_dir):
    import cupy as cp

    module = cp.RawModule(path=ptx_path)
    kernels = {name: module.get_function(f"bench_{name}")
               for name in ("store_ragged", "gather_ragged", "copy_pages")}
    flush = cp.empty(512 * 2**20, cp.uint8)  # > L2: evicts between runs
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def time_it(launch):
        times = []
        for _ in range(REPS):
            flush.fill(0)
            start.record()
            launch()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
        times.sort()
        return times[0], times[len(times) // 2]

    def copy_time(nbytes):
        src = cp.empty(nbytes, cp.uint8)
        dst = cp.empty(nbytes, cp.uint8)
        return time_it(lambda: cp.cuda.runtime.memcpyAsync(
            dst.data.ptr, src.data.ptr, nbytes,
            cp.cuda.runtime.memcpyDeviceToDevice, 0))

    def make_cache(batch, tokens_per_seq, layers=1, extra_pages=0):
        pages_per_seq = -(-tokens_per_seq // PAGE) + 1
        num_pages = batch * pages_per_seq + extra_pages + 1
        blocks = cp.zeros((num_pages, 2, layers, PAGE, HEADS, DIM), cp.float16)
        table = cp.asarray(np.random.default_rng(0).permutation(
            batch * pages_per_seq).astype(np.int32).reshape(batch, pages_per_seq))
        lengths = cp.zeros(batch, cp.int32)
        return blocks, lengths, table

    results = []

    def report(name, case, nbytes, t, t_median):
        c, c_median = copy_time(nbytes)
        row = {"op": name, "case": case, "bytes": nbytes,
               "time_us": t * 1e6, "median_us": t_median * 1e6,
               "GBps": nbytes / t / 1e9, "copy_GBps": nbytes / c / 1e9,
               "ratio_to_copy": c / t}
        results.append(row)
        print(f"{name:14s} {case:34s} {nbytes / 2**20:9.2f} MiB "
              f"{row['time_us']:9.1f} us (median {row['median_us']:.1f}) "
              f"{row['GBps']:7.0f} GB/s  copy {row['copy_GBps']:7.0f} GB/s  "
              f"ratio {row['ratio_to_copy']:.2f}", flush=True)

    for op in ("store_ragged", "gather_ragged"):
        for batch, per_seq, label in [(64, 1, "64 tokens (decode step)"),
                                      (64, 64, "4096 tokens"),
                                      (64, 2048, "131072 tokens (256 MiB)")]:
            blocks, lengths, table = make_cache(batch, per_seq)
            tokens = batch * per_seq
            rows = cp.zeros((tokens, HEADS, DIM), cp.float16)
            offsets = cp.arange(0, tokens + 1, per_seq, dtype=cp.int32)
            args = KernelArgs().cache(blocks, lengths, table, per_seq, per_seq) \
                .memref(rows).memref(offsets).values()
            # docs/KernelABI.md: 8 warps per block, tiles of 2 rows per warp.
            grid = (min(-(-tokens // 16), 65535),)
            t = time_it(lambda: kernels[op](grid, (256,), args))
            report(op, label, 2 * tokens * ROW_BYTES, *t)

    for pairs, layers, label in [(64, 32, "64 pairs x 32 layers"),
                                 (256, 32, "256 pairs x 32 layers (256 MiB)")]:
        blocks, lengths, table = make_cache(1, 16, layers, extra_pages=2 * pairs)
        base = blocks.shape[0] - 2 * pairs - 1
        pair_ids = cp.asarray(np.stack([np.arange(pairs) + base,
                                        np.arange(pairs) + base + pairs], 1).astype(np.int32))
        args = KernelArgs().collection(blocks, lengths, table, 1, 16) \
            .memref(pair_ids).values()
        t = time_it(lambda: kernels["copy_pages"]((min(pairs, 65535), layers), (256,), args))
        report("copy_pages", label, 2 * pairs * 2 * layers * PAGE * ROW_BYTES, *t)

    with open(os.path.join(out_dir, "bench_kernel_ops.json"), "w") as f:
        json.dump({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                   "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
