#!/usr/bin/env python3
# ===- generate_kernel_tests.py - writes the kernel-op CPU execution tests -=== #
#
# Part of the kvcache-mlir project.
#
# Writes the kernel-*.mlir tests of this directory: CPU execution tests of the
# kernel ops of docs/Contract.md section 3.3 (store_ragged, gather_ragged,
# copy_pages, attention_ragged), checked by kernel_reference.py. Each test is
# one configuration below; the program fills every buffer from an integer
# formula that the reference recomputes, runs the ops in order, prints every
# output row and (for the store/gather/copy tests) all of `blocks`. It also
# writes the tests of ../GPU/Emulated/: programs of the same kind run as GPU
# kernels on the GPU emulator (-kvcache-to-emulated-gpu), see emulated_tests().
#
#   python3 generate_kernel_tests.py   # rewrites the kernel-*.mlir and ../GPU/Emulated/*
#
# The output depends on nothing but this script (fixed seeds), so running it
# again rewrites the same files.
#
# The generated files are checked in; edit this script, not them.
#
# ===----------------------------------------------------------------------=== #

import json
import math
import os
import random
import textwrap

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

RUN_LINES = """\
// RUN: kvcache-opt %s -kvcache-to-cpu \\
// RUN: | mlir-runner -e main -entry-point-result=void \\
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \\
// RUN: | %python %S/kernel_reference.py %s | FileCheck %s
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true \\
// RUN: | mlir-runner -e main -entry-point-result=void \\
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils \\
// RUN: | %python %S/kernel_reference.py %s | FileCheck %s
"""

# Integer formulas [mul, mod, sub, div, seed] (see kernel_reference.py). The
# integer ones are exact in each type; UNIT ones are k / 64 with |k| <= 64, in
# [-1, 1] and exact in f16 and bf16.
INTEGER_FILL = {"f32": [7919, 4093, 2046], "f16": [7919, 4093, 2046],
                "bf16": [7919, 509, 254]}
UNIT = [7919, 127, 63, 64]


def integer_formula(dtype, seed):
    return INTEGER_FILL[dtype] + [1, seed]


def unit_formula(seed):
    return UNIT + [seed]


