#!/usr/bin/env python3
# ===- kernel_reference.py - numpy model of the kvcache kernel ops --------=== #
#
# Part of the kvcache-mlir project.
#
# An independent reference for the CPU execution tests of the kernel ops of
# docs/Contract.md section 3.3 (store_ragged, gather_ragged, copy_pages,
# attention_ragged), written from the contract text alone, without any
# compiler code. The memory layout (docs/Contract.md section 1) is
# reference.py's PagedCacheModel.
#
#   kvcache-opt test.mlir -kvcache-to-cpu | mlir-runner ... \
#     | python3 kernel_reference.py test.mlir
#
# The test file describes its cache and the kernel ops its @main runs, in
# order, on one comment line
#
#   // REFERENCE: {"dtype": "f16", "num_pages": 9, ..., "steps": [...]}
#
# The cache keys are reference.py's (dtype, num_pages, kv_dim, num_layers,
# page_size, num_heads, head_size, cache_lengths, lookup_table, fill and
# optionally layout), plus:
#   fill_div       optional power of two: every fill value is divided by it
#                  (attention tests keep values in [-1, 1])
#   steps          the kernel ops, in program order; each is an object:
#     {"op": "store_ragged", "kv": 0|1, "layer": l, "offsets": [batch + 1],
#      "new": FORMULA, "rows": T}
#     {"op": "gather_ragged", "kv": 0|1, "layer": l, "offsets": [batch + 1],
#      "out": FORMULA, "rows": T}
#     {"op": "copy_pages", "pairs": [[src, dst], ...]}
#     {"op": "attention_ragged", "layer": l, "offsets": [batch + 1],
#      "q_heads": Hq, "scale": s (an f32 value), "q": FORMULA,
#      "out": FORMULA, "rows": T}
#   A FORMULA [mul, mod, sub, div, seed] fills a [rows, heads, head_size]
#   buffer: element flat (row-major) is (((flat + seed) * mul) mod mod - sub)
#   / div. The `out` formula is the buffer's content before the op, so rows
#   the op must not write are checked too.
#
# Records the program prints (one per line, any order):
# (a ROW may be printed as several `( ... )` groups, concatenated)
#   out ( step, r, h ) ROW      row r, head h of the output of step `step`
#                               (gather_ragged or attention_ragged) after it
#                               ran; every row of every output must be printed
#   row ( p, kv, l, s, h ) ROW  a row of `blocks` after all steps; with
#                               full_dump, all of blocks must be printed
#   parent ( i ) CHUNK          elements i.. of the buffer under blocks (with
#                               a layout) after all steps
#   done
#
# store_ragged, gather_ragged, copy_pages and every value the model holds are
# exact (small integers or dyadic fractions, exact in the element type), so
# those compare exactly. attention_ragged is computed in float64 and compared
# with a tolerance: f32 |got - ref| <= 1e-3 * max(|ref|, 1e-2) (relative
# error 1e-3, values of order 1); f16 and bf16 |got - ref| <= ABS_TOL[dtype].
#
# Prints "INFO attention ..." with the largest errors seen, then
# "OK <n> records" on success, else "MISMATCH ..." lines; exits 1 on any
# mismatch.
#
# ===----------------------------------------------------------------------=== #

import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import (EXACT_INTEGER_LIMIT, Failure, PagedCacheModel,  # noqa: E402
                       as_ints, as_vector, load_config, parse_groups)

# Attention output tolerances for the 16-bit types (outputs are in [-1, 1]:
# half an ulp at 1 is 2^-11 in f16 and 2^-8 in bf16).
ABS_TOL = {"f16": 2e-3, "bf16": 1.6e-2}
F32_REL_TOL = 1e-3
F32_REL_FLOOR = 1e-2


