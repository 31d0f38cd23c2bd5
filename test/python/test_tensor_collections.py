"""Tensor-level functions on a collection built from tensors (docs/
Contract.md section 3.5), called from Python: kvcache-bufferize makes them
destination-style functions, so the caller passes the cache and the output,
which are written in place; checked against numpy. @step stores and
attends (CPU); @rope_step also rotates q and the stored keys with
rope_ragged on the collection the stores returned (CPU and emulated GPU)."""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import reference as reference_ops  # noqa: E402

# f32, 2 KV heads of 8 elements, pages of 4 tokens, one layer, 4 query heads.
STEP = """
!c = !kvcache.paged_collection<f32, num_heads = 2, head_size = 8, page_size = 4>
!k = !kvcache.paged_cache<f32, num_heads = 2, head_size = 8, page_size = 4>
!blocks = tensor<?x2x?x4x2x8xf32>
func.func @step(%blocks: !blocks, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>,
                %max_seq: i32, %max_cache: i32, %q: tensor<?x4x8xf32>,
                %new_k: tensor<?x2x8xf32>, %new_v: tensor<?x2x8xf32>,
                %offsets: tensor<?xi32>, %out: tensor<?x4x8xf32>)
    -> (!blocks, tensor<?x4x8xf32>) {
  %l0 = arith.constant 0 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache
      : !blocks, tensor<?xi32>, tensor<?x?xi32> -> !c
  %k = kvcache.get_key_cache %c[%l0] : !c
  %c1 = kvcache.store_ragged %k, %new_k, %offsets : !k, tensor<?x2x8xf32>, tensor<?xi32> -> !c
  %v = kvcache.get_value_cache %c1[%l0] : !c
  %c2 = kvcache.store_ragged %v, %new_v, %offsets : !k, tensor<?x2x8xf32>, tensor<?xi32> -> !c
  %k2 = kvcache.get_key_cache %c2[%l0] : !c
  %v2 = kvcache.get_value_cache %c2[%l0] : !c
  %o = kvcache.attention_ragged %q, %k2, %v2, %offsets, %out {scale = 0.25 : f32}
      : tensor<?x4x8xf32>, !k, !k, tensor<?xi32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>
  %b = kvcache.collection_tensors %c2 : !c -> !blocks
  return %b, %o : !blocks, tensor<?x4x8xf32>
}
func.func @rope_step(%blocks: !blocks, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>,
                     %max_seq: i32, %max_cache: i32, %q: tensor<?x4x8xf32>,
                     %new_k: tensor<?x2x8xf32>, %new_v: tensor<?x2x8xf32>,
                     %offsets: tensor<?xi32>, %cos_sin: tensor<?x4xf32>,
                     %out: tensor<?x4x8xf32>) -> (!blocks, tensor<?x4x8xf32>) {
  %l0 = arith.constant 0 : index
  %c = kvcache.paged_collection %blocks, %lengths, %table, %max_seq, %max_cache
      : !blocks, tensor<?xi32>, tensor<?x?xi32> -> !c
  %k = kvcache.get_key_cache %c[%l0] : !c
  %c1 = kvcache.store_ragged %k, %new_k, %offsets : !k, tensor<?x2x8xf32>, tensor<?xi32> -> !c
  %v = kvcache.get_value_cache %c1[%l0] : !c
  %c2 = kvcache.store_ragged %v, %new_v, %offsets : !k, tensor<?x2x8xf32>, tensor<?xi32> -> !c
  %k2 = kvcache.get_key_cache %c2[%l0] : !c
  %rq, %c3 = kvcache.rope_ragged %q, %k2, %offsets, %cos_sin, %q {rotary_dims = 4 : i64, style = "half"}
      : tensor<?x4x8xf32>, !k, tensor<?xi32>, tensor<?x4xf32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>, !c
  %k3 = kvcache.get_key_cache %c3[%l0] : !c
  %v3 = kvcache.get_value_cache %c3[%l0] : !c
  %o = kvcache.attention_ragged %rq, %k3, %v3, %offsets, %out {scale = 0.25 : f32}
      : tensor<?x4x8xf32>, !k, !k, tensor<?xi32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>
  %b = kvcache.collection_tensors %c3 : !c -> !blocks
  return %b, %o : !blocks, tensor<?x4x8xf32>
}
"""

LENGTHS = [3, 0]  # tokens already cached
NEW = [2, 3]  # tokens of this step
TABLE = [[2, 0], [1, 3]]  # the pages of each sequence


