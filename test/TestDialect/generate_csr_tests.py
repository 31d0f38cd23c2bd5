#!/usr/bin/env python3
# ===- generate_csr_tests.py - writes the CSR-kind execution tests --------=== #
#
# Part of the kvcache-mlir project.
#
# Writes the csr-*.mlir execution tests of this directory: the kernel ops
# (store_ragged, gather_ragged, copy_pages, attention_ragged) on the CSR
# collection kind of the test_kv dialect (test/lib), which the kvcache
# lowerings know only through the collection type interfaces. Each program
# builds a `test_kv.csr_collection`, fills every buffer from an integer
# formula, runs the ops in order and prints every output row (and, for the
# data-movement tests, all of `blocks`); csr_reference.py checks the records
# against a numpy model of the CSR layout. Every program runs five ways: on
# the CPU (kvcache-to-cpu) unchecked and checked, and as GPU kernels on the
# emulator (kvcache-to-emulated-gpu): sm_80 checked in forward and reverse
# block and thread orders, sm_90 unchecked in a random order.
#
#   python3 generate_csr_tests.py   # rewrites the csr-*.mlir tests
#
# The output depends on nothing but this script (fixed seeds). The generated
# files are checked in; edit this script, not them.
#
# ===----------------------------------------------------------------------=== #

import json
import math
import os
import random

import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Integration", "CPU"))
from generate_kernel_tests import fill_and_print_helpers  # noqa: E402

RUNNER = ("// RUN: {env}mlir-runner {input} -e main -entry-point-result=void \\\n"
          "// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils{libs} \\\n"
          "// RUN: | %python %S/csr_reference.py %s | FileCheck %s\n")

# Integer fills [mul, mod, sub] exact in each type, and the unit fill of the
# attention tests (k / 64, |k| <= 63).
INTEGER_FILL = {"f32": [7919, 4093, 2046], "f16": [7919, 4093, 2046],
                "bf16": [7919, 509, 254]}
UNIT = [7919, 127, 63, 64]


def run_lines():
    text = "// RUN: kvcache-opt %s -kvcache-to-cpu -o %t.cpu.mlir\n"
    text += RUNNER.format(env="", input="%t.cpu.mlir", libs="")
    text += "// RUN: kvcache-opt %s -kvcache-to-cpu=checked=true -o %t.checked.mlir\n"
    text += RUNNER.format(env="", input="%t.checked.mlir", libs="")
    text += ('// RUN: kvcache-opt %s -kvcache-to-emulated-gpu="chip=sm_80 checked=true" '
             "-o %t.gpu.mlir\n")
    for order in ("forward", "reverse"):
        text += RUNNER.format(env=f"env KVCACHE_EMU_ORDER={order} ", input="%t.gpu.mlir",
                              libs=",%kvcache_emulator")
    text += "// RUN: kvcache-opt %s -kvcache-to-emulated-gpu -o %t.gpu-unchecked.mlir\n"
    text += RUNNER.format(env="env KVCACHE_EMU_ORDER=random:7 ", input="%t.gpu-unchecked.mlir",
                          libs=",%kvcache_emulator")
    return text


