"""Section 10 of the benchmark report: the cost of the argument checks that
kvcache.CPUModule runs before every call (the compiler's check routine
`kvcache_check_<function>`, docs/Contract.md 5).

A decode step (builders.decode_step: store K and V, then attention) of a
batch of 64 sequences of about 2048 tokens (2047 cached and the step's
decode token), bf16, 32 query heads over 8 KV heads x 128, page 16 (pages
shuffled over the blocks), lowered with `kvcache-to-cpu` (unchecked) and
called on the same flattened arguments with and without the pre-call check
(`JitModule.invoke(..., check=False)`), alternating, in one run; min and
median. The check routine alone is timed too: it reads the offsets, the
cache lengths and the lookup-table entries of the pages the step touches,
O(batch + pages). Target (issue 33): the step with the check within 2% of
the step without.

The step is checked against kvcache.reference on one sequence first; a
difference over the bf16 tolerance stops the script.
"""

import statistics
import time

from section_cli import import_package

Q_HEADS, HEADS, HEAD_SIZE, PAGE = 32, 8, 128, 16
BATCH, CONTEXT = 64, 2048
TOLERANCE = 1.6e-2  # bf16 outputs in [-1, 1]


def _cache(np, kvcache, rng):
    """A one-layer bf16 PagedCache: each of BATCH sequences holds CONTEXT - 1
    tokens and room for the step's one, random values, shuffled pages."""
    pages = -(-CONTEXT // PAGE)
    num_pages = BATCH * pages + 1
    blocks = np.empty((num_pages, 2, 1, PAGE, HEADS, HEAD_SIZE), np.uint16)
    for first in range(0, num_pages, 256):        # f32 temporaries of 256 pages
        chunk = blocks[first:first + 256]
        chunk[...] = kvcache.dtypes.from_float32(
            rng.uniform(-1, 1, chunk.shape).astype(np.float32), "bf16")
    ids = rng.permutation(num_pages).astype(np.int32)
    table = ids[:BATCH * pages].reshape(BATCH, pages)
    return kvcache.caches.PagedCache(blocks, [CONTEXT - 1] * BATCH, table, 1,
                                     CONTEXT, "bf16")


def _arguments(np, kvcache, rng, cache):
    rows = lambda heads: kvcache.testing.random_rows(rng, BATCH, heads,
                                                     HEAD_SIZE, "bf16")
    q, k, v = rows(Q_HEADS), rows(HEADS), rows(HEADS)
    offsets = kvcache.testing.row_offsets([1] * BATCH)
    return [*cache.arguments(), 0, q, k, v, offsets, np.zeros_like(q)]


def _check_one_sequence(np, kvcache, cache, arguments, out):
    """Max |error| of the first sequence's out against the reference."""
    one = kvcache.caches.PagedCache(cache.blocks, cache.cache_lengths[:1],
                                    cache.lookup_table[:1], 1, CONTEXT, "bf16")
    q, offsets = arguments[6][:1], arguments[9][:2]
    expected = kvcache.reference.attention_ragged(
        q, one.key_cache(0), one.value_cache(0), offsets, np.zeros_like(q),
        HEAD_SIZE ** -0.5)
    to_f32 = kvcache.dtypes.to_float32
    return float(np.abs(to_f32(out[:1], "bf16") - to_f32(expected, "bf16")).max())


def _time(call, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def check_cost_section(build, quick, lines):
    first = len(lines)
    lines += ["## 10. Argument checks: their cost", "",
              f"A decode step (`builders.decode_step`: store K and V, attention) of "
              f"{BATCH} sequences of {CONTEXT} tokens, bf16, {Q_HEADS} query heads over "
              f"{HEADS} KV heads x {HEAD_SIZE}, page {PAGE}, through kvcache.CPUModule "
              "(every core), called on the same arguments with and without the check "
              "routine that runs before every call (`kvcache_check_decode_step`: "
              "offsets, row counts, layer, cache lengths against the capacity, the "
              "pages the step touches), alternating in one run (bench/check_cost.py). "
              "Target (issue 33): with the check within 2% of without.", ""]
    imported = import_package(build, lines)
    if imported is None:
        return
    np, kvcache, builders, _ = imported
    config = kvcache.CacheConfig("bf16", num_heads=HEADS, head_size=HEAD_SIZE,
                                 page_size=PAGE, num_layers=1, q_heads=Q_HEADS)
    cpu = kvcache.CPUModule(builders.decode_step(config))
    if "decode_step" not in cpu.checks:
        lines += ["Not measured: the compiled module has no check routine.", ""]
        return
    rng = np.random.default_rng(0)
    cache = _cache(np, kvcache, rng)
    arguments = _arguments(np, kvcache, rng, cache)
    flat = cpu._values("decode_step", arguments)
    engine = cpu._engine

    # Correctness first (the step writes the same K/V row and out each time).
    engine.invoke("decode_step", flat)
    error = _check_one_sequence(np, kvcache, cache, arguments, arguments[-1])
    if error > TOLERANCE:
        raise SystemExit(f"bench/check_cost.py: the decode step differs from "
                         f"kvcache.reference by {error:.2e} (> {TOLERANCE:g})")

    reps = 5 if quick else 15
    times = {True: [], False: []}
    for _ in range(reps):
        for check in (True, False):
            times[check] += _time(lambda: engine.invoke("decode_step", flat,
                                                        check=check), 1)
    message = np.zeros(1024, np.int8)
    check_flat = flat + kvcache.abi.memref_params(message)
    assert engine.invoke("kvcache_check_decode_step", check_flat, check=False) == 0
    routine = _time(lambda: engine.invoke("kvcache_check_decode_step",
                                          check_flat, check=False), 1000)
    best = {check: min(t) for check, t in times.items()}
    median = {check: statistics.median(t) for check, t in times.items()}
    ratio = median[True] / median[False]
    lines += [f"| call | ms, min / median of {reps} | median / without |",
              "| --- | --- | --- |",
              f"| decode step, no check | {best[False] * 1e3:.1f} / "
              f"{median[False] * 1e3:.1f} | 1.000 |",
              f"| decode step, check first (the default) | {best[True] * 1e3:.1f} / "
              f"{median[True] * 1e3:.1f} | {ratio:.3f} |",
              f"| the check routine alone (1000 calls) | "
              f"{min(routine) * 1e3:.3f} / {statistics.median(routine) * 1e3:.3f} | "
              f"{statistics.median(routine) / median[False]:.5f} |", "",
              f"Checked against kvcache.reference on the first sequence (max |error| "
              f"{error:.1e}). The check routine alone is "
              f"{statistics.median(routine) * 1e6:.0f} us a call (Python's call "
              "overhead included), "
              f"{statistics.median(routine) / median[False]:.3%} of the step: the "
              "difference between the two step rows is run-to-run noise of these "
              "shared CPUs.", ""]
    print("\n".join(lines[first:]), flush=True)


if __name__ == "__main__":
    from section_cli import run_section
    run_section(check_cost_section, __doc__.splitlines()[0])
