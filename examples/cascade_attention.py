#!/usr/bin/env python3
"""Cascade attention: a shared prefix stored once, merged with merge_states.

What: a batch of sequences that share a system prompt (the prefix) and each
have their own tokens after it (the suffix), one decode row per sequence.
The prefix's K/V is stored once, as sequence 0 of a prefix cache; each
sequence's own K/V lives in a second cache. One decode step is then

  1. `attention_ragged ... lse(...) {noncausal}` over the prefix cache, with
     every query row placed in its sequence 0 by `row_offsets = [0, rows]`
     (noncausal: each row sees every cached prefix token);
  2. `attention_ragged ... lse(...)` (causal) over the suffix cache;
  3. `kvcache.merge_states` of the two partial results, in place.

The result equals plain attention over a cache that holds prefix + suffix
for every sequence (docs/Contract.md 3.3, "Optional clauses" and
`kvcache.merge_states`): the script computes both on the CPU from the same
tokens, checks the plain one against kvcache.reference, and prints the
largest difference.

Why: the plain way stores and reads the prefix once per sequence; the
cascade way stores it once and reads it once per query tile: all the
batch's rows are rows of the prefix's one sequence, so on the GPU the
query-tile kernel (docs/KernelABI.md, "Query tiles") attends up to 32 of
them (times GQA 4: 128 mma rows) per block and copies the prefix's K/V once
for them all, whenever the batch's rows times the group fill an mma tile
(4 rows or more here; fewer rows take a block per row). The script prints the
K/V bytes each way (computed from the shapes) and this machine's CPU time of
each (one call after a warm-up: noisy on shared CPUs). The CPU lowering
walks the keys of every (row, query head) pair, so both ways do the same
arithmetic; they differ in the memory they stream (12.6 MB against 71.4 MB
at the default size). With --emulated-gpu the same three functions run as
GPU kernels (kvcache-to-emulated-gpu: the PTX kernels, executed by the GPU
emulator) and the script also prints the K/V bytes the kernels actually
copied, from the emulator's profile (docs/Contract.md section 7).

How to run, after the README's set-up commands, from the repository root:

    PYTHONPATH=build/python /usr/bin/python3 examples/cascade_attention.py
    PYTHONPATH=build/python /usr/bin/python3 examples/cascade_attention.py --batch 3 --prefix 256
    PYTHONPATH=build/python /usr/bin/python3 examples/cascade_attention.py --batch 3 --prefix 256 --emulated-gpu
"""

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

if importlib.util.find_spec("kvcache") is None:  # run without PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "build", "python"))

import numpy as np  # noqa: E402

import kvcache  # noqa: E402
from kvcache import builders, caches, reference, testing  # noqa: E402

TOLERANCE = 2e-3  # f16 outputs in [-1, 1]