def ceil_div(a, b):
    return -(-a // b)


class CSRBatch:
    """cache_lengths, kv_indptr and kv_indices for sequences (cache_length,
    new rows): each sequence owns the pages its tokens need, in a shuffled
    order; two decoy entries lead kv_indices (kv_indptr[0] is 2) and one
    trails it, all naming a page no sequence owns; `spare` pages are free
    for copies."""

    def __init__(self, sequences, page_size, spare_pages, seed):
        rng = random.Random(seed)
        self.sequences = sequences
        self.cache_lengths = [c for c, _ in sequences]
        needs = [ceil_div(c + n, page_size) for c, n in sequences]
        used = sum(needs)
        self.num_pages = used + spare_pages + 1
        ids = list(range(self.num_pages))
        rng.shuffle(ids)
        decoy = ids.pop()
        self.spare = ids[used:]
        owned = ids[:used]
        self.kv_indices = [decoy, decoy] + owned + [decoy]
        self.kv_indptr = [2]
        for need in needs:
            self.kv_indptr.append(self.kv_indptr[-1] + need)

    def new_offsets(self):
        offsets = [0]
        for _, n in self.sequences:
            offsets.append(offsets[-1] + n)
        return offsets

    def context_offsets(self):
        offsets = [0]
        for c, n in self.sequences:
            offsets.append(offsets[-1] + c + n)
        return offsets

    def pages_of(self, b):
        return self.kv_indices[self.kv_indptr[b]:self.kv_indptr[b + 1]]


def config(dtype, page_size, num_heads, head_size, num_layers, sequences, seed,
           spare_pages=0, mla=False, attention=False):
    batch = CSRBatch(sequences, page_size, spare_pages, seed)
    cfg = {
        "dtype": dtype, "page_size": page_size, "num_heads": num_heads,
        "head_size": head_size, "num_layers": num_layers, "mla": mla,
        "kv_dim": 1 if mla else 2, "num_pages": batch.num_pages,
        "cache_lengths": batch.cache_lengths, "kv_indptr": batch.kv_indptr,
        "kv_indices": batch.kv_indices,
        "max_seq_length": max(n for _, n in sequences),
        "max_cache_length": max(c + n for c, n in sequences),
        "steps": [],
    }
    if attention:
        cfg.update(fill=UNIT[:3], fill_div=UNIT[3])
    else:
        cfg.update(fill=INTEGER_FILL[dtype], full_dump=True)
    return cfg, batch


def formula(cfg, seed):
    if "fill_div" in cfg:
        return UNIT + [seed]
    return INTEGER_FILL[cfg["dtype"]] + [1, seed]


class Program:
    """The MLIR text of one test program."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.t = cfg["dtype"]
        self.P, self.H, self.D = cfg["page_size"], cfg["num_heads"], cfg["head_size"]
        self.KV, self.L, self.N = cfg["kv_dim"], cfg["num_layers"], cfg["num_pages"]
        assert self.D <= 64, "rows are printed as one vector"
        self.globals = []
        self.body = []
        self.records = 1  # done

    def emit(self, line):
        self.body.append(line)

    def type_params(self):
        extra = ", mla = true" if self.cfg["mla"] else ""
        return (f"{self.t}, num_heads = {self.H}, head_size = {self.D}, "
                f"page_size = {self.P}{extra}")

    def q_heads(self):
        return sorted({s["q_heads"] for s in self.cfg["steps"]
                       if s["op"] == "attention_ragged"})

    def aliases(self):
        t, KV, L, P, H, D, N = self.t, self.KV, self.L, self.P, self.H, self.D, self.N
        lines = [f"!storage = memref<{N}x{KV}x{L}x{P}x{H}x{D}x{t}>",
                 f"!blocks = memref<?x{KV}x?x{P}x{H}x{D}x{t}>",
                 f"!collection = !test_kv.csr_collection<{self.type_params()}>",
                 f"!cache = !test_kv.csr_cache<{self.type_params()}>",
                 f"!rows = memref<?x{H}x{D}x{t}>",
                 f"!flat = memref<?x{t}>"]
        lines += [f"!q{hq} = memref<?x{hq}x{D}x{t}>" for hq in self.q_heads()]
        return "\n".join(lines)

    def global_i32(self, name, values):
        self.globals.append(f'memref.global "private" constant @{name} : '
                            f"memref<{len(values)}xi32> = dense<{json.dumps(values)}>")
        self.emit(f"  %{name}_global = memref.get_global @{name} : memref<{len(values)}xi32>")
        self.emit(f"  %{name} = memref.cast %{name}_global : memref<{len(values)}xi32> "
                  "to memref<?xi32>")
        return f"%{name}"

    def pairs(self, name, pairs):
        self.globals.append(f'memref.global "private" constant @{name} : '
                            f"memref<{len(pairs)}x2xi32> = dense<{json.dumps(pairs)}>")
        self.emit(f"  %{name}_global = memref.get_global @{name} : memref<{len(pairs)}x2xi32>")
        self.emit(f"  %{name} = memref.cast %{name}_global : memref<{len(pairs)}x2xi32> "
                  "to memref<?x2xi32>")
        return f"%{name}"

    def alloc_filled(self, name, shape, fill):
        """Allocates and fills a [rows, heads, head_size] buffer; returns the
        value cast to a dynamic row count."""
        t = self.t
        static = "x".join(str(s) for s in shape) + f"x{t}"
        size = int(np.prod(shape))
        mul, mod, sub, div, seed = fill
        self.emit(f"  %{name}_alloc = memref.alloc() {{alignment = 64 : i64}} : memref<{static}>")
        self.emit(f"  %{name}_collapsed = memref.collapse_shape %{name}_alloc [[0, 1, 2]] : "
                  f"memref<{static}> into memref<{size}x{t}>")
        self.emit(f"  %{name}_flat = memref.cast %{name}_collapsed : memref<{size}x{t}> to !flat")
        self.fill(f"%{name}_flat", name, mul, mod, sub, div, seed)
        alias = "!rows" if shape[1] == self.H else f"!q{shape[1]}"
        self.emit(f"  %{name} = memref.cast %{name}_alloc : memref<{static}> to {alias}")
        return f"%{name}", f"memref<{static}>"

    def fill(self, flat, name, mul, mod, sub, div, seed):
        for key, value in (("seed", seed), ("mul", mul), ("mod", mod), ("sub", sub)):
            self.emit(f"  %{name}_{key} = arith.constant {value} : i64")
        self.emit(f"  %{name}_div = arith.constant {float(div)} : f32")
        self.emit(f"  func.call @fill({flat}, %{name}_seed, %{name}_mul, %{name}_mod, "
                  f"%{name}_sub, %{name}_div) : (!flat, i64, i64, i64, i64, f32) -> ()")

    def collection(self, name, indices):
        self.emit(f"  %{name} = test_kv.csr_collection %blocks, %kv_indptr, {indices}, "
                  "%cache_lengths, %max_seq_length, %max_cache_length")
        self.emit("      : !blocks, memref<?xi32>, memref<?xi32>, memref<?xi32> -> !collection")
        return f"%{name}"

    def step(self, i, step):
        op = step["op"]
        self.emit(f"  // step {i}: {summary(step)}")
        coll = "%collection"
        if "kv_indices" in step:
            coll = self.collection(f"s{i}_collection",
                                   self.global_i32(f"s{i}_kv_indices", step["kv_indices"]))
        if op == "copy_pages":
            pairs = self.pairs(f"s{i}_pairs", step["pairs"])
            self.emit(f"  kvcache.copy_pages {coll}, {pairs} : !collection, memref<?x2xi32>")
            return
        offsets = self.global_i32(f"s{i}_offsets", step["offsets"])
        self.emit(f"  %s{i}_layer = arith.constant {step['layer']} : index")
        self.emit(f"  %s{i}_step = arith.constant {i} : index")
        if op == "attention_ragged":
            self.attention(i, step, coll, offsets)
            return
        key = "new" if op == "store_ragged" else "out"
        rows, static = self.alloc_filled(f"s{i}_rows", (step["rows"], self.H, self.D), step[key])
        get = "get_key_cache" if step["kv"] == 0 else "get_value_cache"
        self.emit(f"  %s{i}_cache = kvcache.{get} {coll}[%s{i}_layer] : !collection")
        self.emit(f"  kvcache.{op} %s{i}_cache, {rows}, {offsets} : !cache, !rows, memref<?xi32>")
        if op == "gather_ragged":
            self.emit(f"  func.call @dump_rows({rows}, %s{i}_step) : (!rows, index) -> ()")
            self.records += step["rows"] * self.H
        self.emit(f"  memref.dealloc %s{i}_rows_alloc : {static}")

    def attention(self, i, step, coll, offsets):
        hq = step["q_heads"]
        shape = (step["rows"], hq, self.D)
        q, q_static = self.alloc_filled(f"s{i}_q", shape, step["q"])
        out, out_static = self.alloc_filled(f"s{i}_out", shape, step["out"])
        self.emit(f"  %s{i}_k = kvcache.get_key_cache {coll}[%s{i}_layer] : !collection")
        self.emit(f"  %s{i}_v = kvcache.get_value_cache {coll}[%s{i}_layer] : !collection")
        operands, types = f"{q}, %s{i}_k, %s{i}_v, {offsets}, {out}", ""
        if step.get("workspace"):
            # NaNs: a kernel must not read what it did not write.
            size = step["workspace"]
            self.emit(f"  %s{i}_workspace_alloc = memref.alloc() {{alignment = 64 : i64}} "
                      f": memref<{size}xf32>")
            self.emit(f"  %s{i}_workspace = memref.cast %s{i}_workspace_alloc : "
                      f"memref<{size}xf32> to memref<?xf32>")
            self.emit(f"  func.call @fill_nan(%s{i}_workspace) : (memref<?xf32>) -> ()")
            operands += f", %s{i}_workspace"
            types = ", memref<?xf32>"
        self.emit(f"  kvcache.attention_ragged {operands} "
                  f"{{scale = {np.float32(step['scale'])!r} : f32}}")
        self.emit(f"      : !q{hq}, !cache, !cache, memref<?xi32>, !q{hq}{types}")
        self.emit(f"  func.call @dump_q{hq}({out}, %s{i}_step) : (!q{hq}, index) -> ()")
        self.records += step["rows"] * hq
        if step.get("workspace"):
            self.emit(f"  memref.dealloc %s{i}_workspace_alloc : memref<{step['workspace']}xf32>")
        self.emit(f"  memref.dealloc %s{i}_q_alloc : {q_static}")
        self.emit(f"  memref.dealloc %s{i}_out_alloc : {out_static}")

    def main(self):
        cfg, t = self.cfg, self.t
        size = self.N * self.KV * self.L * self.P * self.H * self.D
        self.emit("func.func @main() {")
        self.emit(f"  %max_seq_length = arith.constant {cfg['max_seq_length']} : i32")
        self.emit(f"  %max_cache_length = arith.constant {cfg['max_cache_length']} : i32")
        self.emit("  %storage = memref.alloc() {alignment = 64 : i64} : !storage")
        self.emit("  %storage_collapsed = memref.collapse_shape %storage [[0, 1, 2, 3, 4, 5]] : "
                  f"!storage into memref<{size}x{t}>")
        self.emit(f"  %storage_flat = memref.cast %storage_collapsed : memref<{size}x{t}> to !flat")
        mul, mod, sub = cfg["fill"]
        self.fill("%storage_flat", "blocks", mul, mod, sub, cfg.get("fill_div", 1), 0)
        self.emit("  %blocks = memref.cast %storage : !storage to !blocks")
        self.global_i32("cache_lengths", cfg["cache_lengths"])
        self.global_i32("kv_indptr", cfg["kv_indptr"])
        self.collection("collection", self.global_i32("kv_indices", cfg["kv_indices"]))
        self.emit("")
        for i, step in enumerate(cfg["steps"]):
            self.step(i, step)
            self.emit("")
        if cfg.get("full_dump"):
            self.emit("  func.call @dump_blocks(%blocks) : (!blocks) -> ()")
            self.records += self.N * self.KV * self.L * self.P * self.H
        self.emit('  vector.print str "done\\n"')
        self.emit("  memref.dealloc %storage : !storage")
        self.emit("  return")
        self.emit("}")

    def helpers(self):
        t, D = self.t, self.D
        text = "\n" + fill_and_print_helpers(t).rstrip("\n") + "\n"
        for alias, heads in [("rows", self.H)] + [(f"q{hq}", hq) for hq in self.q_heads()]:
            text += f"""
// Every row of an output of step `step`.
func.func @dump_{alias}(%rows: !{alias}, %step: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %heads = arith.constant {heads} : index
  %n = memref.dim %rows, %c0 : !{alias}
  scf.for %r = %c0 to %n step %c1 {{
    scf.for %h = %c0 to %heads step %c1 {{
      func.call @begin_out(%step, %r, %h) : (index, index, index) -> ()
      %row = vector.load %rows[%r, %h, %c0] : !{alias}, vector<{D}x{t}>
      vector.print %row : vector<{D}x{t}>
    }}
  }}
  return
}}
"""
        if any(s.get("workspace") for s in self.cfg["steps"]):
            text += """
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
        if self.cfg.get("full_dump"):
            text += self.dump_blocks()
        return text

    def dump_blocks(self):
        t, D = self.t, self.D
        return f"""
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
            %row = vector.load %blocks[%p, %kv, %l, %s, %h, %c0] : !blocks, vector<{D}x{t}>
            vector.print %row : vector<{D}x{t}>
          }}
        }}
      }}
    }}
  }}
  return
}}
"""


