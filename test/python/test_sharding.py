"""Head sharding (docs/Contract.md section 3.7) executed: a layer annotated
with shard.shard, partitioned by sharding-propagation and shard-partition
over 2 devices, run once per rank on the CPU with each rank's slice of the
heads (one process, no communication), gives the cache and output of the
unsharded layer."""

import re

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402

# f32, 2 KV heads of 8 elements, pages of 4 tokens, one layer, 4 query heads
# (GQA groups of 2); the blocks split on their heads over @grid.
LAYER = """
shard.grid @grid(shape = 2)
!c = !kvcache.paged_collection<f32, num_heads = 2, head_size = 8, page_size = 4>
!k = !kvcache.paged_cache<f32, num_heads = 2, head_size = 8, page_size = 4>
!blocks = tensor<?x2x?x4x2x8xf32>
func.func @step(%blocks: !blocks, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>,
                %max_seq: i32, %max_cache: i32, %q: tensor<?x4x8xf32>,
                %new_k: tensor<?x2x8xf32>, %offsets: tensor<?xi32>,
                %out: tensor<?x4x8xf32>) -> (!blocks, tensor<?x4x8xf32>) {
  %l0 = arith.constant 0 : index
  %heads = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %heads : !blocks
  %all = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %offs = shard.shard %offsets to %all : tensor<?xi32>
  %c = kvcache.paged_collection %b, %lengths, %table, %max_seq, %max_cache
      : !blocks, tensor<?xi32>, tensor<?x?xi32> -> !c
  %k = kvcache.get_key_cache %c[%l0] : !c
  %c1 = kvcache.store_ragged %k, %new_k, %offs : !k, tensor<?x2x8xf32>, tensor<?xi32> -> !c
  %k1 = kvcache.get_key_cache %c1[%l0] : !c
  %v1 = kvcache.get_value_cache %c1[%l0] : !c
  %o = kvcache.attention_ragged %q, %k1, %v1, %offs, %out {scale = 0.25 : f32}
      : tensor<?x4x8xf32>, !k, !k, tensor<?xi32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>
  %t = kvcache.collection_tensors %c1 : !c -> !blocks
  return %t, %o : !blocks, tensor<?x4x8xf32>
}
"""

LENGTHS = [3, 0]  # tokens already cached
NEW = [2, 3]  # tokens of this step
TABLE = [[2, 0], [1, 3]]  # the pages of each sequence


def without_sharding(text):
    """`text` without its shard ops, its annotated values replaced by the
    arguments: the unsharded layer."""
    text = "\n".join(line for line in text.splitlines() if "shard." not in line)
    return re.sub(r"%b\b", "%blocks", re.sub(r"%offs\b", "%offsets", text))


def run(module, blocks, q, new_k, offsets, out):
    module.step(blocks, np.array(LENGTHS, dtype=np.int32),
                np.array(TABLE, dtype=np.int32), max(NEW),
                max(l + n for l, n in zip(LENGTHS, NEW)), q, new_k, offsets,
                out)


def test_each_rank_computes_its_heads():
    partitioned = kvcache.run_pipeline(
        LAYER, "builtin.module(func.func(sharding-propagation,shard-partition))")
    assert "num_heads = 1" in partitioned and "tensor<?x2x?x4x1x8xf32>" in partitioned
    # The grid is the partitioner's; the per-rank function needs none of it.
    per_rank = kvcache.CPUModule("\n".join(
        line for line in partitioned.splitlines() if "shard.grid" not in line),
        threads=1)
    whole = kvcache.CPUModule(without_sharding(LAYER), threads=1)
    rng = np.random.default_rng(38)
    blocks = rng.uniform(-1, 1, (4, 2, 1, 4, 2, 8)).astype(np.float32)
    rows = sum(NEW)
    q = rng.uniform(-1, 1, (rows, 4, 8)).astype(np.float32)
    new_k = rng.uniform(-1, 1, (rows, 2, 8)).astype(np.float32)
    offsets = np.array([0, NEW[0], rows], dtype=np.int32)

    expected_blocks, expected_out = blocks.copy(), np.zeros_like(q)
    run(whole, expected_blocks, q, new_k, offsets, expected_out)
    assert not np.array_equal(expected_blocks, blocks)

    for rank in range(2):
        # Each rank's own contiguous tensors: KV head `rank`, query heads
        # 2 * rank and 2 * rank + 1.
        local_blocks = np.ascontiguousarray(blocks[..., rank:rank + 1, :])
        local_out = np.zeros((rows, 2, 8), dtype=np.float32)
        run(per_rank, local_blocks,
            np.ascontiguousarray(q[:, 2 * rank:2 * rank + 2]),
            np.ascontiguousarray(new_k[:, rank:rank + 1]), offsets, local_out)
        np.testing.assert_array_equal(local_blocks,
                                      expected_blocks[..., rank:rank + 1, :])
        np.testing.assert_allclose(local_out,
                                   expected_out[:, 2 * rank:2 * rank + 2],
                                   atol=1e-6)