def ceil_div(a, b):
    return -(-a // b)


def f32(x):
    """x rounded to f32, as the shortest decimal that parses back to it."""
    return float(repr(np.float32(x)))


class Batch:
    """cache_lengths and a lookup table for sequences (cache_length, new)."""

    def __init__(self, sequences, page_size, spare_pages, seed, columns=None):
        rng = random.Random(seed)
        self.sequences = sequences
        self.cache_lengths = [c for c, _ in sequences]
        pages_needed = [ceil_div(c + n, page_size) for c, n in sequences]
        columns = columns or max(1, max(pages_needed))
        assert columns >= max(pages_needed)
        used = sum(pages_needed)
        # pages: the used ones, `spare_pages` never referenced, and the null
        # page that pads every table row.
        self.num_pages = used + spare_pages + 1
        ids = list(range(self.num_pages))
        rng.shuffle(ids)
        self.null_page = ids.pop()
        self.spare = ids[used:]
        ids = ids[:used]
        self.table = []
        for need in pages_needed:
            row, ids = ids[:need], ids[need:]
            self.table.append(row + [self.null_page] * (columns - need))
        self.batch = len(sequences)

    def new_offsets(self, start=0):
        offsets = [start]
        for _, n in self.sequences:
            offsets.append(offsets[-1] + n)
        return offsets

    def context_offsets(self):
        offsets = [0]
        for c, n in self.sequences:
            offsets.append(offsets[-1] + c + n)
        return offsets


def elt_bits(dtype):
    return {"f32": 32, "f16": 16, "bf16": 16}[dtype]


def fill_and_print_helpers(dtype):
    """@fill (a buffer from an integer formula, exact in `dtype`) and
    @begin_out (the prefix of an output row): shared by every generated
    program, here and in test/TestDialect/generate_csr_tests.py."""
    t = dtype
    trunc = ("" if t == "f32" else
             f"    %value = arith.truncf %value32 : f32 to {t}\n")
    value = "%value32" if t == "f32" else "%value"
    return f"""// buf[i] = (((i + seed) * mul) mod mod - sub) / div, exact in {t}.
func.func @fill(%buf: !flat, %seed: i64, %mul: i64, %mod: i64, %sub: i64, %div: f32) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %buf, %c0 : !flat
  scf.for %i = %c0 to %n step %c1 {{
    %i64 = arith.index_cast %i : index to i64
    %shifted = arith.addi %i64, %seed : i64
    %product = arith.muli %shifted, %mul : i64
    %hash = arith.remui %product, %mod : i64
    %centered = arith.subi %hash, %sub : i64
    %wide = arith.sitofp %centered : i64 to f32
    %value32 = arith.divf %wide, %div : f32
{trunc}    memref.store {value}, %buf[%i] : !flat
  }}
  return
}}

// Prints "out ( step, r, h ) "; the row follows.
func.func @begin_out(%step: index, %r: index, %h: index) {{
  vector.print str "out "
  %coords = vector.from_elements %step, %r, %h : vector<3xindex>
  vector.print %coords : vector<3xindex> punctuation <no_punctuation>
  vector.print str " "
  return
}}

"""


class Writer:

    def __init__(self, cfg):
        self.cfg = cfg
        self.dtype = cfg["dtype"]
        self.P, self.H, self.D = cfg["page_size"], cfg["num_heads"], cfg["head_size"]
        self.KV = 1 if cfg.get("mla") else 2
        self.L = cfg["num_layers"]
        self.N = cfg["num_pages"]
        # A continuous-batching collection: one block of P (block_tokens)
        # slots per sequence and a 1-D lookup table; the reference models it
        # as a paged cache with one table column.
        self.continuous = cfg.get("kind") == "continuous"
        self.lines = []
        self.globals = []
        self.records = 1  # done

    def emit(self, text):
        self.lines.append(text)

    def type_params(self):
        extra = ""
        if self.cfg.get("mla"):
            extra += ", mla = true"
        if self.cfg.get("assert_write_mode"):
            extra += ", assert_write_mode = 1"
        page_size = "" if self.continuous else f", page_size = {self.P}"
        return (f"{self.dtype}, num_heads = {self.H}, head_size = {self.D}"
                f"{page_size}{extra}")

    def qheads(self):
        return sorted({s["q_heads"] for s in self.cfg["steps"]
                       if s["op"] == "attention_ragged"})

    def header_types(self):
        t, KV, P, H, D, L, N = self.dtype, self.KV, self.P, self.H, self.D, self.L, self.N
        layout = self.cfg.get("layout")
        out = []
        if layout:
            out.append(f"!parent = memref<{layout['parent_shape']}x{t}>")
            out.append(f"!blocks = memref<?x{KV}x?x{P}x{H}x{D}x{t}, "
                       f"strided<[?, ?, ?, {H * D}, {D}, 1], offset: ?>>")
        else:
            out.append(f"!storage = memref<{N}x{KV}x{L}x{P}x{H}x{D}x{t}>")
            slots = "?" if self.continuous else P
            out.append(f"!blocks = memref<?x{KV}x?x{slots}x{H}x{D}x{t}>")
        kind = "continuous" if self.continuous else "paged"
        out.append(f"!collection = !kvcache.{kind}_collection<{self.type_params()}>")
        out.append(f"!cache = !kvcache.{kind}_cache<{self.type_params()}>")
        out.append(f"!rows = memref<?x{H}x{D}x{t}>")
        for hq in self.qheads():
            out.append(f"!q{hq} = memref<?x{hq}x{D}x{t}>")
        out.append(f"!flat = memref<?x{t}>")
        return "\n".join(out)

    def print_row(self, memref, indices, mtype, indent):
        """Prints a head row (head_size elements) and a newline: as one
        vector, or, past 64 elements, as a loop over chunks of at most 64
        (a line of several `( ... )` groups; short programs to JIT)."""
        t, D = self.dtype, self.D
        if D <= 64:
            return (f"{indent}%row = vector.load {memref}[{indices}, %c0] : {mtype}, vector<{D}x{t}>\n"
                    f"{indent}vector.print %row : vector<{D}x{t}>")
        chunk = max(c for c in range(1, 65) if D % c == 0)
        return (f"{indent}%chunk_size = arith.constant {chunk} : index\n"
                f"{indent}%row_size = arith.constant {D} : index\n"
                f"{indent}scf.for %d = %c0 to %row_size step %chunk_size {{\n"
                f"{indent}  %chunk = vector.load {memref}[{indices}, %d] : {mtype}, vector<{chunk}x{t}>\n"
                f"{indent}  vector.print %chunk : vector<{chunk}x{t}> punctuation <no_punctuation>\n"
                f"{indent}  vector.print str \" \"\n"
                f"{indent}}}\n"
                f"{indent}vector.print str \"\\n\"")

    def helpers(self):
        t, D = self.dtype, self.D
        text = "\n" + fill_and_print_helpers(t) + f"""// Every row of an output of step `step`.
func.func @dump_rows(%rows: !rows, %step: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %heads = arith.constant {self.H} : index
  %n = memref.dim %rows, %c0 : !rows
  scf.for %r = %c0 to %n step %c1 {{
    scf.for %h = %c0 to %heads step %c1 {{
      func.call @begin_out(%step, %r, %h) : (index, index, index) -> ()
{self.print_row("%rows", "%r, %h", "!rows", "      ")}
    }}
  }}
  return
}}
"""
        for hq in self.qheads():
            text += f"""
func.func @dump_q{hq}(%rows: !q{hq}, %step: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %heads = arith.constant {hq} : index
  %n = memref.dim %rows, %c0 : !q{hq}
  scf.for %r = %c0 to %n step %c1 {{
    scf.for %h = %c0 to %heads step %c1 {{
      func.call @begin_out(%step, %r, %h) : (index, index, index) -> ()
{self.print_row("%rows", "%r, %h", f"!q{hq}", "      ")}
    }}
  }}
  return
}}
"""
        if any(s.get("workspace") for s in self.cfg["steps"]):
            text += """
// A workspace full of NaNs: the CPU lowering must not read what it did not
// write.
func.func @fill_nan(%buf: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nan = arith.constant 0x7FC00000 : f32
  %n = memref.dim %buf, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %nan, %buf[%i] : memref<?xf32>
  }
  return
}
"""
        if self.cfg.get("full_dump") and not self.cfg.get("layout"):
            text += f"""
// Prints "row ( p, kv, l, s, h ) ROW" for every row of blocks.
func.func @dump_blocks(%blocks: !blocks) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %kv_dim = arith.constant {self.KV} : index
  %page_size = arith.constant {self.P} : index
  %heads = arith.constant {self.H} : index
  %num_pages = memref.dim %blocks, %c0 : !blocks
  %num_layers = memref.dim %blocks, %c2 : !blocks
  scf.for %p = %c0 to %num_pages step %c1 {{
    scf.for %kv = %c0 to %kv_dim step %c1 {{
      scf.for %l = %c0 to %num_layers step %c1 {{
        scf.for %s = %c0 to %page_size step %c1 {{
          scf.for %h = %c0 to %heads step %c1 {{
            vector.print str "row "
            %coords = vector.from_elements %p, %kv, %l, %s, %h : vector<5xindex>
            vector.print %coords : vector<5xindex> punctuation <no_punctuation>
            vector.print str " "
{self.print_row("%blocks", "%p, %kv, %l, %s, %h", "!blocks", "            ")}
          }}
        }}
      }}
    }}
  }}
  return
}}
"""
        if self.cfg.get("layout"):
            text += self.layout_helpers()
        return text

    def layout_helpers(self):
        t, KV, P, H, D = self.dtype, self.KV, self.P, self.H, self.D
        mul, mod, sub = self.cfg["fill"]
        return f"""
// blocks[p, kv, l, s, h, d] = (flat * {mul}) mod {mod} - {sub}, flat being the
// index linearised row-major over the shape of blocks.
func.func @fill_blocks(%blocks: !blocks) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %kv_dim = arith.constant {KV} : index
  %page_size = arith.constant {P} : index
  %heads = arith.constant {H} : index
  %head_size = arith.constant {D} : index
  %mul = arith.constant {mul} : i64
  %mod = arith.constant {mod} : i64
  %sub = arith.constant {sub} : i64
  %num_pages = memref.dim %blocks, %c0 : !blocks
  %num_layers = memref.dim %blocks, %c2 : !blocks
  scf.for %p = %c0 to %num_pages step %c1 {{
    scf.for %kv = %c0 to %kv_dim step %c1 {{
      scf.for %l = %c0 to %num_layers step %c1 {{
        scf.for %s = %c0 to %page_size step %c1 {{
          scf.for %h = %c0 to %heads step %c1 {{
            scf.for %d = %c0 to %head_size step %c1 {{
              %flat = affine.apply affine_map<(p, kv, l, s, h, d)[layers] -> (((((p * {KV} + kv) * layers + l) * {P} + s) * {H} + h) * {D} + d)>(%p, %kv, %l, %s, %h, %d)[%num_layers]
              %flat_i64 = arith.index_cast %flat : index to i64
              %product = arith.muli %flat_i64, %mul : i64
              %hash = arith.remui %product, %mod : i64
              %centered = arith.subi %hash, %sub : i64
              %value = arith.sitofp %centered : i64 to {t}
              memref.store %value, %blocks[%p, %kv, %l, %s, %h, %d] : !blocks
            }}
          }}
        }}
      }}
    }}
  }}
  return
}}

// Prints "parent ( i ) CHUNK" for every {D} elements of the buffer.
func.func @dump_parent(%parent: !flat) {{
  %c0 = arith.constant 0 : index
  %chunk = arith.constant {D} : index
  %n = memref.dim %parent, %c0 : !flat
  scf.for %i = %c0 to %n step %chunk {{
    %values = vector.load %parent[%i] : !flat, vector<{D}x{t}>
    vector.print str "parent "
    %coords = vector.from_elements %i : vector<1xindex>
    vector.print %coords : vector<1xindex> punctuation <no_punctuation>
    vector.print str " "
    vector.print %values : vector<{D}x{t}>
  }}
  return
}}
"""

    def dense(self, values):
        return json.dumps(values).replace("], [", "], [")

    def global_i32(self, name, values):
        arr = np.array(values, dtype=np.int64)
        shape = "x".join(str(s) for s in arr.shape)
        init = self.dense(values) if arr.size else "[]"
        if arr.ndim == 2 and arr.size == 0:
            init = ""
        self.globals.append(
            f'memref.global "private" constant @{name} : memref<{shape}xi32> = '
            f'dense<{init}>')
        return f"memref<{shape}xi32>"

    def alloc_filled(self, name, shape, formula):
        """Allocates [rows, heads, head_size], fills it; returns the alloc."""
        t = self.dtype
        static = "x".join(str(s) for s in shape) + f"x{t}"
        size = int(np.prod(shape))
        mul, mod, sub, div, seed = formula
        self.emit(f"  %{name} = memref.alloc() {{alignment = 64 : i64}} : memref<{static}>")
        self.emit(f"  %{name}_collapsed = memref.collapse_shape %{name} [[0, 1, 2]] : "
                  f"memref<{static}> into memref<{size}x{t}>")
        self.emit(f"  %{name}_flat = memref.cast %{name}_collapsed : memref<{size}x{t}> to !flat")
        self.emit(f"  %{name}_seed = arith.constant {seed} : i64")
        self.emit(f"  %{name}_mul = arith.constant {mul} : i64")
        self.emit(f"  %{name}_mod = arith.constant {mod} : i64")
        self.emit(f"  %{name}_sub = arith.constant {sub} : i64")
        self.emit(f"  %{name}_div = arith.constant {float(div)} : f32")
        self.emit(f"  func.call @fill(%{name}_flat, %{name}_seed, %{name}_mul, %{name}_mod, "
                  f"%{name}_sub, %{name}_div) : (!flat, i64, i64, i64, i64, f32) -> ()")
        return f"memref<{static}>"

    def lookup_table(self, name, table):
        """A global holding `table` (one row per sequence); a continuous
        collection's is 1-D (the one block of each sequence)."""
        if self.continuous:
            assert all(len(row) == 1 for row in table), "one block per sequence"
            table = [row[0] for row in table]
        return self.global_i32(name, table)

    def collection(self, name, table_global, table_type):
        kind = "continuous" if self.continuous else "paged"
        lowered = "memref<?xi32>" if self.continuous else "memref<?x?xi32>"
        self.emit(f"  %{name}_table_global = memref.get_global @{table_global} : {table_type}")
        self.emit(f"  %{name}_table = memref.cast %{name}_table_global : {table_type} to {lowered}")
        self.emit(f"  %{name} = kvcache.{kind}_collection %blocks, %cache_lengths, %{name}_table, "
                  f"%max_seq_length, %max_cache_length")
        self.emit(f"      : !blocks, memref<?xi32>, {lowered} -> !collection")

    def offsets(self, i, values):
        gtype = self.global_i32(f"offsets_{i}", values)
        self.emit(f"  %s{i}_offsets_global = memref.get_global @offsets_{i} : {gtype}")
        self.emit(f"  %s{i}_offsets = memref.cast %s{i}_offsets_global : {gtype} to memref<?xi32>")

    def step_collection(self, i, step):
        if "lookup_table" not in step:
            return "%collection"
        ttype = self.lookup_table(f"lookup_table_{i}", step["lookup_table"])
        self.collection(f"s{i}_collection", f"lookup_table_{i}", ttype)
        return f"%s{i}_collection"

    def step(self, i, step):
        op = step["op"]
        H, D = self.H, self.D
        self.emit(f"  // step {i}: {step_summary(step)}")
        if op in ("store_ragged", "gather_ragged"):
            self.offsets(i, step["offsets"])
            coll = self.step_collection(i, step)
            formula = step["new" if op == "store_ragged" else "out"]
            static = self.alloc_filled(f"s{i}_buf", (step["rows"], H, D), formula)
            self.emit(f"  %s{i}_rows = memref.cast %s{i}_buf : {static} to !rows")
            self.emit(f"  %s{i}_layer = arith.constant {step['layer']} : index")
            get = "get_key_cache" if step["kv"] == 0 else "get_value_cache"
            self.emit(f"  %s{i}_cache = kvcache.{get} {coll}[%s{i}_layer] : !collection")
            self.emit(f"  kvcache.{op} %s{i}_cache, %s{i}_rows, %s{i}_offsets "
                      f": !cache, !rows, memref<?xi32>")
            if op == "gather_ragged":
                self.emit(f"  %s{i}_step = arith.constant {i} : index")
                self.emit(f"  func.call @dump_rows(%s{i}_rows, %s{i}_step) : (!rows, index) -> ()")
                self.records += step["rows"] * H
            self.emit(f"  memref.dealloc %s{i}_buf : {static}")
        elif op == "copy_pages":
            pairs = step["pairs"]
            ptype = self.global_i32(f"pairs_{i}", pairs)
            coll = self.step_collection(i, step)
            self.emit(f"  %s{i}_pairs_global = memref.get_global @pairs_{i} : {ptype}")
            self.emit(f"  %s{i}_pairs = memref.cast %s{i}_pairs_global : {ptype} to memref<?x2xi32>")
            self.emit(f"  kvcache.copy_pages {coll}, %s{i}_pairs : !collection, memref<?x2xi32>")
        elif op == "attention_ragged":
            hq = step["q_heads"]
            self.offsets(i, step["offsets"])
            coll = self.step_collection(i, step)
            qs = self.alloc_filled(f"s{i}_q", (step["rows"], hq, D), step["q"])
            os_ = self.alloc_filled(f"s{i}_out", (step["rows"], hq, D), step["out"])
            self.emit(f"  %s{i}_q_rows = memref.cast %s{i}_q : {qs} to !q{hq}")
            self.emit(f"  %s{i}_out_rows = memref.cast %s{i}_out : {os_} to !q{hq}")
            self.emit(f"  %s{i}_layer = arith.constant {step['layer']} : index")
            self.emit(f"  %s{i}_k = kvcache.get_key_cache {coll}[%s{i}_layer] : !collection")
            self.emit(f"  %s{i}_v = kvcache.get_value_cache {coll}[%s{i}_layer] : !collection")
            scale = repr(np.float32(step["scale"]))
            ws = step.get("workspace")
            if ws:
                self.emit(f"  %s{i}_ws_alloc = memref.alloc() {{alignment = 64 : i64}} : memref<{ws}xf32>")
                self.emit(f"  %s{i}_ws = memref.cast %s{i}_ws_alloc : memref<{ws}xf32> to memref<?xf32>")
                self.emit(f"  func.call @fill_nan(%s{i}_ws) : (memref<?xf32>) -> ()")
                self.emit(f"  kvcache.attention_ragged %s{i}_q_rows, %s{i}_k, %s{i}_v, %s{i}_offsets, "
                          f"%s{i}_out_rows, %s{i}_ws {{scale = {scale} : f32}}")
                self.emit(f"      : !q{hq}, !cache, !cache, memref<?xi32>, !q{hq}, memref<?xf32>")
            else:
                self.emit(f"  kvcache.attention_ragged %s{i}_q_rows, %s{i}_k, %s{i}_v, %s{i}_offsets, "
                          f"%s{i}_out_rows {{scale = {scale} : f32}}")
                self.emit(f"      : !q{hq}, !cache, !cache, memref<?xi32>, !q{hq}")
            self.emit(f"  %s{i}_step = arith.constant {i} : index")
            self.emit(f"  func.call @dump_q{hq}(%s{i}_out_rows, %s{i}_step) : (!q{hq}, index) -> ()")
            self.records += step["rows"] * hq
            if ws:
                self.emit(f"  memref.dealloc %s{i}_ws_alloc : memref<{ws}xf32>")
            self.emit(f"  memref.dealloc %s{i}_q : {qs}")
            self.emit(f"  memref.dealloc %s{i}_out : {os_}")
        else:
            raise ValueError(op)
        self.emit("")

    def main(self, name="main"):
        cfg = self.cfg
        t, KV, P, H, D, L, N = self.dtype, self.KV, self.P, self.H, self.D, self.L, self.N
        self.emit(f"func.func @{name}() {{")
        self.emit(f"  %max_seq_length = arith.constant {cfg['max_seq_length']} : i32")
        self.emit(f"  %max_cache_length = arith.constant {cfg['max_cache_length']} : i32")
        layout = cfg.get("layout")
        if layout:
            sentinel = layout["sentinel"]
            size = layout["parent_size"]
            self.emit(f"  %parent = memref.alloc() {{alignment = 64 : i64}} : !parent")
            rank = len(layout["parent_shape"].split("x"))
            dims = ", ".join(str(k) for k in range(rank))
            self.emit(f"  %parent_collapsed = memref.collapse_shape %parent [[{dims}]] : "
                      f"!parent into memref<{size}x{t}>")
            self.emit(f"  %parent_flat = memref.cast %parent_collapsed : memref<{size}x{t}> to !flat")
            self.emit("  %zero = arith.constant 0 : i64")
            self.emit("  %one = arith.constant 1 : i64")
            self.emit(f"  %minus_sentinel = arith.constant {-sentinel} : i64")
            self.emit("  %unit = arith.constant 1.0 : f32")
            self.emit("  func.call @fill(%parent_flat, %zero, %zero, %one, %minus_sentinel, %unit) "
                      ": (!flat, i64, i64, i64, i64, f32) -> ()")
            self.emit(f"  %view = memref.subview %parent{layout['subview']}")
            self.emit(f"      : !parent to {layout['view_type']}")
            self.emit(f"  %blocks = memref.cast %view : {layout['view_type']} to !blocks")
            self.emit("  func.call @fill_blocks(%blocks) : (!blocks) -> ()")
        else:
            mul, mod, sub = cfg["fill"]
            div = cfg.get("fill_div", 1)
            size = N * KV * L * P * H * D
            self.emit(f"  %storage = memref.alloc() {{alignment = 64 : i64}} : !storage")
            self.emit(f"  %storage_collapsed = memref.collapse_shape %storage [[0, 1, 2, 3, 4, 5]] : "
                      f"!storage into memref<{size}x{t}>")
            self.emit(f"  %storage_flat = memref.cast %storage_collapsed : memref<{size}x{t}> to !flat")
            self.emit("  %fill_seed = arith.constant 0 : i64")
            self.emit(f"  %fill_mul = arith.constant {mul} : i64")
            self.emit(f"  %fill_mod = arith.constant {mod} : i64")
            self.emit(f"  %fill_sub = arith.constant {sub} : i64")
            self.emit(f"  %fill_div = arith.constant {float(div)} : f32")
            self.emit("  func.call @fill(%storage_flat, %fill_seed, %fill_mul, %fill_mod, %fill_sub, "
                      "%fill_div) : (!flat, i64, i64, i64, i64, f32) -> ()")
            self.emit("  %blocks = memref.cast %storage : !storage to !blocks")
        ltype = self.global_i32("cache_lengths", cfg["cache_lengths"])
        ttype = self.lookup_table("lookup_table", cfg["lookup_table"])
        self.emit(f"  %cache_lengths_global = memref.get_global @cache_lengths : {ltype}")
        self.emit(f"  %cache_lengths = memref.cast %cache_lengths_global : {ltype} to memref<?xi32>")
        self.collection("collection", "lookup_table", ttype)
        self.emit("")
        for i, step in enumerate(cfg["steps"]):
            self.step(i, step)
        if cfg.get("full_dump"):
            if layout:
                self.emit("  func.call @dump_parent(%parent_flat) : (!flat) -> ()")
                self.records += layout["parent_size"] // D
            else:
                self.emit("  func.call @dump_blocks(%blocks) : (!blocks) -> ()")
                self.records += N * KV * L * P * H
        self.emit('  vector.print str "done\\n"')
        if layout:
            self.emit("  memref.dealloc %parent : !parent")
        else:
            self.emit("  memref.dealloc %storage : !storage")
        self.emit("  return")
        self.emit("}")


def step_summary(step):
    op = step["op"]
    if op in ("store_ragged", "gather_ragged"):
        what = "K" if step["kv"] == 0 else "V"
        table = ", another lookup table" if "lookup_table" in step else ""
        return (f"{op} {what} of layer {step['layer']}, {step['rows']} rows, "
                f"offsets {step['offsets']}{table}")
    if op == "copy_pages":
        return f"copy_pages {step['pairs']}"
    ws = f", workspace of {step['workspace']}" if step.get("workspace") else ""
    return (f"attention_ragged layer {step['layer']}, q_heads {step['q_heads']}, "
            f"{step['rows']} rows, offsets {step['offsets']}, scale "
            f"{repr(np.float32(step['scale']))}{ws}")


REFERENCE_KEYS = ("dtype", "num_pages", "kv_dim", "num_layers", "page_size", "num_heads",
                  "head_size", "cache_lengths", "lookup_table", "max_seq_length",
                  "max_cache_length", "fill", "fill_div", "layout", "full_dump", "steps")


def render(cfg, description, extra_run="", extra_checks="", extra_text="",
           main_name="main", run_lines=RUN_LINES):
    w = Writer(cfg)
    cfg["kv_dim"] = w.KV
    w.main(main_name)
    body = "\n".join(w.lines)
    reference = {k: cfg[k] for k in REFERENCE_KEYS if k in cfg}
    if "layout" in reference:
        reference["layout"] = {k: v for k, v in cfg["layout"].items()
                               if k in ("parent_size", "offset", "strides", "sentinel")}
    text = "// Generated by generate_kernel_tests.py; edit that script, not this file.\n"
    text += run_lines + extra_run + "\n"
    text += "".join(f"// {line}".rstrip() + "\n" for line in description.strip().split("\n"))
    text += "\n// CHECK-NOT: MISMATCH\n"
    text += f"// CHECK: OK {w.records} records\n"
    text += extra_checks
    text += "\n// REFERENCE: " + json.dumps(reference) + "\n\n"
    text += w.header_types() + "\n\n"
    text += "\n".join(w.globals) + "\n"
    text += w.helpers() + "\n"
    text += extra_text
    text += body + "\n"
    return text


# ----------------------------------------------------------------------------
# store_ragged / gather_ragged / copy_pages


def ragged_config(dtype, page_size, num_heads, head_size, num_layers, sequences,
                  seed, spare_pages=3, mla=False, columns=None):
    batch = Batch(sequences, page_size, spare_pages, seed, columns)
    cfg = {
        "dtype": dtype, "page_size": page_size, "num_heads": num_heads,
        "head_size": head_size, "num_layers": num_layers, "mla": mla,
        "num_pages": batch.num_pages, "cache_lengths": batch.cache_lengths,
        "lookup_table": batch.table,
        "max_seq_length": max(n for _, n in sequences),
        "max_cache_length": max(c + n for c, n in sequences),
        "fill": INTEGER_FILL[dtype], "full_dump": True, "steps": [],
    }
    return cfg, batch


def store(cfg, kv, layer, offsets, rows, seed):
    cfg["steps"].append({"op": "store_ragged", "kv": kv, "layer": layer, "offsets": offsets,
                         "rows": rows, "new": integer_formula(cfg["dtype"], seed)})


def gather(cfg, kv, layer, offsets, seed, table=None):
    step = {"op": "gather_ragged", "kv": kv, "layer": layer, "offsets": offsets,
            "rows": offsets[-1], "out": integer_formula(cfg["dtype"], seed)}
    if table is not None:
        step["lookup_table"] = table
    cfg["steps"].append(step)


def copy(cfg, pairs):
    cfg["steps"].append({"op": "copy_pages", "pairs": pairs})


def store_and_gather(cfg, batch, layers_kv):
    """Stores the new rows of every (kv, layer) in layers_kv and gathers the
    whole contexts back; returns the next seed and the context offsets."""
    offsets = batch.new_offsets()
    seed = 11
    for kv, layer in layers_kv:
        store(cfg, kv, layer, offsets, offsets[-1], seed)
        seed += 1000
    ctx = batch.context_offsets()
    for kv, layer in layers_kv:
        gather(cfg, kv, layer, ctx, seed)
        seed += 1000
    return seed, ctx


def standard_ragged_steps(cfg, batch, layers_kv):
    """Stores the new rows of every (kv, layer) in layers_kv, gathers the
    contexts back, copies pages, gathers through a table that uses the
    copies, and does the zero-row cases."""
    seed, ctx = store_and_gather(cfg, batch, layers_kv)
    # Copy-on-write: the pages of the first nonempty sequence to spare pages,
    # and a table that points that sequence at the copies.
    b = next(i for i, (c, n) in enumerate(batch.sequences) if c + n)
    need = ceil_div(sum(batch.sequences[b]), cfg["page_size"])
    sources = batch.table[b][:need]
    destinations = batch.spare[:need]
    assert len(destinations) == need, "not enough spare pages"
    pairs = [[s, d] for s, d in zip(sources, destinations)]
    copy(cfg, pairs)
    table = [list(row) for row in batch.table]
    table[b][:need] = destinations
    kv, layer = layers_kv[-1]
    gather(cfg, kv, layer, ctx, seed, table)
    seed += 1000
    return seed


def ragged_tests():
    tests = {}

    # page_size 1, f32, head_size 12 (48-byte rows), 2 layers.
    cfg, batch = ragged_config("f32", 1, 2, 12, 2, [(3, 2), (0, 0), (2, 3), (4, 1)],
                               seed=1, spare_pages=5)
    seed = standard_ragged_steps(cfg, batch, [(0, 0), (1, 0), (0, 1), (1, 1)])
    # Rows outside [offsets[0], offsets[batch]) of `new` are not stored: a
    # buffer with one leading and two trailing unused rows.
    offsets = [1, 2, 2, 3, 3]
    store(cfg, 1, 1, offsets, 5, seed)
    gather(cfg, 1, 1, [0, 4, 4, 9, 10], seed + 1)
    # (and partial contexts gathered back.)
    # Zero rows in total: an empty buffer, and rows that no sequence owns.
    store(cfg, 0, 1, [0, 0, 0, 0, 0], 0, seed + 2)
    store(cfg, 0, 0, [2, 2, 2, 2, 2], 3, seed + 3)
    gather(cfg, 0, 0, [0, 0, 0, 0, 0], seed + 4)
    tests["kernel-ragged-page-size-1-f32.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on an f32 cache with one token
per page (every token ends a page) and head_size 12, 2 layers, checked
against the numpy model of kernel_reference.py: the new rows of K and V of
both layers are stored, the whole contexts gathered back, pages copied
(copy-on-write of sequence 0) and gathered through a table pointing at the
copies; a store whose offsets skip leading and trailing rows of `new`; zero
rows in total (an empty buffer; offsets all equal); an empty sequence
(offsets equal). Every gathered row (the rows of `out` no sequence owns keep
their contents) and then all of blocks are printed and compared.
""")

    # page_size 5, f16, head_size 96, 3 layers; sequence 0 ends on a page
    # boundary (7 + 3 = 10), sequence 2 has no new rows.
    cfg, batch = ragged_config("f16", 5, 2, 96, 3, [(7, 3), (0, 4), (10, 0), (3, 9)],
                               seed=2, spare_pages=3)
    standard_ragged_steps(cfg, batch, [(0, 2), (1, 2), (0, 0), (1, 1)])
    tests["kernel-ragged-page-size-5-f16.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on an f16 cache with 5 tokens per
page, 2 heads of 96, 3 layers (K and V of layer 2, K of 0, V of 1 written),
against kernel_reference.py. Sequence 0 (7 cached + 3 new) ends exactly on a
page boundary, sequence 1 is empty before the step, sequence 2 has no new
rows (offsets equal). Gathers of every context, a copy_pages of sequence 0's
pages, a gather through a table pointing at the copies, then all of blocks.
""")

    # page_size 16, bf16, head_size 5 (10-byte rows: scalar accesses).
    cfg, batch = ragged_config("bf16", 16, 3, 5, 2, [(13, 3), (16, 17), (0, 1), (0, 0)],
                               seed=3, spare_pages=3)
    standard_ragged_steps(cfg, batch, [(0, 0), (1, 0), (0, 1), (1, 1)])
    tests["kernel-ragged-page-size-16-bf16.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on a bf16 cache with 16 tokens per
page, 3 heads of 5 elements (rows not a multiple of 16 bytes), 2 layers,
against kernel_reference.py. Sequence 0 (13 + 3) ends exactly on a page
boundary, sequence 1 (16 + 17) starts a new page and spills into a third,
sequence 2 is empty with one new row, sequence 3 is empty with none. Then
copy_pages, a gather through the copies and all of blocks.
""")

    # page_size 16, f16, head_size 3, 4 heads.
    cfg, batch = ragged_config("f16", 16, 4, 3, 2, [(5, 11), (31, 2), (0, 0), (40, 16)],
                               seed=4, spare_pages=3)
    standard_ragged_steps(cfg, batch, [(1, 1), (0, 1), (1, 0)])
    tests["kernel-ragged-head-size-3-f16.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on an f16 cache with 4 heads of 3
elements, 16 tokens per page, 2 layers, against kernel_reference.py.
Sequences 0 (5 + 11) and 3 (40 + 16) end exactly on page boundaries,
sequence 2 is empty with no new rows. Then a copy_pages of sequence 0's
page, a gather through the copy and all of blocks.
""")

    # page_size 16, f16, head_size 128: the vector path.
    cfg, batch = ragged_config("f16", 16, 2, 128, 2, [(17, 15), (0, 3), (5, 0), (30, 20)],
                               seed=5, spare_pages=3)
    standard_ragged_steps(cfg, batch, [(0, 0), (1, 0), (0, 1), (1, 1)])
    tests["kernel-ragged-page-size-16-f16.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on an f16 cache with 2 heads of
128 and 16 tokens per page (rows move as whole vectors), 2 layers, against
kernel_reference.py. Sequence 0 (17 + 15) ends exactly on a page boundary,
sequence 2 has no new rows. Then copy_pages of two pages, a gather through
the copies and all of blocks.
""")

    # page_size 128, f32, head_size 128, one head.
    cfg, batch = ragged_config("f32", 128, 1, 128, 2, [(120, 8), (0, 130), (128, 0)],
                               seed=6, spare_pages=1)
    standard_ragged_steps(cfg, batch, [(0, 1), (1, 1), (1, 0)])
    tests["kernel-ragged-page-size-128-f32.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on an f32 cache with 128 tokens per
page, one head of 128, 2 layers, against kernel_reference.py. Sequence 0
(120 + 8) ends exactly on a page boundary, sequence 1 (0 + 130) spills two
rows into its second page, sequence 2 has a full page and no new rows. Then
a copy_pages of sequence 0's page, a gather through the copy and all of
blocks.
""")

    # MLA: K only, bf16, head_size 576, page_size 4.
    cfg, batch = ragged_config("bf16", 4, 1, 576, 2, [(2, 2), (5, 2), (0, 0)],
                               seed=7, spare_pages=2, mla=True)
    offsets = batch.new_offsets()
    store(cfg, 0, 0, offsets, offsets[-1], 21)
    store(cfg, 0, 1, offsets, offsets[-1], 22)
    ctx = batch.context_offsets()
    gather(cfg, 0, 1, ctx, 23)
    pairs = [[batch.table[1][0], batch.spare[0]], [batch.table[1][1], batch.spare[1]]]
    copy(cfg, pairs)
    table = [list(row) for row in batch.table]
    table[1][:2] = batch.spare[:2]
    gather(cfg, 0, 0, ctx, 24, table)
    gather(cfg, 0, 1, ctx, 25, table)
    tests["kernel-ragged-mla-bf16.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on an MLA collection (kv_dim 1, K
only) of bf16 with one head of 576 and 4 tokens per page, 2 layers, against
kernel_reference.py: copy_pages copies the K pages of every layer and
nothing else. Sequence 0 (2 + 2) ends exactly on a page boundary, sequence 2
is empty with no new rows. All of blocks is dumped at the end.
""")

    # A strided view of a bigger buffer (dynamic outer strides and offset):
    # layers 1..2 of 3, pages 1..6 of 7.
    P, H, D, L, N = 5, 2, 8, 2, None
    cfg, batch = ragged_config("f16", 5, 2, 8, 2, [(4, 6), (0, 2), (9, 0)], seed=8,
                               spare_pages=2)
    N = batch.num_pages
    parent_shape = (N + 1, 2, L + 1, P, H, D)
    s2 = P * H * D
    s1 = (L + 1) * s2
    s0 = 2 * s1
    offset = s0 + s2
    cfg["layout"] = {
        "parent_size": int(np.prod(parent_shape)), "offset": offset,
        "strides": [s0, s1, s2], "sentinel": 2047,
        "parent_shape": "x".join(str(x) for x in parent_shape),
        "subview": f"[1, 0, 1, 0, 0, 0] [{N}, 2, {L}, {P}, {H}, {D}] [1, 1, 1, 1, 1, 1]",
        "view_type": (f"memref<{N}x2x{L}x{P}x{H}x{D}xf16, strided<[{s0}, {s1}, {s2}, "
                      f"{H * D}, {D}, 1], offset: {offset}>>"),
    }
    standard_ragged_steps(cfg, batch, [(0, 0), (1, 0), (0, 1), (1, 1)])
    tests["kernel-ragged-strided-f16.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on an f16 cache whose blocks is a
memref.subview of a bigger buffer (pages 1.. of one more, layers 1..2 of 3:
outer strides and offset dynamic in the blocks type), 5 tokens per page, 2
heads of 8, against kernel_reference.py. Sequence 0 (4 + 6) ends exactly on
a page boundary. After the stores, gathers and a copy_pages, the whole
parent buffer is dumped: the rest of it keeps the sentinel 2047.
""")
    return tests


