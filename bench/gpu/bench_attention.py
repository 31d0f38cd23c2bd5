"""Checks and times the attention_ragged kernels of bench/gpu/attention.mlir
on a GPU: results against a numpy model (float64 softmax) of docs/Contract.md
section 3.3, bandwidth (bytes of K/V read / time) as a ratio to a
device-to-device copy of the same bytes in the same run, and PyTorch's
scaled_dot_product_attention on the gathered K/V as a second reference. Needs
cupy (torch optional).

Usage: bench_attention.py PTX OUT_DIR [--quick]
"""

import json
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from kvcache.abi import KernelArgs  # noqa: E402

KV_HEADS, Q_HEADS, DIM = 8, 32, 128
SCALE = 0.0883883
KEYS_PER_SPLIT, MAX_SPLITS = 512, 16  # convert-kvcache-to-gpu defaults


def block_sizes(ptx):
    """`.maxntid` of every entry of the PTX."""
    sizes, current = {}, None
    for line in ptx.splitlines():
        m = re.match(r"\.visible \.entry (\w+)\(", line)
        if m:
            current = m.group(1)
        m = re.match(r"\.maxntid (\d+)", line.strip())
        if m and current:
            sizes[current] = int(m.group(1))
    return sizes


def model(q, blocks, table, lengths, offsets, page, scale=SCALE):
    """docs/Contract.md section 3.3 attention in float64."""
    out = np.zeros(q.shape, np.float64)
    q_heads = q.shape[1]
    group = q_heads // blocks.shape[4]
    for b in range(len(offsets) - 1):
        for r in range(offsets[b], offsets[b + 1]):
            p = lengths[b] + r - offsets[b]
            tokens = np.arange(p + 1)
            pages = table[b, tokens // page]
            k = blocks[pages, 0, 0, tokens % page].astype(np.float64)  # [t, H, D]
            v = blocks[pages, 1, 0, tokens % page].astype(np.float64)
            for h in range(q_heads):
                s = scale * k[:, h // group] @ q[r, h].astype(np.float64)
                w = np.exp(s - s.max())
                out[r, h] = (w / w.sum()) @ v[:, h // group]
    return out


def main(ptx_path, out_dir, quick=False):
    import cupy as cp

    ptx = open(ptx_path).read()
    threads = block_sizes(ptx)
    module = cp.RawModule(path=ptx_path)
    rng = np.random.default_rng(7)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    flush = cp.empty(512 * 2**20, cp.uint8)
    results = {"checks": [], "bandwidth": []}

    sm_count = cp.cuda.Device().attributes["MultiProcessorCount"]

    def blocks_per_sm(group, dim, dtype_bytes=2):
        # The compiler's estimate (AttentionPlan::estimatedBlocksPerSM,
        # docs/KernelABI.md): tensor cores for f16/bf16 heads of 64/128/256
        # (registers 40 + q + D/(2 d_split) + keys/2, q 8 when staged in
        # shared memory, else D/4), CUDA cores
        # otherwise (9 for a group of 1, 4 for 4, 2 for 8 or more heads per
        # pass at head 128).
        if dim in (64, 128, 256):
            m_tiles = 1 << max(0, (-(-group // 16) - 1).bit_length())
            d_split = max(1, 4 // m_tiles)
            warps = m_tiles * d_split
            keys = min(max(8192 // (dim * dtype_bytes), 16), 32)
            stages = 2
            if d_split == 1:  # one warp per tile: 16 keys in 4 stages
                stages, keys = 2 * keys // 16, 16
            row = dim + 16 // dtype_bytes
            shared = 2 * stages * keys * row * dtype_bytes
            q_bytes = m_tiles * 16 * row * dtype_bytes
            staged = d_split > 1 and shared + q_bytes <= 48 * 1024
            shared += q_bytes if staged else 0
            registers = (40 + (8 if staged else dim // 4) + dim // (2 * d_split)
                         + keys // 2)
            warp_registers = -(-registers * 32 // 256) * 256
            return max(min(64 // warps, 65536 // warp_registers // warps,
                           228 * 1024 // (shared + 1024)), 1)
        return 9 if group == 1 else 4 if group <= 4 else 2

    def splits_for(rows, max_context, workspace_size, q_heads, dim, kv_heads=KV_HEADS):
        # As the compiled host (docs/KernelABI.md, "Attention splits"), with
        # this GPU's SM count and the compiler's blocks-per-SM estimate.
        wanted = -(-max_context // KEYS_PER_SPLIT)
        capacity = workspace_size // max(rows * q_heads * (dim + 2), 1)
        group = q_heads // kv_heads
        fill = sm_count * blocks_per_sm(group, dim) // max(min(rows, 65535) * kv_heads, 1)
        return max(min(wanted, capacity, fill, MAX_SPLITS), 1)

    def run(page, batch, context, new_rows, use_workspace, check, function=None,
            kv_heads=KV_HEADS, q_heads=Q_HEADS, dim=DIM, scale=SCALE):
        # `function`: a function of attention.mlir other than page<N> (the
        # other shapes are checked only; the timing below assumes the
        # default shape).
        function = function or f"page{page}"
        pages_per_seq = -(-(context + new_rows) // page)
        num_pages = batch * pages_per_seq + 1
        blocks = (rng.standard_normal((num_pages, 2, 1, page, kv_heads, dim)) * 0.5).astype(np.float16)
        table = rng.permutation(batch * pages_per_seq).astype(np.int32).reshape(batch, pages_per_seq)
        lengths = np.full(batch, context, np.int32)
        offsets = np.arange(0, batch * new_rows + 1, new_rows, dtype=np.int32)
        rows = batch * new_rows
        q = rng.standard_normal((rows, q_heads, dim)).astype(np.float16)
        d_blocks, d_table, d_lengths = cp.asarray(blocks), cp.asarray(table), cp.asarray(lengths)
        d_q, d_offsets = cp.asarray(q), cp.asarray(offsets)
        d_out = cp.zeros_like(d_q)
        max_context = context + new_rows
        ws_size = rows * q_heads * (dim + 2) * MAX_SPLITS if use_workspace else 0
        d_ws = cp.zeros(max(ws_size, 1), cp.float32)
        splits = splits_for(rows, max_context, ws_size, q_heads, dim, kv_heads) if use_workspace else 1
        name = f"{function}_attention_ragged"
        merge_name = f"{function}_attention_merge"
        kernel = module.get_function(name)
        merge = module.get_function(merge_name)
        args = KernelArgs()
        args.memref(d_q)
        for kv in (0, 1):
            args.cache(d_blocks, d_lengths, d_table, new_rows, max_context, kv=kv, layer=0)
        args.memref(d_offsets).memref(d_out).memref(d_ws)
        merge_args = KernelArgs().memref(d_ws).memref(d_offsets).memref(d_out).index(splits)
        grid = (min(rows, 65535), kv_heads, splits)

        def launch():
            kernel(grid, (threads[name],), args.values())
            if splits > 1:
                merge((min(rows, 65535), q_heads), (threads[merge_name],),
                      merge_args.values())

        launch()
        cp.cuda.runtime.deviceSynchronize()
        label = f"page {page}, batch {batch}, context {context}, rows/seq {new_rows}, splits {splits}"
        if function != f"page{page}":
            label = f"{function} ({q_heads} q heads, {kv_heads} kv heads x {dim}), " + label
        if check:
            expected = model(q, blocks, table, lengths, offsets, page, scale)
            error = float(np.max(np.abs(cp.asnumpy(d_out).astype(np.float64) - expected)))
            ok = error < 2e-2
            results["checks"].append({"case": label, "max_abs_error": error, "ok": ok})
            print(("PASS " if ok else "FAIL ") + label + f" (max abs error {error:.2e})", flush=True)
            return
        times = []
        for _ in range(10):
            flush.fill(0)
            start.record()
            launch()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
        t = min(times)
        kv_bytes = 2 * batch * (context + new_rows) * KV_HEADS * DIM * 2
        src, dst = cp.empty(kv_bytes, cp.uint8), cp.empty(kv_bytes, cp.uint8)
        copy = []
        for _ in range(10):
            flush.fill(0)
            start.record()
            cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, kv_bytes,
                                        cp.cuda.runtime.memcpyDeviceToDevice, 0)
            stop.record()
            stop.synchronize()
            copy.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
        row = {"case": label, "time_us": t * 1e6, "kv_GBps": kv_bytes / t / 1e9,
               "copy_GBps": kv_bytes / min(copy) / 1e9, "ratio_to_copy": min(copy) / t}
        try:
            import torch
            kt = torch.as_tensor(cp.asnumpy(d_blocks), device="cuda")
            tq = torch.as_tensor(q, device="cuda")[:batch].view(batch, Q_HEADS, 1, DIM)
            tt = torch.as_tensor(table, device="cuda").long()
            tokens = torch.arange(context + new_rows, device="cuda")
            kk = kt[tt[:, tokens // page], 0, 0, tokens % page].permute(0, 2, 1, 3)
            vv = kt[tt[:, tokens // page], 1, 0, tokens % page].permute(0, 2, 1, 3)
            kk = kk.repeat_interleave(Q_HEADS // KV_HEADS, 1)
            vv = vv.repeat_interleave(Q_HEADS // KV_HEADS, 1)
            torch.cuda.synchronize()
            sdpa = []
            for _ in range(10):
                s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s0.record()
                torch.nn.functional.scaled_dot_product_attention(tq, kk, vv, scale=SCALE)
                s1.record()
                torch.cuda.synchronize()
                sdpa.append(s0.elapsed_time(s1) * 1e-3)
            row["sdpa_gathered_time_us"] = min(sdpa) * 1e6
        except Exception as error:  # torch missing or out of memory
            row["sdpa_gathered_time_us"] = None
            row["sdpa_error"] = str(error)[:200]
        results["bandwidth"].append(row)
        print(f"{label:60s} {row['time_us']:9.1f} us {row['kv_GBps']:7.0f} GB/s "
              f"copy {row['copy_GBps']:7.0f} GB/s ratio {row['ratio_to_copy']:.2f} "
              f"sdpa(gathered) {row['sdpa_gathered_time_us']}", flush=True)

    for page in (1, 16, 128, 256):
        run(page, batch=3, context=37, new_rows=1, use_workspace=False, check=True)
        run(page, batch=2, context=700, new_rows=1, use_workspace=True, check=True)
        run(page, batch=2, context=20, new_rows=5, use_workspace=False, check=True)
        run(page, batch=1, context=0, new_rows=3, use_workspace=True, check=True)
    # Groups in several passes (masked when the passes' heads do not divide
    # the group) and
    # heads of one element, each with and without splits and with a second
    # row of a sequence (the block's next row reuses the shared buffers).
    for function, kv_heads, q_heads, dim, scale in (("mqa64", 1, 64, 128, SCALE),
                                                    ("group9", 2, 18, 64, 0.125),
                                                    ("tiny", 8, 256, 1, 1.0),
                                                    ("d96", 8, 32, 96, 0.1)):
        shape = dict(function=function, kv_heads=kv_heads, q_heads=q_heads, dim=dim, scale=scale)
        run(16, batch=3, context=37, new_rows=1, use_workspace=False, check=True, **shape)
        run(16, batch=2, context=700, new_rows=2, use_workspace=True, check=True, **shape)
    if not quick:
        for page in (1, 16, 128, 256):
            for batch in (1, 8, 64):
                for context in (512, 4096, 32768):
                    run(page, batch, context, 1, use_workspace=True, check=False)
    with open(os.path.join(out_dir, "bench_attention.json"), "w") as f:
        json.dump(results, f, indent=1)
    failed = sum(not c["ok"] for c in results["checks"])
    print(f"{len(results['checks']) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], "--quick" in sys.argv))
