"""Section 12 of the benchmark report: MLA decode on the emulated GPU.

kvcache.mla_attention_ragged (bf16, one latent head) over DeepSeek's
latent rows (576 = 512 + 64 elements, v_head_size 512: the tensor-core
kernel, up to 64 query heads per block: 128 heads in 2 blocks) and over
rows of 128 (v_head_size 64: the tensor-core kernel) at 16, 32, 64 and
128 query heads, decode rows over contexts of 1000 and 255 tokens, page
64, 256-byte aligned buffers, without a workspace (the targets'
configuration) and with one (2 splits): the emulator's profile
(KVCACHE_EMU_PROFILE) gives each launch's sectors and requested bytes, set
against the latent rows read once plus q and out (the target: <= 1.1x at
16-64 heads, <= 2.1x at 128). The results are checked against
kvcache.reference first. Then the static model of the tensor-core key
loop (sm_90 PTX instructions per mma.sync, target <= 4).
"""

import json
import os
import sys
import tempfile

from emulated import _aligned  # noqa: E402  (bench/, the script's directory)

PAGE_SIZE = 64
LENGTHS = [1000, 255]
# (head_size, v_head_size): DeepSeek's latent rows, and rows a tensor-core
# plan takes.
SHAPES = [(576, 512), (128, 64)]


def _profiled(kvcache_call):
    path = os.path.join(tempfile.mkdtemp(), "profile.jsonl")
    os.environ["KVCACHE_EMU_PROFILE"] = path
    try:
        kvcache_call()
    finally:
        del os.environ["KVCACHE_EMU_PROFILE"]
    with open(path) as f:
        return [json.loads(line) for line in f]


def _measure(np, kv, b, r, q_heads, head_size, v_head_size, workspace):
    """(attention launch, merge launch or None, bytes of the latent rows
    read once + q + out, max |error| against the reference), with a
    workspace when `workspace`."""
    config = kv.CacheConfig("bf16", num_heads=1, head_size=head_size,
                            page_size=PAGE_SIZE, num_layers=1,
                            q_heads=q_heads, mla=True)
    rng = np.random.default_rng(q_heads)
    new = [1] * len(LENGTHS)
    # 256-byte aligned buffers, as a GPU allocator gives: the sectors of a
    # latent row then do not depend on where numpy put the blocks.
    a = lambda x: _aligned(np, x)
    cache = r.random_cache(config, LENGTHS, new, rng)
    cache = r.PagedCache(a(cache.blocks), a(cache.cache_lengths),
                         a(cache.lookup_table), cache.max_seq_length,
                         cache.max_cache_length, cache.dtype)
    offsets = a(r.row_offsets(new))
    q = a(r.random_rows(rng, len(new), q_heads, head_size, "bf16"))
    out = a(np.zeros((len(new), q_heads, v_head_size), np.uint16))
    scratch = [a(np.zeros(1 << 22, np.float32))] if workspace else []
    scale = head_size ** -0.5
    module = kv.EmulatedGPUModule(b.mla_attention_ragged(
        config, v_head_size, "attention", scale=scale, workspace=workspace))
    launches = _profiled(lambda: module.attention(
        *cache.arguments(), 0, q, offsets, out, *scratch))
    expected = r.mla_attention_ragged(q, cache.key_cache(0), offsets, out,
                                      scale, v_head_size)
    error = np.abs(kv.dtypes.to_float32(out, "bf16") -
                   kv.dtypes.to_float32(expected, "bf16")).max()
    latent = sum(n + 1 for n in LENGTHS) * head_size * 2
    main = next(x for x in launches if "merge" not in x["kernel"])
    merge = next((x for x in launches if "merge" in x["kernel"]), None)
    return main, merge, latent, latent + q.nbytes + out.nbytes, error


READING = (
    "Reading it: at 576/512 the tensor-core decode kernel (q's dims split "
    "over the warps of each 16-head tile, partial scores summed in shared "
    "memory) takes up to 64 query heads per block (16 and 32 heads: 4 warps "
    "per tile, each a quarter of q's dims; 33-64 heads: four tiles of 2 "
    "warps, each half of q's dims and 256 output columns, 255 registers, "
    "within 48 KiB of static shared memory), so a row's latent rows are read "
    "once per block and split: once at 16-64 heads, twice at 128 (4 times "
    "at 128 and twice at 64 with the blocks of 32 heads before; on CUDA "
    "cores about q_heads / 3 times). Past the latent rows the traffic is q, "
    "loaded in whole 32-byte sectors (8 bytes a lane, traded within each "
    "quad into the A fragments; on sm_80 4-byte pairs, half of each sector), "
    "and out's pairs, stored 4 bytes a lane: twice their bytes. With a "
    "workspace the 2 splits add their f32 "
    "partial states (v_head_size + 2 floats per row, head and split) and a "
    "merge launch. At 128/64 the tensor-core kernel takes every query head "
    "as an M row of one pass and reads its p.V fragments from the K tile in "
    "shared memory (no V copies).")