def summary(step):
    op = step["op"]
    indices = ", another kv_indices" if "kv_indices" in step else ""
    if op == "copy_pages":
        return f"copy_pages {step['pairs']}"
    if op == "attention_ragged":
        return (f"attention_ragged layer {step['layer']}, q_heads {step['q_heads']}, "
                f"{step['rows']} rows, offsets {step['offsets']}{indices}")
    what = "K" if step["kv"] == 0 else "V"
    return (f"{op} {what} of layer {step['layer']}, {step['rows']} rows, "
            f"offsets {step['offsets']}{indices}")


REFERENCE_KEYS = ("dtype", "num_pages", "kv_dim", "num_layers", "page_size", "num_heads",
                  "head_size", "cache_lengths", "kv_indptr", "kv_indices", "max_seq_length",
                  "max_cache_length", "fill", "fill_div", "full_dump", "steps")


PROFILE_RUN = """\
// RUN: rm -f %t.profile
// RUN: env KVCACHE_EMU_PROFILE=%t.profile mlir-runner %t.gpu.mlir -e main -entry-point-result=void \\
// RUN:     -shared-libs=%mlir_c_runner_utils,%mlir_runner_utils,%kvcache_emulator > /dev/null
// RUN: FileCheck %s --check-prefix=PROFILE < %t.profile
"""


