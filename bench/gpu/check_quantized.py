"""Runs the fp8 kernels of bench/gpu/quantized.mlir on the GPU and compares
them bit for bit with the numpy codec of kvcache.reference: store_ragged
quantizing f16 rows into E4M3FN and E5M2 caches with token_head scales
(the codes and the scales), gather_ragged dequantizing them back to f16.
The sm_90 PTX uses the chip's cvt fp8x2 instructions, the sm_80 PTX integer
conversions; both run (the sm_80 one JIT-compiled for the device). Needs a
GPU and cupy.

Usage: check_quantized.py PTX_SM90 PTX_SM80 OUT_DIR

`run_checks` takes the kernels as two functions, so that the tests run the
same checks with the CPU lowering of the same ops
(test/python/test_bench_gpu_quantized.py).
"""

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from kvcache import dtypes  # noqa: E402
from kvcache.abi import KernelArgs  # noqa: E402

HEADS, DIM, PAGE, LAYERS = 8, 128, 16, 1
FORMATS = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
CACHE_LENGTHS = [0, 16, 37, 200]
NEW_TOKENS = [5, 16, 1, 40]


def make_case(rng):
    """A paged cache's metadata and the new f16 rows: random rows times
    magnitudes from 2^-20 to 2^12 per head row, and rows with +-0, +-inf,
    NaN, the largest and smallest f16 values planted."""
    batch = len(CACHE_LENGTHS)
    max_pages = 16
    num_pages = 64
    table = np.full((batch, max_pages), num_pages - 1, np.int32)
    free = rng.permutation(num_pages - 1)
    used = 0
    for b in range(batch):
        pages = -(-(CACHE_LENGTHS[b] + NEW_TOKENS[b]) // PAGE)
        table[b, :pages] = free[used:used + pages]
        used += pages
    tokens = sum(NEW_TOKENS)
    magnitudes = 2.0 ** rng.integers(-20, 13, (tokens, HEADS, 1))
    rows = (rng.standard_normal((tokens, HEADS, DIM)) * magnitudes).astype(np.float16)
    rows[0, 0, :6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0]
    rows[1, 1, :] = 0.0                       # amax 0: scale 1
    rows[2, 2, :3] = [np.float16(2.0**-24), -np.float16(2.0**-24), 1.0]
    offsets = np.concatenate([[0], np.cumsum(NEW_TOKENS)]).astype(np.int32)
    return {"table": table, "lengths": np.array(CACHE_LENGTHS, np.int32),
            "rows": rows, "offsets": offsets, "num_pages": num_pages,
            "max_seq": max(NEW_TOKENS), "max_ctx": max(
                c + n for c, n in zip(CACHE_LENGTHS, NEW_TOKENS))}


def expected_store(case, dtype):
    """The K blocks (codes, uint8) and token_head scales of layer 0 after
    store_ragged of the case's rows into zeroed arrays."""
    blocks = np.zeros((case["num_pages"], 2, LAYERS, PAGE, HEADS, DIM), np.uint8)
    scales = np.zeros((case["num_pages"], 2, LAYERS, PAGE, HEADS), np.float32)
    offsets = case["offsets"]
    for b, start in enumerate(CACHE_LENGTHS):
        for i, r in enumerate(range(offsets[b], offsets[b + 1])):
            token = start + i
            page, slot = case["table"][b, token // PAGE], token % PAGE
            for h in range(HEADS):
                values = case["rows"][r, h].astype(np.float32)
                scale = dtypes.dynamic_scale(values, dtype)
                scales[page, 0, 0, slot, h] = scale
                blocks[page, 0, 0, slot, h] = dtypes.quantize(values, dtype, scale)
    return blocks, scales


def expected_gather(case, dtype, blocks, scales):
    """gather_ragged into f16 rows of the first NEW_TOKENS[b] tokens of each
    sequence b (out rows at the row offsets): the codes times their scale in
    f32, rounded to f16."""
    out = np.zeros(case["rows"].shape, np.float16)
    offsets = case["offsets"]
    for b in range(len(CACHE_LENGTHS)):
        for token, r in enumerate(range(offsets[b], offsets[b + 1])):
            page, slot = case["table"][b, token // PAGE], token % PAGE
            with np.errstate(over="ignore", invalid="ignore"):
                values = dtypes.dequantize(blocks[page, 0, 0, slot], dtype,
                                           scales[page, 0, 0, slot][:, None])
                out[r] = values.astype(np.float16)
    return out


def run_checks(store, gather, record, rng):
    """store(dtype, case, blocks, scales) and gather(dtype, case, blocks,
    scales, out) run the kernels on copies of the arrays and return the
    results (blocks, scales), out as numpy arrays."""
    case = make_case(rng)
    for dtype in FORMATS:
        blocks, scales = expected_store(case, dtype)
        got_blocks, got_scales = store(dtype, case, np.zeros_like(blocks),
                                       np.zeros_like(scales))
        bad = int(np.count_nonzero(got_blocks != blocks))
        record(f"{dtype} store_ragged codes", bad == 0, f"{bad} of {blocks.size} differ")
        bad = int(np.count_nonzero(got_scales.view(np.uint32) != scales.view(np.uint32)))
        record(f"{dtype} store_ragged scales", bad == 0, f"{bad} of {scales.size} differ")
        # Every code (NaNs, and E5M2's infinities, included) at scales from
        # 2^-16 to 2^16.
        codes = rng.integers(0, 256, blocks.shape, dtype=np.uint8)
        codes[case["table"][0, 0], 0, 0, 0, 0, :] = np.arange(128)
        codes[case["table"][0, 0], 0, 0, 0, 1, :] = np.arange(128, 256)
        random_scales = (2.0 ** rng.uniform(-16, 16, scales.shape)).astype(np.float32)
        expected = expected_gather(case, dtype, codes, random_scales)
        out = gather(dtype, case, codes, random_scales,
                     np.zeros(case["rows"].shape, np.float16))
        same = (out.view(np.uint16) == expected.view(np.uint16)) | \
            (np.isnan(out) & np.isnan(expected))
        bad = int(np.count_nonzero(~same))
        record(f"{dtype} gather_ragged to f16", bad == 0, f"{bad} of {out.size} differ")


def gpu_kernels(cp, ptx_path):
    module = cp.RawModule(path=ptx_path)
    blocks_per_grid = lambda rows: (max(min(-(-rows // 16), 65535), 1),)

    def launch(name, case, blocks, scales, rows):
        # KernelArgs keeps addresses only: every device array stays named
        # here until the kernel is done.
        d_blocks, d_scales, d_rows = cp.asarray(blocks), cp.asarray(scales), cp.asarray(rows)
        d_lengths, d_table = cp.asarray(case["lengths"]), cp.asarray(case["table"])
        d_offsets = cp.asarray(case["offsets"])
        args = KernelArgs().cache(
            d_blocks, d_lengths, d_table, case["max_seq"], case["max_ctx"], kv=0, layer=0,
            scales=d_scales).memref(d_rows).memref(d_offsets)
        module.get_function(name)(blocks_per_grid(len(rows)), (256,), args.values())
        cp.cuda.runtime.deviceSynchronize()
        return cp.asnumpy(d_blocks), cp.asnumpy(d_scales), cp.asnumpy(d_rows)

    def store(dtype, case, blocks, scales):
        blocks, scales, _ = launch(f"{FORMATS[dtype]}_store_ragged", case, blocks, scales,
                                   case["rows"])
        return blocks, scales

    def gather(dtype, case, blocks, scales, out):
        return launch(f"{FORMATS[dtype]}_gather_ragged", case, blocks, scales, out)[2]

    return store, gather


def main(ptx_sm90, ptx_sm80, out_dir):
    import cupy as cp

    checks = []

    for chip, path in (("sm_90", ptx_sm90), ("sm_80", ptx_sm80)):
        def record(name, ok, detail=""):
            checks.append({"check": f"{chip} {name}", "ok": bool(ok), "detail": detail})
            print(("PASS " if ok else "FAIL ") + f"{chip} {name}" +
                  (f" ({detail})" if detail else ""), flush=True)
        store, gather = gpu_kernels(cp, path)
        run_checks(store, gather, record, np.random.default_rng(2026))
    with open(os.path.join(out_dir, "check_quantized.json"), "w") as f:
        json.dump({"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                   "checks": checks}, f, indent=1)
    failed = sum(not c["ok"] for c in checks)
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