def paged_cache(config, keys, values, cache_lengths):
    """A caches.PagedCache (one layer) holding sequence b's K/V tokens
    `keys[b]`, `values[b]` ([n_b, H, D] f16) in consecutive pages, with
    `cache_lengths[b]` of them cached (the rest: this step's new tokens).
    The last page is the null page that pads the lookup table's rows."""
    P, H, D = config.page_size, config.num_heads, config.head_size
    pages = [-(-len(k) // P) for k in keys]
    null_page = sum(pages)
    blocks = np.zeros((null_page + 1, 2, 1, P, H, D), np.float16)
    table = np.full((len(keys), max(pages)), null_page, np.int32)
    first = 0
    for b, count in enumerate(pages):
        for kv, tokens in ((0, keys[b]), (1, values[b])):
            padded = np.zeros((count * P, H, D), np.float16)
            padded[:len(tokens)] = tokens
            blocks[first:first + count, kv, 0] = padded.reshape(count, P, H, D)
        table[b, :count] = np.arange(first, first + count)
        first += count
    totals = [len(k) for k in keys]
    new = [n - c for n, c in zip(totals, cache_lengths)]
    return caches.PagedCache(blocks, cache_lengths, table, max(new),
                             max(totals), "f16")


def kv_bytes(config, tokens):
    """Bytes of K and V of `tokens` cached tokens (every head, f16)."""
    return 2 * tokens * config.num_heads * config.head_size * 2


def timed(function):
    """Seconds of one call of `function`, after one warm-up call."""
    function()
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def copied_bytes(function):
    """Bytes the GPU kernels of one call of `function` copy with cp.async
    (K and V tiles), summed over the launches of the emulator's profile."""
    with tempfile.TemporaryDirectory() as directory:
        profile = os.path.join(directory, "profile.jsonl")
        os.environ["KVCACHE_EMU_PROFILE"] = profile
        try:
            function()
        finally:
            del os.environ["KVCACHE_EMU_PROFILE"]
        with open(profile) as lines:
            return sum(json.loads(line)["cp_async_bytes"] for line in lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8,
                        help="sequences sharing the prefix (default 8)")
    parser.add_argument("--prefix", type=int, default=2048,
                        help="tokens of the shared prefix (default 2048)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--emulated-gpu", action="store_true",
                        help="run the functions as GPU kernels on the GPU "
                             "emulator and report the bytes they copy")
    args = parser.parse_args()
    if args.batch < 1 or args.prefix < 1:
        parser.error("--batch and --prefix must be at least 1")

    # 1. The model: f16, 8 KV heads of 128, 32 query heads (GQA 4), pages of
    #    16 tokens; one module with the three functions of a cascade step.
    config = kvcache.CacheConfig("f16", num_heads=8, head_size=128,
                                 page_size=16, num_layers=1, q_heads=32)
    H, Hq, D = config.num_heads, config.query_heads, config.head_size
    ir = builders.module(
        builders.attention_ragged(config, "prefix_attention", noncausal=True,
                                  lse=True),
        builders.attention_ragged(config, "causal_attention", lse=True),
        builders.merge_states(config))
    if args.emulated_gpu:
        module = kvcache.EmulatedGPUModule(ir)
        pipeline = "kvcache-to-emulated-gpu (GPU kernels on the emulator)"
    else:
        module = kvcache.CPUModule(ir)
        pipeline = "kvcache-to-cpu"
    print("-- built @prefix_attention (noncausal, lse), @causal_attention "
          f"(lse), @merge_states; lowered with {pipeline}")

    # 2. The tokens: a shared prefix, then each sequence's own 64-256 cached
    #    tokens and its decode token (already stored, as after store_ragged).
    rng = np.random.default_rng(args.seed)
    batch, prefix = args.batch, args.prefix
    own = rng.integers(64, 257, batch).tolist()

    def tokens(count):
        return testing.random_rows(rng, count, H, D, "f16")

    prefix_k, prefix_v = tokens(prefix), tokens(prefix)
    suffix_k = [tokens(n + 1) for n in own]
    suffix_v = [tokens(n + 1) for n in own]
    q = testing.random_rows(rng, batch, Hq, D, "f16")
    offsets = testing.row_offsets([1] * batch)
    rows = batch

    # The cascade's two caches: the prefix once (sequence 0, nothing new),
    # and every sequence's own tokens.
    prefix_cache = paged_cache(config, [prefix_k], [prefix_v], [prefix])
    suffix_cache = paged_cache(config, suffix_k, suffix_v, own)
    # The plain way: prefix + own tokens for every sequence.
    plain_cache = paged_cache(
        config, [np.concatenate([prefix_k, k]) for k in suffix_k],
        [np.concatenate([prefix_v, v]) for v in suffix_v],
        [prefix + n for n in own])
    print(f"-- batch of {batch}: a {prefix}-token shared prefix, own tokens "
          f"{own} (+1 decode row each); {H} KV heads x {D}, GQA {Hq // H}, f16")

    # 3. One cascade step: every row in the prefix's sequence 0, noncausal;
    #    each row in its own sequence, causal; merged in place.
    prefix_offsets = np.array([0, rows], np.int32)
    # Every row reads the prefix's one sequence: its max_seq_length (the
    # most rows of a sequence in a call) is the batch's rows.
    prefix_cache.max_seq_length = rows
    out, lse = np.zeros_like(q), np.zeros((rows, Hq), np.float32)
    own_out, own_lse = np.zeros_like(q), np.zeros((rows, Hq), np.float32)
    plain_out, plain_lse = np.zeros_like(q), np.zeros((rows, Hq), np.float32)

    def cascade():
        module.prefix_attention(*prefix_cache.arguments(), 0, q,
                                prefix_offsets, out, lse)
        module.causal_attention(*suffix_cache.arguments(), 0, q, offsets,
                                own_out, own_lse)
        module.merge_states(out, lse, own_out, own_lse, out, lse)

    def plain():
        module.causal_attention(*plain_cache.arguments(), 0, q, offsets,
                                plain_out, plain_lse)

    if args.emulated_gpu:
        cascade_copied, plain_copied = copied_bytes(cascade), copied_bytes(plain)
    else:
        cascade_s, plain_s = timed(cascade), timed(plain)

    # 4. Equal within f16 rounding; the plain result is checked against the
    #    numpy reference too, so the two cannot agree on a wrong answer.
    error = float(np.abs(out.astype(np.float32) -
                         plain_out.astype(np.float32)).max())
    lse_error = float(np.abs(lse - plain_lse).max())
    expected = reference.attention_ragged(
        q, plain_cache.key_cache(0), plain_cache.value_cache(0), offsets,
        np.zeros_like(q), config.default_scale)
    reference_error = float(np.abs(plain_out.astype(np.float32) -
                                   expected.astype(np.float32)).max())
    print(f"-- cascade == plain attention over prefix + suffix: max |error| "
          f"{error:.2e} (outputs, f16), {lse_error:.2e} (lse); plain vs "
          f"kvcache.reference {reference_error:.2e}; tolerance {TOLERANCE:g}")
    if max(error, reference_error) > TOLERANCE:
        sys.exit("mismatch: cascade attention differs from plain attention")

    # 5. K/V bytes a step reads, each cached token once, and this machine's
    #    CPU time (one call each after a warm-up).
    suffix_tokens = sum(n + 1 for n in own)
    cascade_bytes = kv_bytes(config, prefix + suffix_tokens)
    plain_bytes = kv_bytes(config, batch * prefix + suffix_tokens)
    print(f"-- K/V bytes read: cascade {cascade_bytes:,} (prefix once + "
          f"suffixes), plain {plain_bytes:,} (prefix per sequence + suffixes): "
          f"{cascade_bytes / plain_bytes:.2f}x")
    if args.emulated_gpu:
        print(f"-- K/V bytes the GPU kernels copied (emulator profile): "
              f"cascade {cascade_copied:,}, plain {plain_copied:,}: "
              f"{cascade_copied / plain_copied:.2f}x")
        # The prefix step's rows are one sequence's: the query-tile kernel
        # copies the prefix once per tile of 32 rows; below 4 rows (4 x GQA
        # 4 = one 16-row mma tile) a block per row copies it once per row.
        # Each row's own tokens are copied once (one row per sequence).
        group = Hq // H
        tile_rows = 128 // group
        reads = -(-rows // tile_rows) if rows * group >= 16 and rows >= 2 else rows
        expected = kv_bytes(config, reads * prefix + suffix_tokens)
        if (cascade_copied, plain_copied) != (expected, plain_bytes):
            sys.exit("mismatch: the kernels copied other bytes than the "
                     f"prefix {reads} times and each row's own keys once")
        print(f"-- the prefix step copied the prefix {reads} time(s) for "
              f"{rows} rows ({'query tiles of up to ' + str(tile_rows) + ' rows' if reads < rows else 'a block per row'})")
        return
    print(f"-- CPU time on this machine ({os.cpu_count()} CPUs, one run after "
          f"a warm-up): cascade {cascade_s * 1e3:.1f} ms (prefix + suffix + "
          f"merge), plain {plain_s * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
