#!/usr/bin/env python3
"""Page transfer between two processes against one plain MPI message.

Builds one MLIR program that both ranks of `mpirun -np 2` run: rank 0 sends
64 MiB of KV pages with kvcache.send_pages, rank 1 receives them with
kvcache.recv_pages into other page ids, and, in the same run, alternately,
rank 0 sends one contiguous 64 MiB buffer with a plain mpi.send (MPI_Send)
that rank 1 receives with mpi.recv (MPI_Recv). Rank 1 times each transfer
from the moment it tells rank 0 to start until its receive returns
(`rtclock`). Three layouts of the sender's pages: all consecutive, in runs
of 8 and, the worst case, no two consecutive; the receiver's destination
ids are consecutive. Pages of 256 KiB by default (f16, 4 layers, 8 heads x
128, page_size 16); --layers and --heads make them smaller or larger. Prints min and median over the
repetitions, and the ratio of throughputs (target: >= 0.8).

    /usr/bin/python3 bench/transfer/transfer.py [--build build] [--reps 9]
        [--direct-bytes N] [--staging-bytes N] [--layers 4] [--heads 8]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

PAGE, HEAD_SIZE = 16, 128
SEQUENCES = 8
TOTAL_BYTES = 64 << 20


def kinds(page_bytes):
    """The transfers timed, in the program's order."""
    return ["plain MPI_Send/MPI_Recv",
            "send_pages, one run (all pages consecutive on both sides)",
            f"send_pages, runs of 8 pages ({8 * page_bytes >> 10} KiB)",
            f"send_pages, runs of 1 page ({page_bytes >> 10} KiB)"]