def render(cfg, description, profile=""):
    """The test file; `profile`: PROFILE check lines on the emulator's
    launches (one JSON line each) of the checked sm_80 program."""
    program = Program(cfg)
    program.main()
    reference = {k: cfg[k] for k in REFERENCE_KEYS if k in cfg}
    text = "// Generated by generate_csr_tests.py; edit that script, not this file.\n"
    text += run_lines() + (PROFILE_RUN if profile else "") + "\n"
    text += "".join(f"// {line}".rstrip() + "\n" for line in description.strip().split("\n"))
    text += "\n// CHECK-NOT: MISMATCH\n"
    text += f"// CHECK: OK {program.records} records\n"
    text += profile
    text += "\n// REFERENCE: " + json.dumps(reference) + "\n\n"
    text += program.aliases() + "\n\n"
    text += "\n".join(program.globals) + "\n"
    text += program.helpers() + "\n"
    text += "\n".join(program.body) + "\n"
    return text


# ----------------------------------------------------------------------------
# The tests


def ragged_steps(cfg, batch, layers_kv, seed=11):
    """Stores the new rows of every (kv, layer), gathers every context back,
    copies the pages of the first nonempty sequence onto spare pages and
    gathers through a kv_indices that points that sequence at the copies."""
    offsets, ctx = batch.new_offsets(), batch.context_offsets()
    for kv, layer in layers_kv:
        cfg["steps"].append({"op": "store_ragged", "kv": kv, "layer": layer,
                             "offsets": offsets, "rows": offsets[-1],
                             "new": formula(cfg, seed)})
        seed += 1000
    for kv, layer in layers_kv:
        cfg["steps"].append({"op": "gather_ragged", "kv": kv, "layer": layer,
                             "offsets": ctx, "rows": ctx[-1], "out": formula(cfg, seed)})
        seed += 1000
    b = next(i for i, (c, n) in enumerate(batch.sequences) if c + n)
    sources = batch.pages_of(b)
    destinations = batch.spare[:len(sources)]
    assert len(destinations) == len(sources), "not enough spare pages"
    cfg["steps"].append({"op": "copy_pages",
                         "pairs": [[s, d] for s, d in zip(sources, destinations)]})
    indices = list(batch.kv_indices)
    indices[batch.kv_indptr[b]:batch.kv_indptr[b + 1]] = destinations
    kv, layer = layers_kv[-1]
    cfg["steps"].append({"op": "gather_ragged", "kv": kv, "layer": layer, "offsets": ctx,
                         "rows": ctx[-1], "out": formula(cfg, seed), "kv_indices": indices})


