"""Section 8 of the benchmark report: CPU attention against its peers on the
same machine, in one run, on the same data.

The model: 8 KV heads x 128, 32 query heads (GQA 4), pages of 16 tokens
shuffled over the blocks (as an allocator leaves them). Cases: decode (one
new row per sequence) over batch 8 x 2048 and 32 x 4096 tokens, and
prefill (batch 2 x 1024 new tokens, causal, nothing cached before), each in
f32 and bf16. For each case, min and median of several calls:

- ours: `attention_ragged` through `kvcache.CPUModule` (`kvcache-to-cpu`,
  opt level 3) on the paged cache, on one thread (`threads=1`: serial code)
  and on every core (the default: `parallel=true`, OpenMP);
- numpy: `q @ K^T`, softmax, `@ V` per sequence (numpy's matmul and its
  BLAS), on K/V already gathered into contiguous [heads, tokens, head_size]
  arrays and K^T into [heads, head_size, tokens] (the gather, the
  transpose and the prefill's additive causal mask are built before the
  timing), in f32 (numpy has no bf16: the bf16 cases' values
  widened);
- PyTorch (Debian's python3-torch), the same three steps on the same
  gathered K/V, in the case's type, when it is installed (`bash
  bench/run.sh` installs it; this script says when it is absent);
- copy: one `numpy.copyto` of as many bytes as the case's K and V (the
  memory-bound limit of a kernel that reads the cache once; numpy copies
  on one thread).

Before timing, ours is checked against numpy (max |error| over the outputs:
f32 2e-5, bf16 1.6e-2); a larger error stops the script.

Run alone: `/usr/bin/python3 bench/attention_peers.py [--quick]` (--quick:
the 8 x 2048 decode cases only).
"""

import statistics
import time

from section_cli import import_package

HEADS, HEAD_SIZE, GROUP, PAGE = 8, 128, 4, 16
Q_HEADS = HEADS * GROUP
CASES = [  # (name, batch, cached tokens per sequence, new rows per sequence)
    ("decode 8 x 2048", 8, 2047, 1),
    ("decode 32 x 4096", 32, 4095, 1),
    ("prefill 2 x 1024", 2, 0, 1024),
]
TOLERANCE = {"f32": 2e-5, "bf16": 1.6e-2}
INTRODUCTION = (
    f"Attention, {HEADS} KV heads x {HEAD_SIZE}, {Q_HEADS} query heads (GQA {GROUP}), page "
    f"{PAGE} (pages shuffled): ours (`attention_ragged` through `kvcache.CPUModule`, on one "
    "thread and on every core) on the paged cache; numpy (its matmul) and PyTorch (Debian's, "
    "when installed) as matmul + softmax + matmul on K/V already gathered contiguous (the "
    "gather not timed); a copy of the K+V bytes (the memory-bound limit; one thread). Same "
    "data, one run, ms min / median (bench/attention_peers.py). Targets (issue 19): decode "
    "<= 1.6x the copy single-threaded (<= 1.3x on all cores), faster than PyTorch and numpy.")