PROGRAM = """
!blocks = memref<{num_pages}x2x{layers}x{page}x{heads}x{head_size}xf16>
!dyn = memref<?x2x?x{page}x{heads}x{head_size}xf16>
!coll = !kvcache.paged_collection<f16, num_heads = {heads}, head_size = {head_size}, page_size = {page}>
func.func private @rtclock() -> f64

func.func @collection(%blocks: !blocks, %lengths: memref<?xi32>, %table: memref<?x?xi32>) -> !coll {{
  %z = arith.constant 0 : i32
  %b = memref.cast %blocks : !blocks to !dyn
  %c = kvcache.paged_collection %b, %lengths, %table, %z, %z : !dyn, memref<?xi32>, memref<?x?xi32> -> !coll
  return %c : !coll
}}

// Sequence b's page j: in runs of `run` pages, the sequences' runs
// interleaved.
func.func @fill_table(%table: memref<?x?xi32>, %run: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = arith.constant {sequences} : index
  %n = arith.constant {per_sequence} : index
  scf.for %b = %c0 to %s step %c1 {{
    scf.for %j = %c0 to %n step %c1 {{
      %chunk = arith.divui %j, %run : index
      %within = arith.remui %j, %run : index
      %x = arith.muli %chunk, %s : index
      %y = arith.addi %x, %b : index
      %z = arith.muli %y, %run : index
      %p = arith.addi %z, %within : index
      %p1 = arith.addi %p, %c1 : index
      %p32 = arith.index_cast %p1 : index to i32
      memref.store %p32, %table[%b, %j] : memref<?x?xi32>
    }}
  }}
  return
}}

func.func @main() {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  mpi.init
  %comm = mpi.comm_world : !mpi.comm
  %rank = mpi.comm_rank(%comm) : i32
  %sender = arith.cmpi eq, %rank, %zero : i32
  %peer = arith.select %sender, %one, %zero : i32
  %blocks = memref.alloc() {{alignment = 64 : i64}} : !blocks
  %v = arith.constant 1.0 : f16
  linalg.fill ins(%v : f16) outs(%blocks : !blocks)
  %plain = memref.alloc() {{alignment = 64 : i64}} : memref<{bytes}xi8>
  %byte = arith.constant 1 : i8
  linalg.fill ins(%byte : i8) outs(%plain : memref<{bytes}xi8>)
  %s = arith.constant {sequences} : index
  %n = arith.constant {per_sequence} : index
  %lengths = memref.alloc(%s) : memref<?xi32>
  %tokens = arith.constant {tokens} : i32
  linalg.fill ins(%tokens : i32) outs(%lengths : memref<?xi32>)
  %run_all = arith.constant {per_sequence} : index
  %table_all = memref.alloc(%s, %n) : memref<?x?xi32>
  func.call @fill_table(%table_all, %run_all) : (memref<?x?xi32>, index) -> ()
  %table8 = memref.alloc(%s, %n) : memref<?x?xi32>
  func.call @fill_table(%table8, %c8) : (memref<?x?xi32>, index) -> ()
  %table1 = memref.alloc(%s, %n) : memref<?x?xi32>
  func.call @fill_table(%table1, %c1) : (memref<?x?xi32>, index) -> ()
  %sequences = memref.alloc(%s) : memref<?xi32>
  scf.for %b = %c0 to %s step %c1 {{
    %b32 = arith.index_cast %b : index to i32
    memref.store %b32, %sequences[%b] : memref<?xi32>
  }}
  %count = arith.constant {pages} : index
  %dst = memref.alloc(%count) : memref<?xi32>
  scf.for %i = %c0 to %count step %c1 {{
    %first = arith.constant {first_dst} : index
    %p = arith.addi %first, %i : index
    %p32 = arith.index_cast %p : index to i32
    memref.store %p32, %dst[%i] : memref<?xi32>
  }}
  %call = func.call @collection(%blocks, %lengths, %table_all) : (!blocks, memref<?xi32>, memref<?x?xi32>) -> !coll
  %c8coll = func.call @collection(%blocks, %lengths, %table8) : (!blocks, memref<?xi32>, memref<?x?xi32>) -> !coll
  %c1coll = func.call @collection(%blocks, %lengths, %table1) : (!blocks, memref<?xi32>, memref<?x?xi32>) -> !coll
  %go = memref.alloca() : memref<1xi32>
  %tag = arith.constant 7 : i32
  %reps = arith.constant {reps} : index
  scf.for %rep = %c0 to %reps step %c1 {{
    scf.for %kind = %c0 to %c4 step %c1 {{
      %is_plain = arith.cmpi eq, %kind, %c0 : index
      scf.if %sender {{
        mpi.recv(%go, %tag, %peer, %comm) : memref<1xi32>, i32, i32
        scf.index_switch %kind
        case 0 {{
          mpi.send(%plain, %tag, %peer, %comm) : memref<{bytes}xi8>, i32, i32
          scf.yield
        }}
        case 1 {{
          kvcache.send_pages %call, %sequences, %peer : !coll, memref<?xi32>
          scf.yield
        }}
        case 2 {{
          kvcache.send_pages %c8coll, %sequences, %peer : !coll, memref<?xi32>
          scf.yield
        }}
        default {{
          kvcache.send_pages %c1coll, %sequences, %peer : !coll, memref<?xi32>
        }}
      }} else {{
        %t0 = func.call @rtclock() : () -> f64
        mpi.send(%go, %tag, %peer, %comm) : memref<1xi32>, i32, i32
        scf.if %is_plain {{
          mpi.recv(%plain, %tag, %peer, %comm) : memref<{bytes}xi8>, i32, i32
        }} else {{
          kvcache.recv_pages %call, %dst, %peer : !coll, memref<?xi32>
        }}
        %t1 = func.call @rtclock() : () -> f64
        %dt = arith.subf %t1, %t0 : f64
        vector.print str "time "
        vector.print %kind : index punctuation <no_punctuation>
        vector.print str " "
        vector.print %dt : f64
      }}
    }}
  }}
  mpi.finalize
  return
}}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--direct-bytes", type=int, default=None,
                        help="kvcache-to-cpu's transfer-direct-bytes "
                             "(default: the pipeline's)")
    parser.add_argument("--staging-bytes", type=int, default=None,
                        help="kvcache-to-cpu's transfer-staging-bytes "
                             "(default: the pipeline's)")
    parser.add_argument("--layers", type=int, default=4,
                        help="num_layers: a page is 64 KiB per layer x "
                             "heads / 8")
    parser.add_argument("--heads", type=int, default=8)
    args = parser.parse_args()
    page_bytes = 2 * args.layers * PAGE * args.heads * HEAD_SIZE * 2  # f16 K, V
    pages = TOTAL_BYTES // page_bytes
    names = kinds(page_bytes)
    program = PROGRAM.format(
        num_pages=2 * pages + 64, layers=args.layers, page=PAGE,
        heads=args.heads, head_size=HEAD_SIZE, sequences=SEQUENCES,
        per_sequence=pages // SEQUENCES, bytes=pages * page_bytes,
        tokens=pages // SEQUENCES * PAGE, pages=pages, first_dst=pages + 32,
        reps=args.reps)
    opt = os.path.join(args.build, "bin", "kvcache-opt")
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "transfer.mlir")
        lowered = os.path.join(tmp, "transfer.llvm.mlir")
        with open(source, "w") as f:
            f.write(program)
        options = []
        if args.direct_bytes is not None:
            options.append(f"transfer-direct-bytes={args.direct_bytes}")
        if args.staging_bytes is not None:
            options.append(f"transfer-staging-bytes={args.staging_bytes}")
        pipeline = "-kvcache-to-cpu"
        if options:
            pipeline += "=" + " ".join(options)
        subprocess.run([opt, source, pipeline, "-o", lowered], check=True)
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        run = subprocess.run(
            ["mpirun", *root, "--oversubscribe", "-np", "2",
             "/usr/lib/llvm-22/bin/mlir-runner", "-O3", lowered, "-e", "main",
             "-entry-point-result=void",
             "-shared-libs=/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so,"
             "/usr/lib/x86_64-linux-gnu/libmpi.so"],
            check=True, capture_output=True, text=True)
    times = {kind: [] for kind in range(len(names))}
    for kind, seconds in re.findall(r"time (\d) ([0-9.e+-]+)", run.stdout):
        times[int(kind)].append(float(seconds))
    total = pages * page_bytes
    gbs = {kind: (total / min(t) / 1e9, total / statistics.median(t) / 1e9)
           for kind, t in times.items()}
    print(f"{total >> 20} MiB, {pages} pages of {page_bytes >> 10} KiB "
          f"(f16, {args.layers} layers, page_size {PAGE}, {args.heads} "
          f"heads x {HEAD_SIZE}), {args.reps} repetitions, rank 1's time, "
          f"transfer-direct-bytes={args.direct_bytes or 'default'}, "
          f"transfer-staging-bytes={args.staging_bytes or 'default'}")
    print("| transfer | GB/s (min time / median) | ratio to plain (min / median) |")
    print("| --- | --- | --- |")
    for kind, name in enumerate(names):
        best, median = gbs[kind]
        print(f"| {name} | {best:.2f} / {median:.2f} | "
              f"{best / gbs[0][0]:.2f} / {median / gbs[0][1]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
