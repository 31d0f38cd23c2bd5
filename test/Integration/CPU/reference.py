#!/usr/bin/env python3
# ===- reference.py - numpy model of a paged KV cache ---------------------=== #
#
# Part of the kvcache-mlir project.
#
# An independent reference for the CPU execution tests: a numpy model of the
# memory layout of docs/Contract.md section 1, written without any compiler
# code.
#
#   kvcache-opt test.mlir -kvcache-to-cpu | mlir-runner ... \
#     | python3 reference.py test.mlir
#
# The test file describes its cache on one comment line,
#
#   // REFERENCE: {"dtype": "f16", "num_pages": 9, ...}
#
# (keys below), and its program prints one record per line:
#
#   sweep ( kv, l, b, h, t, d ) V        kvcache.load in the sweep of all tokens
#   load ( kv, l, b, h, t, d ) V         kvcache.load (or lookup + page_load)
#   store ( kv, l, b, h, t, d ) V        V is about to be stored by kvcache.store
#   page_store ( kv, l, p, s, h, d ) V   V is about to be stored by page_store
#   lookup ( b, t ) ( page, slot )       kvcache.lookup
#   tile ( kv, l, b, t, h, r ) ROW       row r of kvcache.tile %cache[b, t, h]
#   row ( p, kv, l, s, h ) ROW           a row of `blocks` read with memref ops
#   parent ( i ) CHUNK                   elements i.. of the buffer under blocks
#   cache_length ( b ) n
#   max_lengths ( seq, cache )
#   done
#
# V is a scalar or a `( ... )` vector of W consecutive elements; ROW is a whole
# head row (head_size elements). Records are checked in order against the
# model, which applies the stores, so a read after a store sees its value.
#
# Configuration keys:
#   dtype          "f32", "f16" or "bf16"
#   num_pages, kv_dim, num_layers, page_size, num_heads, head_size
#   cache_lengths  [batch];  lookup_table [batch][max_pages]
#   max_seq_length, max_cache_length
#   fill           [mul, mod, sub]: the initial element at logical blocks
#                  index [p, kv, l, s, h, d] is ((flat * mul) mod mod) - sub,
#                  flat being that index linearised row-major
#   layout         optional {"parent_size": n, "offset": o,
#                  "strides": [s_page, s_kv, s_layer], "sentinel": x}: blocks
#                  is a strided view of a buffer of n elements holding x
#   sweep_widths   optional [W...]: the `sweep` records must be exactly one
#                  read of every (kv, l, b, h, t < cache_length(b), d) with d a
#                  multiple of W and d + W <= head_size, for each W
#   full_dump      optional bool: the `row` records (or `parent` records) must
#                  cover all of blocks (or of the parent buffer)
#
# Prints "OK <n> records" on success, else "MISMATCH ..." lines; exits 1 on
# any mismatch.
#
# ===----------------------------------------------------------------------=== #

import json
import re
import sys

import numpy as np

# Largest integers each type represents exactly (every fill value and every
# value a test stores is an integer of at most this magnitude).
EXACT_INTEGER_LIMIT = {"f32": 2**24, "f16": 2**11, "bf16": 2**8}


class Failure(Exception):
    pass


def load_config(test_path):
    with open(test_path) as f:
        for line in f:
            match = re.match(r"\s*//\s*REFERENCE:\s*(\{.*\})\s*$", line)
            if match:
                return json.loads(match.group(1))
    raise Failure(f"no '// REFERENCE: {{...}}' line in {test_path}")


