#!/usr/bin/env python3
"""A Llama-style decoder layer (decoder_layer.mlir, on tensors) over a paged
KV cache, checked step by step against the same layer in PyTorch.

The layer -- RMSNorm, q/k/v projections, rotary embedding, K/V stored into
the paged cache, paged attention (GQA), output projection, residual,
RMSNorm, SwiGLU MLP, residual; bf16 activations with f32 accumulation --
is compiled once (kvcache-to-cpu, or kvcache-to-emulated-gpu with --gpu)
and runs a prefill of a ragged batch of prompts, then --steps decode steps
of one token per sequence, the pages handed out by kvcache.serving. The
reference keeps each sequence's K/V the way Hugging Face models keep
`past_key_values`: tensors concatenated step by step. Every step's output
rows must match it within bf16 rounding. From the repository root, after
the build:

    PYTHONPATH=build/python /usr/bin/python3 examples/decoder_layer/run.py
    PYTHONPATH=build/python /usr/bin/python3 examples/decoder_layer/run.py --gpu
    PYTHONPATH=build/python /usr/bin/python3 examples/decoder_layer/run.py \\
        --emit --head-size 128 --kv-heads 8 --mlp 14336 > layer.mlir
"""

import argparse
import importlib.util
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("kvcache") is None:  # run without PYTHONPATH
    sys.path.insert(0, os.path.join(HERE, "..", "..", "build", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import kvcache  # noqa: E402
from kvcache import serving  # noqa: E402

SOURCE = os.path.join(HERE, "decoder_layer.mlir")
EPS = 1e-5
ROPE_BASE = 10000.0


class Sizes:
    """The layer's sizes: `kv_heads` KV heads of `head_size`, `group`
    query heads per KV head, a residual stream of `hidden` (default:
    query heads x head_size) and an MLP of `mlp`; pages of `page_size`."""

    def __init__(self, kv_heads=2, head_size=32, group=4, hidden=None,
                 mlp=512, page_size=16):
        if head_size % 2:
            raise ValueError(f"head_size must be even, got {head_size}")
        self.kv_heads, self.head_size, self.group = kv_heads, head_size, group
        self.q_heads = kv_heads * group
        self.hidden = hidden or self.q_heads * head_size
        self.mlp, self.page_size = mlp, page_size
        self.scale = 1.0 / math.sqrt(head_size)


def instantiate(sizes):
    """decoder_layer.mlir for `sizes`: its aliases and attention scale
    rewritten (the body takes every other size from its arguments)."""
    H, D, P, Q = sizes.kv_heads, sizes.head_size, sizes.page_size, sizes.q_heads
    params = f"bf16, num_heads = {H}, head_size = {D}, page_size = {P}"
    aliases = {
        "blocks": f"memref<?x2x?x{P}x{H}x{D}xbf16, strided<[?, ?, ?, {H * D}, "
                  f"{D}, 1], offset: ?>>",
        "collection": f"!kvcache.paged_collection<{params}>",
        "cache": f"!kvcache.paged_cache<{params}>",
        "q_heads": f"tensor<?x{Q}x{D}xbf16>",
        "kv_heads": f"tensor<?x{H}x{D}xbf16>",
        "attn_rows": f"tensor<?x{Q * D}xbf16>",
    }
    with open(SOURCE) as f:
        text = f.read()
    for name, value in aliases.items():
        text, count = re.subn(rf"^!{name} = .*$", f"!{name} = {value}", text,
                              flags=re.M)
        assert count == 1, f"decoder_layer.mlir has no alias !{name}"
    text, count = re.subn(r"scale = [0-9.e+-]+ : f32",
                          f"scale = {sizes.scale!r} : f32", text)
    assert count == 1, "decoder_layer.mlir has no attention scale"
    return text


def rope_tables(positions, head_size):
    """cos and sin [positions, head_size / 2] (float32) of the rotary
    embedding: angle p / base^(2i / head_size) for position p, pair i."""
    pairs = torch.arange(head_size // 2, dtype=torch.float64)
    inverse = ROPE_BASE ** (-2.0 * pairs / head_size)
    angles = torch.arange(positions, dtype=torch.float64)[:, None] * inverse
    return torch.cos(angles).float(), torch.sin(angles).float()


def random_weights(sizes, generator):
    """bf16 weights [in, out] (scaled by 1/sqrt(in)) and RMSNorm gains."""
    def matrix(rows, columns):
        values = torch.randn((rows, columns), generator=generator)
        return (values / math.sqrt(rows)).bfloat16()

    def gain(size):
        return (1 + 0.1 * torch.randn((size,), generator=generator)).bfloat16()

    S, Q, KV = sizes.hidden, sizes.q_heads * sizes.head_size, \
        sizes.kv_heads * sizes.head_size
    return {"attn_norm": gain(S), "wq": matrix(S, Q), "wk": matrix(S, KV),
            "wv": matrix(S, KV), "wo": matrix(Q, S), "mlp_norm": gain(S),
            "w_gate": matrix(S, sizes.mlp), "w_up": matrix(S, sizes.mlp),
            "w_down": matrix(sizes.mlp, S)}


WEIGHT_ORDER = ("attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate",
                "w_up", "w_down")


class TorchLayer:
    """The layer in PyTorch, rounding to bf16 where decoder_layer.mlir
    does; one sequence at a time, its K/V kept as `past_key_values`."""

    def __init__(self, sizes, weights, cos, sin):
        self.sizes, self.w, self.cos, self.sin = sizes, weights, cos, sin

    @staticmethod
    def _round(values):
        return values.bfloat16().float()

    def _project(self, x, name):
        return x.float() @ self.w[name].float()

    def _rms_norm(self, x, name):
        x = x.float()
        root = torch.sqrt((x * x).mean(-1, keepdim=True) + EPS)
        return (x / root * self.w[name].float()).bfloat16()

    def _heads(self, acc, heads):
        return self._round(acc).reshape(acc.shape[0], heads,
                                        self.sizes.head_size)

    def _rope(self, x, positions):
        # Hugging Face's rotate_half: x * cos + rotate_half(x) * sin.
        cos = self.cos[positions].repeat(1, 2)[:, None, :]
        sin = self.sin[positions].repeat(1, 2)[:, None, :]
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return (x * cos + rotated * sin).bfloat16()

    def _attention(self, q, keys, values):
        n, t = q.shape[0], keys.shape[0]
        group = self.sizes.group
        q = q.float().transpose(0, 1)
        k = keys.float().repeat_interleave(group, dim=1).transpose(0, 1)
        v = values.float().repeat_interleave(group, dim=1).transpose(0, 1)
        position = torch.arange(t - n, t)[:, None]
        mask = torch.where(torch.arange(t)[None, :] <= position, 0.0,
                           -math.inf)
        scores = q @ k.transpose(1, 2) * self.sizes.scale + mask
        out = torch.softmax(scores, dim=-1) @ v
        return out.transpose(0, 1).reshape(n, -1).bfloat16()

    def _residual(self, x, acc):
        return (x.float() + self._round(acc)).bfloat16()

    def __call__(self, x, positions, past):
        """(output rows, new past) of one sequence's rows `x` at
        `positions`; `past` is (keys, values) or None."""
        H, Q = self.sizes.kv_heads, self.sizes.q_heads
        normed = self._rms_norm(x, "attn_norm")
        q = self._rope(self._heads(self._project(normed, "wq"), Q), positions)
        k = self._rope(self._heads(self._project(normed, "wk"), H), positions)
        v = self._heads(self._project(normed, "wv"), H).bfloat16()
        if past is not None:
            k, v = torch.cat([past[0], k]), torch.cat([past[1], v])
        h = self._residual(x, self._project(self._attention(q, k, v), "wo"))
        normed = self._rms_norm(h, "mlp_norm")
        gate = self._round(self._project(normed, "w_gate"))
        up = self._round(self._project(normed, "w_up"))
        act = (gate * torch.sigmoid(gate) * up).bfloat16()
        return self._residual(h, self._project(act, "w_down")), (k, v)


def compile_layer(sizes, gpu=False, linalg_to_gpu=False):
    """The compiled layer: a kvcache.CPUModule, or with `gpu` an
    EmulatedGPUModule (with `linalg_to_gpu`, the linalg ops as GPU kernels
    too)."""
    ir = instantiate(sizes)
    if gpu:
        return kvcache.EmulatedGPUModule(ir, linalg_to_gpu=linalg_to_gpu)
    return kvcache.CPUModule(ir)


class Run:
    """The cache, the weights and the reference of a run over the prompts
    `prompts` (token counts) with `module` (compile_layer's)."""

    def __init__(self, module, sizes, prompts, steps, seed=0):
        self.module, self.sizes = module, sizes
        self.generator = torch.Generator().manual_seed(seed)
        self.weights = random_weights(sizes, self.generator)
        longest = max(prompts) + steps
        self.cos, self.sin = rope_tables(longest, sizes.head_size)
        self.reference = TorchLayer(sizes, self.weights, self.cos, self.sin)
        pages = -(-longest // sizes.page_size)
        num_pages = 1 + len(prompts) * pages
        self.state = serving.BatchState(num_pages, sizes.page_size)
        self.blocks = torch.zeros((num_pages, 2, 1, sizes.page_size,
                                   sizes.kv_heads, sizes.head_size),
                                  dtype=torch.bfloat16)
        self.sequences = [f"s{i}" for i in range(len(prompts))]
        for name in self.sequences:
            self.state.add(name)
        self.prompts = dict(zip(self.sequences, prompts))
        self.past = dict.fromkeys(self.sequences)

    def step(self, new_tokens):
        """Runs one step (new_tokens[s] rows of sequence s) on the module
        and the reference: the max |out - reference| and max |reference|."""
        step = self.state.schedule(new_tokens)
        rows = step.num_rows
        x = torch.randn((rows, self.sizes.hidden),
                        generator=self.generator).bfloat16()
        positions = np.concatenate([
            step.cache_lengths[b] + np.arange(n, dtype=np.int32)
            for b, n in enumerate(np.diff(step.row_offsets))])
        out = torch.zeros((rows, self.sizes.hidden), dtype=torch.bfloat16)
        weights = [self.weights[name] for name in WEIGHT_ORDER]
        self.module.decoder_layer(*step.collection(self.blocks), 0, x,
                                  step.row_offsets, positions, self.cos,
                                  self.sin, *weights, out)
        error = largest = 0.0
        for name in step.sequences:
            span = step.rows(name)
            expected, self.past[name] = self.reference(
                x[span], torch.from_numpy(positions[span]).long(),
                self.past[name])
            difference = (out[span].float() - expected.float()).abs().max()
            error = max(error, float(difference)) \
                if not torch.isnan(difference) else math.inf
            largest = max(largest, float(expected.float().abs().max()))
        return error, largest

    def run(self, steps, report=print):
        """The prefill, then `steps` decode steps; the max error of each.
        AssertionError when a step is off by more than bf16 rounding."""
        errors = []
        for index in range(steps + 1):
            new_tokens = self.prompts if index == 0 else \
                dict.fromkeys(self.sequences, 1)
            error, largest = self.step(new_tokens)
            # A few bf16 roundings of the largest value: the layer rounds
            # each stage to bf16, and a sum in another order may round
            # to the neighbouring bf16 value.
            tolerance = 4 * 2.0 ** (math.floor(math.log2(max(largest, 1.0))) - 7)
            errors.append(error)
            kind = "prefill" if index == 0 else f"decode {index:2d}"
            report(f"{kind}: {sum(new_tokens.values()):3d} rows, max |error| "
                   f"{error:.2e} (max |reference| {largest:.2f}, tolerance "
                   f"{tolerance:.2e})")
            if not error <= tolerance:
                raise AssertionError(f"{kind}: max |error| {error:.3g} "
                                     f"against torch, over {tolerance:.3g}")
        return errors


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("steps", 16), ("kv-heads", 2), ("head-size", 32),
                          ("group", 4), ("hidden", 0), ("mlp", 512),
                          ("page-size", 16), ("seed", 0)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--prompts", default="13,5,29",
                        help="prompt lengths of the batch, comma-separated")
    parser.add_argument("--gpu", action="store_true",
                        help="run the kernels on the GPU emulator")
    parser.add_argument("--linalg-to-gpu", action="store_true",
                        help="with --gpu, the linalg ops as GPU kernels too "
                        "(the whole layer on the GPU)")
    parser.add_argument("--emit", action="store_true",
                        help="print the layer's MLIR for these sizes and stop")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    sizes = Sizes(args.kv_heads, args.head_size, args.group, args.hidden,
                  args.mlp, args.page_size)
    if args.emit:
        print(instantiate(sizes), end="")
        return
    prompts = [int(n) for n in args.prompts.split(",")]
    target = "the CPU"
    if args.gpu:
        target = "the GPU emulator" + (", linalg as GPU kernels too"
                                       if args.linalg_to_gpu else "")
    print(f"-- decoder layer: hidden {sizes.hidden}, {sizes.q_heads} query / "
          f"{sizes.kv_heads} KV heads of {sizes.head_size}, MLP {sizes.mlp}, "
          f"pages of {sizes.page_size}; prompts {prompts}; on {target}")
    module = compile_layer(sizes, args.gpu, args.linalg_to_gpu)
    errors = Run(module, sizes, prompts, args.steps, args.seed).run(args.steps)
    print(f"-- prefill + {args.steps} decode steps match torch; max |error| "
          f"{max(errors):.2e}")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as error:
        sys.exit(f"FAILED: {error}")
