"""Section 7 of the benchmark report: CPU decode attention with a sliding
window of 4096 keys over 32k-token contexts, against the same attention
without a window.

Two sequences of 32,768 tokens (32,767 cached and the step's decode token),
f16, 8 KV heads x 128, GQA 4, page 16 (pages shuffled over the blocks, as
an allocator leaves them), one decode row per sequence. `attention_ragged`
and `attention_ragged {window = 4096}` are compiled into one module by
`kvcache-to-cpu` (kvcache.CPUModule) and timed side by side in one run, min
and median over several calls. The windowed loop starts at the window's
first key (docs/Contract.md 3.3), so its time over the full one should be
close to the key ratio 4096 / 32768 = 0.125.

Both functions are checked against kvcache.reference on a small case
before the timing (contexts of 6000 and 1000 tokens: a window that cuts one
and covers the other), and the windowed result of the first 32k sequence
against the reference after it (a few seconds); a difference over the f16
tolerance stops the script.
"""

import statistics
import time

from section_cli import import_package

HEADS, HEAD_SIZE, GROUP, PAGE = 8, 128, 4, 16
CONTEXT, WINDOW, BATCH = 32768, 4096, 2
CHECK_CONTEXTS = [6000, 1000]
TOLERANCE = 2e-3  # f16 outputs in [-1, 1]


