#!/usr/bin/env python3
"""A serving loop: continuous batching over a paged KV cache, torch in and out.

Requests with ragged prompts join a batch of at most --batch sequences; a
step prefills the prompts of those that join and decodes one token of the
others, then the sequences whose outputs are complete leave and new ones
take their places. Every other request continues a shared prefix (a system
prompt cached once): it forks the prefix's pages (kvcache.serving), and its
first write into the prefix's partly filled last page copies that page
(copy-on-write through copy_pages). Each step runs one compiled module --
built once by kvcache.builders, dynamic shapes, reused by every step --
layer by layer (store K/V, paged attention) on torch tensors: the blocks,
q, the new K/V rows and `out` are torch tensors that the compiled code
reads and writes in place (their data_ptr() never changes). After every
step each sequence's output is checked against attention written here in
PyTorch, softmax(q @ k^T * scale + causal mask) @ v, over the same tokens.
From the repository root, after the build:

    PYTHONPATH=build/python /usr/bin/python3 examples/serving_loop.py
    PYTHONPATH=build/python /usr/bin/python3 examples/serving_loop.py --gpu --steps 4

--gpu runs the same module's kernels on the GPU emulator (slower).
"""

import argparse
import importlib.util
import math
import os
import sys

if importlib.util.find_spec("kvcache") is None:  # run without PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "build", "python"))

import torch  # noqa: E402

import kvcache  # noqa: E402
from kvcache import builders, serving  # noqa: E402

# The most |out - reference| of each element type (the rounding of the
# output; the tests' attention tolerances).
TOLERANCE = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16,
                "bf16": torch.bfloat16}
PREFIX = "prefix"


def torch_attention(q, keys, values, scale):
    """Causal attention of one sequence's new rows `q` [n, Hq, D], the last
    n of the `keys`/`values` [t, H, D] it has, in float32 (KV head h serves
    query heads h*G .. h*G + G-1)."""
    n, t = q.shape[0], keys.shape[0]
    group = q.shape[1] // keys.shape[1]
    q = q.float().transpose(0, 1)                                    # [Hq, n, D]
    k = keys.float().repeat_interleave(group, dim=1).transpose(0, 1)  # [Hq, t, D]
    v = values.float().repeat_interleave(group, dim=1).transpose(0, 1)
    position = torch.arange(t - n, t)[:, None]
    mask = torch.where(torch.arange(t)[None, :] <= position, 0.0, -math.inf)
    probabilities = torch.softmax(q @ k.transpose(1, 2) * scale + mask, dim=-1)
    return (probabilities @ v).transpose(0, 1)                       # [n, Hq, D]


class Requests:
    """An endless stream of requests: (id, prompt tokens, output tokens)."""

    def __init__(self, generator, max_prompt, max_new):
        self.generator, self.count = generator, 0
        self.max_prompt, self.max_new = max_prompt, max_new

    def _uniform(self, high):
        return int(torch.randint(1, high + 1, (1,), generator=self.generator))

    def next(self):
        self.count += 1
        return (f"r{self.count}", self._uniform(self.max_prompt),
                self._uniform(self.max_new))