def attention_steps(cfg, batch, group, scale, layers, seed=100, workspace=None):
    """For each layer: store the new K and V rows, then attention (with a
    workspace of that many f32 if given)."""
    offsets = batch.new_offsets()
    for layer in layers:
        for kv in (0, 1):
            cfg["steps"].append({"op": "store_ragged", "kv": kv, "layer": layer,
                                 "offsets": offsets, "rows": offsets[-1],
                                 "new": formula(cfg, seed)})
            seed += 1000
        cfg["steps"].append({"op": "attention_ragged", "layer": layer, "offsets": offsets,
                             "rows": offsets[-1], "q_heads": group * cfg["num_heads"],
                             "scale": float(np.float32(scale)), "q": formula(cfg, seed),
                             "out": formula(cfg, seed + 500)})
        if workspace:
            cfg["steps"][-1]["workspace"] = workspace
        seed += 1000


def tests():
    result = {}
    cfg, batch = config("f16", 4, 2, 8, 2, [(5, 3), (0, 4), (8, 0), (3, 6)], seed=1,
                        spare_pages=3)
    ragged_steps(cfg, batch, [(0, 0), (1, 0), (0, 1), (1, 1)])
    result["csr-ragged-page-size-4-f16.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on a CSR collection of the
test_kv dialect (f16, 4 tokens per page, 2 heads of 8, 2 layers), against
the numpy CSR model of csr_reference.py: the new rows of K and V of both
layers are stored, every context gathered back, the pages of sequence 0
copied onto spare pages and gathered through a kv_indices that points at the
copies, then all of blocks is printed. kv_indices starts with two decoy
entries (kv_indptr[0] = 2) and ends with one. Sequences (cache_length, new
rows): (5, 3) ending on a page boundary, (0, 4), (8, 0) no new rows, (3, 6).
""")

    cfg, batch = config("bf16", 3, 1, 16, 1, [(2, 2), (0, 0), (4, 3)], seed=2,
                        spare_pages=2, mla=True)
    ragged_steps(cfg, batch, [(0, 0)])
    result["csr-ragged-mla-page-size-3-bf16.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on an MLA CSR collection (kv_dim
1, K only; bf16, 3 tokens per page, a page size that is not a power of two,
one head of 16), against csr_reference.py. Sequence 1 owns no pages
(kv_indptr[1] = kv_indptr[2]).
""")

    cfg, batch = config("f32", 2, 3, 12, 1, [(1, 1), (3, 2), (0, 5)], seed=3,
                        spare_pages=3)
    ragged_steps(cfg, batch, [(1, 0), (0, 0)])
    result["csr-ragged-page-size-2-f32.mlir"] = (cfg, """
store_ragged, gather_ragged and copy_pages on an f32 CSR collection with 2
tokens per page and 3 heads of 12 (48-byte rows), against csr_reference.py.
""")

    cfg, batch = config("f16", 4, 2, 16, 2, [(0, 1), (5, 1), (6, 3), (0, 7), (9, 0)], seed=4,
                        attention=True)
    attention_steps(cfg, batch, 2, 1 / math.sqrt(16), [1, 0])
    result["csr-attention-page-size-4-f16.mlir"] = (cfg, """
attention_ragged on an f16 CSR collection (4 tokens per page, 2 KV heads of
16, GQA group 2: q_heads 4, 2 layers), against the float64 model of
csr_reference.py (absolute error 2e-3): per layer the step's new K and V rows
are stored with store_ragged, then attention runs. Sequences (cache_length,
new rows): (0, 1), (5, 1) a decode, (6, 3) a chunked prefill, (0, 7) a
prefill, (9, 0) no rows.
""")

    cfg, batch = config("f32", 8, 1, 32, 1, [(20, 1), (1, 4), (40, 2)], seed=5,
                        attention=True)
    attention_steps(cfg, batch, 4, 0.5, [0])
    result["csr-attention-page-size-8-f32.mlir"] = (cfg, """
attention_ragged on an f32 CSR collection (8 tokens per page, one KV head of
32, GQA group 4, scale 0.5), against the float64 model of csr_reference.py
(relative error 1e-3). Contexts of 21, 5 and 42 keys.
""")

    cfg, batch = config("bf16", 16, 1, 16, 1, [(600, 1), (3, 2)], seed=6, attention=True)
    attention_steps(cfg, batch, 2, 0.25, [0], workspace=512)
    result["csr-attention-split-bf16.mlir"] = (cfg, """
attention_ragged with a workspace on a bf16 CSR collection (16 tokens per
page, one KV head of 16, GQA group 2), against the float64 model of
csr_reference.py (absolute error 1.6e-2): a decode over 601 keys (38 pages)
is long enough for the GPU kernel to split the context (keys-per-split 512)
and merge the partial results; the workspace starts as NaNs.
""", """
// Two splits for each of the 3 rows and 1 KV head, then the merge kernel.
// PROFILE: {"kernel": "main_attention_ragged", "grid": [3, 1, 2],
// PROFILE-NEXT: {"kernel": "main_attention_merge", "grid": [3, 2, 1],
""")
    return result


def main():
    for name, (cfg, description, *profile) in tests().items():
        with open(os.path.join(HERE, name), "w") as f:
            f.write(render(cfg, description, *profile))


if __name__ == "__main__":
    main()