def _case(np, kvcache, rng, dtype, batch, cached, new):
    """(cache, q, offsets, gathered K and V per sequence as f32 [H, n, D])."""
    tokens = cached + new
    pages = -(-tokens // PAGE)
    num_pages = batch * pages + 1
    values = np.empty((num_pages, 2, 1, PAGE, HEADS, HEAD_SIZE), np.float32)
    for first in range(0, num_pages, 512):
        chunk = values[first:first + 512]
        chunk[...] = rng.uniform(-1, 1, chunk.shape)
    blocks = kvcache.dtypes.from_float32(values, dtype)
    widened = kvcache.dtypes.to_float32(blocks, dtype)
    ids = rng.permutation(num_pages).astype(np.int32)
    table = ids[:batch * pages].reshape(batch, pages)
    cache = kvcache.caches.PagedCache(blocks, [cached] * batch, table, new, tokens, dtype)
    q = kvcache.testing.random_rows(rng, batch * new, Q_HEADS, HEAD_SIZE, dtype)
    gathered = []
    for b in range(batch):
        rows = widened[table[b], :, 0].transpose(1, 0, 2, 3, 4).reshape(
            2, pages * PAGE, HEADS, HEAD_SIZE)[:, :tokens]
        gathered.append(np.ascontiguousarray(rows.transpose(0, 2, 1, 3)))  # [kv, H, n, D]
    return cache, q, kvcache.testing.row_offsets([new] * batch), gathered


def _causal_masks(np, gathered, new):
    """Per sequence, the additive causal mask of its [G * new, n] scores (0
    or -inf), or None for decode rows: built once, outside the timing."""
    if new == 1:
        return [None] * len(gathered)
    masks = []
    for kv in gathered:
        n = kv.shape[2]
        position = (n - new) + np.arange(new)
        masked = np.arange(n)[None, :] > position[:, None]        # [new, n]
        masks.append(np.where(np.tile(masked, (GROUP, 1)), -np.inf, 0).astype(np.float32))
    return masks


def _numpy_attention(np, q, gathered, transposed, masks, new, scale, out):
    """Per sequence: scores = q K^T (GQA: the group's heads share K; K^T
    contiguous, `transposed`), plus the causal mask for prefill rows,
    softmax, @ V; f32."""
    for b, kv in enumerate(gathered):
        values = kv[1]                                    # [H, n, D]
        rows = q[b * new:(b + 1) * new].reshape(new, HEADS, GROUP, HEAD_SIZE)
        rows = rows.transpose(1, 2, 0, 3).reshape(HEADS, GROUP * new, HEAD_SIZE)
        scores = np.matmul(rows, transposed[b]) * scale              # [H, G*new, n]
        if masks[b] is not None:
            scores += masks[b]
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        result = np.matmul(scores, values)                           # [H, G*new, D]
        out[b * new:(b + 1) * new] = result.reshape(HEADS, GROUP, new, HEAD_SIZE).transpose(
            2, 0, 1, 3).reshape(new, Q_HEADS, HEAD_SIZE)


def _torch_attention(torch, q, gathered, new, scale, out):
    """The same three steps in PyTorch on tensors of the case's type."""
    for b, (keys, values) in enumerate(gathered):
        n = keys.shape[1]
        rows = q[b * new:(b + 1) * new].reshape(new, HEADS, GROUP, HEAD_SIZE)
        rows = rows.permute(1, 2, 0, 3).reshape(HEADS, GROUP * new, HEAD_SIZE)
        scores = torch.matmul(rows, keys.transpose(1, 2)) * scale
        if new > 1:
            position = (n - new) + torch.arange(new)
            masked = torch.arange(n)[None, :] > position[:, None]
            scores = scores.masked_fill(masked.repeat(GROUP, 1), float("-inf"))
        result = torch.matmul(torch.softmax(scores, dim=-1), values)
        out[b * new:(b + 1) * new] = result.reshape(HEADS, GROUP, new, HEAD_SIZE).permute(
            2, 0, 1, 3).reshape(new, Q_HEADS, HEAD_SIZE)


def _timed(function, reps):
    times = []
    for _ in range(reps + 1):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times[1:]), statistics.median(times[1:])