# ----------------------------------------------------------------------------
# attention_ragged


def attention_config(dtype, page_size, num_heads, head_size, num_layers, sequences, seed,
                     spare_pages=0):
    batch = Batch(sequences, page_size, spare_pages, seed)
    cfg = {
        "dtype": dtype, "page_size": page_size, "num_heads": num_heads,
        "head_size": head_size, "num_layers": num_layers,
        "num_pages": batch.num_pages, "cache_lengths": batch.cache_lengths,
        "lookup_table": batch.table,
        "max_seq_length": max(n for _, n in sequences),
        "max_cache_length": max(c + n for c, n in sequences),
        "fill": UNIT[:3], "fill_div": UNIT[3], "steps": [],
    }
    return cfg, batch


def attention_steps(cfg, batch, group, scale, layers, workspace=None, seed=100,
                    padded=False):
    """For each layer: store the new K and V rows, then attention (and again
    with a workspace; and, if padded, with q/out rows offset by one and two
    more rows that no sequence owns, which attention must leave alone)."""
    offsets = batch.new_offsets()
    rows = offsets[-1]
    q_heads = group * cfg["num_heads"]
    for layer in layers:
        for kv in (0, 1):
            cfg["steps"].append({"op": "store_ragged", "kv": kv, "layer": layer,
                                 "offsets": offsets, "rows": rows,
                                 "new": unit_formula(seed)})
            seed += 1000
        variants = [None] + ([workspace] if workspace else [])
        for ws in variants:
            step = {"op": "attention_ragged", "layer": layer, "offsets": offsets,
                    "rows": rows, "q_heads": q_heads, "scale": f32(scale),
                    "q": unit_formula(seed), "out": unit_formula(seed + 500)}
            if ws:
                step["workspace"] = ws
            cfg["steps"].append(step)
        if padded:
            cfg["steps"].append({"op": "attention_ragged", "layer": layer,
                                 "offsets": [o + 1 for o in offsets], "rows": rows + 2,
                                 "q_heads": q_heads, "scale": f32(scale),
                                 "q": unit_formula(seed + 250), "out": unit_formula(seed + 750)})
        seed += 1000