def _cache(np, kvcache, rng, contexts):
    """A one-layer f16 kvcache.caches.PagedCache: sequence b holds contexts[b]
    tokens (the last one the step's decode token) of random values in
    [-1, 1), in pages shuffled over the blocks, a null page padding the
    lookup table's rows."""
    needed = [-(-n // PAGE) for n in contexts]
    num_pages = sum(needed) + 1
    blocks = np.empty((num_pages, 2, 1, PAGE, HEADS, HEAD_SIZE), np.float16)
    for first in range(0, num_pages, 256):        # f32 temporaries of 256 pages
        chunk = blocks[first:first + 256]
        chunk[...] = rng.uniform(-1, 1, chunk.shape).astype(np.float32)
    ids = rng.permutation(num_pages).astype(np.int32)
    table = np.full((len(contexts), max(needed)), ids[-1], np.int32)
    for b, count in enumerate(needed):
        table[b, :count], ids = ids[:count], ids[count:]
    return kvcache.caches.PagedCache(blocks, [n - 1 for n in contexts], table,
                                     1, max(contexts), "f16")


class _Case:
    """One decode step over `contexts`: the cache, q, row offsets, outs."""

    def __init__(self, np, kvcache, rng, contexts):
        self.cache = _cache(np, kvcache, rng, contexts)
        self.q = kvcache.testing.random_rows(rng, len(contexts), HEADS * GROUP,
                                             HEAD_SIZE, "f16")
        self.offsets = kvcache.testing.row_offsets([1] * len(contexts))
        self.out = {name: np.zeros_like(self.q) for name in ("full", "windowed")}

    def run(self, cpu, name):
        cpu.call(name, *self.cache.arguments(), 0, self.q, self.offsets,
                 self.out[name])


def _error(np, got, expected):
    return float(np.abs(got.astype(np.float32) - expected.astype(np.float32)).max())


def _check(np, kvcache, case, window, rows=None):
    """Max |error| of the named outs of `case` (run already) against the
    reference: {name: error}, over all rows or the first `rows`."""
    errors = {}
    cache = case.cache
    if rows is not None:
        cache = kvcache.caches.PagedCache(cache.blocks, cache.cache_lengths[:rows],
                                          cache.lookup_table[:rows], 1,
                                          cache.max_cache_length, "f16")
    q, offsets = case.q[:rows], case.offsets[:None if rows is None else rows + 1]
    for name, clause in (("full", None), ("windowed", window)):
        if rows is not None and clause is None:
            continue
        expected = kvcache.reference.attention_ragged(
            q, cache.key_cache(0), cache.value_cache(0), offsets,
            np.zeros_like(q), HEAD_SIZE ** -0.5, window=clause)
        errors[name] = _error(np, case.out[name][:rows], expected)
    return errors


def _reading(ratio, key_ratio):
    """The "Reading it:" sentence of the measured time ratio."""
    head_bytes = lambda keys: keys * HEAD_SIZE * 2 * 2 / 2**20   # K + V, f16, MiB
    text = (f"Reading it: the windowed call reads {key_ratio:.1%} of the keys and takes "
            f"{ratio:.1%} of the time (time ratio / key ratio {ratio / key_ratio:.2f}). "
            "The key loop starts at the window's first key, so the keys outside the "
            "window cost nothing")
    if ratio <= key_ratio:
        return text + (
            "; below the key ratio, probably because a window's K/V "
            f"({head_bytes(WINDOW):.0f} MiB per KV head and sequence) stays in this CPU's "
            f"caches while the {GROUP} query heads of a group walk it, where a "
            f"{CONTEXT // 1024}k context's ({head_bytes(CONTEXT):.0f} MiB) does not.")
    return text + ("; what is left over the key ratio is the per-row work outside the "
                   "key loop (q, the softmax state, out) and timing noise on shared CPUs.")


def window_section(build, quick, lines):
    first = len(lines)
    lines += ["## 7. Attention variants: a sliding window on the CPU", "",
              f"`attention_ragged` with `window = {WINDOW}` against the same op without a "
              f"window, decode (one row per sequence) over {BATCH} sequences of {CONTEXT:,} "
              f"tokens, f16, {HEADS} KV heads x {HEAD_SIZE}, GQA {GROUP}, page {PAGE}, both "
              "lowered with `kvcache-to-cpu` (kvcache.CPUModule) and measured side by side in "
              "one run (bench/window.py). Target (issue 17): the time ratio close to the key "
              f"ratio {WINDOW} / {CONTEXT} = {WINDOW / CONTEXT:.3f}.", ""]
    imported = import_package(build, lines)
    if imported is None:
        return
    np, kvcache, builders, _ = imported
    config = kvcache.CacheConfig("f16", num_heads=HEADS, head_size=HEAD_SIZE,
                                 page_size=PAGE, num_layers=1, q_heads=HEADS * GROUP)
    cpu = kvcache.CPUModule(builders.module(
        builders.attention_ragged(config, "full"),
        builders.attention_ragged(config, "windowed", window=WINDOW)), threads=1)
    rng = np.random.default_rng(0)

    # Correctness first: a small case against the reference.
    small = _Case(np, kvcache, rng, CHECK_CONTEXTS)
    for name in small.out:
        small.run(cpu, name)
    checked = _check(np, kvcache, small, WINDOW)

    case = _Case(np, kvcache, rng, [CONTEXT] * BATCH)
    reps = 3 if quick else 7
    times = {name: [] for name in case.out}
    for _ in range(reps + 1):
        for name in case.out:
            start = time.perf_counter()
            case.run(cpu, name)
            times[name].append(time.perf_counter() - start)
    best = {name: min(t[1:]) for name, t in times.items()}
    median = {name: statistics.median(t[1:]) for name, t in times.items()}
    start = time.perf_counter()
    big = _check(np, kvcache, case, WINDOW, rows=1)
    big_seconds = time.perf_counter() - start
    worst = max(list(checked.values()) + list(big.values()))
    if worst > TOLERANCE:
        raise SystemExit(f"bench/window.py: attention differs from kvcache.reference "
                         f"by {worst:.2e} (> {TOLERANCE:g}): {checked}, {big}")

    ratio = best["windowed"] / best["full"]
    key_ratio = WINDOW / CONTEXT
    lines += [f"| attention | keys per row | CPU ms (one thread), min / median of {reps} | "
              "time ratio (min) | key ratio |", "| --- | --- | --- | --- | --- |",
              f"| no window | {CONTEXT:,} | {best['full'] * 1e3:.1f} / "
              f"{median['full'] * 1e3:.1f} | 1.000 | 1.000 |",
              f"| `window = {WINDOW}` | {WINDOW:,} | {best['windowed'] * 1e3:.1f} / "
              f"{median['windowed'] * 1e3:.1f} | {ratio:.3f} | {key_ratio:.3f} |", "",
              f"Checked against kvcache.reference: both functions on contexts "
              f"{' and '.join(map(str, CHECK_CONTEXTS))} (max |error| "
              f"{checked['full']:.1e} without, {checked['windowed']:.1e} with the window), "
              f"the windowed row of the first {CONTEXT:,}-token sequence "
              f"({big['windowed']:.1e}; the reference took {big_seconds:.0f} s).", "",
              _reading(ratio, key_ratio), ""]
    print("\n".join(lines[first:]), flush=True)


if __name__ == "__main__":
    from section_cli import run_section
    run_section(window_section, __doc__.splitlines()[0])
