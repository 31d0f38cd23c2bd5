#!/usr/bin/env python3
"""CPU bandwidth of the kvcache kernel ops, as a ratio to memcpy.

Each op is lowered with `kvcache-opt -kvcache-to-cpu` and run by `mlir-runner`
in the same process as a memcpy (`memref.copy`, which lowers to
llvm.memcpy) of the same number of bytes; both are timed with `rtclock` over
several repetitions and the best time of each is kept. The figure is
bytes moved / time, as a ratio to memcpy: these shared CPUs are noisy, so only
ratios from one run are meaningful.

Usage: bench/cpu/run.py [--build build] [--out bench/cpu/results.md] [--quick]
                        [--parallel]
(--parallel: the ops lowered with kvcache-to-cpu{parallel=true}, on every
core; the memcpy stays one thread's llvm.memcpy.)
"""

import argparse
import os
import platform
import re
import subprocess
import sys
import textwrap

HEADS, DIM, PAGE, ELT = 8, 128, 16, "f16"
ELT_BYTES = 2
ROW = HEADS * DIM

COLLECTION = (f"!kvcache.paged_collection<{ELT}, num_heads = {HEADS}, "
              f"head_size = {DIM}, page_size = {PAGE}>")
CACHE = (f"!kvcache.paged_cache<{ELT}, num_heads = {HEADS}, "
         f"head_size = {DIM}, page_size = {PAGE}>")