def attention_tests():
    tests = {}

    cfg, batch = attention_config("f32", 1, 2, 8, 2, [(0, 1), (0, 4), (5, 1), (6, 3), (4, 0)],
                                  seed=11)
    attention_steps(cfg, batch, 1, 1 / math.sqrt(8), [1, 0], workspace=64, padded=True)
    tests["kernel-attention-page-size-1-f32.mlir"] = (cfg, """
attention_ragged on an f32 cache with one token per page, 2 KV heads of 8,
no GQA (q_heads 2), 2 layers, against the float64 numpy reference of
kernel_reference.py (relative error 1e-3). Per layer the step's new K and V
rows are stored with store_ragged first, then attention runs without and
with a workspace, and on q/out buffers with a leading and a trailing row
that no sequence owns (their contents must stay). Sequences (cache_length, new rows): (0, 1) an empty
context, (0, 4) a prefill, (5, 1) a decode, (6, 3) a chunked prefill (causal
limit within the step), (4, 0) no rows.
""")

    cfg, batch = attention_config("f16", 3, 2, 64, 1, [(0, 1), (11, 1), (9, 3), (0, 7), (2, 0)],
                                  seed=12)
    attention_steps(cfg, batch, 2, 1 / math.sqrt(64), [0], workspace=256)
    tests["kernel-attention-page-size-3-f16.mlir"] = (cfg, """
attention_ragged on an f16 cache with 3 tokens per page, 2 KV heads of 64,
GQA group 2 (q_heads 4), against the float64 numpy reference of
kernel_reference.py (absolute error 2e-3, values in [-1, 1]). The new K/V
rows are stored with store_ragged first. Sequences (cache_length, new rows):
(0, 1), (11, 1) decode, (9, 3) ending on a page boundary, (0, 7) prefill,
(2, 0) no rows. Without and with a workspace.
""")

    cfg, batch = attention_config("f32", 16, 2, 128, 2, [(310, 1), (0, 1), (33, 5), (300, 2)],
                                  seed=13)
    attention_steps(cfg, batch, 4, 0.5, [1], workspace=8192)
    tests["kernel-attention-page-size-16-f32.mlir"] = (cfg, """
attention_ragged on an f32 cache with 16 tokens per page, 2 KV heads of 128,
GQA group 4 (q_heads 8), scale 0.5 (peaked softmax), against the float64
numpy reference of kernel_reference.py (relative error 1e-3). Long contexts:
(310, 1) decode over 311 keys, (300, 2); also (0, 1) and (33, 5). Without
and with a workspace.
""")

    cfg, batch = attention_config("f16", 128, 1, 4, 1, [(350, 1), (0, 1), (127, 1), (200, 6),
                                                        (0, 9)], seed=14)
    attention_steps(cfg, batch, 8, 2.0, [0], workspace=1024)
    tests["kernel-attention-page-size-128-f16.mlir"] = (cfg, """
attention_ragged on an f16 cache with 128 tokens per page, one KV head of 4,
GQA group 8 (q_heads 8), scale 2, against the float64 numpy reference of
kernel_reference.py (absolute error 2e-3). Sequences (cache_length, new
rows): (350, 1) a long decode over three pages, (0, 1), (127, 1) ending on a
page boundary, (200, 6), (0, 9). Without and with a workspace.
""")

    cfg, batch = attention_config("bf16", 16, 2, 64, 2, [(40, 1), (0, 3), (16, 16), (70, 2)],
                                  seed=15)
    attention_steps(cfg, batch, 1, 0.5, [0, 1])
    tests["kernel-attention-page-size-16-bf16.mlir"] = (cfg, """
attention_ragged on a bf16 cache with 16 tokens per page, 2 KV heads of 64,
no GQA, 2 layers, scale 0.5, against the float64 numpy reference of
kernel_reference.py (absolute error 1.6e-2). Sequences (cache_length, new rows): (40, 1),
(0, 3), (16, 16) ending on a page boundary, (70, 2).
""")

    cfg, batch = attention_config("f16", 16, 4, 128, 1, [(0, 1), (15, 1), (16, 1), (47, 1),
                                                         (320, 1)], seed=16)
    attention_steps(cfg, batch, 2, 1 / math.sqrt(128), [0], workspace=4096)
    tests["kernel-attention-decode-f16.mlir"] = (cfg, """
attention_ragged decode (one row per sequence) on an f16 cache with 16
tokens per page, 4 KV heads of 128, GQA group 2 (q_heads 8), against the
float64 numpy reference of kernel_reference.py (absolute error 2e-3).
Contexts of 1, 16 (the new token ends a page), 17, 48 and 321 keys. Without
and with a workspace.
""")
    return tests


# ----------------------------------------------------------------------------
# Continuous batching (!kvcache.continuous_collection)
#
# One block of `block_tokens` slots per sequence and a 1-D lookup table. The
# programs are those of the paged tests with the continuous types; the
# reference models the cache as a paged one whose page size is block_tokens
# and whose lookup table has one column (the same addresses:
# blocks[lookup_table[b], kv, l, t, h, d]). There is no copy_pages: a gather
# through another table (a sequence pointed at a block nobody wrote) shows
# that every access goes through the table.


def continuous_config(dtype, block_tokens, num_heads, head_size, num_layers, sequences,
                      seed, spare_blocks=2, mla=False, attention=False):
    batch = Batch(sequences, block_tokens, spare_blocks, seed, columns=1)
    cfg = {
        "kind": "continuous", "dtype": dtype, "page_size": block_tokens,
        "num_heads": num_heads, "head_size": head_size, "num_layers": num_layers,
        "mla": mla, "num_pages": batch.num_pages,
        "cache_lengths": batch.cache_lengths, "lookup_table": batch.table,
        "max_seq_length": max(n for _, n in sequences),
        "max_cache_length": max(c + n for c, n in sequences), "steps": [],
    }
    if attention:
        cfg.update({"fill": UNIT[:3], "fill_div": UNIT[3]})
    else:
        cfg.update({"fill": INTEGER_FILL[dtype], "full_dump": True})
    return cfg, batch