class PagedCacheModel:
    """blocks[num_pages, kv_dim, num_layers, page_size, num_heads, head_size]
    and the metadata of docs/Contract.md section 1."""

    def __init__(self, config):
        self.config = config
        self.dtype = config["dtype"]
        self.shape = tuple(
            config[k]
            for k in ("num_pages", "kv_dim", "num_layers", "page_size",
                      "num_heads", "head_size"))
        num_pages, kv_dim, num_layers, page_size, num_heads, head_size = self.shape
        self.page_size = page_size
        self.head_size = head_size
        self.cache_lengths = np.array(config["cache_lengths"], dtype=np.int64)
        self.lookup_table = np.array(config["lookup_table"], dtype=np.int64)
        if self.lookup_table.ndim != 2:
            raise Failure("lookup_table must be [batch][max_pages]")
        if self.lookup_table.shape[0] != self.cache_lengths.shape[0]:
            raise Failure("lookup_table and cache_lengths disagree on batch")
        if self.lookup_table.size and self.lookup_table.max() >= num_pages:
            raise Failure("a lookup_table entry is not a page")

        # The parent buffer, and blocks as a strided view of it.
        layout = config.get("layout")
        if layout:
            row = num_heads * head_size
            strides = list(layout["strides"]) + [row, head_size, 1]
            self.parent = np.full(layout["parent_size"], layout["sentinel"],
                                  dtype=np.float64)
            item = self.parent.itemsize
            self.blocks = np.lib.stride_tricks.as_strided(
                self.parent[layout["offset"]:],
                shape=self.shape,
                strides=[s * item for s in strides])
            if not np.shares_memory(self.blocks, self.parent):
                raise Failure("layout does not view the parent buffer")
            # Inside the parent, with no two elements sharing memory.
            last = layout["offset"] + sum(
                (n - 1) * s for n, s in zip(self.shape, strides))
            if last >= layout["parent_size"]:
                raise Failure("layout exceeds the parent buffer")
            flat_offsets = layout["offset"] + sum(
                np.indices(self.shape)[i] * strides[i] for i in range(6))
            if np.unique(flat_offsets).size != np.prod(self.shape):
                raise Failure("layout overlaps itself")
        else:
            self.parent = None
            self.blocks = np.zeros(self.shape, dtype=np.float64)

        mul, mod, sub = config["fill"]
        flat = np.arange(np.prod(self.shape), dtype=np.int64).reshape(self.shape)
        self.blocks[...] = (flat * mul) % mod - sub
        self.limit = EXACT_INTEGER_LIMIT[self.dtype]
        if np.abs(self.blocks).max() > self.limit:
            raise Failure("fill values are not exact in " + self.dtype)

    # docs/Contract.md section 1: token t of sequence b lives at
    # blocks[lookup_table[b, t floordiv page_size], kv, l, t mod page_size, h, d].
    def address(self, b, t):
        column = t // self.page_size
        if not (0 <= b < self.lookup_table.shape[0]):
            raise Failure(f"batch {b} is outside the lookup table")
        if not (0 <= column < self.lookup_table.shape[1]):
            raise Failure(f"token {t} of sequence {b} is past the lookup table")
        return int(self.lookup_table[b, column]), t % self.page_size

    def elements(self, kv, l, b, h, t, d, width):
        page, slot = self.address(b, t)
        return self.page_elements(kv, l, page, slot, h, d, width)

    def page_elements(self, kv, l, page, slot, h, d, width):
        if d % width or d + width > self.head_size:
            raise Failure(f"access of {width} at element {d} is not aligned "
                          f"or past head_size {self.head_size}")
        return self.blocks[page, kv, l, slot, h, d:d + width]


def parse_groups(text):
    """`( 1, 2 ) 3` -> [[1.0, 2.0], 3.0]."""
    groups = []
    for vector, scalar in re.findall(r"\(([^()]*)\)|(\S+)", text):
        if scalar:
            groups.append(float(scalar))
        else:
            groups.append([float(x) for x in vector.split(",") if x.strip()])
    return groups


def as_ints(values):
    ints = [int(v) for v in values]
    if ints != values:
        raise Failure(f"non-integer coordinates {values}")
    return ints


def as_vector(value):
    return value if isinstance(value, list) else [value]