def _static_model(build, lines):
    """PTX instructions per mma.sync of the tensor-core MLA key loops
    (bench/gpu/model.py, ptxas -v), or a 'not measured' line."""
    ptxas = "/usr/local/cuda/bin/ptxas"
    if not os.path.exists(ptxas):
        lines += ["Static model: not measured (ptxas is not installed).", ""]
        return
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "gpu"))
    import model
    text = "\n".join(
        [model.mla_function(f"latent{heads}", heads)
         for heads in (16, 32, 64, 128)] +
        [model.mla_function(f"mla{heads}", heads, 128, 64, PAGE_SIZE)
         for heads in (16, 64, 128)])
    lines += ["Static model of the key loop, sm_90 (bench/gpu/model.py, "
              "`ptxas -v`), bf16, decode kernels with a workspace (latent*: "
              "rows of 576, v_head_size 512; mla*: rows of 128, v_head_size "
              "64):", "",
              "| kernel | key loop PTX instructions | mma.sync | instructions "
              "per mma.sync (target <= 4) | the same without the rescale "
              "(common path) | stages in flight | registers | spill bytes |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in model.model(build, ptxas, text, {}, 6):
        if row["kind"] != "attention":
            continue
        mma = row.get("mma_per_iteration", 0)
        if not mma:
            lines.append(f"| {row['kernel']} | not measured: no key loop with "
                         "mma.sync | | | | | | |")
            continue
        common = row.get("common_path_instructions",
                         row["loop_instructions"])
        lines.append(f"| {row['kernel']} | {row['loop_instructions']} | {mma} | "
                     f"{row['loop_instructions'] / mma:.1f} | "
                     f"{common / mma:.1f} | "
                     f"{row['stages_in_flight']:g} | {row['registers']} | "
                     f"{row['spill_bytes']} |")
    lines += ["", "The key loop counts the rescale of the output, which a step "
              "skips unless a row's max grows by more than 2^8 (the first "
              "step, then rarely): the common path is the loop without it.", ""]


def mla_section(build, quick, lines):
    from section_cli import import_package
    first = len(lines)
    lines += ["## 12. MLA decode (mla_attention_ragged), emulated GPU", "",
              __doc__.split("\n\n")[1].replace("\n", " "), ""]
    package = import_package(build, lines)
    if package is None:
        return
    np, kv, b, r = package
    lines += ["| rows / v_head_size | q heads | workspace | kernel | grid | "
              "latent rows once + q + out (bytes) | "
              "traffic (32 x sectors) | traffic / must | requested load bytes "
              "/ latent rows once | merge traffic | max abs error |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
              "| --- |"]
    heads = (16,) if quick else (16, 32, 64, 128)
    for (head_size, v_head_size), q_heads, workspace in (
            (shape, n, w) for shape in SHAPES for n in heads
            for w in (False, True)):
        main, merge, latent, must, error = _measure(
            np, kv, b, r, q_heads, head_size, v_head_size, workspace)
        if error > 1.6e-2:
            raise SystemExit(f"bench/mla.py: mla_attention_ragged differs from "
                             f"kvcache.reference by {error:.2e} at {q_heads} "
                             "q heads")
        traffic = 32 * (main["load_sectors"] + main["store_sectors"])
        merged = (32 * (merge["load_sectors"] + merge["store_sectors"])
                  if merge else 0)
        grid = "x".join(str(v) for v in main["grid"])
        lines.append(f"| {head_size} / {v_head_size} | {q_heads} | "
                     f"{'yes' if workspace else 'no'} | "
                     f"{main['kernel']} | {grid} | {must:,} | "
                     f"{traffic:,} | {traffic / must:.2f} | "
                     f"{main['global_load_bytes'] / latent:.2f} | {merged:,} | "
                     f"{error:.1e} |")
    lines += ["", READING, ""]
    _static_model(build, lines)
    print("\n".join(lines[first:]), flush=True)


if __name__ == "__main__":
    from section_cli import run_section
    run_section(mla_section, __doc__.splitlines()[0])
