#!/usr/bin/env python3
"""One decode step from Python, with no hand-written MLIR.

Builds the kvcache IR of a decode step for a model's shapes (store the step's
K/V rows in the paged cache, then paged attention), runs it on the CPU on
numpy arrays, checks it against the numpy reference model, and compiles it
to PTX. After the README's set-up commands, from the repository root:

    PYTHONPATH=build/python /usr/bin/python3 examples/python_decode_step.py
    PYTHONPATH=build/python /usr/bin/python3 examples/python_decode_step.py --ptx step.ptx
"""

import argparse
import importlib.util
import os
import re
import sys

if importlib.util.find_spec("kvcache") is None:  # run without PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "build", "python"))

import numpy as np  # noqa: E402

import kvcache  # noqa: E402
from kvcache import builders, reference, testing  # noqa: E402
from kvcache.abi import KernelArgs  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ptx", help="also write the PTX to this file")
    parser.add_argument("--chip", default="sm_90")
    args = parser.parse_args()

    # 1. The model: 8 KV heads of 128, 32 query heads (GQA 4), 16-token pages.
    config = kvcache.CacheConfig("f16", num_heads=8, head_size=128,
                                 page_size=16, num_layers=4, q_heads=32)
    ir = builders.decode_step(config, workspace=True)
    kvcache.verify(ir)
    print(f"-- built @decode_step: {len(ir.splitlines())} lines of kvcache IR")

    # 2. A batch of 4 sequences with 100, 37, 0 and 250 cached tokens, one new
    #    token each; pages shuffled over the cache, as an allocator leaves them.
    rng = np.random.default_rng(0)
    cache_lengths, new_lengths, layer = [100, 37, 0, 250], [1, 1, 1, 1], 2
    cache = testing.random_cache(config, cache_lengths, new_lengths, rng)
    rows = sum(new_lengths)
    q = testing.random_rows(rng, rows, config.query_heads, config.head_size, "f16")
    new_keys = testing.random_rows(rng, rows, config.num_heads, config.head_size, "f16")
    new_values = testing.random_rows(rng, rows, config.num_heads, config.head_size, "f16")
    row_offsets = testing.row_offsets(new_lengths)
    out = np.zeros_like(q)
    workspace = np.zeros(rows * config.query_heads * (config.head_size + 2) * 16,
                         np.float32)
    print(f"-- cache: blocks {cache.blocks.shape} {config.dtype}, lookup table "
          f"{cache.lookup_table.shape}, cache lengths {cache_lengths}")

    # 3. The reference (it returns new arrays and leaves `cache` alone).
    expected_cache, expected_out = reference.decode_step(
        cache, layer, q, new_keys, new_values, row_offsets, out,
        config.default_scale)

    # 4. The compiled step on the CPU: writes into cache.blocks and out.
    cpu = kvcache.CPUModule(ir)
    cpu.decode_step(*cache.arguments(), layer, q, new_keys, new_values,
                    row_offsets, out, workspace)
    stored_ok = np.array_equal(cache.blocks, expected_cache.blocks)
    error = float(np.abs(out.astype(np.float32) -
                         expected_out.astype(np.float32)).max())
    print(f"-- CPU: K/V stored {'as the reference' if stored_ok else 'WRONGLY'}; "
          f"attention max |error| {error:.2e} (f16 outputs)")
    if not stored_ok or error > 2e-3:
        sys.exit("mismatch with kvcache.reference")

    # 5. PTX: one kernel per kernel op (plus the split-attention merge).
    ptx = kvcache.compile_ptx(ir, chip=args.chip)
    print(f"-- PTX for {args.chip}: {len(ptx)} characters, kernels:")
    parameters = {}
    for name in kvcache.kernel_names(ptx):
        body = ptx[ptx.index(f".entry {name}("):]
        parameters[name] = len(re.findall(r"\.param \.", body[:body.index(")")]))
        print(f"     {name} ({parameters[name]} parameters)")

    # 6. Launch arguments for the attention kernel, in its parameter order
    #    (docs/KernelABI.md): q, K cache, V cache, row_offsets, out, workspace.
    launch = (KernelArgs().memref(q)
              .cache(*cache.arguments(), kv=0, layer=layer)
              .cache(*cache.arguments(), kv=1, layer=layer)
              .memref(row_offsets).memref(out).memref(workspace))
    print(f"-- kvcache.abi packs {len(launch)} values for "
          "decode_step_attention_ragged (cupy.RawKernel or cuLaunchKernel)")
    if len(launch) != parameters["decode_step_attention_ragged"]:
        sys.exit("the packed arguments do not match the kernel's parameters")
    if args.ptx:
        with open(args.ptx, "w") as f:
            f.write(ptx)
        print(f"-- wrote {args.ptx}")


if __name__ == "__main__":
    main()
