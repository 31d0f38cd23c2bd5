#!/usr/bin/env python3
# ===- twin_reference.py - numpy reference for the emulator twins ---------=== #
#
# Part of the kvcache-mlir project.
#
# The execution twins of the PTX tests (test/Integration/GPU/*-run.mlir in
# Emulator/) run the very gpu.func kernels that the PTX tests compile, on the
# emulated GPU, and print every buffer they produce with printMemrefF32 /
# printMemrefI32. This script recomputes those buffers from the formulas the
# twins' @main uses to fill its inputs, with a numpy model of the memory layout
# of docs/Contract.md section 1 and of what each kernel does (read from the
# kernel source, not from any compiler or emulator output). warp-matrix and
# warp-matrix-bugs do the same for the ldmatrix / mma.sync kernels of
# warp-matrix-run.mlir (which warp-matrix-ptxas.test assembles) and the
# fixed kernel of Inputs/warp-matrix-bugs.mlir: plain matrix products and
# PTX's ldmatrix fragment layout:
#
#   %emu_run twin.mlir -e main | python3 twin_reference.py <twin>
#
# <twin> is one of the names in TWINS below. Every printed buffer is compared
# exactly, in print order (all values are integers exact in the element type).
# Prints "OK <n> buffers <m> values" on success, else "MISMATCH ..." lines,
# and exits 1 on any mismatch.
#
# Fill formula (the twins' @fill_* functions): element i of the flattened
# buffer (row-major) is ((i + seed) * mul) mod mod - sub.
#
# ===----------------------------------------------------------------------=== #

import re
import sys

import numpy as np

sys.dont_write_bytecode = True


def fill(shape, mul, mod, sub, seed=0):
    flat = np.arange(int(np.prod(shape)), dtype=np.int64)
    return (((flat + seed) * mul) % mod - sub).reshape(shape).astype(np.float64)


