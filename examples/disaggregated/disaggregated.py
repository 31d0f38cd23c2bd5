#!/usr/bin/env python3
"""Disaggregated prefill and decode: the KV pages move between processes.

Run under MPI with two processes (CPU only):

    mpirun -np 2 /usr/bin/python3 examples/disaggregated/disaggregated.py
    (as root: mpirun --allow-run-as-root --oversubscribe -np 2 ...)

Rank 0 (prefill) stores the K/V rows of a batch of prompts into its paged
cache and attends over them, every layer, then sends the sequences' pages
with kvcache.send_pages. Rank 1 (decode) receives them with
kvcache.recv_pages into other page ids (its own free pages, taken from the
top down), points its own lookup table at them, sets its cache_lengths and
decodes --steps tokens per sequence. It then runs the same prefill and
decode in one process, in one cache with yet another page layout, and
checks that every decode output is equal bit for bit. The inputs (q and the
new K/V rows of each step and layer) are seeded random numbers: the
projections of a model would give the same data flow.
"""

import argparse
import importlib.util
import math
import os
import sys

if importlib.util.find_spec("kvcache") is None:  # run without PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "build", "python"))

import numpy as np  # noqa: E402

import kvcache  # noqa: E402
from kvcache import builders  # noqa: E402
from kvcache.cpu import RUNNER_UTILS  # noqa: E402

LIBMPI = next((path for path in ("/usr/lib/x86_64-linux-gnu/libmpi.so",
                                 "/usr/lib/aarch64-linux-gnu/libmpi.so")
               if os.path.exists(path)), None)
PREFILL, DECODE = 0, 1


class Model:
    """The compiled module, the shapes and the seeded inputs."""

    def __init__(self, args):
        self.args = args
        self.config = kvcache.CacheConfig(
            "f16", num_heads=args.heads, head_size=args.head_size,
            page_size=args.page_size, num_layers=args.layers,
            q_heads=args.q_heads)
        ir = builders.module(builders.decode_step(self.config),
                             builders.send_pages(self.config),
                             builders.recv_pages(self.config),
                             builders.mpi_process())
        self.module = kvcache.CPUModule(ir, checked=args.checked,
                                        shared_libs=RUNNER_UTILS + [LIBMPI])
        self.prompts = [int(n) for n in args.prompts.split(",")]
        self.max_pages = math.ceil((max(self.prompts) + args.steps) /
                                   args.page_size)

    def rows(self, step, layer, count, heads):
        """Seeded rows [count, heads, head_size] of a step (0: the prefill)
        and layer: q (Hq heads) or new keys/values (H heads)."""
        generator = np.random.default_rng(
            [self.args.seed, step, layer, heads, count])
        return generator.standard_normal(
            (3, count, heads, self.args.head_size)).astype(np.float16)

    def inputs(self, step, layer, count):
        q = self.rows(step, layer, count, self.args.q_heads)[0]
        keys, values = self.rows(step, layer, count, self.args.heads)[1:]
        return q, keys, values

    def blocks(self, num_pages):
        a = self.args
        return np.zeros((num_pages, 2, a.layers, a.page_size, a.heads,
                         a.head_size), dtype=np.float16)

    def run_step(self, blocks, table, lengths, new, step):
        """One step of every layer: new[b] rows of each sequence appended
        after lengths[b]; the attention outputs [layers, rows, Hq, D]."""
        offsets = np.concatenate([[0], np.cumsum(new)]).astype(np.int32)
        rows = int(offsets[-1])
        collection = (blocks, np.array(lengths, dtype=np.int32), table,
                      max(new), max(n + length for n, length in
                                    zip(new, lengths)))
        outputs = []
        for layer in range(self.args.layers):
            q, keys, values = self.inputs(step, layer, rows)
            out = np.zeros_like(q)
            self.module.decode_step(*collection, layer, q, keys, values,
                                    offsets, out)
            outputs.append(out)
        return np.stack(outputs)

    def decode(self, blocks, table, lengths):
        """--steps decode steps, one token per sequence; their outputs."""
        lengths = list(lengths)
        outputs = []
        for step in range(1, self.args.steps + 1):
            outputs.append(self.run_step(blocks, table, lengths,
                                         [1] * len(lengths), step))
            lengths = [n + 1 for n in lengths]
        return outputs

    def table(self, pages):
        """A lookup table whose row b lists pages[b] (padded with page 0)."""
        table = np.zeros((len(pages), self.max_pages), dtype=np.int32)
        for b, row in enumerate(pages):
            table[b, :len(row)] = row
        return table

    def pages_per_sequence(self, free):
        """Each sequence's pages for its prompt and its decode steps, taken
        in order from the list `free`."""
        pages, at = [], 0
        for prompt in self.prompts:
            count = math.ceil((prompt + self.args.steps) / self.args.page_size)
            pages.append(free[at:at + count])
            at += count
        return pages