def continuous_ragged_steps(cfg, batch, layers_kv):
    """Stores the new rows of every (kv, layer) in layers_kv, gathers the
    contexts back, gathers through a table that points the first nonempty
    sequence at a spare block, and stores no rows at all."""
    seed, ctx = store_and_gather(cfg, batch, layers_kv)
    b = next(i for i, (c, n) in enumerate(batch.sequences) if c + n)
    table = [list(row) for row in batch.table]
    table[b] = [batch.spare[0]]
    kv, layer = layers_kv[0]
    gather(cfg, kv, layer, ctx, seed, table)
    store(cfg, kv, layer, [0] * (batch.batch + 1), 0, seed + 1)
    return cfg


def continuous_tests():
    tests = {}
    cfg, batch = continuous_config("f16", 13, 2, 24, 2, [(7, 3), (0, 4), (10, 0), (3, 10)],
                                   seed=21)
    continuous_ragged_steps(cfg, batch, [(0, 0), (1, 0), (0, 1), (1, 1)])
    tests["kernel-continuous-ragged-block-13-f16.mlir"] = (cfg, """
store_ragged and gather_ragged on a continuous-batching f16 collection
(!kvcache.continuous_collection: one block of 13 token slots per sequence, a
1-D lookup table, block_tokens dynamic in the blocks type), 2 heads of 24, 2
layers, against kernel_reference.py (which models it as pages of 13 tokens
and a one-column table). Sequences (cache_length, new rows): (7, 3), (0, 4),
(10, 0) no new rows, (3, 10) filling its block exactly. K and V of both layers
stored and gathered back; a gather through a table pointing sequence 0 at a
spare block; a store of no rows; then all of blocks.
""")

    cfg, batch = continuous_config("bf16", 1, 1, 64, 2, [(0, 1), (1, 0), (0, 0), (0, 1)],
                                   seed=22, mla=True)
    continuous_ragged_steps(cfg, batch, [(0, 0), (0, 1)])
    tests["kernel-continuous-ragged-block-1-mla-bf16.mlir"] = (cfg, """
store_ragged and gather_ragged on a continuous-batching MLA (K only) bf16
collection with blocks of one token slot, one head of 64, 2 layers, against
kernel_reference.py. Sequences (cache_length, new rows): (0, 1), (1, 0),
(0, 0), (0, 1). Stores, gathers of every context, a gather through another
table, a store of no rows, then all of blocks.
""")

    cfg, batch = continuous_config("f32", 40, 2, 16, 2,
                                   [(0, 1), (30, 1), (9, 3), (0, 7), (5, 0)],
                                   seed=23, attention=True)
    attention_steps(cfg, batch, 2, 1 / math.sqrt(16), [1, 0], workspace=512, padded=True)
    tests["kernel-continuous-attention-f32.mlir"] = (cfg, """
attention_ragged on a continuous-batching f32 collection (blocks of 40 token
slots), 2 KV heads of 16, GQA group 2, 2 layers, against the float64
reference of kernel_reference.py (relative error 1e-3). The new K and V rows
are stored with store_ragged first; attention runs without and with a
workspace and on padded q/out rows. Sequences (cache_length, new rows):
(0, 1), (30, 1), (9, 3), (0, 7), (5, 0).
""")

    cfg, batch = continuous_config("f16", 4096, 1, 8, 1, [(4000, 1), (0, 2), (2047, 1)],
                                   seed=24, spare_blocks=1, attention=True)
    attention_steps(cfg, batch, 4, 1 / math.sqrt(8), [0], workspace=4096)
    tests["kernel-continuous-attention-block-4096-f16.mlir"] = (cfg, """
attention_ragged on a continuous-batching f16 collection with blocks of 4096
token slots (a long max_seq_len), one KV head of 8, GQA group 4, against the
float64 reference of kernel_reference.py (absolute error 2e-3): a decode over
4001 keys, a prefill of 2 rows, a decode over 2048 keys. Without and with a
workspace.
""")
    return tests


# ----------------------------------------------------------------------------
# The kernel ops on the GPU emulator (test/Integration/GPU/Emulated/)
#
# The same kind of programs, lowered with -kvcache-to-emulated-gpu: every
# kernel op runs as a GPU kernel on libKVCacheGPUEmulator.so (which checks
# races, barriers, bounds and uninitialised reads and aborts on a finding),
# against kernel_reference.py. Each program is compiled once and run once per
# emulator order (KVCACHE_EMU_ORDER: the order of blocks and of thread
# resumption; a correct kernel gives the same result in every order). Some
# configurations run convert-kvcache-to-gpu first with a small max-blocks
# (blocks visit several rows, pairs or passes) or with keys-per-split and
# max-splits (the context splits and the merge kernel runs); the pipeline
# then finds no kernel op left and lowers the launches. One run of each
# configuration writes the emulator's profile (one JSON line per launch) and
# FileCheck compares the launches, in order, with their expected grids.

EMULATED_DIR = os.path.join(HERE, "..", "GPU", "Emulated")

EMU_RUNNER = ("mlir-runner %t.mlir -e main -entry-point-result=void \\\n"
              "// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils,"
              "%kvcache_emulator \\\n"
              "// RUN: | %python %S/../../CPU/kernel_reference.py %s | FileCheck %s\n")

# convert-kvcache-to-gpu's defaults (include/KVCache/Conversion/Passes.td).
GPU_DEFAULTS = {"max-blocks": 65535, "max-splits": 16, "keys-per-split": 512,
                "threads-per-block": 256, "chunks-in-flight": 8}

# Configurations kept out of the suite: {name: reason}. Empty: every
# configuration below passes in every order.
KNOWN_FAILURES = {}


def emulated_run_lines(emu):
    """RUN lines of an emulated test. emu: chip, checked, gpu (options of a
    convert-kvcache-to-gpu run before the pipeline, or None), orders (one run
    each), profile (the order whose run writes and checks the profile)."""
    chip = emu["chip"]
    pipeline = f"chip={chip}" + (" checked=true" if emu.get("checked") else "")
    first = ""
    if emu.get("gpu"):
        options = " ".join([f"chip={chip}"] + [f"{k}={v}" for k, v in emu["gpu"].items()])
        first = f' -convert-kvcache-to-gpu="{options}"'
    text = f'// RUN: kvcache-opt %s{first} -kvcache-to-emulated-gpu="{pipeline}" -o %t.mlir\n'
    for order in emu["orders"]:
        env = f"KVCACHE_EMU_ORDER={order}"
        if order == emu.get("profile"):
            text += "// RUN: rm -f %t.profile\n"
            env += " KVCACHE_EMU_PROFILE=%t.profile"
        text += f"// RUN: env {env} {EMU_RUNNER}"
    if emu.get("profile"):
        text += "// RUN: FileCheck %s --check-prefix=PROFILE < %t.profile\n"
    return text


# SMs of the chip's flagship, the default of convert-kvcache-to-gpu's
# sm-count (getFlagshipSMCount).
FLAGSHIP_SMS = {"sm_75": 40, "sm_80": 108, "sm_90": 132}
# The most blocks of 128 threads one SM holds (64 warps).
MAX_BLOCKS_PER_SM = 16


