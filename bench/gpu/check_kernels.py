"""Runs the kernels of bench/gpu/kernels.mlir on random paged caches and
compares them with a numpy model of docs/Contract.md section 1. Needs a GPU
and cupy.

Usage: check_kernels.py PTX OUT_DIR
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from kvcache.abi import KernelArgs  # noqa: E402

HEADS, DIM, PAGE = 8, 128, 16


def model_rows(blocks, lookup_table, kv, layer, batch, first, count):
    """Rows of tokens first..first+count-1 of `batch` (docs/Contract.md 1)."""
    tokens = np.arange(first, first + count)
    pages = lookup_table[batch, tokens // PAGE]
    return blocks[pages, kv, layer, tokens % PAGE]


def main(ptx_path, out_dir):
    import cupy as cp

    rng = np.random.default_rng(2026)
    module = cp.RawModule(path=ptx_path)
    read_rows = module.get_function("read_rows")
    append_rows = module.get_function("append_rows")
    tile_head_sums = module.get_function("tile_head_sums")

    num_pages, layers, batch = 96, 3, 4
    null_page = num_pages - 1
    cache_lengths = np.array([0, 16, 37, 200], np.int32)
    new_tokens = np.array([5, 16, 1, 40], np.int32)
    max_pages = 16
    lookup_table = np.full((batch, max_pages), null_page, np.int32)
    free = rng.permutation(null_page)
    used = 0
    for b in range(batch):
        pages = -(-int(cache_lengths[b] + new_tokens[b]) // PAGE)
        lookup_table[b, :pages] = free[used:used + pages]
        used += pages
    blocks = rng.standard_normal((num_pages, 2, layers, PAGE, HEADS, DIM)).astype(np.float16)

    d_blocks = cp.asarray(blocks)
    d_lengths = cp.asarray(cache_lengths)
    d_table = cp.asarray(lookup_table)
    max_seq, max_ctx = int(new_tokens.max()), int((cache_lengths + new_tokens).max())
    results = {"checks": []}

    def record(name, ok, detail=""):
        results["checks"].append({"check": name, "ok": bool(ok), "detail": detail})
        print(("PASS " if ok else "FAIL ") + name + (f" ({detail})" if detail else ""))

    for kv in (0, 1):
        for layer in range(layers):
            for b in range(batch):
                n = int(cache_lengths[b])
                if n == 0:
                    continue
                out = cp.zeros((n, HEADS, DIM), cp.float16)
                args = KernelArgs().cache(d_blocks, d_lengths, d_table, max_seq, max_ctx,
                                          kv=kv, layer=layer).index(b).memref(out)
                read_rows((n,), (128,), args.values())
                expected = model_rows(blocks, lookup_table, kv, layer, b, 0, n)
                record(f"read_rows kv={kv} layer={layer} batch={b}",
                       np.array_equal(cp.asnumpy(out), expected))

    layer, kv = 1, 1
    expected_blocks = blocks.copy()
    for b in range(batch):
        n = int(new_tokens[b])
        rows = rng.standard_normal((n, HEADS, DIM)).astype(np.float16)
        args = KernelArgs().cache(d_blocks, d_lengths, d_table, max_seq, max_ctx,
                                  kv=kv, layer=layer).index(b).memref(cp.asarray(rows))
        append_rows((n,), (128,), args.values())
        tokens = cache_lengths[b] + np.arange(n)
        expected_blocks[lookup_table[b, tokens // PAGE], kv, layer, tokens % PAGE] = rows
    cp.cuda.runtime.deviceSynchronize()
    record("append_rows: every written element and nothing else",
           np.array_equal(cp.asnumpy(d_blocks), expected_blocks))

    b = 3
    tiles = int(cache_lengths[b]) // PAGE
    sums = cp.zeros((tiles, HEADS), cp.float32)
    args = KernelArgs().cache(d_blocks, d_lengths, d_table, max_seq, max_ctx,
                              kv=0, layer=0).index(b).memref(sums)
    tile_head_sums((tiles,), (HEADS,), args.values())
    rows = model_rows(expected_blocks, lookup_table, 0, 0, b, 0, tiles * PAGE)
    expected = rows.astype(np.float32).reshape(tiles, PAGE, HEADS, DIM).sum(axis=(1, 3))
    error = float(np.max(np.abs(cp.asnumpy(sums) - expected)))
    record("tile_head_sums", error < 1e-2, f"max abs error {error:.2e}")

    ok = all(c["ok"] for c in results["checks"])
    results["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    with open(os.path.join(out_dir, "check_kernels.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"{sum(c['ok'] for c in results['checks'])} passed, "
          f"{sum(not c['ok'] for c in results['checks'])} failed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