def program(op, tokens, batch, pairs, layers, reps, storage=None):
    """An MLIR program timing `op` and a memcpy of the same bytes. With
    `storage` (f8E4M3FN, f8E5M2, i8) the cache holds codes with token_head
    scales and the f16 rows are quantized (store_ragged) or dequantized
    (gather_ragged); the memcpy still moves the f16 rows' bytes."""
    pages_per_seq = -(-tokens // batch // PAGE) + 1
    num_pages = batch * pages_per_seq + 2 * pairs + 1
    rows_type = f"memref<{tokens}x{HEADS}x{DIM}x{ELT}>"
    cache_elt = storage or ELT
    scales = ", scales = token_head" if storage else ""
    collection = (f"!kvcache.paged_collection<{cache_elt}, num_heads = {HEADS}, "
                  f"head_size = {DIM}, page_size = {PAGE}{scales}>")
    cache = collection.replace("paged_collection", "paged_cache")
    blocks_type = f"memref<{num_pages}x2x{layers}x{PAGE}x{HEADS}x{DIM}x{cache_elt}>"
    scales_type = f"memref<{num_pages}x2x{layers}x{PAGE}x{HEADS}xf32>"
    if storage:
        scales_setup = (f"%scales = memref.alloc() {{alignment = 64 : i64}} : {scales_type}\n"
                        f"      %fone = arith.constant 1.0 : f32\n"
                        f"      linalg.fill ins(%fone : f32) outs(%scales : {scales_type})\n"
                        f"      %code = arith.constant 1.0 : {cache_elt}")
        scales_operand, scales_operand_type = ", %scales", f", {scales_type}"
    else:
        scales_setup, scales_operand, scales_operand_type = "%code = arith.constant 1.0 : f16", "", ""
    if op == "copy_pages":
        copy_elems = pairs * 2 * layers * PAGE * ROW
    else:
        copy_elems = tokens * ROW
    per_seq = tokens // batch
    body = {
        "store_ragged": f"kvcache.store_ragged %k, %rows, %offsets : {cache}, {rows_type}, memref<?xi32>",
        "gather_ragged": f"kvcache.gather_ragged %k, %rows, %offsets : {cache}, {rows_type}, memref<?xi32>",
        "copy_pages": f"kvcache.copy_pages %c, %pairs : {collection}, memref<?x2xi32>",
    }[op]
    return textwrap.dedent(f"""
    func.func private @rtclock() -> f64
    func.func @time_op(%c: {collection}, %k: {cache}, %rows: {rows_type},
                       %offsets: memref<?xi32>, %pairs: memref<?x2xi32>) -> f64 {{
      %t0 = func.call @rtclock() : () -> f64
      {body}
      %t1 = func.call @rtclock() : () -> f64
      %dt = arith.subf %t1, %t0 : f64
      return %dt : f64
    }}
    func.func @time_memcpy(%src: memref<{copy_elems}x{ELT}>, %dst: memref<{copy_elems}x{ELT}>) -> f64 {{
      %t0 = func.call @rtclock() : () -> f64
      memref.copy %src, %dst : memref<{copy_elems}x{ELT}> to memref<{copy_elems}x{ELT}>
      %t1 = func.call @rtclock() : () -> f64
      %dt = arith.subf %t1, %t0 : f64
      return %dt : f64
    }}
    func.func @main() {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %reps = arith.constant {reps} : index
      %one = arith.constant 1.0 : {ELT}
      %blocks = memref.alloc() {{alignment = 64 : i64}} : {blocks_type}
      {scales_setup}
      linalg.fill ins(%code : {cache_elt}) outs(%blocks : {blocks_type})
      %rows = memref.alloc() {{alignment = 64 : i64}} : {rows_type}
      linalg.fill ins(%one : {ELT}) outs(%rows : {rows_type})
      %src = memref.alloc() {{alignment = 64 : i64}} : memref<{copy_elems}x{ELT}>
      %dst = memref.alloc() {{alignment = 64 : i64}} : memref<{copy_elems}x{ELT}>
      linalg.fill ins(%one : {ELT}) outs(%src : memref<{copy_elems}x{ELT}>)
      linalg.fill ins(%one : {ELT}) outs(%dst : memref<{copy_elems}x{ELT}>)
      %batch = arith.constant {batch} : index
      %batch1 = arith.constant {batch + 1} : index
      %pps = arith.constant {pages_per_seq} : index
      %lengths = memref.alloc(%batch) : memref<?xi32>
      %table = memref.alloc(%batch, %pps) : memref<?x?xi32>
      %offsets = memref.alloc(%batch1) : memref<?xi32>
      %per_seq = arith.constant {per_seq} : index
      scf.for %b = %c0 to %batch step %c1 {{
        %zero = arith.constant 0 : i32
        memref.store %zero, %lengths[%b] : memref<?xi32>
        %start = arith.muli %b, %per_seq : index
        %start32 = arith.index_cast %start : index to i32
        memref.store %start32, %offsets[%b] : memref<?xi32>
        scf.for %j = %c0 to %pps step %c1 {{
          %p = arith.muli %b, %pps : index
          %q = arith.addi %p, %j : index
          %q32 = arith.index_cast %q : index to i32
          memref.store %q32, %table[%b, %j] : memref<?x?xi32>
        }}
      }}
      %total = arith.constant {tokens} : i32
      memref.store %total, %offsets[%batch] : memref<?xi32>
      %npairs = arith.constant {pairs} : index
      %pairs = memref.alloc(%npairs) : memref<?x2xi32>
      %first_free = arith.muli %batch, %pps : index
      scf.for %i = %c0 to %npairs step %c1 {{
        %s = arith.addi %first_free, %i : index
        %d0 = arith.addi %s, %npairs : index
        %s32 = arith.index_cast %s : index to i32
        %d32 = arith.index_cast %d0 : index to i32
        memref.store %s32, %pairs[%i, %c0] : memref<?x2xi32>
        memref.store %d32, %pairs[%i, %c1] : memref<?x2xi32>
      }}
      %ms = arith.constant {per_seq} : i32
      %mc = arith.constant {per_seq} : i32
      %c = kvcache.paged_collection %blocks, %lengths, %table, %ms, %mc{scales_operand}
          : {blocks_type}, memref<?xi32>, memref<?x?xi32>{scales_operand_type} -> {collection}
      %k = kvcache.get_key_cache %c[%c0] : {collection}
      scf.for %r = %c0 to %reps step %c1 {{
        %a = func.call @time_op(%c, %k, %rows, %offsets, %pairs)
            : ({collection}, {cache}, {rows_type}, memref<?xi32>, memref<?x2xi32>) -> f64
        %m = func.call @time_memcpy(%src, %dst) : (memref<{copy_elems}x{ELT}>, memref<{copy_elems}x{ELT}>) -> f64
        vector.print str "TIME "
        vector.print %a : f64
        vector.print str "MEMCPY "
        vector.print %m : f64
      }}
      return
    }}
    """), copy_elems * ELT_BYTES * 2  # bytes read + written


def run_case(build, op, tokens, batch, pairs, layers, reps, storage=None, parallel=False):
    source, moved = program(op, tokens, batch, pairs, layers, reps, storage)
    pipeline = "-kvcache-to-cpu=parallel=true" if parallel else "-kvcache-to-cpu"
    lowered = subprocess.run(
        [os.path.join(build, "bin", "kvcache-opt"), pipeline, "-"],
        input=source, capture_output=True, text=True, check=True).stdout
    libs = "/usr/lib/llvm-22/lib"
    shared = f"{libs}/libmlir_c_runner_utils.so,{libs}/libmlir_runner_utils.so"
    if parallel:
        shared += f",{libs}/libomp.so"
    out = subprocess.run(
        ["/usr/lib/llvm-22/bin/mlir-runner", "-e", "main",
         "-entry-point-result=void", "-O3", f"-shared-libs={shared}"],
        input=lowered, capture_output=True, text=True, check=True).stdout
    op_times = [float(x) for x in re.findall(r"TIME\s*([0-9.e+-]+)", out)]
    copy_times = [float(x) for x in re.findall(r"MEMCPY\s*([0-9.e+-]+)", out)]
    # The first repetition warms caches and page tables: drop it.
    best_op, best_copy = min(op_times[1:]), min(copy_times[1:])
    median = lambda xs: sorted(xs)[len(xs) // 2]
    return {
        "bytes": moved, "op_s": best_op, "copy_s": best_copy,
        "op_median_s": median(op_times[1:]), "copy_median_s": median(copy_times[1:]),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "..", "build"))
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results.md"))
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument("--parallel", action="store_true",
                        help="lower with kvcache-to-cpu{parallel=true}: the ops on every core "
                             "(OpenMP), the memcpy still one llvm.memcpy")
    args = parser.parse_args()
    reps = 3 if args.quick else 7
    cases = [
        ("store_ragged", "64 rows (decode, 1 per sequence)", dict(tokens=64, batch=64, pairs=1, layers=1)),
        ("store_ragged", "4096 rows (prefill, 64 sequences)", dict(tokens=4096, batch=64, pairs=1, layers=1)),
        ("gather_ragged", "4096 rows", dict(tokens=4096, batch=64, pairs=1, layers=1)),
        ("gather_ragged", "131072 rows (256 MiB context)", dict(tokens=131072, batch=64, pairs=1, layers=1)),
        ("copy_pages", "64 pairs x 4 layers", dict(tokens=64, batch=64, pairs=64, layers=4)),
        ("copy_pages", "512 pairs x 4 layers (64 MiB)", dict(tokens=64, batch=64, pairs=512, layers=4)),
        ("store_ragged", "4096 f16 rows -> fp8 token_head",
         dict(tokens=4096, batch=64, pairs=1, layers=1, storage="f8E4M3FN")),
        ("gather_ragged", "4096 fp8 token_head -> f16 rows",
         dict(tokens=4096, batch=64, pairs=1, layers=1, storage="f8E4M3FN")),
    ]
    if args.quick:
        cases = [c for c in cases if "256 MiB" not in c[1] and "512 pairs" not in c[1]]
    lines = [
        "# CPU kernel-op bandwidth, as a ratio to memcpy",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}. "
        f"Cache: f16, {HEADS} heads x {DIM}, page size {PAGE}. Command: `{' '.join(sys.argv)}`.",
        f"Each figure: best of {reps - 1} timed repetitions (first dropped); "
        "memcpy is `memref.copy` of the same bytes in the same process, timed alternately." +
        (" The ops lowered with `kvcache-to-cpu{parallel=true}` (every core); the memcpy is one "
         "thread's." if args.parallel else ""),
        "",
        "| op | case | MiB moved | op GB/s (best / median) | memcpy GB/s (best / median) | ratio (best) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for op, label, shape in cases:
        r = run_case(args.build, op, reps=reps, parallel=args.parallel,
                     **shape)
        gbs = lambda s: r["bytes"] / s / 1e9
        lines.append(
            f"| {op} | {label} | {r['bytes'] / 2**20:.1f} | "
            f"{gbs(r['op_s']):.1f} / {gbs(r['op_median_s']):.1f} | "
            f"{gbs(r['copy_s']):.1f} / {gbs(r['copy_median_s']):.1f} | "
            f"{r['copy_s'] / r['op_s']:.2f} |")
        print(lines[-1], flush=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"-- wrote {args.out}")


if __name__ == "__main__":
    main()