def _import_torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _measure(np, kvcache, builders, torch, dtype, case, reps):
    """{peer: (min s, median s)} and the max |error| of ours against numpy."""
    name, batch, cached, new = case
    config = kvcache.CacheConfig(dtype, num_heads=HEADS, head_size=HEAD_SIZE,
                                 page_size=PAGE, num_layers=1, q_heads=Q_HEADS)
    ir = builders.attention_ragged(config, "attention")
    modules = {"ours 1 thread": kvcache.CPUModule(ir, opt_level=3, threads=1),
               "ours all cores": kvcache.CPUModule(ir, opt_level=3)}
    rng = np.random.default_rng(batch * 7 + new)
    cache, q, offsets, gathered = _case(np, kvcache, rng, dtype, batch, cached, new)
    scale = config.default_scale
    outs = {peer: np.zeros_like(q) for peer in modules}
    arguments = cache.arguments()
    q32 = kvcache.dtypes.to_float32(q, dtype)
    masks = _causal_masks(np, gathered, new)
    transposed = [np.ascontiguousarray(kv[0].transpose(0, 2, 1)) for kv in gathered]
    expected = np.zeros(q32.shape, np.float32)
    results = {peer: _timed(lambda m=module, o=outs[peer]: m.attention(
        *arguments, 0, q, offsets, o), reps) for peer, module in modules.items()}
    results["numpy"] = _timed(lambda: _numpy_attention(np, q32, gathered, transposed,
                                                       masks, new, scale, expected), reps)
    error = max(float(np.abs(kvcache.dtypes.to_float32(out, dtype) - expected).max())
                for out in outs.values())
    if error > TOLERANCE[dtype]:
        raise SystemExit(f"bench/attention_peers.py: {name} {dtype}: ours differs from "
                         f"numpy by {error:.2e} (> {TOLERANCE[dtype]:g})")
    if torch is not None:
        kind = torch.float32 if dtype == "f32" else torch.bfloat16
        tq = torch.from_numpy(q32).to(kind)
        tkv = [(torch.from_numpy(kv[0]).to(kind), torch.from_numpy(kv[1]).to(kind))
               for kv in gathered]
        tout = torch.zeros(tq.shape, dtype=kind)
        with torch.no_grad():
            results["PyTorch"] = _timed(
                lambda: _torch_attention(torch, tq, tkv, new, scale, tout), reps)
    kv_bytes = sum(kv.size for kv in gathered) * (4 if dtype == "f32" else 2)
    source = np.ones(kv_bytes, np.uint8)
    target = np.empty_like(source)
    results["copy"] = _timed(lambda: np.copyto(target, source), reps)
    return results, error, kv_bytes


def attention_peers_section(build, quick, lines):
    first = len(lines)
    lines += ["## 8. CPU attention against peers", "", INTRODUCTION, ""]
    imported = import_package(build, lines)
    if imported is None:
        return
    np, kvcache, builders, _ = imported
    torch = _import_torch()
    reps = 3 if quick else 5
    cases = CASES[:1] if quick else CASES
    ours = ["ours 1 thread", "ours all cores"]
    peers = ours + ["numpy"] + (["PyTorch"] if torch is not None else []) + ["copy"]
    rivals = ["copy", "numpy"] + (["PyTorch"] if torch is not None else [])
    ratio_names = [f"{o.replace('ours ', '')} / {r}" for r in rivals for o in ours]
    lines += ["| case | type | K+V MiB | " + " | ".join(f"{p} ms" for p in peers) + " | " +
              " | ".join(ratio_names) + " | max error vs numpy |",
              "| --- | --- | --- | " + " | ".join("---" for _ in peers + ratio_names) +
              " | --- |"]
    for case in cases:
        for dtype in ("f32", "bf16"):
            results, error, kv_bytes = _measure(np, kvcache, builders, torch,
                                                dtype, case, reps)
            best = {p: results[p][0] for p in peers}
            cells = [f"{results[p][0] * 1e3:.1f} / {results[p][1] * 1e3:.1f}" for p in peers]
            ratios = [best[o] / best[r] for r in rivals for o in ours]
            lines.append(f"| {case[0]} | {dtype} | {kv_bytes / 2**20:.0f} | " +
                         " | ".join(cells) + " | " +
                         " | ".join(f"{r:.2f}" for r in ratios) + f" | {error:.1e} |")
            print(lines[-1], flush=True)
    lines.append("")
    if torch is None:
        lines += ["PyTorch: not installed (Debian's `python3-torch`; `bash bench/run.sh` "
                  "installs it), so not measured in this run.", ""]
    lines += ["numpy computes in f32 for the bf16 cases too (numpy has no bf16), on the "
              "same values; its K+V bytes are then twice ours.", ""]
    print("\n".join(lines[first:]), flush=True)


if __name__ == "__main__":
    from section_cli import run_section
    run_section(attention_peers_section, __doc__.splitlines()[0])