def formula_buffer(shape, formula, dtype):
    """A [rows, heads, head_size] buffer filled by a FORMULA."""
    mul, mod, sub, div, seed = formula
    if div <= 0 or div & (div - 1):
        raise Failure(f"formula divisor {div} is not a power of two")
    flat = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    numerators = ((flat + seed) * mul) % mod - sub
    if numerators.size and np.abs(numerators).max() > EXACT_INTEGER_LIMIT[dtype]:
        raise Failure(f"formula {formula} is not exact in {dtype}")
    return numerators.astype(np.float64) / div


def check_offsets(offsets, batch, rows, what):
    if len(offsets) != batch + 1:
        raise Failure(f"{what}: {len(offsets)} offsets for batch {batch}")
    if any(a > b for a, b in zip(offsets, offsets[1:])):
        raise Failure(f"{what}: offsets are not monotonic")
    if offsets and (offsets[0] < 0 or offsets[-1] > rows):
        raise Failure(f"{what}: offsets leave the {rows} rows")


class KernelModel:

    def __init__(self, config):
        self.config = config
        self.dtype = config["dtype"]
        self.cache = PagedCacheModel(config)
        div = config.get("fill_div", 1)
        if div <= 0 or div & (div - 1):
            raise Failure("fill_div is not a power of two")
        self.cache.blocks[...] = self.cache.blocks / div
        _, self.kv_dim, self.num_layers, self.page_size, self.num_heads, \
            self.head_size = self.cache.shape
        self.batch = len(self.cache.cache_lengths)
        self.outputs = {}  # step -> (kind, expected [rows, heads, head_size])
        for index, step in enumerate(config["steps"]):
            self.apply(index, step)

    def row_shape(self, step, heads=None):
        return (step["rows"], heads or self.num_heads, self.head_size)

    def check_cache(self, kv, layer):
        if not (0 <= kv < self.kv_dim):
            raise Failure(f"kv {kv} is not in this collection")
        if not (0 <= layer < self.num_layers):
            raise Failure(f"layer {layer} is not in this collection")

    def apply(self, index, step):
        # A step may run on a collection built with another lookup table
        # (same blocks and metadata otherwise): address through it.
        table = step.get("lookup_table")
        if table is None:
            return self.apply_op(index, step)
        saved = self.cache.lookup_table
        replacement = np.array(table, dtype=np.int64)
        if replacement.shape[0] != saved.shape[0] or replacement.ndim != 2:
            raise Failure(f"step {index}: lookup_table is not [batch][max_pages]")
        if replacement.size and replacement.max() >= self.cache.shape[0]:
            raise Failure(f"step {index}: a lookup_table entry is not a page")
        self.cache.lookup_table = replacement
        try:
            self.apply_op(index, step)
        finally:
            self.cache.lookup_table = saved

    def apply_op(self, index, step):
        op = step["op"]
        cache = self.cache
        lengths = cache.cache_lengths
        if op == "store_ragged":
            # Contract 3.3: row r in [offsets[b], offsets[b+1]) is written at
            # token position cache_length(b) + r - offsets[b] of sequence b.
            kv, layer, offsets = step["kv"], step["layer"], step["offsets"]
            self.check_cache(kv, layer)
            check_offsets(offsets, self.batch, step["rows"], f"step {index}")
            new = formula_buffer(self.row_shape(step), step["new"], self.dtype)
            for b in range(self.batch):
                for r in range(offsets[b], offsets[b + 1]):
                    page, slot = cache.address(b, lengths[b] + r - offsets[b])
                    cache.blocks[page, kv, layer, slot] = new[r]
        elif op == "gather_ragged":
            # Contract 3.3: out row r in [offsets[b], offsets[b+1]) receives
            # token position r - offsets[b] of sequence b.
            kv, layer, offsets = step["kv"], step["layer"], step["offsets"]
            self.check_cache(kv, layer)
            check_offsets(offsets, self.batch, step["rows"], f"step {index}")
            out = formula_buffer(self.row_shape(step), step["out"], self.dtype)
            for b in range(self.batch):
                for r in range(offsets[b], offsets[b + 1]):
                    page, slot = cache.address(b, r - offsets[b])
                    out[r] = cache.blocks[page, kv, layer, slot]
            self.outputs[index] = ("gather_ragged", out)
        elif op == "copy_pages":
            # Contract 3.3: copy page src to page dst in every layer, K and V.
            pairs = step["pairs"]
            sources = {s for s, _ in pairs}
            destinations = [d for _, d in pairs]
            if sources & set(destinations) or len(set(destinations)) != len(pairs):
                raise Failure(f"step {index}: pairs overlap")
            num_pages = cache.shape[0]
            for src, dst in pairs:
                if not (0 <= src < num_pages and 0 <= dst < num_pages):
                    raise Failure(f"step {index}: pair {src, dst} is not pages")
                cache.blocks[dst] = cache.blocks[src]
        elif op == "attention_ragged":
            self.outputs[index] = ("attention_ragged", self.attention(index, step))
        else:
            raise Failure(f"unknown op '{op}'")

    def attention(self, index, step):
        # Contract 3.3: query row r of sequence b sits at
        # p = cache_length(b) + r - offsets[b] and attends to key positions
        # [0, p]:
        # out[r, h] = softmax_j(scale * q[r, h] . K[b, j, h / G]) @ V[b, j, h / G].
        cache = self.cache
        layer, offsets = step["layer"], step["offsets"]
        if self.kv_dim != 2:
            raise Failure("attention needs K and V")
        self.check_cache(1, layer)
        q_heads = step["q_heads"]
        if q_heads % self.num_heads:
            raise Failure("q_heads is not a multiple of num_heads")
        group = q_heads // self.num_heads
        check_offsets(offsets, self.batch, step["rows"], f"step {index}")
        # The attribute is an f32: the decimal rounded to f32, as MLIR parses it.
        scale = float(np.float32(step["scale"]))
        q = formula_buffer(self.row_shape(step, q_heads), step["q"], self.dtype)
        out = formula_buffer(self.row_shape(step, q_heads), step["out"], self.dtype)
        for b in range(self.batch):
            last = cache.cache_lengths[b] + offsets[b + 1] - offsets[b]
            if last == 0:
                continue
            where = [cache.address(b, t) for t in range(last)]
            keys = np.stack([cache.blocks[p, 0, layer, s] for p, s in where])
            values = np.stack([cache.blocks[p, 1, layer, s] for p, s in where])
            for r in range(offsets[b], offsets[b + 1]):
                position = cache.cache_lengths[b] + r - offsets[b]
                for h in range(q_heads):
                    k = keys[:position + 1, h // group]    # [p + 1, D]
                    v = values[:position + 1, h // group]
                    logits = scale * (k @ q[r, h])
                    weights = np.exp(logits - logits.max())
                    out[r, h] = (weights / weights.sum()) @ v
        return out


class Checker:

    def __init__(self, config):
        self.config = config
        self.model = KernelModel(config)
        self.mismatches = []
        self.records = 0
        self.rows_seen = set()
        self.parent_seen = set()
        self.outputs_seen = {index: set() for index in self.model.outputs}
        self.done = False
        self.max_abs_error = 0.0
        self.max_rel_error = 0.0
        self.attention_values = 0

    def mismatch(self, line, expected):
        self.mismatches.append(
            f"MISMATCH '{line[:200]}': expected {np.asarray(expected).tolist()}")

    def expect_exact(self, line, got, expected):
        got = np.asarray(got, dtype=np.float64)
        if got.shape != expected.shape or not np.array_equal(got, expected):
            self.mismatch(line, expected)

    def expect_close(self, line, got, expected):
        got = np.asarray(got, dtype=np.float64)
        if got.shape != expected.shape or not np.all(np.isfinite(got)):
            self.mismatch(line, expected)
            return
        error = np.abs(got - expected)
        relative = error / np.maximum(np.abs(expected), F32_REL_FLOOR)
        self.max_abs_error = max(self.max_abs_error, float(error.max()))
        self.max_rel_error = max(self.max_rel_error, float(relative.max()))
        self.attention_values += got.size
        if self.model.dtype == "f32":
            ok = relative.max() <= F32_REL_TOL
        else:
            ok = error.max() <= ABS_TOL[self.model.dtype]
        if not ok:
            self.mismatch(line, expected)

    def record(self, line):
        tag, _, rest = line.partition(" ")
        try:
            groups = parse_groups(rest)
        except ValueError:
            raise Failure(f"'{line[:200]}': not a record (output cut short?)")
        model = self.model
        cache = model.cache
        self.records += 1

        def take(count):
            if count == 2 and len(groups) > 2:
                # A row printed in chunks.
                return [groups[0], [x for g in groups[1:] for x in as_vector(g)]]
            if len(groups) != count:
                raise Failure(f"'{line[:200]}': expected {count} groups")
            return groups

        if tag == "out":
            coords, row = take(2)
            step, r, h = as_ints(coords)
            if step not in model.outputs:
                raise Failure(f"'{line[:200]}': step {step} has no output")
            kind, expected = model.outputs[step]
            if not (0 <= r < expected.shape[0] and 0 <= h < expected.shape[1]):
                raise Failure(f"'{line[:200]}': not a row of the output")
            if kind == "attention_ragged":
                self.expect_close(line, as_vector(row), expected[r, h])
            else:
                self.expect_exact(line, as_vector(row), expected[r, h])
            self.outputs_seen[step].add((r, h))
        elif tag == "row":
            coords, row = take(2)
            p, kv, l, s, h = as_ints(coords)
            self.expect_exact(line, as_vector(row), cache.blocks[p, kv, l, s, h, :])
            self.rows_seen.add((p, kv, l, s, h))
        elif tag == "parent":
            coords, chunk = take(2)
            (i,) = as_ints(coords)
            chunk = as_vector(chunk)
            if cache.parent is None:
                raise Failure("'parent' record without a layout")
            self.expect_exact(line, chunk, cache.parent[i:i + len(chunk)])
            self.parent_seen.update(range(i, i + len(chunk)))
        elif tag == "done":
            take(0)
            self.done = True
        else:
            raise Failure(f"unknown record '{tag}'")

    def finish(self):
        model = self.model
        cache = model.cache
        if not self.done:
            self.mismatches.append("MISMATCH the program did not print 'done'")
        for index, (_, expected) in model.outputs.items():
            rows = expected.shape[0] * expected.shape[1]
            if len(self.outputs_seen[index]) != rows:
                self.mismatches.append(
                    f"MISMATCH output of step {index}: {len(self.outputs_seen[index])}"
                    f" of {rows} rows printed")
        if self.config.get("full_dump"):
            if cache.parent is not None:
                if len(self.parent_seen) != cache.parent.size:
                    self.mismatches.append(
                        f"MISMATCH dump covers {len(self.parent_seen)} of "
                        f"{cache.parent.size} parent elements")
            else:
                rows = int(np.prod(cache.shape[:5]))
                if len(self.rows_seen) != rows:
                    self.mismatches.append(
                        f"MISMATCH dump covers {len(self.rows_seen)} of {rows} rows")


def main():
    if len(sys.argv) != 2:
        print("usage: kernel_reference.py TEST.mlir < program-output",
              file=sys.stderr)
        return 2
    try:
        checker = Checker(load_config(sys.argv[1]))
        for line in sys.stdin:
            line = line.strip()
            if line:
                checker.record(line)
        checker.finish()
    except Failure as failure:
        print(f"MISMATCH {failure}")
        return 1
    if checker.attention_values:
        print(f"INFO attention {checker.model.dtype}: {checker.attention_values} "
              f"values, max abs error {checker.max_abs_error:.3g}, max relative "
              f"error {checker.max_rel_error:.3g} (floor {F32_REL_FLOOR})")
    for mismatch in checker.mismatches[:20]:
        print(mismatch)
    if checker.mismatches:
        print(f"FAILED {len(checker.mismatches)} mismatches in "
              f"{checker.records} records")
        return 1
    print(f"OK {checker.records} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