def reference(blocks, q, new_k, new_v, offsets, scale, cos_sin=None):
    """The cache after the stores (and, with cos_sin, the rotation of q and
    of the stored keys at their positions, half style) and the attention
    output, in float64."""
    blocks = blocks.astype(np.float64)
    q = q.copy()
    out = np.zeros(q.shape)
    for b, (length, count) in enumerate(zip(LENGTHS, NEW)):
        for i in range(count):
            row, position = offsets[b] + i, length + i
            page, slot = TABLE[b][position // 4], position % 4
            key = new_k[row]
            if cos_sin is not None:
                key = reference_ops.rotate(key, cos_sin[position], "half")
                q[row] = reference_ops.rotate(q[row], cos_sin[position], "half")
            blocks[page, 0, 0, slot] = key
            blocks[page, 1, 0, slot] = new_v[row]
        for i in range(count):
            row, position = offsets[b] + i, length + i
            slots = [(TABLE[b][p // 4], p % 4) for p in range(position + 1)]
            keys = np.stack([blocks[page, 0, 0, slot] for page, slot in slots])
            values = np.stack([blocks[page, 1, 0, slot] for page, slot in slots])
            for head in range(4):
                kv = head // 2
                scores = keys[:, kv] @ q[row, head] * scale
                weights = np.exp(scores - scores.max())
                weights /= weights.sum()
                out[row, head] = weights @ values[:, kv]
    return blocks, out


MODULES = {}


def compiled(target):
    """STEP on `target`, compiled once for the tests that use it."""
    if target not in MODULES:
        MODULES[target] = (kvcache.CPUModule(STEP, threads=1)
                           if target == "cpu" else
                           kvcache.EmulatedGPUModule(STEP))
    return MODULES[target]


def test_tensor_level_step_updates_the_callers_cache():
    module = compiled("cpu")
    # Bufferized, the function writes the caller's cache and output.
    arguments, results = module.signatures["step"]
    assert results == []
    assert arguments[0] == "memref<?x2x?x4x2x8xf32>"
    rng = np.random.default_rng(36)
    blocks = rng.uniform(-1, 1, (4, 2, 1, 4, 2, 8)).astype(np.float32)
    rows = sum(NEW)
    q = rng.uniform(-1, 1, (rows, 4, 8)).astype(np.float32)
    new_k = rng.uniform(-1, 1, (rows, 2, 8)).astype(np.float32)
    new_v = rng.uniform(-1, 1, (rows, 2, 8)).astype(np.float32)
    offsets = np.array([0, NEW[0], rows], dtype=np.int32)
    out = np.full((rows, 4, 8), 7.0, dtype=np.float32)
    expected_blocks, expected_out = reference(blocks, q, new_k, new_v,
                                              offsets, 0.25)
    module.step(blocks, np.array(LENGTHS, dtype=np.int32),
                np.array(TABLE, dtype=np.int32), max(NEW),
                max(l + n for l, n in zip(LENGTHS, NEW)), q, new_k, new_v,
                offsets, out)
    np.testing.assert_array_equal(blocks, expected_blocks.astype(np.float32))
    np.testing.assert_allclose(out, expected_out, atol=2e-6)


@pytest.mark.parametrize("target", ["cpu", "emulated_gpu"])
def test_rope_on_a_tensor_collection_rotates_the_callers_cache(target):
    """rope_ragged on the collection the stores returned rotates the keys
    they stored in the caller's blocks, and q, which the attention reads."""
    module = compiled(target)
    arguments, results = module.signatures["rope_step"]
    assert results == []
    rng = np.random.default_rng(37)
    blocks = rng.uniform(-1, 1, (4, 2, 1, 4, 2, 8)).astype(np.float32)
    rows = sum(NEW)
    q = rng.uniform(-1, 1, (rows, 4, 8)).astype(np.float32)
    new_k = rng.uniform(-1, 1, (rows, 2, 8)).astype(np.float32)
    new_v = rng.uniform(-1, 1, (rows, 2, 8)).astype(np.float32)
    offsets = np.array([0, NEW[0], rows], dtype=np.int32)
    angles = rng.uniform(0, 6, (8, 2))
    cos_sin = np.stack([np.cos(angles), np.sin(angles)], -1).reshape(8, 4)
    cos_sin = cos_sin.astype(np.float32)
    out = np.full((rows, 4, 8), 7.0, dtype=np.float32)
    expected_blocks, expected_out = reference(blocks, q, new_k, new_v,
                                              offsets, 0.25, cos_sin)
    module.rope_step(blocks, np.array(LENGTHS, dtype=np.int32),
                     np.array(TABLE, dtype=np.int32), max(NEW),
                     max(l + n for l, n in zip(LENGTHS, NEW)), q, new_k,
                     new_v, offsets, cos_sin, out)
    np.testing.assert_array_equal(blocks, expected_blocks.astype(np.float32))
    np.testing.assert_allclose(out, expected_out, atol=2e-6)
