"""Head sharding (docs/Contract.md section 3.7) executed: a layer annotated
with shard.shard, partitioned by sharding-propagation and shard-partition
over 2 devices, compiled as it is (kvcache-bufferize drops the grid) and run
once per rank on the CPU with each rank's slice of the heads (one process,
no communication), gives the cache and output of the unsharded layer; so
do page copies with a gather, rotary embedding on a GQA collection, and
MLA's attention with its query heads split and its latent cache
replicated."""

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

// Page copies and a gather of the copied cache, each rank on its KV head.
func.func @pages(%blocks: !blocks, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>,
                 %max_seq: i32, %max_cache: i32, %pairs: tensor<?x2xi32>,
                 %offsets: tensor<?xi32>, %rows: tensor<?x2x8xf32>)
    -> (!blocks, tensor<?x2x8xf32>) {
  %l0 = arith.constant 0 : index
  %heads = shard.sharding @grid split_axes = [[], [], [], [], [0]] : !shard.sharding
  %b = shard.shard %blocks to %heads : !blocks
  %all = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %offs = shard.shard %offsets to %all : tensor<?xi32>
  %c = kvcache.paged_collection %b, %lengths, %table, %max_seq, %max_cache
      : !blocks, tensor<?xi32>, tensor<?x?xi32> -> !c
  %c1 = kvcache.copy_pages %c, %pairs : !c, tensor<?x2xi32> -> !c
  %v = kvcache.get_value_cache %c1[%l0] : !c
  %g = kvcache.gather_ragged %v, %rows, %offs : !k, tensor<?x2x8xf32>, tensor<?xi32> -> tensor<?x2x8xf32>
  %t = kvcache.collection_tensors %c1 : !c -> !blocks
  return %t, %g : !blocks, tensor<?x2x8xf32>
}

// rope_ragged on the collection the store returned: each rank rotates its
// 2 query heads and the stored keys of its KV head.
func.func @rope(%blocks: !blocks, %lengths: tensor<?xi32>, %table: tensor<?x?xi32>,
                %max_seq: i32, %max_cache: i32, %q: tensor<?x4x8xf32>,
                %new_k: tensor<?x2x8xf32>, %offsets: tensor<?xi32>,
                %cos_sin: tensor<?x4xf32>, %out: tensor<?x4x8xf32>)
    -> (!blocks, tensor<?x4x8xf32>) {
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
  %r, %c2 = kvcache.rope_ragged %q, %k1, %offs, %cos_sin, %out {rotary_dims = 4 : i64, style = "interleaved"}
      : tensor<?x4x8xf32>, !k, tensor<?xi32>, tensor<?x4xf32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>, !c
  %t = kvcache.collection_tensors %c2 : !c -> !blocks
  return %t, %r : !blocks, tensor<?x4x8xf32>
}

