"""bench/gpu/check_quantized.py, the fp8 part of the prepared GPU check, run
here with the CPU lowering of the same ops in place of the GPU kernels: its
data, its expected codes and values and its comparisons are checked before
a GPU ever runs them, and a wrong kernel makes it report failures."""

import importlib.util
import os
import sys

import numpy as np

import kvcache

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "gpu", "check_quantized.py")


def load_script():
    # The script puts the source tree's python/ first on sys.path (the GPU
    # machine has no build): undone here, so that the tests after these
    # still import the built package.
    path = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location("check_quantized", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
    return module


def cpu_kernels(script, corrupt=False):
    """store and gather as check_quantized.run_checks calls them, through
    kvcache.CPUModule over a collection of the same arrays."""
    def module(dtype, op, case, rows_type):
        pages = case["num_pages"]
        heads, dim, page = script.HEADS, script.DIM, script.PAGE
        ctype = (f"!kvcache.paged_collection<{dtype}, num_heads = {heads}, "
                 f"head_size = {dim}, page_size = {page}, scales = token_head>")
        cache = ctype.replace("paged_collection", "paged_cache")
        blocks = f"memref<{pages}x2x1x{page}x{heads}x{dim}x{dtype}>"
        scales = f"memref<{pages}x2x1x{page}x{heads}xf32>"
        return kvcache.CPUModule(
            f"func.func @run(%blocks: {blocks}, %lengths: memref<?xi32>, "
            f"%table: memref<?x?xi32>, %scales: {scales}, %rows: {rows_type}, "
            f"%offsets: memref<?xi32>) {{\n"
            f"  %ms = arith.constant {case['max_seq']} : i32\n"
            f"  %mc = arith.constant {case['max_ctx']} : i32\n"
            f"  %c = kvcache.paged_collection %blocks, %lengths, %table, %ms, %mc, %scales"
            f" : {blocks}, memref<?xi32>, memref<?x?xi32>, {scales} -> {ctype}\n"
            f"  %c0 = arith.constant 0 : index\n"
            f"  %k = kvcache.get_key_cache %c[%c0] : {ctype}\n"
            f"  kvcache.{op} %k, %rows, %offsets : {cache}, {rows_type}, memref<?xi32>\n"
            f"  return\n}}\n", threads=1)

    rows_type = f"memref<?x{script.HEADS}x{script.DIM}xf16>"

    def store(dtype, case, blocks, scales):
        run = module(dtype, "store_ragged", case, rows_type)
        storage = np.dtype(kvcache.reference.ELEMENT_TYPES[dtype])
        codes = blocks.view(storage)
        run.run(codes, case["lengths"], case["table"], scales, case["rows"], case["offsets"])
        if corrupt:
            blocks[tuple(axis[:1] for axis in np.nonzero(blocks))] ^= 1
        return blocks, scales

    def gather(dtype, case, blocks, scales, out):
        run = module(dtype, "gather_ragged", case, rows_type)
        storage = np.dtype(kvcache.reference.ELEMENT_TYPES[dtype])
        run.run(blocks.view(storage), case["lengths"], case["table"], scales, out,
                case["offsets"])
        return out

    return store, gather


def checks(corrupt):
    script = load_script()
    results = []
    store, gather = cpu_kernels(script, corrupt)
    script.run_checks(store, gather, lambda name, ok, detail="": results.append((name, ok)),
                      np.random.default_rng(2026))
    return results


def test_check_quantized_passes_with_correct_kernels():
    results = checks(corrupt=False)
    assert len(results) == 6
    assert all(ok for _, ok in results), results


def test_check_quantized_reports_a_wrong_code():
    results = dict(checks(corrupt=True))
    assert not results["f8E4M3FN store_ragged codes"]
    assert not results["f8E5M2 store_ragged codes"]
    assert results["f8E4M3FN gather_ragged to f16"]


def test_gpu_launches_match_the_ptx(tmp_path):
    # The launcher packs, for each kernel, as many parameters as its PTX
    # entry declares (kvcache-compile of bench/gpu/quantized.mlir), and
    # launches 256 threads (.maxntid). A stand-in for cupy records the
    # launches: the kernels do nothing, so every check fails.
    import re
    import subprocess
    import types

    from kvcache_tools import find_tool

    ptx = tmp_path / "quantized.ptx"
    subprocess.run([find_tool("kvcache-compile"), os.path.join(os.path.dirname(SCRIPT), "quantized.mlir"),
                    "-o", str(ptx)], check=True)
    text = ptx.read_text()
    declared = {name: body.count(".param")
                for name, body in re.findall(r"\.entry (\w+)\((.*?)\n\)", text, re.S)}
    assert set(re.findall(r"\.maxntid (\d+)", text)) == {"256"}
    launches = []

    class Module:
        def __init__(self, path):
            pass

        def get_function(self, name):
            return lambda grid, block, args: launches.append((name, block, len(args)))

    runtime = types.SimpleNamespace(deviceSynchronize=lambda: None)
    cp = types.SimpleNamespace(RawModule=Module, asarray=np.array, asnumpy=np.asarray,
                               cuda=types.SimpleNamespace(runtime=runtime))
    script = load_script()
    results = []
    script.run_checks(*script.gpu_kernels(cp, str(ptx)),
                      lambda name, ok, detail="": results.append(ok), np.random.default_rng(0))
    assert sorted(name for name, _, _ in launches) == sorted(declared)
    for name, block, count in launches:
        assert block == (256,) and count == declared[name], (name, count, declared[name])
    assert not any(results)