def prefill(model):
    """Rank 0: the prompts' K/V in its cache, then their pages to rank 1."""
    a = model.args
    pages = model.pages_per_sequence(list(range(1, 1 + a.pages)))
    blocks, table = model.blocks(1 + a.pages), model.table(pages)
    model.run_step(blocks, table, [0] * len(model.prompts), model.prompts, 0)
    sequences = np.arange(len(model.prompts), dtype=np.int32)
    model.module.send_pages(blocks, np.array(model.prompts, dtype=np.int32),
                            table, 0, 0, sequences, DECODE)


def decode(model):
    """Rank 1: the pages from rank 0 into its top pages, then the decode
    steps; checked against one process doing both."""
    a = model.args
    pages = model.pages_per_sequence(list(range(a.pages, 0, -1)))
    blocks, table = model.blocks(1 + a.pages), model.table(pages)
    # The pages the prompts fill, in the order rank 0 sends them.
    received = [row[:math.ceil(n / a.page_size)]
                for row, n in zip(pages, model.prompts)]
    dst_pages = np.array([p for row in received for p in row], dtype=np.int32)
    model.module.recv_pages(blocks, np.zeros(len(model.prompts), np.int32),
                            table, 0, 0, dst_pages, PREFILL)
    outputs = model.decode(blocks, table, model.prompts)

    # One process, one cache: prefill then decode, pages interleaved.
    count = len(model.prompts)
    single = [list(range(1 + b, 1 + a.pages, count))[:len(row)]
              for b, row in enumerate(pages)]
    blocks1, table1 = model.blocks(1 + a.pages), model.table(single)
    model.run_step(blocks1, table1, [0] * count, model.prompts, 0)
    expected = model.decode(blocks1, table1, model.prompts)
    equal = all(np.array_equal(x.view(np.uint16), y.view(np.uint16))
                for x, y in zip(outputs, expected))
    print(f"decode: {len(dst_pages)} pages received into pages "
          f"{dst_pages.min()}..{dst_pages.max()}; {a.steps} steps of "
          f"{count} sequences x {a.layers} layers: "
          f"{'bit-identical to' if equal else 'DIFFERENT from'} one process")
    return equal


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", default="37,100,5,64",
                        help="prompt lengths, comma-separated")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--q-heads", type=int, default=4)
    parser.add_argument("--head-size", type=int, default=64)
    parser.add_argument("--page-size", type=int, default=16)
    parser.add_argument("--pages", type=int, default=64,
                        help="pages of each cache (besides page 0)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--checked", action="store_true",
                        help="checked mode (docs/Contract.md 5.2, 5.3)")
    args = parser.parse_args()
    if LIBMPI is None:
        sys.exit("libmpi.so not found: install libopenmpi-dev")
    model = Model(args)
    model.module.mpi_init()
    rank = model.module.mpi_rank()
    ok = True
    if rank == PREFILL:
        prefill(model)
    elif rank == DECODE:
        ok = decode(model)
    model.module.mpi_finalize()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