// MLA: one latent head of 12 elements (values: its first 8), 4 query heads
// split over @grid, the cache replicated.
!mc = !kvcache.paged_collection<f32, num_heads = 1, head_size = 12, page_size = 4, mla = true>
!mk = !kvcache.paged_cache<f32, num_heads = 1, head_size = 12, page_size = 4, mla = true>
func.func @mla(%blocks: tensor<?x1x?x4x1x12xf32>, %lengths: tensor<?xi32>,
               %table: tensor<?x?xi32>, %max_seq: i32, %max_cache: i32,
               %q: tensor<?x4x12xf32>, %offsets: tensor<?xi32>,
               %out: tensor<?x4x8xf32>, %lse: tensor<?x4xf32>)
    -> (tensor<?x4x8xf32>, tensor<?x4xf32>) {
  %l0 = arith.constant 0 : index
  %all = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %b = shard.shard %blocks to %all : tensor<?x1x?x4x1x12xf32>
  %offs = shard.shard %offsets to %all : tensor<?xi32>
  %heads = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %sq = shard.shard %q to %heads : tensor<?x4x12xf32>
  %c = kvcache.paged_collection %b, %lengths, %table, %max_seq, %max_cache
      : tensor<?x1x?x4x1x12xf32>, tensor<?xi32>, tensor<?x?xi32> -> !mc
  %k = kvcache.get_key_cache %c[%l0] : !mc
  %o:2 = kvcache.mla_attention_ragged %sq, %k, %offs, %out lse(%lse)
      {scale = 0.25 : f32, v_head_size = 8 : i64}
      : tensor<?x4x12xf32>, !mk, tensor<?xi32>, tensor<?x4x8xf32>, tensor<?x4xf32> -> tensor<?x4x8xf32>, tensor<?x4xf32>
  return %o#0, %o#1 : tensor<?x4x8xf32>, tensor<?x4xf32>
}
"""

LENGTHS = [3, 0]  # tokens already cached
NEW = [2, 3]  # tokens of this step
TABLE = [[2, 0], [1, 3]]  # the pages of each sequence


def without_sharding(text):
    """`text` without its shard ops, its annotated values replaced by the
    arguments: the unsharded layer."""
    text = "\n".join(line for line in text.splitlines() if "shard." not in line)
    for annotated, argument in (("b", "blocks"), ("offs", "offsets"),
                                ("sq", "q")):
        text = re.sub(rf"%{annotated}\b", f"%{argument}", text)
    return text


def metadata():
    """The lengths, table, max_seq_length and max_cache_length arguments."""
    return (np.array(LENGTHS, dtype=np.int32), np.array(TABLE, dtype=np.int32),
            max(NEW), max(l + n for l, n in zip(LENGTHS, NEW)))


def run(module, blocks, q, new_k, offsets, out):
    module.step(blocks, *metadata(), q, new_k, offsets, out)


@pytest.fixture(scope="module")
def modules():
    """The partitioned module (per rank) and the unsharded one, compiled."""
    partitioned = kvcache.run_pipeline(
        LAYER, "builtin.module(func.func(sharding-propagation,shard-partition))")
    assert "num_heads = 1" in partitioned and "tensor<?x2x?x4x1x8xf32>" in partitioned
    # The partitioner leaves its grid, which the compilation drops.
    assert "shard.grid @grid" in partitioned
    return (kvcache.CPUModule(partitioned, threads=1),
            kvcache.CPUModule(without_sharding(LAYER), threads=1))


def test_each_rank_computes_its_heads(modules):
    per_rank, whole = modules
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


def test_ranks_copy_and_gather_their_heads(modules):
    per_rank, whole = modules
    rng = np.random.default_rng(36)
    blocks = rng.uniform(-1, 1, (4, 2, 1, 4, 2, 8)).astype(np.float32)
    pairs = np.array([[2, 3]], dtype=np.int32)  # page 2 onto page 3
    offsets = np.array([0, 3, 5], dtype=np.int32)  # 3 and 2 tokens
    expected_blocks = blocks.copy()
    expected_rows = np.zeros((5, 2, 8), dtype=np.float32)
    whole.pages(expected_blocks, *metadata(), pairs, offsets, expected_rows)
    np.testing.assert_array_equal(expected_blocks[3], blocks[2])
    # Sequence 1's tokens 0 and 1 are on its page 1 (TABLE).
    np.testing.assert_array_equal(expected_rows[3:5], blocks[1, 1, 0, 0:2])
    for rank in range(2):
        local_blocks = np.ascontiguousarray(blocks[..., rank:rank + 1, :])
        local_rows = np.zeros((5, 1, 8), dtype=np.float32)
        per_rank.pages(local_blocks, *metadata(), pairs, offsets, local_rows)
        np.testing.assert_array_equal(local_blocks,
                                      expected_blocks[..., rank:rank + 1, :])
        np.testing.assert_array_equal(local_rows,
                                      expected_rows[:, rank:rank + 1])


def test_mla_ranks_split_query_heads(modules):
    per_rank, whole = modules
    rng = np.random.default_rng(37)
    blocks = rng.uniform(-1, 1, (4, 1, 1, 4, 1, 12)).astype(np.float32)
    rows = sum(NEW)
    q = rng.uniform(-1, 1, (rows, 4, 12)).astype(np.float32)
    offsets = np.array([0, NEW[0], rows], dtype=np.int32)
    expected_out = np.zeros((rows, 4, 8), dtype=np.float32)
    expected_lse = np.zeros((rows, 4), dtype=np.float32)
    whole.mla(blocks, *metadata(), q, offsets, expected_out, expected_lse)
    assert np.all(np.isfinite(expected_lse)) and np.any(expected_out != 0)
    for rank in range(2):
        # Query heads 2 * rank and 2 * rank + 1; the whole latent cache.
        local_out = np.zeros((rows, 2, 8), dtype=np.float32)
        local_lse = np.zeros((rows, 2), dtype=np.float32)
        per_rank.mla(blocks, *metadata(),
                     np.ascontiguousarray(q[:, 2 * rank:2 * rank + 2]),
                     offsets, local_out, local_lse)
        np.testing.assert_allclose(local_out,
                                   expected_out[:, 2 * rank:2 * rank + 2],
                                   atol=1e-6)
        np.testing.assert_allclose(local_lse,
                                   expected_lse[:, 2 * rank:2 * rank + 2],
                                   atol=1e-6)


def test_ranks_rotate_their_heads(modules):
    """rope_ragged split with the KV heads: each rank's query heads follow
    its KV head (its GQA group) and it rotates the keys of that head."""
    per_rank, whole = modules
    rng = np.random.default_rng(39)
    blocks = rng.uniform(-1, 1, (4, 2, 1, 4, 2, 8)).astype(np.float32)
    rows = sum(NEW)
    q = rng.uniform(-1, 1, (rows, 4, 8)).astype(np.float32)
    new_k = rng.uniform(-1, 1, (rows, 2, 8)).astype(np.float32)
    offsets = np.array([0, NEW[0], rows], dtype=np.int32)
    angles = rng.uniform(0, 6, (8, 2))
    cos_sin = np.stack([np.cos(angles), np.sin(angles)], -1)
    cos_sin = cos_sin.reshape(8, 4).astype(np.float32)
    expected_blocks, expected_q = blocks.copy(), np.zeros_like(q)
    whole.rope(expected_blocks, *metadata(), q, new_k, offsets, cos_sin,
               expected_q)
    # Rotated: the last 4 elements of q and of the stored keys (row 0:
    # sequence 0's position 3, page 2 slot 3).
    assert not np.array_equal(expected_q[..., 4:], q[..., 4:])
    np.testing.assert_array_equal(expected_q[..., :4], q[..., :4])
    key = expected_blocks[2, 0, 0, 3]
    np.testing.assert_array_equal(key[..., :4], new_k[0, :, :4])
    assert not np.array_equal(key[..., 4:], new_k[0, :, 4:])
    for rank in range(2):
        local_blocks = np.ascontiguousarray(blocks[..., rank:rank + 1, :])
        local_q = np.zeros((rows, 2, 8), dtype=np.float32)
        per_rank.rope(local_blocks, *metadata(),
                      np.ascontiguousarray(q[:, 2 * rank:2 * rank + 2]),
                      np.ascontiguousarray(new_k[:, rank:rank + 1]), offsets,
                      cos_sin, local_q)
        np.testing.assert_array_equal(local_blocks,
                                      expected_blocks[..., rank:rank + 1, :])
        np.testing.assert_array_equal(local_q,
                                      expected_q[:, 2 * rank:2 * rank + 2])
