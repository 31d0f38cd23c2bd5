#!/usr/bin/env python3
"""A static model of our GPU kernels, from their PTX and `ptxas -v`.

No GPU is needed (nor lent, so far): each kernel is compiled for sm_90 by
kvcache-compile and assembled by ptxas, and the model reads from the PTX and
the ptxas report

- the main loop: for attention the innermost loop issuing cp.async (the key
  loop), for store_ragged/gather_ragged/copy_pages the outermost loop that
  stores to global memory (store_ragged/gather_ragged: the tiles of rows a
  warp visits, a thread's chunks of a tile unrolled, so no nested loop
  stores for the shapes modelled; copy_pages: the pairs a block visits), its
  nested loops that store counted once (copy_pages: a page's chunks) and
  those that do not `--search-steps` times (the batch-row search of the
  lanes that resolve a tile's rows: log2(batch));
- its instructions per KB moved per warp (attention: 32 lanes x the cp.async
  bytes of an iteration, times the share of the block's threads that copy:
  a query tile's first threads only, copying_threads) or per 16 B stored per thread (data ops: the bytes
  of every st.global of the iteration, a thread's 8 chunks of a tile for the
  ragged ops). Every instruction counts once per iteration: a warp issues
  the code of a branch taken by some of its lanes once for all of them (the
  row lookups of the ragged ops, done by the lanes < rows per tile), so the
  count is the warp's issue count. For attention also per KB of the cache,
  counting every pass a large query group makes over K/V on CUDA cores (8
  query heads per pass; the tensor-core kernel, recognised by its mma.sync,
  makes one pass);
- the mma.sync of the main loop (`mma_per_iteration` in --json; the
  tensor-core kernels), for instructions per mma.sync (bench/prefill.py;
  `instructions_per_mma`);
- the tensor-core kernels' conditional rescale: their online softmax
  rescales the output only in a step where a row's max grows by more than
  2^8 (blocks behind branches, recognised by their ex2.approx without
  copies, barriers or mma.sync). The loop's instructions count them (the
  path with the rescale: a step that rescales, the first of every tile
  among them), even where LLVM placed a block after the loop;
  `common_path_instructions` and `common_path_per_mma` are those of the
  steps that skip it (the common path when the max settles);
- registers, spills, static shared memory, threads per block, and from them
  blocks per SM (sm_90: 64 K registers allocated per warp in units of 256,
  64 warps, 32 blocks, 228 KB shared memory with 1 KB reserved per block);
- bytes in flight per SM: blocks x warps x bytes per warp and iteration x the
  iterations in flight: a loop committing g cp.async groups per iteration
  and waiting with `cp.async.wait_group N` has at most N + 1 groups, (N + 1)
  / g iterations, in flight (the N left by the wait and the one issued after
  it);
- the issue bound: an SM's 4 schedulers issuing one instruction per cycle at
  1.98 GHz over 132 SMs (H200), `132 x 4 x 1.98e9 x 1024 / instructions per
  KB` bytes/s, as a ratio to a 4.3 TB/s device copy. Below 1 the kernel
  cannot reach the copy's bandwidth even if every scheduler issues every
  cycle; near 1 it reaches it only then.

PTX instructions, not SASS: without cuobjdump the SASS is not visible here;
for the attention key loop the two counts were within 3% (233 vs 239).

    /usr/bin/python3 bench/gpu/model.py --build build            # markdown table
    /usr/bin/python3 bench/gpu/model.py --build build --json      # one JSON object per kernel
    /usr/bin/python3 bench/gpu/model.py --build build --check bench/gpu/model-limits.json
    /usr/bin/python3 bench/gpu/model.py --rows rows.jsonl --check LIMITS.json
                                  # the figures of an earlier --json run
    /usr/bin/python3 bench/gpu/model.py --build build --tile-configs
                                  # the query-tile plans' key loops per mma.sync
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

SMS, SCHEDULERS, CLOCK_HZ, COPY_BYTES_PER_S = 132, 4, 1.98e9, 4.3e12
REGISTERS_PER_SM, WARPS_PER_SM, BLOCKS_PER_SM = 65536, 64, 32
SHARED_PER_SM, SHARED_RESERVED_PER_BLOCK = 228 * 1024, 1024

ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2}


# ---------------------------------------------------------------------------
# The kernels modelled
# ---------------------------------------------------------------------------

def attention_function(name, dtype, kv_heads, group, page_size, head_size=128,
                       noncausal=False, scales=None, rows_dtype=None):
    """A decode attention with a workspace (so the host may split); a cache
    of `dtype` codes with `scales` (e.g. token_head) and rows of
    `rows_dtype` when given."""
    q_heads = kv_heads * group
    quantized = f", scales = {scales}" if scales else ""
    cache = (f"!kvcache.paged_cache<{dtype}, num_heads = {kv_heads}, head_size = "
             f"{head_size}, page_size = {page_size}{quantized}>")
    rows = f"memref<?x{q_heads}x{head_size}x{rows_dtype or dtype}>"
    mask = ", noncausal" if noncausal else ""
    return (f"func.func @{name}(%q: {rows}, %k: {cache}, %v: {cache}, %offsets: memref<?xi32>, "
            f"%out: {rows}, %ws: memref<?xf32>) {{\n"
            f"  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {{scale = "
            f"{1 / math.sqrt(head_size)!r} : f32{mask}}}\n"
            f"      : {rows}, {cache}, {cache}, memref<?xi32>, {rows}, memref<?xf32>\n"
            f"  return\n}}\n")


def mla_function(name, heads, head_size=576, v_head_size=512, page_size=64):
    """A decode mla_attention_ragged (bf16, one latent head) with a
    workspace: DeepSeek's latent rows by default."""
    cache = (f"!kvcache.paged_cache<bf16, num_heads = 1, head_size = "
             f"{head_size}, page_size = {page_size}, mla = true>")
    q = f"memref<?x{heads}x{head_size}xbf16>"
    out = f"memref<?x{heads}x{v_head_size}xbf16>"
    return (f"func.func @{name}(%q: {q}, %k: {cache}, %rows: memref<?xi32>, "
            f"%out: {out}, %ws: memref<?xf32>) {{\n"
            f"  kvcache.mla_attention_ragged %q, %k, %rows, %out, %ws "
            f"{{scale = {head_size ** -0.5:.6f} : f32, v_head_size = "
            f"{v_head_size} : i64}} : {q}, {cache}, memref<?xi32>, {out}, "
            f"memref<?xf32>\n  return\n}}\n")