class Cache:
    """The K (kv = 0) or V (kv = 1) cache of one layer: a numpy view of
    blocks[:, kv, layer] ([pages, page_size, heads, head_size]), so writes go
    to blocks. Token t of sequence b is at
    blocks[table[b][t // page_size], kv, layer, t % page_size]."""

    def __init__(self, blocks, kv, layer, table):
        self.pages = blocks[:, kv, layer]
        self.table = table
        self.page_size = self.pages.shape[1]

    def lookup(self, b, t):
        return self.table[b][t // self.page_size], t % self.page_size

    def row(self, b, t):
        """Token t of sequence b: a view [heads, head_size]."""
        page, slot = self.lookup(b, t)
        return self.pages[page, slot]


def read_rows(cache, b, n):
    """out[t, h, d] = cache[b, h, t, d] for t < n (read_keys, gather)."""
    return np.stack([cache.row(b, t).copy() for t in range(n)])


def write_rows(cache, b, new):
    """cache[b, h, t, d] = new[t, h, d] for t < len(new) (write_keys)."""
    for t in range(new.shape[0]):
        cache.row(b, t)[...] = new[t]


# --- access-ops-run.mlir ----------------------------------------------------

def access_ops():
    blocks = fill((8, 2, 2, 16, 8, 128), 7919, 4093, 2046)
    table = [[5, 1, 3], [2, 6, 0], [4, 7, 0]]

    def K(layer):
        return Cache(blocks, 0, layer, table)

    def V(layer):
        return Cache(blocks, 1, layer, table)

    def mixed(keys, values, b, src, dst, out):
        # One block (tile 0), thread (x, y) owns head y, elements 8x..8x+7 of
        # every row it touches, so the kernel acts on whole rows:
        # K[b, src] -> V at the same page and slot; V[b, dst] -> K[b, dst];
        # then rows 0..15 of K of sequence b -> out[0..15, head].
        page, slot = keys.lookup(b, src)
        values.pages[page, slot] = keys.pages[page, slot]
        keys.row(b, dst)[...] = values.row(b, dst).copy()
        out = out.copy()
        for t in range(16):
            out[t, :8] = keys.row(b, t)
        return out

    printed = []
    printed.append(("read_keys K layer 0 seq 0", read_rows(K(0), 0, 37)))
    printed.append(("read_keys V layer 1 seq 1", read_rows(V(1), 1, 20)))
    write_rows(K(1), 2, fill((21, 8, 128), 7919, 4093, 2046, seed=1))
    write_rows(V(0), 0, fill((18, 8, 128), 7919, 4093, 2046, seed=2))
    printed.append(("mixed layer 1 seq 1",
                    mixed(K(1), V(1), 1, 19, 5,
                          fill((16, 16, 128), 7919, 4093, 2046, seed=3))))
    printed.append(("mixed layer 0 seq 2",
                    mixed(K(0), V(0), 2, 17, 9,
                          fill((16, 16, 128), 7919, 4093, 2046, seed=4))))
    printed.append(("read_keys K layer 1 seq 2", read_rows(K(1), 2, 21)))
    printed.append(("blocks", blocks))
    return printed


# --- checked-ptx-run.mlir ---------------------------------------------------

def checked_ptx():
    blocks = fill((8, 2, 2, 16, 8, 128), 7919, 4093, 2046)
    table = [[3, 7, 5], [6, 2, 0], [1, 4, 0]]

    def copy_checked(src, dst, b, n):
        # Thread (x, y) of block t copies elements 8x..8x+7 of head y of
        # token t: the whole row of token t, for t < n.
        for t in range(n):
            dst.row(b, t)[...] = src.row(b, t)

    k0, k1 = Cache(blocks, 0, 0, table), Cache(blocks, 0, 1, table)
    v0, v1 = Cache(blocks, 1, 0, table), Cache(blocks, 1, 1, table)
    printed = [("read_keys K layer 0 seq 1", read_rows(k0, 1, 23))]
    write_rows(v1, 0, fill((35, 8, 128), 7919, 4093, 2046, seed=1))
    copy_checked(k1, v0, 2, 19)
    copy_checked(v1, k1, 0, 35)
    printed.append(("read_keys K layer 1 seq 0", read_rows(k1, 0, 35)))
    printed.append(("blocks", blocks))
    return printed


# --- collection-kernel-run.mlir ---------------------------------------------

def collection_kernel():
    blocks = fill((7, 2, 3, 32, 4, 64), 7919, 509, 254)
    table = [[4, 1, 0], [2, 5, 3], [6, 0, 0]]

    def swap_kv(layer, b, n):
        # Block t swaps K and V of token t of sequence b in `layer`; thread
        # (x, y) moves elements 8x..8x+7 of head y: whole rows.
        keys, values = Cache(blocks, 0, layer, table), Cache(blocks, 1, layer, table)
        for t in range(n):
            k = keys.row(b, t).copy()
            keys.row(b, t)[...] = values.row(b, t)
            values.row(b, t)[...] = k

    swap_kv(0, 0, 40)
    swap_kv(2, 1, 70)
    swap_kv(1, 2, 20)
    swap_kv(0, 0, 10)
    return [("blocks", blocks)]


# --- host-launch-run.mlir ---------------------------------------------------

def host_launch():
    blocks = fill((7, 2, 2, 16, 8, 128), 7919, 4093, 2046)
    table = [[3, 5, 0], [1, 4, 2], [6, 0, 0]]
    keys0, keys1 = Cache(blocks, 0, 0, table), Cache(blocks, 0, 1, table)
    values1 = Cache(blocks, 1, 1, table)

    def step(b, n):
        # copy_layer: K of layer 0 -> K of layer 1, tokens 0 .. n-1 of b;
        # then the outlined gpu.launch: out[t] = V of layer 1, token t.
        for t in range(n):
            keys1.row(b, t)[...] = keys0.row(b, t)
        return read_rows(values1, b, n)

    printed = [(f"step seq {b} out", step(b, n)) for b, n in ((0, 25), (1, 40), (2, 9))]
    printed.append(("blocks", blocks))
    return printed


# --- page-size-3-5-run.mlir -------------------------------------------------

def page_size_3_5():
    blocks3 = fill((10, 2, 2, 3, 8, 128), 7919, 4093, 2046)
    blocks5 = fill((7, 2, 2, 5, 8, 128), 7919, 4093, 2046, seed=1)
    table3 = [[7, 2, 9, 4, 1, 0], [3, 8, 5, 6, 0, 0]]
    table5 = [[5, 1, 3, 0], [2, 6, 4, 0]]

    def copy_3_to_5(src, dst, b, n):
        # Block t, 128 threads (head = thread / 16, 8 elements each): the
        # whole row of token t of sequence b.
        for t in range(n):
            dst.row(b, t)[...] = src.row(b, t)

    copy_3_to_5(Cache(blocks3, 0, 0, table3), Cache(blocks5, 0, 1, table5), 0, 14)
    copy_3_to_5(Cache(blocks3, 1, 0, table3), Cache(blocks5, 0, 0, table5), 0, 14)
    copy_3_to_5(Cache(blocks3, 1, 1, table3), Cache(blocks5, 1, 0, table5), 1, 11)
    queries = [(0, 0), (0, 2), (0, 3), (0, 13), (0, 17), (1, 4), (1, 5), (1, 9),
               (1, 10), (1, 14), (1, 16)]
    # lookups: [table3[b][t / 3], t mod 3, table5[b][t / 5], t mod 5].
    lookups = np.array([[table3[b][t // 3], t % 3, table5[b][t // 5], t % 5]
                        for b, t in queries], dtype=np.float64)
    return [("blocks (page size 3)", blocks3), ("blocks (page size 5)", blocks5),
            ("lookups", lookups)]


# --- warp-matrix-run.mlir ---------------------------------------------------

def warp_matrix():
    def f16(x):
        """Rounded once to f16 (round to nearest even), as an f16 mma result."""
        return x.astype(np.float16).astype(np.float64)

    a = fill((16, 16), 7919, 257, 128)
    b = fill((16, 8), 7919, 131, 65, seed=1)
    c = fill((16, 8), 7919, 1021, 510, seed=2)
    bt = fill((8, 16), 7919, 131, 65, seed=3)
    wide_a = fill((16, 64), 7919, 17, 8, seed=4)
    wide_bt = fill((32, 64), 7919, 13, 6, seed=5)
    m = fill((32, 16), 7919, 2039, 1019, seed=6)
    small = np.concatenate([a @ b + c, f16(a @ b + c),
                            a[:, :8] @ b[:8] + c, f16(a[:, :8] @ b[:8] + c)])
    bf16 = np.concatenate([a @ bt.T + c, a[:, :8] @ bt.T[:8] + c])

    # ldmatrix .m8n8 .b16 (PTX ISA, "Warp-level matrix load instruction:
    # ldmatrix"): lane 8 i + r gives the address of row r of matrix i (8
    # consecutive elements); lane l receives, of each matrix, elements
    # 2 (l % 4) and 2 (l % 4) + 1 of row l / 4, or with .trans elements l / 4
    # of rows 2 (l % 4) and 2 (l % 4) + 1. The kernel's lane l points at row
    # (5 l + 3) mod 32, column 8 (l % 2) of M.
    def element(address_lane, offset):
        return m[(5 * address_lane + 3) % 32, 8 * (address_lane % 2) + offset]

    fragments = np.zeros((6, 32, 4, 2))
    for form, (count, transpose) in enumerate(
            [(1, False), (2, False), (4, False), (1, True), (2, True), (4, True)]):
        for lane in range(32):
            for matrix in range(count):
                for half in range(2):
                    if transpose:
                        value = element(8 * matrix + 2 * (lane % 4) + half, lane // 4)
                    else:
                        value = element(8 * matrix + lane // 4, 2 * (lane % 4) + half)
                    fragments[form, lane, matrix, half] = value
    return [("small_product (k16 f32, k16 f16, k8 f32, k8 f16)", small),
            ("bf16_product (k16, k8)", bf16),
            ("tiled_product", wide_a @ wide_bt.T),
            ("ldmatrix_fragments", fragments.reshape(192, 8))]


# --- Inputs/warp-matrix-bugs.mlir (@square, the fixed kernel) ---------------

def warp_matrix_bugs():
    a = fill((16, 16), 7919, 17, 8)
    return [("square", a @ a[:, :8])]


TWINS = {
    "access-ops": access_ops,
    "checked-ptx": checked_ptx,
    "collection-kernel": collection_kernel,
    "host-launch": host_launch,
    "page-size-3-5": page_size_3_5,
    "warp-matrix": warp_matrix,
    "warp-matrix-bugs": warp_matrix_bugs,
}


# --- parsing and comparison ---------------------------------------------------

def parse_memrefs(text):
    """The buffers printMemref* printed, in order, flattened."""
    buffers = []
    for part in text.split("Unranked Memref")[1:]:
        sizes = re.search(r"sizes = \[([0-9, ]*)\]", part)
        if not sizes or "data =" not in part:
            raise ValueError("cannot parse a printed memref")
        shape = [int(s) for s in sizes.group(1).split(",") if s.strip()]
        data = part.split("data =", 1)[1]
        values = re.sub(r"[\[\],]", " ", data).split()
        # Other lines of the program, if any, follow the last bracket.
        values = np.array(values[:int(np.prod(shape))], dtype=np.float64)
        buffers.append((shape, values))
    return buffers


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in TWINS:
        print(f"usage: twin_reference.py {{{','.join(TWINS)}}}", file=sys.stderr)
        return 2
    expected = TWINS[sys.argv[1]]()
    got = parse_memrefs(sys.stdin.read())
    failures = []
    if len(got) != len(expected):
        failures.append(f"MISMATCH {len(got)} buffers printed, {len(expected)} expected")
    values = 0
    for (name, want), (shape, have) in zip(expected, got):
        if have.size != want.size:
            failures.append(f"MISMATCH {name}: {have.size} values printed "
                            f"(sizes {shape}), {want.size} expected")
            continue
        have = have.reshape(want.shape)
        wrong = np.argwhere(have != want)
        for index in wrong[:8]:
            at = tuple(int(i) for i in index)
            failures.append(f"MISMATCH {name} at {at}: got {have[at]}, "
                            f"expected {want[at]}")
        if len(wrong) > 8:
            failures.append(f"MISMATCH {name}: {len(wrong)} values differ")
        values += want.size
    if failures:
        print("\n".join(failures))
        return 1
    print(f"OK {len(expected)} buffers {values} values")
    return 0


if __name__ == "__main__":
    sys.exit(main())
