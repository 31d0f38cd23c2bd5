"""The decoder layer of decoder_layer_sharded.mlir in numpy (float64), on
the inputs of sharded-decoder-layer-main.mlir, against the rows that its
rank 0 prints (`( y, y, ... )`, 5 lines of 32, on stdin). Prints the
largest difference and exits with 1 when it exceeds 1e-4 of the largest
|y| (the layer runs in f32)."""

import re
import sys

import numpy as np

PAGE = 4
GROUP = 2  # query heads per KV head
SCALE = 0.353553391


def values(n, seed, shape):
    """sin(0.731 * i + seed), as @values of sharded-helpers.mlir."""
    i = np.arange(n, dtype=np.float32)
    x = i * np.float32(0.731) + np.float32(seed)
    return np.sin(x.astype(np.float64)).reshape(shape)


def rms_norm(x, w):
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5) * w


def rope(x, position, cos_sin):
    """rope_ragged's `half` style over the whole head (rotary_dims = 8)."""
    half = x.shape[-1] // 2
    cos = cos_sin[position, 0::2]
    sin = cos_sin[position, 1::2]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def layer():
    blocks = values(1024, 0.1, (4, 2, 1, PAGE, 4, 8))
    x = values(160, 0.2, (5, 32))
    cos_sin = values(64, 0.3, (8, 8))
    attn_norm = values(32, 0.4, (32,))
    wq = values(2048, 0.5, (32, 8, 8))
    wk = values(1024, 0.6, (32, 4, 8))
    wv = values(1024, 0.7, (32, 4, 8))
    wo = values(2048, 0.8, (8, 8, 32))
    mlp_norm = values(32, 0.9, (32,))
    w_gate = values(512, 1.0, (32, 16))
    w_up = values(512, 1.1, (32, 16))
    w_down = values(512, 1.2, (16, 32))
    lengths, table, offsets = [3, 0], [[2, 0], [1, 3]], [0, 2, 5]

    normed = rms_norm(x, attn_norm)
    q = np.einsum("tk,khd->thd", normed, wq)
    k = np.einsum("tk,khd->thd", normed, wk)
    v = np.einsum("tk,khd->thd", normed, wv)
    attn = np.zeros_like(q)
    for b, cached in enumerate(lengths):
        rows = range(offsets[b], offsets[b + 1])
        context = cached + len(rows)
        keys = np.empty((context, 4, 8))
        vals = np.empty((context, 4, 8))
        for s in range(context):
            page, slot = table[b][s // PAGE], s % PAGE
            keys[s] = blocks[page, 0, 0, slot]
            vals[s] = blocks[page, 1, 0, slot]
        for r in rows:
            s = cached + r - offsets[b]
            keys[s] = rope(k[r], s, cos_sin)
            vals[s] = v[r]
        for r in rows:
            s = cached + r - offsets[b]
            for h in range(8):
                query = rope(q[r, h], s, cos_sin)
                scores = keys[: s + 1, h // GROUP] @ query * SCALE
                p = np.exp(scores - scores.max())
                attn[r, h] = p @ vals[: s + 1, h // GROUP] / p.sum()
    hidden = x + np.einsum("thd,hdn->tn", attn, wo)
    h_normed = rms_norm(hidden, mlp_norm)
    gate, up = h_normed @ w_gate, h_normed @ w_up
    return hidden + (gate / (1 + np.exp(-gate)) * up) @ w_down


def main():
    rows = [[float(v) for v in line.strip("( )\n").split(",")]
            for line in sys.stdin if re.match(r"^\( ", line)]
    got = np.array(rows)
    expected = layer()
    if got.shape != expected.shape:
        sys.exit(f"expected {expected.shape} values, got {got.shape}")
    difference = np.abs(got - expected).max()
    size = np.abs(expected).max()
    print(f"reference: largest difference {difference:.3g} of {size:.3g}")
    if difference > 1e-4 * size:
        sys.exit(1)
    print("reference: PASS")


if __name__ == "__main__":
    main()