def data_functions(dtype="f16", heads=8, head_size=128, page_size=16):
    cache = (f"!kvcache.paged_cache<{dtype}, num_heads = {heads}, head_size = {head_size}, "
             f"page_size = {page_size}>")
    collection = cache.replace("paged_cache", "paged_collection")
    rows = f"memref<?x{heads}x{head_size}x{dtype}>"
    text = ""
    for op in ("store_ragged", "gather_ragged"):
        text += (f"func.func @{op}(%k: {cache}, %rows: {rows}, %offsets: memref<?xi32>) {{\n"
                 f"  kvcache.{op} %k, %rows, %offsets : {cache}, {rows}, memref<?xi32>\n"
                 f"  return\n}}\n")
    text += (f"func.func @copy_pages(%c: {collection}, %pairs: memref<?x2xi32>) {{\n"
             f"  kvcache.copy_pages %c, %pairs : {collection}, memref<?x2xi32>\n"
             f"  return\n}}\n")
    # store_ragged's rope clause: the same kernel, rotating each chunk.
    for style, rotary_dims in (("half", head_size), ("interleaved", head_size),
                               ("half", head_size // 2)):
        table = f"memref<?x{rotary_dims}xf32>"
        text += (f"func.func @store_rope_{style}{rotary_dims}(%k: {cache}, %rows: {rows}, "
                 f"%offsets: memref<?xi32>, %cos_sin: {table}) {{\n"
                 f"  kvcache.store_ragged %k, %rows, %offsets rope(%cos_sin) "
                 f"{{rotary_dims = {rotary_dims} : i64, style = \"{style}\"}} : {cache}, {rows}, "
                 f"memref<?xi32>, {table}\n  return\n}}\n")
    return text


def attention_configs():
    """(function name, dtype, kv heads, group, page size): the decode
    configurations of the GPU targets (GQA 1, 4, 8 and MQA 64, head 128)."""
    configs = []
    for dtype in ("f16", "bf16"):
        for kv_heads, group in ((8, 1), (8, 4), (8, 8), (1, 64)):
            for page_size in (1, 16, 128, 256):
                name = f"attention_{dtype}_group{group}_page{page_size}"
                configs.append((name, dtype, kv_heads, group, page_size))
    return configs


def tile_configs():
    """(name, chip, attention_function arguments): the query-tile kernel's
    plans (bench/report.md 11.4), bf16 at head 128, GQA 4, causal, page 16
    on sm_90 (64 keys a step) but for the argument named: the plans of 32
    keys a step (GQA 1 and 16, noncausal, head 256, an fp8 cache with
    token_head scales, sm_80)."""
    base = {"dtype": "bf16", "kv_heads": 8, "group": 4, "page_size": 16}
    return [(name, chip, {**base, **changes}) for name, chip, changes in (
        ("gqa4", "sm_90", {}),
        ("gqa1", "sm_90", {"group": 1}),
        ("gqa16", "sm_90", {"group": 16, "kv_heads": 2}),
        ("noncausal", "sm_90", {"noncausal": True}),
        ("head256", "sm_90", {"head_size": 256}),
        ("fp8", "sm_90", {"dtype": "f8E4M3FN", "scales": "token_head",
                          "rows_dtype": "bf16"}),
        ("sm80", "sm_80", {}))]


def tile_table(build, ptxas):
    """Markdown: the key loops of tile_configs(), per mma.sync."""
    lines = ["| plan | chip | kernel | loop instructions (common path) | mma.sync "
             "| per mma.sync | common path per mma.sync | registers | spill bytes |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for chip in sorted({c[1] for c in tile_configs()}, reverse=True):
        configs = [c for c in tile_configs() if c[1] == chip]
        text = "".join(attention_function(name, **args) for name, _, args in configs)
        for row in model(build, ptxas, text, {}, 6, chip):
            if row["kind"] != "attention" or "mma_per_iteration" not in row:
                continue
            name, kernel = row["kernel"].split("_attention_")
            common = row.get("common_path_instructions", row["loop_instructions"])
            lines.append(f"| {name} | {chip} | {kernel} | {row['loop_instructions']} ({common}) "
                         f"| {row['mma_per_iteration']} | {row['instructions_per_mma']:.2f} "
                         f"| {row['common_path_per_mma']:.2f} | {row['registers']} "
                         f"| {row['spill_bytes']} |")
    return "\n".join(lines)


# The attention plan serves at most 8 query heads of a group per pass over
# K/V (lib/Conversion/KVCacheToGPU/AttentionPlan.cpp); a larger group reads
# K/V once per pass.
HEADS_PER_PASS = 8


def module_text(quick=False):
    """The IR of every kernel modelled (the attention configurations, MLA's
    latent rows at 64 query heads, the data ops), and {kernel: passes over
    K/V}."""
    configs = attention_configs()
    if quick:  # the lit test's subset
        configs = [c for c in configs if c[1] == "f16" and c[4] in (1, 16)]
    text = "".join(attention_function(*c) for c in configs)
    # MLA's latent rows at 64 query heads: one block of 64 heads (16 warps).
    text += mla_function("mla_bf16_heads64_page64", 64)
    passes = {f"{c[0]}_attention_ragged": math.ceil(c[3] / HEADS_PER_PASS) for c in configs}
    return text + data_functions(), passes


# ---------------------------------------------------------------------------
# Reading PTX and ptxas
# ---------------------------------------------------------------------------

def is_instruction(line):
    """Instructions (predicated ones too), not labels, comments, braces or
    directives."""
    line = line.strip()
    return bool(line) and not line.startswith(("$", "//", "{", "}", "."))


def entries(ptx):
    """{kernel: (header, body lines)}"""
    kernels = {}
    for match in re.finditer(r"\.visible \.entry (\w+)\((.*?)\n}\n", ptx, re.S):
        kernels[match.group(1)] = match.group(2)
    return kernels


def reaches(lines, first, last):
    """Whether control at line `first` reaches line `last` without leaving
    the lines between them."""
    labels = {m.group(1): i for i, line in enumerate(lines)
              if (m := re.match(r"^(\$L__BB\d+_\d+):", line))}
    seen, todo = set(), [first]
    while todo:
        index = todo.pop()
        if index in seen or not first <= index <= last:
            continue
        seen.add(index)
        line = lines[index].strip()
        branch = re.match(r"^(@!?%p\d+\s+)?bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", line)
        if branch:
            todo.append(labels[branch.group(2)])
        if not (branch and not branch.group(1)) and not line.startswith(("ret", "exit")):
            todo.append(index + 1)
    return last in seen


def loops(lines):
    """[(first, last)] line ranges of the loops: a label and the last of the
    later branches back to it that the label's code reaches within the range
    (not a loop's exit that LLVM placed above it); the range holds every
    path back (a conditional block that branches back on its own too)."""
    found = []
    for index, line in enumerate(lines):
        label = re.match(r"^(\$L__BB\d+_\d+):", line)
        if not label:
            continue
        back = re.compile(r"\bbra(\.uni)?\s+" + re.escape(label.group(1)) + ";")
        ends = [end for end in range(index + 1, len(lines))
                if back.search(lines[end]) and reaches(lines, index, end)]
        if ends:
            found.append((index, ends[-1]))
    return found


def count(lines, first, last):
    return sum(1 for line in lines[first + 1:last + 1] if is_instruction(line))


def cp_async_bytes(text):
    return sum(int(size) for size in
               re.findall(r"cp\.async\.c[ag]\.shared\.global(?:\.L2::\w+)?\s+\[[^]]*\],\s*\[[^]]*\],\s*(\d+)", text))


def store_bytes(text):
    sizes = {"v4.b32": 16, "v4.u32": 16, "v2.b64": 16, "v2.b32": 8, "b64": 8, "u64": 8,
             "b32": 4, "u32": 4, "f32": 4, "b16": 2, "u16": 2, "b8": 1, "u8": 1}
    total = 0
    for kind in re.findall(r"st\.global\.(?:L1::\w+\.)?([\w.]+)\s", text):
        total += sizes.get(kind, 0)
    return total


def copying_threads(body, loop_text, threads):
    """The threads of a block that run the key loop's copies: those below
    the immediate of a `setp.lt` of the thread index inside the loop (a query
    tile's copies are made by its first threads only), else all."""
    derived = set(re.findall(r"mov\.u32\s+(%r\d+),\s*%tid\.x;", body))
    for _ in range(3):  # the index widened or narrowed on its way
        for dest, source in re.findall(r"(?:cvt\.[\w.]+|mov\.b\d+)\s+(%r\w+),\s*(%r\w+);", body):
            if source in derived:
                derived.add(dest)
    bounds = [int(bound) for register, bound in re.findall(
        r"setp\.lt\.u(?:32|64)\s+%p\d+,\s*(%r\w+),\s*(\d+);", loop_text)
        if register in derived and 0 < int(bound) < threads]
    return min(bounds, default=threads)


def branch_regions(lines, first, last):
    """[(lines, inline)] of the code behind each conditional branch of the
    loop [first, last]: the lines it falls through to when they end in an
    unconditional branch to the same target (`@%p bra X; ...; bra X`, its
    target anywhere), else the lines a forward branch within the loop skips,
    else the block out of the loop it jumps to, up to its branch back;
    inline: whether those lines are within the loop's."""
    labels = {m.group(1): i for i, line in enumerate(lines)
              if (m := re.match(r"^(\$L__BB\d+_\d+):", line))}

    def block_end(start):
        """The first unconditional branch (or label) from `start`."""
        end = start
        while end + 1 < len(lines) and not re.match(r"^\s*bra(?:\.uni)?\s|^\$L", lines[end]):
            end += 1
        return end

    regions = []
    for index in range(first + 1, last + 1):
        branch = re.match(r"^\s*@!?%p\d+\s+bra(?:\.uni)?\s+(\$L__BB\d+_\d+);",
                          lines[index])
        if not branch:
            continue
        target = labels[branch.group(1)]
        through = block_end(index + 1)
        if re.match(r"^\s*bra(?:\.uni)?\s+" + re.escape(branch.group(1)) + ";",
                    lines[through]):
            regions.append((range(index + 1, through + 1), through <= last))
        elif index < target <= last:
            regions.append((range(index + 1, target), True))
        elif not first <= target <= last:
            regions.append((range(target, block_end(target) + 1), False))
    return regions


def rescale_regions(lines, first, last):
    """(instructions inside the loop's lines, instructions after them) of
    the loop's conditional rescale (the tensor-core kernels' online
    softmax: the blocks behind a branch with ex2.approx and no copy,
    barrier or mma.sync)."""
    inside = after = 0
    for region, inline in branch_regions(lines, first, last):
        text = "\n".join(lines[i] for i in region)
        if "ex2.approx" in text and not re.search(r"cp\.async|bar\.sync|mma\.sync", text):
            size = sum(1 for i in region if is_instruction(lines[i]))
            if inline:
                inside += size
            else:
                after += size
    return inside, after


def main_loop(body, kind, search_steps, threads=128):
    """(instructions per iteration, bytes moved per iteration, stages in
    flight, mma.sync per iteration, instructions of the iterations that skip
    the rescale) of the kernel's main loop; None when it has none. The
    instructions per iteration count every instruction of the loop, the
    conditional rescale of the tensor-core kernels' online softmax too,
    even where LLVM placed that block after the loop."""
    lines = body.splitlines()
    spans = loops(lines)
    # cp.async.ca/cg (a copy), not cp.async.commit_group: a loop with two
    # back branches, one past the next step's copies, is the key loop only
    # with them.
    key = r"cp\.async\.c[ag]\." if kind == "attention" else r"st\.global"
    candidates = [(last - first, first, last) for first, last in spans
                  if re.search(key, "\n".join(lines[first:last + 1]))]
    if not candidates:
        return None
    # Attention: the innermost loop issuing copies (the key loop). Data ops:
    # the outermost loop that stores (warp tiles of rows, or pairs, over the
    # grid), whose nested loops that do not store are the batch-row search.
    _, first, last = min(candidates) if kind == "attention" else max(candidates)
    instructions = count(lines, first, last)
    common = instructions
    if kind == "attention":
        inside, after = rescale_regions(lines, first, last)
        common -= inside
        instructions += after
    if kind != "attention":
        for inner_first, inner_last in spans:
            inner = "\n".join(lines[inner_first:inner_last + 1])
            if first < inner_first and inner_last < last and not re.search(key, inner):
                instructions += (search_steps - 1) * count(lines, inner_first, inner_last)
    text = "\n".join(lines[first:last + 1])
    if kind == "attention":
        # Per warp, on average over the block's warps: a loop whose copies
        # only some threads make moves their bytes for every warp's issue.
        moved = 32 * cp_async_bytes(text) * copying_threads(body, text, threads) / threads
        waits = [int(n) for n in re.findall(r"cp\.async\.wait_group\s+(\d+)", text)]
        groups = max(text.count("cp.async.commit_group"), 1)
        stages = (max(waits) + 1) / groups if waits else 0
    else:
        moved = store_bytes(text)          # per thread
        stages = 1
    return instructions, moved, stages, len(re.findall(r"\bmma\.sync\.", text)), common


def ptxas_report(ptxas, ptx_file, chip="sm_90"):
    info = subprocess.run([ptxas, f"-arch={chip}", "-v", ptx_file, "-o", os.devnull],
                          capture_output=True, text=True, check=True).stderr
    stats = {}
    for name, block in re.findall(
            r"Compiling entry function '(\w+)'.*?\n(.*?)(?=ptxas info    : Compiling|\Z)", info, re.S):
        regs = re.search(r"Used (\d+) registers", block)
        smem = re.search(r"(\d+) bytes smem", block)
        spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", block)
        stats[name] = {"registers": int(regs.group(1)) if regs else 0,
                       "spill_bytes": int(spills.group(1)) + int(spills.group(2)) if spills else 0,
                       "shared_bytes": int(smem.group(1)) if smem else 0}
    return stats


def blocks_per_sm(registers, threads, shared):
    warps = math.ceil(threads / 32)
    registers_per_warp = math.ceil(max(registers, 1) * 32 / 256) * 256
    by_registers = (REGISTERS_PER_SM // registers_per_warp) // warps
    by_warps = WARPS_PER_SM // warps
    by_shared = SHARED_PER_SM // (shared + SHARED_RESERVED_PER_BLOCK)
    return max(0, min(by_registers, by_warps, by_shared, BLOCKS_PER_SM))


def model(build, ptxas, text, passes, search_steps, chip="sm_90"):
    with tempfile.TemporaryDirectory() as tmp:
        source, ptx_file = os.path.join(tmp, "model.mlir"), os.path.join(tmp, "model.ptx")
        with open(source, "w") as f:
            f.write(text)
        subprocess.run([os.path.join(build, "bin", "kvcache-compile"), source, "-o", ptx_file,
                        "--chip", chip], check=True)
        ptx = open(ptx_file).read()
        stats = ptxas_report(ptxas, ptx_file, chip)
    rows = []
    for name, body in entries(ptx).items():
        kind = "attention" if name.endswith(("_attention_ragged", "_attention_tiles")) else (
            "merge" if name.endswith("_attention_merge") else "data")
        if kind == "merge":
            continue
        threads = re.search(r"\.(?:maxntid|reqntid)\s+(\d+),\s*(\d+),\s*(\d+)", body)
        threads = math.prod(int(t) for t in threads.groups()) if threads else 128
        row = {"kernel": name, "kind": kind, "threads": threads, **stats.get(name, {})}
        loop = main_loop(body, kind, search_steps, threads)
        row["blocks_per_sm"] = blocks_per_sm(row.get("registers", 0), threads,
                                             row.get("shared_bytes", 0))
        if loop:
            instructions, moved, stages, mma, common = loop
            row["loop_instructions"] = instructions
            if common != instructions:
                row["common_path_instructions"] = common
            if mma:
                row["mma_per_iteration"] = mma
                row["instructions_per_mma"] = round(instructions / mma, 2)
                row["common_path_per_mma"] = round(common / mma, 2)
            if kind == "attention" and moved:
                row["passes"] = 1 if "mma.sync" in body else passes.get(name, 1)
                per_kb = instructions * 1024 / moved * row["passes"]
                row["bytes_per_warp_iteration"] = moved
                row["instructions_per_kb"] = round(per_kb, 1)
                row["stages_in_flight"] = stages
                row["bytes_in_flight_per_sm"] = (row["blocks_per_sm"] * math.ceil(threads / 32)
                                                 * round(moved * stages))
                row["issue_bound"] = round(SMS * SCHEDULERS * CLOCK_HZ * 1024 / per_kb
                                           / COPY_BYTES_PER_S, 2)
            elif moved:
                per_16 = instructions * 16 / moved
                row["instructions_per_16b"] = round(per_16, 1)
                # Per warp: 32 x 16 B = 512 B per per_16 instructions.
                row["issue_bound"] = round(SMS * SCHEDULERS * CLOCK_HZ * 512 / per_16
                                           / COPY_BYTES_PER_S, 2)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------
# Output and checks
# ---------------------------------------------------------------------------

def per_mma(row):
    """Instructions per mma.sync of the loop, and of its common path where
    the rescale is skipped ('-' without mma.sync)."""
    if "instructions_per_mma" not in row:
        return "-"
    return f"{row['instructions_per_mma']:.2f} ({row['common_path_per_mma']:.2f})"


def markdown(rows):
    lines = ["| kernel | registers | spills (B) | smem (B) | threads | blocks/SM | loop instructions "
             "| passes over K/V | per KB of cache per warp (attention) / per 16 B per thread (data) "
             "| KB in flight per SM | issue bound / copy | per mma.sync (common path) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        per = r.get("instructions_per_kb", r.get("instructions_per_16b", "-"))
        flight = r.get("bytes_in_flight_per_sm")
        flight = f"{flight / 1024:.0f}" if flight is not None else "-"
        lines.append(f"| {r['kernel']} | {r.get('registers', '?')} | {r.get('spill_bytes', '?')} "
                     f"| {r.get('shared_bytes', '?')} | {r['threads']} | {r['blocks_per_sm']} "
                     f"| {r.get('loop_instructions', '-')} | {r.get('passes', '-')} | {per} | {flight} "
                     f"| {r.get('issue_bound', '-')} | {per_mma(r)} |")
    return "\n".join(lines)


def check(rows, limits_file):
    """Fails (returns messages) where a kernel got worse than its limits:
    more loop instructions per KB (per 16 B), more registers, spills, fewer
    bytes in flight."""
    limits = json.load(open(limits_file))
    by_name = {r["kernel"]: r for r in rows}
    problems = []
    for name, limit in limits.items():
        if name.startswith("_"):
            continue
        row = by_name.get(name)
        if row is None:
            problems.append(f"{name}: not compiled")
            continue
        for key, bound in limit.items():
            value = row.get(key)
            worse = value is None or (value < bound if key in ("bytes_in_flight_per_sm",
                                                                 "issue_bound")
                                      else value > bound)
            if worse:
                problems.append(f"{name}: {key} = {value}, limit {bound}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--ptxas", default=shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas")
    parser.add_argument("--json", action="store_true", help="one JSON object per kernel")
    parser.add_argument("--quick", action="store_true",
                        help="f16 attention at pages 1 and 16, MLA at 64 heads and the "
                             "data ops only")
    parser.add_argument("--search-steps", type=int, default=6,
                        help="iterations of a loop nested in a data op's main loop "
                             "(the batch-row search: log2(batch), 6 for batch 64)")
    parser.add_argument("--check", metavar="LIMITS.json",
                        help="exit 1 where a kernel is worse than its limits")
    parser.add_argument("--rows", metavar="ROWS.jsonl",
                        help="the kernels' figures from the --json output of an earlier "
                             "run instead of compiling (several limits files checked "
                             "against one compile)")
    parser.add_argument("--tile-configs", action="store_true",
                        help="only the tensor-core key loops of the query-tile plans "
                             "(tile_configs), per mma.sync, as a markdown table")
    args = parser.parse_args()
    if args.tile_configs:
        print(tile_table(args.build, args.ptxas))
        return
    if args.rows:
        with open(args.rows) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    else:
        if not os.path.exists(args.ptxas):
            sys.exit(f"ptxas not found ({args.ptxas}): the model needs it for registers and "
                     "shared memory; install the CUDA toolkit or pass --ptxas")
        text, passes = module_text(args.quick)
        rows = model(args.build, args.ptxas, text, passes, args.search_steps)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(markdown(rows))
    if args.check:
        problems = check(rows, args.check)
        for problem in problems:
            print("REGRESSION:", problem)
        if problems:
            sys.exit(1)
        print(f"OK: {len(rows)} kernels within {args.check}")


if __name__ == "__main__":
    main()