def attention_splits(cfg, step, gpu, chip, grid_x):
    """The host's split count (docs/KernelABI.md): min(wanted, workspace
    capacity, fill, max-splits), fill being the blocks the GPU holds (sm-count
    x the kernel's estimated blocks per SM) over the blocks of one split
    (grid_x x kv heads). The estimate is the compiler's; here it is bounded:
    between 1 and 16 blocks per SM, so the configurations below keep the fill
    from binding (one block per SM already fills none of them) or, with a
    small sm-count, make it bind to one split."""
    ws = step.get("workspace")
    if not ws:
        return 1
    per_split = step["rows"] * step["q_heads"] * (cfg["head_size"] + 2)
    wanted = ceil_div(cfg["max_cache_length"], gpu["keys-per-split"])
    splits = max(1, min(wanted, ws // max(per_split, 1), gpu["max-splits"]))
    blocks = grid_x * cfg["num_heads"]
    sms = gpu.get("sm-count") or FLAGSHIP_SMS[chip]
    if sms * MAX_BLOCKS_PER_SM // blocks == 0:
        return 1  # the batch fills the GPU: no split
    assert sms // blocks >= splits, (
        f"the fill bound may bind ({sms} SMs, {blocks} blocks per split): "
        "choose another configuration")
    return splits


def attention_tensor_cores(cfg, chip, group):
    """Whether attention runs on tensor cores (docs/KernelABI.md, "Which
    attention kernel"): sm_80 or newer, f16/bf16, head_size 64, 128 or 256,
    and the register estimate within bounds (group <= 256 at 64 and 128, <= 32
    at 256)."""
    D = cfg["head_size"]
    limit = 32 if D == 256 else 256
    return (int(chip[3:]) >= 80 and cfg["dtype"] in ("f16", "bf16")
            and D in (64, 128, 256) and group <= limit)


def attention_tile_rows(cfg, chip, group):
    """The rows of a query tile when the host launches the query-tile kernel
    (docs/KernelABI.md, "Which attention kernel"), else 0: tensor cores, a
    tile of (128, or 64 at head_size 256) // group rows holding more than
    one row, and max_seq_length >= 2 with max_seq_length * group >= 16."""
    tile_rows = (64 if cfg["head_size"] > 128 else 128) // group
    seq = cfg["max_seq_length"]
    if (attention_tensor_cores(cfg, chip, group) and tile_rows > 1
            and seq >= 2 and seq * group >= 16):
        return tile_rows
    return 0


def attention_kernel(cfg, step, gpu, chip):
    """The attention kernel the host launches for `step` and its grid's x:
    the query-tile kernel over ceil(max_seq_length / tile rows) slots per
    sequence, or the decode kernel over the rows."""
    tile_rows = attention_tile_rows(cfg, chip, step["q_heads"] // cfg["num_heads"])
    if tile_rows:
        slots = len(cfg["cache_lengths"]) * ceil_div(cfg["max_seq_length"], tile_rows)
        return "attention_tiles", min(slots, gpu["max-blocks"])
    return "attention_ragged", min(step["rows"], gpu["max-blocks"])


def attention_cp_async(cfg, chip, group=1):
    """Whether attention streams K and V through cp.async: on tensor cores
    always; on CUDA cores from sm_80, when a lane's slice of a head is 4, 8
    or 16 bytes (docs/KernelABI.md; the lanes per key are the fewest powers
    of two, at most 32 and dividing head_size, that keep the slice within 16
    bytes)."""
    if attention_tensor_cores(cfg, chip, group):
        return True
    D, size = cfg["head_size"], elt_bits(cfg["dtype"]) // 8
    max_lanes = min(D & -D, 32)
    lanes = 1
    while lanes < max_lanes and D // lanes * size > 16:
        lanes *= 2
    return D // lanes * size in (4, 8, 16) and int(chip[3:]) >= 80


def ragged_tile_rows(cfg, gpu):
    """Rows of a warp's tile in store_ragged/gather_ragged (docs/KernelABI.md):
    32 x chunks-in-flight / chunks per row, between 1 and 32; a chunk is the
    largest power of two of elements, at most 16 bytes, that divides
    head_size (the generated rows memrefs are contiguous)."""
    element_bytes = elt_bits(cfg["dtype"]) // 8
    width = 16 // element_bytes
    while cfg["head_size"] % width:
        width //= 2
    chunks = cfg["num_heads"] * cfg["head_size"] // width
    return min(max(32 * gpu["chunks-in-flight"] // chunks, 1), 32)


def ragged_grid(cfg, rows, gpu):
    """Blocks of a store_ragged/gather_ragged launch over `rows` rows: each
    block holds threads-per-block / 32 warps, each warp a tile of rows."""
    warps = max(gpu["threads-per-block"] // 32, 1)
    return min(ceil_div(rows, ragged_tile_rows(cfg, gpu) * warps), gpu["max-blocks"])


def expected_launches(cfg, emu):
    """(kernel, grid, cp.async) of every launch of @main, in order: a launch
    with no work is skipped; grids follow docs/KernelABI.md; cp.async: True
    or False where the profile's cp_async_bytes must be nonzero or zero."""
    gpu = dict(GPU_DEFAULTS, **(emu.get("gpu") or {}))
    max_blocks = gpu["max-blocks"]
    batch = len(cfg["cache_lengths"])
    launches = []
    for step in cfg["steps"]:
        op = step["op"]
        if op in ("store_ragged", "gather_ragged"):
            if step["rows"] and batch:
                launches.append((op, (ragged_grid(cfg, step["rows"], gpu), 1, 1), None))
        elif op == "copy_pages":
            if step["pairs"]:
                launches.append((op, (min(len(step["pairs"]), max_blocks),
                                      cfg["num_layers"], 1), None))
        else:
            if not (step["rows"] and batch):
                continue
            group = step["q_heads"] // cfg["num_heads"]
            rows_grid = min(step["rows"], max_blocks)
            kernel, x = attention_kernel(cfg, step, gpu, emu["chip"])
            splits = attention_splits(cfg, step, gpu, emu["chip"], x)
            launches.append((kernel, (x, cfg["num_heads"], splits),
                             attention_cp_async(cfg, emu["chip"], group)))
            if splits > 1:
                launches.append(("attention_merge", (rows_grid, step["q_heads"], 1), False))
    return launches


def profile_checks(cfg, emu):
    lines = ["", "// The launches, in order (the profile of one run):"]
    for i, (kernel, grid, cp_async) in enumerate(expected_launches(cfg, emu)):
        check = "PROFILE" if i == 0 else "PROFILE-NEXT"
        copies = {None: "", False: '{{.*}}"cp_async_bytes": 0}',
                  True: '{{.*}}"cp_async_bytes": {{[1-9][0-9]*}}}'}[cp_async]
        lines.append(f'// {check}: {{"kernel": "main_{kernel}{{{{(_[0-9]+)?}}}}", '
                     f'"grid": [{grid[0]}, {grid[1]}, {grid[2]}],{copies}')
    lines.append("// PROFILE-NOT: kernel")
    return "\n".join(lines) + "\n"


def split_workspace(cfg, batch, group, splits):
    """A workspace of exactly `splits` partial states per query row and head
    (the host splits min(that, wanted, max-splits) ways)."""
    rows = batch.new_offsets()[-1]
    return rows * group * cfg["num_heads"] * (cfg["head_size"] + 2) * splits


def plural(count, word):
    return f"{count} {word}" + ("" if count == 1 else "s")


def emulated_ragged(dtype, page_size, heads, head_size, layers, sequences, seed,
                    mla=False, padded=False):
    # Spare pages for the copies of the first nonempty sequence, and one more.
    first = next(c + n for c, n in sequences if c + n)
    spare_pages = ceil_div(first, page_size) + 1
    cfg, batch = ragged_config(dtype, page_size, heads, head_size, layers, sequences,
                               seed=seed, spare_pages=spare_pages, mla=mla)
    if mla:
        layers_kv = [(0, layer) for layer in range(layers)]
    else:
        layers_kv = [(kv, layer) for layer in range(layers) for kv in (0, 1)]
    seed = standard_ragged_steps(cfg, batch, layers_kv)
    if padded:
        # The rows of the batch after 3 rows no sequence owns, and 2 more
        # after them; the context rows after 1.
        kv, layer = layers_kv[0]
        offsets = batch.new_offsets(start=3)
        store(cfg, kv, layer, offsets, offsets[-1] + 2, seed)
        ctx = [o + 1 for o in batch.context_offsets()]
        step = {"op": "gather_ragged", "kv": kv, "layer": layer, "offsets": ctx,
                "rows": ctx[-1] + 1, "out": integer_formula(cfg["dtype"], seed + 1)}
        cfg["steps"].append(step)
    return cfg


def option_notes(checked, gpu):
    """How an emulated test departs from the default pipeline, for its
    description: checked mode, options run through convert-kvcache-to-gpu."""
    how = []
    if checked:
        how.append("checked=true")
    if gpu:
        how.append("convert-kvcache-to-gpu " +
                   " ".join(f"{k}={v}" for k, v in gpu.items()) + " first")
    return how


def emulated_tests():
    """{name: (cfg, description, emu)}; every random order gets its own seed."""
    tests = {}
    seeds = iter(range(101, 1000, 7))

    def add(name, cfg, description, chip, checked=False, gpu=None, profile="reverse"):
        orders = ["forward", "reverse", f"random:{next(seeds)}"]
        emu = {"chip": chip, "checked": checked, "gpu": gpu, "orders": orders,
               "profile": profile}
        if name in KNOWN_FAILURES:
            return
        description = textwrap.fill(" ".join(description.split()), 76,
                                    break_on_hyphens=False)
        tests[name] = (cfg, description, emu)

    def sequences_text(sequences):
        return ", ".join(f"({c}, {n})" for c, n in sequences)

    # store_ragged, gather_ragged, copy_pages ------------------------------
    ragged = [
        # name, dtype, page_size, heads, head_size, layers, sequences, chip,
        # checked, convert-kvcache-to-gpu options, mla
        ("ragged-page-size-1-head-size-3-f32.mlir", "f32", 1, 2, 3, 2,
         [(3, 2), (0, 0), (0, 3), (4, 1)], "sm_75", False, {"max-blocks": 2}, False),
        ("ragged-page-size-3-head-size-80-f16.mlir", "f16", 3, 2, 80, 1,
         [(7, 2), (0, 5), (6, 0), (2, 1)], "sm_80", True, None, False),
        ("ragged-page-size-16-head-size-1-bf16.mlir", "bf16", 16, 4, 1, 2,
         [(15, 1), (0, 17), (16, 0), (0, 0), (30, 3)], "sm_90", False, None, False),
        ("ragged-page-size-128-head-size-96-f32.mlir", "f32", 128, 1, 96, 1,
         [(120, 8), (0, 130), (5, 0)], "sm_90", False, {"max-blocks": 3}, False),
        ("ragged-page-size-256-head-size-64-bf16.mlir", "bf16", 256, 1, 64, 1,
         [(250, 6), (0, 1), (300, 0), (0, 0)], "sm_80", False, None, False),
        ("ragged-page-size-16-head-size-256-f16.mlir", "f16", 16, 2, 256, 1,
         [(14, 4), (0, 16), (3, 0)], "sm_75", True, {"max-blocks": 1}, False),
        ("ragged-page-size-1-head-size-128-bf16.mlir", "bf16", 1, 2, 128, 1,
         [(2, 1), (0, 2), (3, 0)], "sm_90", True, None, False),
        ("ragged-mla-page-size-3-f32.mlir", "f32", 3, 1, 576, 2,
         [(4, 2), (0, 3), (2, 0)], "sm_90", False, {"max-blocks": 2}, True),
        ("ragged-mla-page-size-16-f16.mlir", "f16", 16, 1, 576, 1,
         [(15, 2), (0, 1), (0, 0)], "sm_75", True, None, True),
    ]
    for index, (name, dtype, page_size, heads, head_size, layers, sequences, chip,
                checked, gpu, mla) in enumerate(ragged):
        cfg = emulated_ragged(dtype, page_size, heads, head_size, layers, sequences,
                              seed=200 + index, mla=mla)
        what = "an MLA collection (K only) of" if mla else (
            "a" if dtype == "bf16" else "an")
        how = option_notes(checked, gpu)
        add(name, cfg, f"""
store_ragged, gather_ragged and copy_pages as GPU kernels on the emulator
({chip}{''.join(', ' + h for h in how)}), in forward, reverse and random
block and thread orders, against kernel_reference.py: {what} {dtype} cache
with {plural(page_size, 'token')} per page, {plural(heads, 'head')} of {head_size},
{plural(layers, 'layer')}.
Sequences (cache_length, new rows): {sequences_text(sequences)}. Stores of
the new rows, gathers of every context, a copy_pages of the first nonempty
sequence's pages, a gather through a table pointing at the copies, then all
of blocks.
""", chip, checked, gpu)

    # attention_ragged ------------------------------------------------------
    attention = [
        # name, dtype, page_size, kv_heads, head_size, layers, sequences,
        # group, scale, chip, checked, convert-kvcache-to-gpu options,
        # workspace splits, padded
        ("attention-group-1-head-size-64-f16-long.mlir", "f16", 256, 2, 64, [0],
         [(1100, 1), (0, 1), (600, 3), (700, 0), (0, 0)], 1, 1 / 8, "sm_90", False,
         None, 3, False),
        ("attention-group-4-head-size-128-f32.mlir", "f32", 16, 2, 128, [1, 0],
         [(40, 1), (0, 6), (33, 5), (17, 0)], 4, 0.5, "sm_80", False,
         {"keys-per-split": 16, "max-splits": 4}, 4, True),
        ("attention-group-8-head-size-80-bf16.mlir", "bf16", 3, 1, 80, [0],
         [(20, 1), (0, 4), (9, 3), (5, 0)], 8, 1 / math.sqrt(80), "sm_75", False,
         {"max-blocks": 1, "max-splits": 4, "keys-per-split": 4}, 8, False),
        ("attention-group-9-head-size-96-f16.mlir", "f16", 128, 2, 96, [0],
         [(130, 1), (0, 3), (127, 2), (0, 0)], 9, 1 / math.sqrt(96), "sm_80", True,
         {"keys-per-split": 64}, 2, False),
        ("attention-group-32-head-size-64-f32.mlir", "f32", 1, 1, 64, [0],
         [(30, 1), (0, 2), (12, 4), (9, 0)], 32, 0.25, "sm_90", False,
         {"max-blocks": 2, "keys-per-split": 8}, 16, False),
        ("attention-group-1-head-size-256-f16.mlir", "f16", 16, 2, 256, [0],
         [(50, 1), (0, 1), (31, 2)], 1, 1 / 16, "sm_75", False,
         {"max-blocks": 1}, 4, False),
        ("attention-group-4-head-size-1-f32.mlir", "f32", 16, 3, 1, [0],
         [(20, 2), (0, 1), (0, 0), (16, 0)], 4, 2.0, "sm_80", False,
         {"keys-per-split": 8}, 2, False),
        ("attention-group-8-head-size-3-bf16.mlir", "bf16", 3, 2, 3, [0],
         [(5, 1), (0, 3), (7, 0)], 8, 1.0, "sm_90", True, None, 0, True),
        ("attention-group-32-head-size-128-bf16.mlir", "bf16", 128, 1, 128, [0],
         [(200, 1), (0, 2)], 32, 1 / math.sqrt(128), "sm_75", False,
         {"max-blocks": 1, "max-splits": 4, "keys-per-split": 64}, 4, False),
        # A batch that fills the GPU (sm-count 1: at most 16 blocks) is not
        # split, however long its contexts.
        ("attention-group-2-head-size-32-f16-fills-gpu.mlir", "f16", 16, 3, 32, [0],
         [(40, 1), (30, 2), (0, 3)], 2, 1 / math.sqrt(32), "sm_90", False,
         {"sm-count": 1, "keys-per-split": 8}, 4, False),
        # Tensor cores (ldmatrix + mma.sync): a 16-head tile, split contexts
        # and prefill rows; multi-query (4 tiles) at page 1, checked; a
        # group of 12 (4 zero rows) at head 256; 8 tiles (256 threads, 16
        # keys per step in 4 stages, half of the threads copying); a negative
        # scale (the scores scaled before the max).
        ("attention-group-16-head-size-128-f16-tensor-cores.mlir", "f16", 16, 2, 128, [0],
         [(300, 1), (0, 5), (33, 2), (64, 0)], 16, 1 / math.sqrt(128), "sm_90", False,
         {"keys-per-split": 64}, 4, True),
        ("attention-group-64-head-size-128-bf16-tensor-cores.mlir", "bf16", 1, 1, 128, [0],
         [(70, 1), (0, 2), (31, 1)], 64, 1 / math.sqrt(128), "sm_80", True,
         {"keys-per-split": 32, "max-splits": 4}, 4, False),
        ("attention-group-12-head-size-256-bf16-tensor-cores.mlir", "bf16", 128, 2, 256, [0],
         [(130, 1), (0, 3), (17, 2)], 12, 1 / 16, "sm_90", False, None, 0, False),
        ("attention-group-128-head-size-64-f16-tensor-cores.mlir", "f16", 3, 1, 64, [0],
         [(40, 1), (5, 2)], 128, 1 / 8, "sm_90", False, {"max-blocks": 2}, 0, False),
        ("attention-group-4-head-size-64-f16-negative-scale.mlir", "f16", 16, 2, 64, [0],
         [(45, 1), (0, 2), (20, 3)], 4, -0.125, "sm_90", False,
         {"keys-per-split": 16}, 3, False),
        # 256 heads (16 warps, 512 threads): a step's 32 keys x 8 chunks
        # leave half of the threads without a copy.
        ("attention-group-256-head-size-64-f16-tensor-cores.mlir", "f16", 16, 1, 64, [0],
         [(37, 1), (0, 1)], 256, 1 / 8, "sm_90", False, {"max-blocks": 2}, 0, False),
    ]
    for index, (name, dtype, page_size, kv_heads, head_size, layers, sequences, group,
                scale, chip, checked, gpu, splits, padded) in enumerate(attention):
        cfg, batch = attention_config(dtype, page_size, kv_heads, head_size,
                                      max(layers) + 1, sequences, seed=300 + index)
        workspace = split_workspace(cfg, batch, group, splits) if splits else None
        attention_steps(cfg, batch, group, scale, layers, workspace=workspace,
                        padded=padded)
        how = option_notes(checked, gpu)
        options = dict(GPU_DEFAULTS, **(gpu or {}))
        split_steps = [s for s in cfg["steps"] if s.get("workspace")]
        ws_text = "without a workspace"
        if split_steps:
            n = attention_splits(cfg, split_steps[0], options, chip,
                                 attention_kernel(cfg, split_steps[0], options, chip)[1])
            room = f"without and with a workspace of {workspace} floats ({splits} partial states"
            if n > 1:
                ws_text = (f"{room} per row and head: the host splits the context {n} "
                           f"ways, and the merge kernel runs)")
            elif "sm-count" in options:
                ws_text = (f"{room}, but the batch's {batch.new_offsets()[-1]} rows x "
                           f"{kv_heads} KV heads already fill {plural(options['sm-count'], 'SM')}: "
                           f"no split, no merge kernel)")
            else:
                ws_text = (f"{room}, but no context is longer than keys-per-split: no "
                           f"split, no merge kernel)")
        padded_text = ("; also on q/out rows with a leading and a trailing row that no "
                       "sequence owns (they must keep their contents)" if padded else "")
        add(name, cfg, f"""
attention_ragged as GPU kernels on the emulator ({chip}{''.join(', ' + h for h in how)}),
in forward, reverse and random block and thread orders, against the float64
reference of kernel_reference.py: {'an' if dtype == 'f16' or dtype == 'f32' else 'a'} {dtype} cache with {plural(page_size, 'token')}
per page, {plural(kv_heads, 'KV head')} of {head_size}, GQA group {group} (q_heads
{group * kv_heads}), scale {repr(np.float32(scale))}, {ws_text}{padded_text}.
The new K and V rows are stored with store_ragged first. Sequences
(cache_length, new rows): {sequences_text(sequences)}.
""", chip, checked, gpu)

    # continuous batching -----------------------------------------------------
    continuous = [
        # name, dtype, block_tokens, heads, head_size, layers, sequences, chip,
        # checked, convert-kvcache-to-gpu options, mla
        ("continuous-ragged-block-5-head-size-80-f16.mlir", "f16", 5, 2, 80, 2,
         [(2, 3), (0, 5), (4, 0), (0, 0)], "sm_80", True, None, False),
        ("continuous-ragged-mla-block-17-f32.mlir", "f32", 17, 1, 576, 1,
         [(16, 1), (0, 9), (3, 0)], "sm_75", False, {"max-blocks": 2}, True),
    ]
    for index, (name, dtype, block_tokens, heads, head_size, layers, sequences, chip,
                checked, gpu, mla) in enumerate(continuous):
        cfg, batch = continuous_config(dtype, block_tokens, heads, head_size, layers,
                                       sequences, seed=400 + index, mla=mla)
        if mla:
            layers_kv = [(0, layer) for layer in range(layers)]
        else:
            layers_kv = [(kv, layer) for layer in range(layers) for kv in (0, 1)]
        continuous_ragged_steps(cfg, batch, layers_kv)
        how = option_notes(checked, gpu)
        add(name, cfg, f"""
store_ragged and gather_ragged as GPU kernels on the emulator
({chip}{''.join(', ' + h for h in how)}), in forward, reverse and random
block and thread orders, against kernel_reference.py, on a continuous-batching
{'MLA (K only) ' if mla else ''}{dtype} collection: one block of
{plural(block_tokens, 'token slot')} per sequence, a 1-D lookup table,
{plural(heads, 'head')} of {head_size}, {plural(layers, 'layer')}.
Sequences (cache_length, new rows): {sequences_text(sequences)}. Stores of the
new rows, gathers of every context, a gather through a table pointing a
sequence at a spare block, a store of no rows, then all of blocks.
""", chip, checked, gpu)

    continuous_attention = [
        # name, dtype, block_tokens, kv_heads, head_size, sequences, group,
        # chip, checked, convert-kvcache-to-gpu options, workspace splits
        ("continuous-attention-group-4-head-size-64-bf16.mlir", "bf16", 300, 2, 64,
         [(290, 1), (0, 3), (100, 2)], 4, "sm_90", False,
         {"keys-per-split": 64, "max-splits": 4}, 4),
        ("continuous-attention-group-1-head-size-16-f32.mlir", "f32", 9, 3, 16,
         [(8, 1), (0, 6), (3, 2), (2, 0)], 1, "sm_80", True, None, 0),
    ]
    for index, (name, dtype, block_tokens, kv_heads, head_size, sequences, group,
                chip, checked, gpu, splits) in enumerate(continuous_attention):
        cfg, batch = continuous_config(dtype, block_tokens, kv_heads, head_size, 1,
                                       sequences, seed=500 + index, spare_blocks=0,
                                       attention=True)
        workspace = split_workspace(cfg, batch, group, splits) if splits else None
        attention_steps(cfg, batch, group, 1 / math.sqrt(head_size), [0],
                        workspace=workspace)
        how = option_notes(checked, gpu)
        ws_text = (f"without and with a workspace of {workspace} floats"
                   if workspace else "without a workspace")
        add(name, cfg, f"""
attention_ragged as GPU kernels on the emulator ({chip}{''.join(', ' + h for h in how)}),
in forward, reverse and random block and thread orders, against the float64
reference of kernel_reference.py, on a continuous-batching {dtype} collection:
one block of {block_tokens} token slots per sequence, {plural(kv_heads, 'KV head')}
of {head_size}, GQA group {group}, {ws_text}. The new K and V rows are stored
with store_ragged first. Sequences (cache_length, new rows):
{sequences_text(sequences)}.
""", chip, checked, gpu)

    # The warp tiles of store_ragged and gather_ragged ------------------------
    tiles = [
        # name, dtype, page_size, heads, head_size, sequences, chip, checked,
        # convert-kvcache-to-gpu options, what the tiles exercise
        ("ragged-tiles-many-sequences-f16.mlir", "f16", 4, 2, 8,
         [(1, 2), (0, 0), (3, 1), (0, 3), (5, 0), (0, 0), (0, 0), (2, 2), (0, 1),
          (7, 1), (0, 0), (1, 4), (6, 0), (0, 2), (3, 3), (0, 0), (0, 1), (2, 0),
          (4, 2), (0, 1), (9, 5), (0, 0)],
         "sm_90", True, {"chunks-in-flight": 1, "threads-per-block": 64},
         """rows of 2 chunks: a warp's tile is 16 rows, each resolved by
         one lane, holding rows of up to 8 sequences with empty ones between
         them; lane l moves a chunk of the row lane l / 2 resolved; 2 warps per
         block, tiles cut across sequences and end past the batch"""),
        ("ragged-tiles-one-long-sequence-bf16.mlir", "bf16", 5, 1, 16,
         [(0, 0), (37, 300), (0, 0)], "sm_80", False,
         {"threads-per-block": 32, "max-blocks": 1},
         """one long sequence between two empty ones, tiles of 32 rows and a
         single warp in a single block: it visits every tile (grid-stride),
         the last one partly past the batch"""),
        ("ragged-tiles-passes-f32.mlir", "f32", 3, 2, 72,
         [(5, 3), (0, 0), (0, 4), (9, 1)], "sm_75", True,
         {"chunks-in-flight": 1, "threads-per-block": 64, "max-blocks": 2},
         """rows of 36 chunks wider than a warp's chunks in flight (32): one
         row per tile moved in two passes, the second one by 4 lanes; a grid of
         2 blocks of 2 warps over more rows (grid-stride)"""),
    ]
    for index, (name, dtype, page_size, heads, head_size, sequences, chip, checked,
                gpu, what) in enumerate(tiles):
        cfg = emulated_ragged(dtype, page_size, heads, head_size, 1, sequences,
                              seed=250 + index, padded=True)
        how = option_notes(checked, gpu)
        rows = ragged_tile_rows(cfg, dict(GPU_DEFAULTS, **gpu))
        add(name, cfg, f"""
store_ragged, gather_ragged and copy_pages as GPU kernels on the emulator
({chip}{''.join(', ' + h for h in how)}), in forward, reverse and random
block and thread orders, against kernel_reference.py, on {what}.
{'A' if dtype == 'bf16' else 'An'} {dtype} cache with {plural(page_size, 'token')} per page, {plural(heads, 'head')} of
{head_size}, tiles of {plural(rows, 'row')}. Sequences (cache_length, new rows):
{sequences_text(sequences)}. Stores of the new rows, gathers of every context,
a copy_pages and a gather through the copies, then the same store and gather
on rows memrefs with leading and trailing rows no sequence owns (tiles start
at offsets[0]; the other rows keep their contents), then all of blocks.
""", chip, checked, gpu)
    return tests


def write_emulated_tests():
    os.makedirs(EMULATED_DIR, exist_ok=True)
    for name, (cfg, description, emu) in emulated_tests().items():
        text = render(cfg, description, run_lines=emulated_run_lines(emu),
                      extra_checks=profile_checks(cfg, emu) if emu.get("profile") else "")
        text = text.replace("// Generated by generate_kernel_tests.py",
                            "// Generated by ../../CPU/generate_kernel_tests.py", 1)
        with open(os.path.join(EMULATED_DIR, name), "w") as f:
            f.write(text)
        print("wrote", os.path.join("..", "GPU", "Emulated", name))


# ----------------------------------------------------------------------------
# assert_write_mode = 1

RUNNER = "mlir-runner %t.mlir -e {entry} -entry-point-result=void \\\n" \
    "// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils"

WRITES_RUN = """\
// RUN: kvcache-opt %s -kvcache-to-cpu -o %t.mlir
// RUN: """ + RUNNER.format(entry="main") + """ \\
// RUN: | %python %S/kernel_reference.py %s | FileCheck %s
// RUN: not --crash """ + RUNNER.format(entry="bad_page") + """ 2>&1 \\
// RUN: | FileCheck %s --check-prefix=BAD-PAGE
// RUN: not --crash """ + RUNNER.format(entry="past_columns") + """ 2>&1 \\
// RUN: | FileCheck %s --check-prefix=COLUMNS
// RUN: not --crash """ + RUNNER.format(entry="bad_copy_destination") + """ 2>&1 \\
// RUN: | FileCheck %s --check-prefix=COPY-DST
"""

READS_RUN = """\
// RUN: kvcache-opt %s -kvcache-to-cpu -o %t.mlir
// RUN: not --crash """ + RUNNER.format(entry="bad_copy_source") + """ 2>&1 \\
// RUN: | FileCheck %s --check-prefix=COPY-SRC
// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true -o %t.mlir
// RUN: """ + RUNNER.format(entry="main") + """ \\
// RUN: | %python %S/kernel_reference.py %s | FileCheck %s
// RUN: not --crash """ + RUNNER.format(entry="bad_copy_source") + """ 2>&1 \\
// RUN: | FileCheck %s --check-prefix=COPY-SRC
// RUN: not --crash """ + RUNNER.format(entry="bad_gather") + """ 2>&1 \\
// RUN: | FileCheck %s --check-prefix=GATHER
"""

COMMON_TEXT = """
// The bad programs: @main's cache_lengths with another lookup table (and
// pairs) over uninitialised blocks of NUM_PAGES pages.
memref.global "private" constant @bad_table : memref<3xCOLSxi32> = dense<BAD_TABLE>
memref.global "private" constant @short_table : memref<3x1xi32> = dense<[[0], [1], [2]]>
memref.global "private" constant @bad_offsets : memref<4xi32> = dense<[0, 2, 3, 4]>
memref.global "private" constant @bad_destination : memref<2x2xi32> = dense<[[0, 1], [2, NUM_PAGES]]>
memref.global "private" constant @bad_source : memref<2x2xi32> = dense<[[0, 1], [NUM_PAGES, 2]]>
memref.global "private" constant @gather_offsets : memref<4xi32> = dense<GATHER_OFFSETS>

func.func @bad_collection(%storage: !storage, %table_global: memref<3x?xi32>) -> !collection {
  %max_seq_length = arith.constant 2 : i32
  %max_cache_length = arith.constant 8 : i32
  %blocks = memref.cast %storage : !storage to !blocks
  %lengths_global = memref.get_global @cache_lengths : memref<3xi32>
  %cache_lengths = memref.cast %lengths_global : memref<3xi32> to memref<?xi32>
  %table = memref.cast %table_global : memref<3x?xi32> to memref<?x?xi32>
  %collection = kvcache.paged_collection %blocks, %cache_lengths, %table, %max_seq_length, %max_cache_length
      : !blocks, memref<?xi32>, memref<?x?xi32> -> !collection
  return %collection : !collection
}
"""

WRITE_TEXT = """
// Sequence 2's new row (token 4, logical page 1) is in page BAD_PAGE of NUM_PAGES.
func.func @bad_page() {
  %storage = memref.alloc() {alignment = 64 : i64} : !storage
  %table_global = memref.get_global @bad_table : memref<3xCOLSxi32>
  %table = memref.cast %table_global : memref<3xCOLSxi32> to memref<3x?xi32>
  %collection = func.call @bad_collection(%storage, %table) : (!storage, memref<3x?xi32>) -> !collection
  %c1 = arith.constant 1 : index
  %new = memref.alloc() {alignment = 64 : i64} : memref<4xHEADSxHEAD_SIZExf16>
  %rows = memref.cast %new : memref<4xHEADSxHEAD_SIZExf16> to !rows
  %offsets_global = memref.get_global @bad_offsets : memref<4xi32>
  %offsets = memref.cast %offsets_global : memref<4xi32> to memref<?xi32>
  %cache = kvcache.get_value_cache %collection[%c1] : !collection
  // BAD-PAGE: kvcache run-time check failed: {{.*}} at {{.*}}FILE:[[@LINE+1]]:3: physical page (lookup_table entry) BAD_PAGE is out of range: num_pages is NUM_PAGES
  kvcache.store_ragged %cache, %rows, %offsets : !cache, !rows, memref<?xi32>
  vector.print str "bad_page completed\\n"
  return
}
// BAD-PAGE-NOT: completed

// A table of one column: sequence 0's tokens 4.. (page_size PAGE_SIZE) have none.
func.func @past_columns() {
  %storage = memref.alloc() {alignment = 64 : i64} : !storage
  %table_global = memref.get_global @short_table : memref<3x1xi32>
  %table = memref.cast %table_global : memref<3x1xi32> to memref<3x?xi32>
  %collection = func.call @bad_collection(%storage, %table) : (!storage, memref<3x?xi32>) -> !collection
  %c1 = arith.constant 1 : index
  %new = memref.alloc() {alignment = 64 : i64} : memref<4xHEADSxHEAD_SIZExf16>
  %rows = memref.cast %new : memref<4xHEADSxHEAD_SIZExf16> to !rows
  %offsets_global = memref.get_global @bad_offsets : memref<4xi32>
  %offsets = memref.cast %offsets_global : memref<4xi32> to memref<?xi32>
  %cache = kvcache.get_key_cache %collection[%c1] : !collection
  // COLUMNS: kvcache run-time check failed: {{.*}} at {{.*}}FILE:[[@LINE+1]]:3: logical page (token / page_size) 1 is out of range: the number of lookup_table columns is 1
  kvcache.store_ragged %cache, %rows, %offsets : !cache, !rows, memref<?xi32>
  vector.print str "past_columns completed\\n"
  return
}
// COLUMNS-NOT: completed

func.func @bad_copy_destination() {
  %storage = memref.alloc() {alignment = 64 : i64} : !storage
  %table_global = memref.get_global @short_table : memref<3x1xi32>
  %table = memref.cast %table_global : memref<3x1xi32> to memref<3x?xi32>
  %collection = func.call @bad_collection(%storage, %table) : (!storage, memref<3x?xi32>) -> !collection
  %pairs_global = memref.get_global @bad_destination : memref<2x2xi32>
  %pairs = memref.cast %pairs_global : memref<2x2xi32> to memref<?x2xi32>
  // COPY-DST: kvcache run-time check failed: {{.*}} at {{.*}}FILE:[[@LINE+1]]:3: physical page NUM_PAGES is out of range: num_pages is NUM_PAGES
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  vector.print str "bad_copy_destination completed\\n"
  return
}
// COPY-DST-NOT: completed

"""

READ_TEXT = """
// The storage has one page more than blocks, so that the unchecked read
// stays inside the allocation.
func.func @bad_copy_source() {
  %bigger = memref.alloc() {alignment = 64 : i64} : memref<NUM_PAGES_PLUS_1xKV_DIMxLAYERSxPAGE_SIZExHEADSxHEAD_SIZExf16>
  %pages = memref.subview %bigger[0, 0, 0, 0, 0, 0] [NUM_PAGES, KV_DIM, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE] [1, 1, 1, 1, 1, 1]
      : memref<NUM_PAGES_PLUS_1xKV_DIMxLAYERSxPAGE_SIZExHEADSxHEAD_SIZExf16> to !storage
  %table_global = memref.get_global @short_table : memref<3x1xi32>
  %table = memref.cast %table_global : memref<3x1xi32> to memref<3x?xi32>
  %collection = func.call @bad_collection(%pages, %table) : (!storage, memref<3x?xi32>) -> !collection
  %pairs_global = memref.get_global @bad_source : memref<2x2xi32>
  %pairs = memref.cast %pairs_global : memref<2x2xi32> to memref<?x2xi32>
  // COPY-SRC: kvcache run-time check failed: {{.*}} at {{.*}}FILE:[[@LINE+1]]:3: physical page NUM_PAGES is out of range: num_pages is NUM_PAGES
  kvcache.copy_pages %collection, %pairs : !collection, memref<?x2xi32>
  vector.print str "bad_copy_source completed\\n"
  memref.dealloc %bigger : memref<NUM_PAGES_PLUS_1xKV_DIMxLAYERSxPAGE_SIZExHEADSxHEAD_SIZExf16>
  return
}
// COPY-SRC-NOT: completed

func.func @bad_gather() {
  %storage = memref.alloc() {alignment = 64 : i64} : !storage
  %table_global = memref.get_global @bad_table : memref<3xCOLSxi32>
  %table = memref.cast %table_global : memref<3xCOLSxi32> to memref<3x?xi32>
  %collection = func.call @bad_collection(%storage, %table) : (!storage, memref<3x?xi32>) -> !collection
  %c0 = arith.constant 0 : index
  %out = memref.alloc() {alignment = 64 : i64} : memref<4xHEADSxHEAD_SIZExf16>
  %rows = memref.cast %out : memref<4xHEADSxHEAD_SIZExf16> to !rows
  %offsets_global = memref.get_global @gather_offsets : memref<4xi32>
  %offsets = memref.cast %offsets_global : memref<4xi32> to memref<?xi32>
  %cache = kvcache.get_key_cache %collection[%c0] : !collection
  // GATHER: kvcache run-time check failed: {{.*}} at {{.*}}FILE:[[@LINE+1]]:3: physical page (lookup_table entry) BAD_PAGE is out of range: num_pages is NUM_PAGES
  kvcache.gather_ragged %cache, %rows, %offsets : !cache, !rows, memref<?xi32>
  vector.print str "bad_gather completed\\n"
  memref.dealloc %out : memref<4xHEADSxHEAD_SIZExf16>
  return
}
// GATHER-NOT: completed

"""




def bad_text(batch, text, name):
    num_pages = batch.num_pages
    cols = len(batch.table[0])
    # A bad entry in the second column of sequence 2 (cache_length 4): the
    # bad programs' offsets [0, 2, 3, 4] give it row 3, token 4, logical
    # page 1; bad_gather gathers sequence 2's five tokens.
    bad_page = num_pages + 5
    table = [list(row) for row in batch.table]
    table[2][1] = bad_page
    for key, value in (("NUM_PAGES_PLUS_1", num_pages + 1), ("NUM_PAGES", num_pages),
                       ("BAD_PAGE", bad_page), ("BAD_TABLE", json.dumps(table)),
                       ("COLS", cols), ("HEADS", 2), ("HEAD_SIZE", 8), ("PAGE_SIZE", 4),
                       ("KV_DIM", 2), ("LAYERS", 2), ("GATHER_OFFSETS", "[0, 0, 0, 5]"),
                       ("FILE", name)):
        text = text.replace(key, str(value))
    return text


def assert_config(seed):
    # f16, page_size 4, 2 heads of 8, 2 layers; sequences (cache_length, new)
    # with sequence 2 at cache_length 4, as the bad programs assume.
    cfg, batch = ragged_config("f16", 4, 2, 8, 2, [(3, 2), (0, 1), (4, 0)], seed=seed,
                               spare_pages=2)
    cfg["assert_write_mode"] = 1
    standard_ragged_steps(cfg, batch, [(0, 0), (1, 0), (0, 1), (1, 1)])
    return cfg, batch


def assert_tests():
    tests = {}
    name = "kernel-assert-write-mode.mlir"
    cfg, batch = assert_config(9)
    tests[name] = (cfg, """
An assert_write_mode = 1 cache (f16, 4 tokens per page, 2 heads of 8, 2
layers): @main runs store_ragged, gather_ragged and copy_pages with valid
metadata, checks clean, and matches kernel_reference.py (gathered rows and
all of blocks). The bad programs stop with the message (abort, so
not --crash): a store_ragged through a lookup-table entry past num_pages or
past the lookup-table columns, a copy_pages to a page past num_pages.
kernel-checked-reads.mlir has the reads.
""", WRITES_RUN, bad_text(batch, COMMON_TEXT + WRITE_TEXT, name))
    name = "kernel-checked-reads.mlir"
    cfg, batch = assert_config(10)
    tests[name] = (cfg, """
Reads of the kernel ops through bad metadata, on an assert_write_mode = 1
cache as in kernel-assert-write-mode.mlir: assert_write_mode checks writes
only, so a copy_pages from a page past num_pages runs (the storage has one
more page); -kvcache-to-cpu=checked=true stops it with the message, and a
gather_ragged through a lookup-table entry past num_pages. @main (valid
store_ragged, gather_ragged, copy_pages) runs clean with checked=true and
matches kernel_reference.py.
""", READS_RUN, bad_text(batch, COMMON_TEXT + READ_TEXT, name))
    return tests


def main():
    tests = {}
    tests.update(ragged_tests())
    tests.update(attention_tests())
    tests.update(continuous_tests())
    for name, (cfg, description) in tests.items():
        with open(os.path.join(HERE, name), "w") as f:
            f.write(render(cfg, description))
        print("wrote", name)
    for name, (cfg, description, run, text) in assert_tests().items():
        with open(os.path.join(HERE, name), "w") as f:
            f.write(render(cfg, description, extra_text=text, run_lines=run))
        print("wrote", name)
    write_emulated_tests()


if __name__ == "__main__":
    main()