class Checker:

    def __init__(self, config):
        self.config = config
        self.model = PagedCacheModel(config)
        self.mismatches = []
        self.records = 0
        self.sweep = []
        self.rows_seen = set()
        self.parent_seen = set()
        self.done = False

    def expect(self, line, got, expected):
        got = np.asarray(got, dtype=np.float64)
        expected = np.asarray(expected, dtype=np.float64)
        if got.shape != expected.shape or not np.array_equal(got, expected):
            self.mismatches.append(
                f"MISMATCH '{line}': expected {expected.tolist()}")

    def record(self, line):
        match = re.match(r"^(\w+)\s*(.*)$", line)
        if not match:
            raise Failure(f"unparsable line '{line}'")
        tag, rest = match.groups()
        groups = parse_groups(rest)
        model = self.model
        self.records += 1

        def take(count):
            if len(groups) != count:
                raise Failure(f"'{line}': expected {count} groups")
            return groups

        if tag in ("sweep", "load"):
            coords, value = take(2)
            kv, l, b, h, t, d = as_ints(coords)
            value = as_vector(value)
            self.expect(line, value,
                        model.elements(kv, l, b, h, t, d, len(value)))
            if tag == "sweep":
                self.sweep.append((kv, l, b, h, t, d, len(value)))
        elif tag == "store":
            coords, value = take(2)
            kv, l, b, h, t, d = as_ints(coords)
            value = as_vector(value)
            if np.abs(value).max() > model.limit:
                raise Failure(f"'{line}': value not exact in {model.dtype}")
            model.elements(kv, l, b, h, t, d, len(value))[...] = value
        elif tag == "page_store":
            coords, value = take(2)
            kv, l, p, s, h, d = as_ints(coords)
            value = as_vector(value)
            model.page_elements(kv, l, p, s, h, d, len(value))[...] = value
        elif tag == "lookup":
            coords, value = take(2)
            b, t = as_ints(coords)
            self.expect(line, value, model.address(b, t))
        elif tag == "tile":
            coords, row = take(2)
            kv, l, b, t, h, r = as_ints(coords)
            self.expect(line, row,
                        model.elements(kv, l, b, h, t + r, 0, model.head_size))
        elif tag == "row":
            coords, row = take(2)
            p, kv, l, s, h = as_ints(coords)
            self.expect(line, row, model.blocks[p, kv, l, s, h, :])
            self.rows_seen.add((p, kv, l, s, h))
        elif tag == "parent":
            coords, chunk = take(2)
            (i,) = as_ints(coords)
            chunk = as_vector(chunk)
            if model.parent is None:
                raise Failure("'parent' record without a layout")
            self.expect(line, chunk, model.parent[i:i + len(chunk)])
            self.parent_seen.update(range(i, i + len(chunk)))
        elif tag == "cache_length":
            coords, value = take(2)
            (b,) = as_ints(coords)
            self.expect(line, value, model.cache_lengths[b])
        elif tag == "max_lengths":
            (value,) = take(1)
            self.expect(line, value, [self.config["max_seq_length"],
                                      self.config["max_cache_length"]])
        elif tag == "done":
            take(0)
            self.done = True
        else:
            raise Failure(f"unknown record '{tag}'")

    def finish(self):
        config = self.config
        model = self.model
        if not self.done:
            self.mismatches.append("MISMATCH the program did not print 'done'")
        widths = config.get("sweep_widths")
        if widths is not None:
            num_pages, kv_dim, num_layers, _, num_heads, head_size = model.shape
            expected = sorted(
                (kv, l, b, h, t, d, w) for w in widths for kv in range(kv_dim)
                for l in range(num_layers)
                for b in range(len(model.cache_lengths)) for h in range(num_heads)
                for t in range(model.cache_lengths[b])
                for d in range(0, head_size - w + 1, w))
            got = sorted(self.sweep)
            if got != expected:
                missing = sorted(set(expected) - set(got))[:5]
                extra = sorted(set(got) - set(expected))[:5]
                self.mismatches.append(
                    f"MISMATCH sweep covers {len(got)} reads, expected "
                    f"{len(expected)}; missing {missing}, unexpected {extra}")
        if config.get("full_dump"):
            if model.parent is not None:
                if len(self.parent_seen) != model.parent.size:
                    self.mismatches.append(
                        f"MISMATCH dump covers {len(self.parent_seen)} of "
                        f"{model.parent.size} parent elements")
            else:
                rows = int(np.prod(model.shape[:5]))
                if len(self.rows_seen) != rows:
                    self.mismatches.append(
                        f"MISMATCH dump covers {len(self.rows_seen)} of "
                        f"{rows} rows")


def main():
    if len(sys.argv) != 2:
        print("usage: reference.py TEST.mlir < program-output", file=sys.stderr)
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