class ServingLoop:
    """The cache, the batch and the torch tensors of the example; `step()`
    runs one step and checks it."""

    def __init__(self, args):
        self.args = args
        dtype = TORCH_DTYPES[args.dtype]
        self.config = kvcache.CacheConfig(
            args.dtype, num_heads=args.heads, head_size=args.head_size,
            page_size=args.page_size, num_layers=args.layers,
            q_heads=args.q_heads)
        ir = builders.module(builders.decode_step(self.config),
                             builders.copy_pages(self.config))
        self.module = (kvcache.EmulatedGPUModule(ir) if args.gpu
                       else kvcache.CPUModule(ir))
        longest = args.prefix + args.max_prompt + args.max_new
        num_pages = 2 + math.ceil(args.prefix / args.page_size) + \
            args.batch * math.ceil(longest / args.page_size)
        self.state = serving.BatchState(num_pages, args.page_size)
        self.blocks = torch.zeros(
            (num_pages, 2, args.layers, args.page_size, args.heads,
             args.head_size), dtype=dtype)
        # Rows of every layer, as many as a step can have; a step passes
        # views of their first rows (no copies).
        rows = args.batch * args.max_prompt + args.prefix
        self.q = torch.zeros((args.layers, rows, args.q_heads, args.head_size),
                             dtype=dtype)
        self.keys = torch.zeros((args.layers, rows, args.heads, args.head_size),
                                dtype=dtype)
        self.values = torch.zeros_like(self.keys)
        self.out = torch.zeros_like(self.q)
        self.pointers = self._pointers()
        self.generator = torch.Generator().manual_seed(args.seed)
        self.requests = Requests(self.generator, args.max_prompt, args.max_new)
        self.history = {}   # sequence -> per layer: [keys, values] rows so far
        self.remaining = {}  # active sequence -> output tokens still to come
        self.copies = self.served = 0

    def _pointers(self):
        return {name: getattr(self, name).data_ptr()
                for name in ("blocks", "q", "keys", "values", "out")}

    def _join(self, new_tokens, first):
        """Requests join until the batch is full (the prefix on the first
        step, never decoded afterwards: its pages are shared)."""
        if first and self.args.prefix:
            self.state.add(PREFIX)
            self.history[PREFIX] = self._empty_history()
            new_tokens[PREFIX] = self.args.prefix
        while len(self.remaining) < self.args.batch:
            name, prompt, output = self.requests.next()
            shares = self.args.prefix and not first and self.requests.count % 2
            if shares:
                self.state.fork(PREFIX, name)
                self.history[name] = [list(kv) for kv in self.history[PREFIX]]
            else:
                self.state.add(name)
                self.history[name] = self._empty_history()
            new_tokens[name] = prompt
            self.remaining[name] = output
            self.served += 1

    def _empty_history(self):
        shape = (0, self.args.heads, self.args.head_size)
        empty = torch.zeros(shape, dtype=self.blocks.dtype)
        return [[empty, empty] for _ in range(self.args.layers)]

    def _random_rows(self, tensor, rows):
        values = torch.rand(tensor[:, :rows].shape, generator=self.generator)
        tensor[:, :rows] = values * 2 - 1

    def step(self, first=False):
        """Schedules, runs and checks one step: returns (batch size, rows,
        sequences that left, max |error| against torch)."""
        new_tokens = {name: 1 for name in self.remaining}
        self._join(new_tokens, first)
        step = self.state.schedule(new_tokens)
        rows = step.num_rows
        for tensor in (self.q, self.keys, self.values):
            self._random_rows(tensor, rows)
        if len(step.copy_pairs):
            self.module.copy_pages(*step.collection(self.blocks),
                                   step.copy_pairs)
            self.copies += len(step.copy_pairs)
        for layer in range(self.args.layers):
            out = self.out[layer, :rows]
            self.module.decode_step(
                *step.collection(self.blocks), layer, self.q[layer, :rows],
                self.keys[layer, :rows], self.values[layer, :rows],
                step.row_offsets, out)
            assert out.data_ptr() == self.pointers["out"] + \
                layer * self.out.stride(0) * self.out.element_size()
        error = self._check(step)
        assert self._pointers() == self.pointers, "a tensor was reallocated"
        return len(step.sequences), rows, self._leave(step), error

    def _check(self, step):
        """The most |out - torch attention| of the step, over its
        sequences and layers; the new K/V rows join each history."""
        error = 0.0
        for name in step.sequences:
            rows = step.rows(name)
            for layer, kv in enumerate(self.history[name]):
                kv[0] = torch.cat([kv[0], self.keys[layer, rows]])
                kv[1] = torch.cat([kv[1], self.values[layer, rows]])
                if name == PREFIX:
                    continue
                expected = torch_attention(self.q[layer, rows], kv[0], kv[1],
                                           self.config.default_scale)
                got = self.out[layer, rows].float()
                difference = float((got - expected).abs().max())
                error = max(error, difference) if difference == difference \
                    else math.inf  # NaN
        return error

    def _leave(self, step):
        """The sequences whose outputs are complete leave (a prefill gives
        the first output token, each decode step one more)."""
        left = []
        for name in step.sequences:
            if name == PREFIX:
                continue
            self.remaining[name] -= 1
            if self.remaining[name] == 0:
                del self.remaining[name], self.history[name]
                self.state.finish(name)
                left.append(name)
        return left

    def close(self):
        """Every sequence leaves; True when every page is free again."""
        for name in list(self.remaining) + [PREFIX] * (PREFIX in self.state):
            self.state.finish(name)
        allocator = self.state.allocator
        return allocator.num_free == allocator.num_pages - 1


def run(args, report=print):
    """The loop of `args.steps` steps; returns the max |error| of each."""
    loop = ServingLoop(args)
    target = "the GPU emulator" if args.gpu else "the CPU"
    report(f"-- one module (decode_step + copy_pages, {args.dtype}, "
           f"{args.heads} KV / {args.q_heads} query heads of {args.head_size}, "
           f"pages of {args.page_size}, {args.layers} layers) on {target}; "
           f"{loop.state.allocator.num_pages} pages")
    errors = []
    for index in range(args.steps):
        batch, rows, left, error = loop.step(first=index == 0)
        errors.append(error)
        if error > TOLERANCE[args.dtype]:
            raise AssertionError(f"step {index}: max |error| {error:.3g} against "
                                 f"torch, over {TOLERANCE[args.dtype]}")
        report(f"step {index:3d}: {batch} sequences, {rows:3d} rows, "
               f"{len(left)} left, max |error| {error:.2e}")
    freed = loop.close()
    report(f"-- {args.steps} steps, {loop.served} requests, at most "
           f"{args.batch} at a time, {loop.copies} pages copied on write; "
           f"max |error| against torch {max(errors):.2e} (tolerance "
           f"{TOLERANCE[args.dtype]:.1e}); tensors written in place (data_ptr "
           f"unchanged); all pages free again: {freed}")
    if not freed:
        raise AssertionError("pages leaked")
    return errors


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("steps", 64), ("batch", 8), ("heads", 2),
                          ("q-heads", 8), ("head-size", 64), ("page-size", 16),
                          ("layers", 2), ("max-prompt", 40), ("max-new", 24),
                          ("prefix", 37), ("seed", 0)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--dtype", choices=sorted(TOLERANCE), default="bf16")
    parser.add_argument("--gpu", action="store_true",
                        help="run the kernels on the GPU emulator")
    return parser.parse_args(argv)


if __name__ == "__main__":
    try:
        run(parse_args())
    except AssertionError as error:
        sys.exit(f"FAILED: {error}")
