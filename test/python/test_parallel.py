"""CPUModule's threads and kvcache-to-cpu{parallel=true}: the kernel ops'
outer loops on several threads give the serial code's results bit for bit
(each output element is computed by one thread, in the serial order), for
every kernel op, on plain and quantized caches, with batches that leave
threads without work; the threads= and KVCACHE_CPU_THREADS checks; the
lowering is serial (no OpenMP) exactly when one thread is asked for. The
whole suite's CPU tests also run with KVCACHE_CPU_THREADS=1
(the `serial` tests of lit.local.cfg). Parallel code compiled without the
OpenMP runtime is an error that names the library to add."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import (CacheConfig, builders, dtypes, reference,  # noqa: E402
                     testing)
from kvcache.cpu import OPENMP_RUNTIME, default_cpu_threads  # noqa: E402

pytestmark = pytest.mark.skipif(OPENMP_RUNTIME is None,
                                reason="libomp-22-dev is not installed")

THREADS = [1, 2, 3]
CONFIGS = {
    "f16-gqa4-page16": CacheConfig("f16", 2, 64, 16, num_layers=2, q_heads=8),
    "bf16-mha-page1": CacheConfig("bf16", 3, 32, 1, num_layers=1),
    "f32-continuous": CacheConfig("f32", 2, 16, kind="continuous", num_layers=2,
                                  q_heads=4),
    "fp8-token-head": CacheConfig("f8E4M3FN", 2, 32, 4, num_layers=2, q_heads=8,
                                  scales="token_head"),
    "i8-block8": CacheConfig("i8", 2, 16, 8, num_layers=1, q_heads=2,
                             scales="block<8>"),
}


def run_kernels(config, module, lengths, new):
    """Every function of `module` (builders.kernels(config)), in turn, on
    one random cache: (the arrays each call wrote)."""
    rng = np.random.default_rng(7)
    cache = testing.random_cache(config, lengths, new, rng, num_layers=2,
                                 spare_pages=3)
    layer = cache.num_layers - 1
    offsets = testing.row_offsets(new)
    element = config.rows_element
    heads, size = config.num_heads, config.head_size
    results = []
    for name in ("store_keys", "store_values"):
        rows = dtypes.from_float32(
            rng.uniform(-2, 2, (sum(new), heads, size)).astype(np.float32), element)
        getattr(module, name)(*cache.arguments(), layer, rows, offsets)
        results += [cache.blocks.copy()] + (
            [cache.scales.copy()] if config.scales else [])
    totals = [c + n for c, n in zip(lengths, new)]
    out = dtypes.from_float32(np.zeros((sum(totals), heads, size), np.float32),
                              element)
    module.gather_values(*cache.arguments(), layer, out,
                         testing.row_offsets(totals))
    results.append(out)
    q = dtypes.from_float32(
        rng.uniform(-1, 1, (sum(new), config.query_heads, size)).astype(np.float32),
        element)
    for extra in ((), (np.zeros(sum(new) * config.query_heads * 18 * size,
                                np.float32),)):
        out = np.zeros_like(q)
        name = "attention_split" if extra else "attention"
        getattr(module, name)(*cache.arguments(), layer, q, offsets, out, *extra)
        results.append(out)
    if config.has_pages:
        used = sorted(set(cache.lookup_table.ravel().tolist()))
        spare = sorted(set(range(cache.num_pages)) - set(used))
        pairs = np.array(list(zip(spare, used)), np.int32).reshape(-1, 2)
        module.copy_pages(*cache.arguments(), pairs)
        results.append(cache.blocks.copy())
    return results


@pytest.mark.parametrize("name", CONFIGS)
def test_kernel_ops_do_not_depend_on_threads(name):
    # Batches of 1, 3 and 6 sequences (some with no new rows): fewer tasks
    # than threads, uneven splits.
    config = CONFIGS[name]
    modules = {threads: kvcache.CPUModule(builders.kernels(config), threads=threads,
                                          checked=threads == 3)
               for threads in THREADS}
    for lengths, new in (([9], [3]), ([5, 0, 17], [1, 4, 0]),
                         ([3, 8, 1, 0, 12, 6], [2, 1, 1, 3, 0, 1])):
        if not config.has_pages:
            lengths = [min(n, 10) for n in lengths]
        serial = run_kernels(config, modules[1], lengths, new)
        for threads in THREADS[1:]:
            for got, expected in zip(run_kernels(config, modules[threads], lengths, new),
                                     serial):
                np.testing.assert_array_equal(got, expected, err_msg=f"{threads} threads")


def test_serial_results_match_the_reference():
    # The serial runs compared above are themselves right (test_kernels.py
    # covers every op on both; here attention on the GQA config).
    config = CONFIGS["f16-gqa4-page16"]
    rng = np.random.default_rng(3)
    cache = testing.random_cache(config, [5, 0, 17], [1, 4, 2], rng)
    offsets = testing.row_offsets([1, 4, 2])
    q = testing.random_rows(rng, 7, 8, 64, "f16")
    expected = reference.attention_ragged(q, cache.key_cache(1), cache.value_cache(1),
                                          offsets, np.zeros_like(q), config.default_scale)
    for threads in THREADS:
        out = np.zeros_like(q)
        kvcache.CPUModule(builders.attention_ragged(config, "attention"),
                          threads=threads).attention(*cache.arguments(), 1, q, offsets, out)
        error = np.abs(dtypes.to_float32(out, "f16") -
                       dtypes.to_float32(expected, "f16")).max()
        assert error <= 2e-3, (threads, error)


def test_attention_clauses_and_merge_states_do_not_depend_on_threads():
    config = CacheConfig("f32", 2, 16, 4, num_layers=2, q_heads=8)
    rng = np.random.default_rng(11)
    new = [3, 1, 0, 5]
    cache = testing.random_cache(config, [7, 30, 2, 0], new, rng)
    offsets = testing.row_offsets(new)
    q = testing.random_rows(rng, 9, 8, 16, "f32")
    sinks = rng.uniform(-2, 2, 8).astype(np.float32)
    slopes = rng.uniform(0, 0.5, 8).astype(np.float32)
    attention = builders.attention_ragged(config, "attention", window=6, softcap=5.0,
                                          sinks=True, alibi=True, lse=True)
    merge = builders.merge_states(config)
    outs = {}
    for threads in THREADS:
        module = kvcache.CPUModule(builders.module(attention, merge), threads=threads)
        out, lse = np.zeros_like(q), np.zeros((9, 8), np.float32)
        module.attention(*cache.arguments(), 1, q, offsets, out, sinks, slopes, lse)
        merged, merged_lse = np.zeros_like(q), np.zeros_like(lse)
        module.merge_states(out, lse, q, lse - 1, merged, merged_lse)
        outs[threads] = (out, lse, merged, merged_lse)
    for threads in THREADS[1:]:
        for got, expected in zip(outs[threads], outs[1]):
            np.testing.assert_array_equal(got, expected)


def test_threads_choose_the_lowering():
    ir = builders.gather_ragged(CONFIGS["f16-gqa4-page16"])
    assert "omp." not in str(kvcache.CPUModule(ir, threads=1).lowered)
    lowered = str(kvcache.CPUModule(ir, threads=3).lowered)
    assert "omp.parallel num_threads" in lowered and "omp.wsloop" in lowered
    default = kvcache.CPUModule(ir)
    if default_cpu_threads() is None:
        assert default.threads is None
        assert "omp.parallel {" in str(default.lowered)
    lowered = str(kvcache.lower_to_cpu(ir, parallel=True, threads=2))
    assert "omp.parallel num_threads" in lowered
    assert "omp." not in str(kvcache.lower_to_cpu(ir))


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_bad_threads_are_rejected(threads):
    ir = builders.gather_ragged(CONFIGS["f16-gqa4-page16"])
    with pytest.raises(ValueError, match="threads must be None or an int >= 1"):
        kvcache.CPUModule(ir, threads=threads)


def test_kvcache_cpu_threads_sets_the_default(monkeypatch):
    ir = builders.gather_ragged(CONFIGS["f16-gqa4-page16"])
    monkeypatch.setenv("KVCACHE_CPU_THREADS", "1")
    module = kvcache.CPUModule(ir)
    assert module.threads == 1 and "omp." not in str(module.lowered)
    monkeypatch.setenv("KVCACHE_CPU_THREADS", "2")
    assert kvcache.CPUModule(ir).threads == 2
    assert kvcache.CPUModule(ir, threads=1).threads == 1   # an argument wins
    for bad in ("0", "two"):
        monkeypatch.setenv("KVCACHE_CPU_THREADS", bad)
        with pytest.raises(ValueError, match="KVCACHE_CPU_THREADS must be an integer >= 1"):
            kvcache.CPUModule(ir)


def test_lower_to_cpu_rejects_bad_threads():
    ir = builders.gather_ragged(CONFIGS["f16-gqa4-page16"])
    with pytest.raises(ValueError, match="threads must be an int >= 0"):
        kvcache.lower_to_cpu(ir, parallel=True, threads=-2)


# Parallel code compiled with shared_libs that leave out the OpenMP runtime,
# then with it. In a fresh interpreter: a process that has loaded libomp
# (any parallel CPUModule) keeps it.
MISSING_RUNTIME = textwrap.dedent("""\
    import ctypes
    import kvcache
    from kvcache import builders, compiler, cpu
    if hasattr(ctypes.CDLL(None), "__kmpc_fork_call"):
        raise SystemExit("an OpenMP runtime is loaded already")
    config = kvcache.CacheConfig("f16", 2, 8, 4)
    source = compiler.parse(builders.store_ragged(config))
    lowered = compiler.lower_to_cpu(source, False, parallel=True, threads=2)
    try:
        cpu.CompiledModule(source, lowered, 2, [])
    except kvcache.CompileError as error:
        print(error)
    module = cpu.CompiledModule(source, lowered, 2, [cpu.OPENMP_RUNTIME])
    print("with the runtime:", sorted(module.checks))
    """)


def test_missing_openmp_runtime_names_the_library():
    run = subprocess.run([sys.executable, "-c", MISSING_RUNTIME],
                         capture_output=True, text=True)
    if "loaded already" in run.stderr:
        pytest.skip(run.stderr.strip())
    assert run.returncode == 0, run.stderr
    assert "calls the LLVM OpenMP runtime (__kmpc_fork_call" in run.stdout
    assert ("add /usr/lib/llvm-22/lib/libomp.so to the shared libraries"
            in run.stdout)
    assert run.stdout.rstrip().endswith("with the runtime: ['store_ragged']")
