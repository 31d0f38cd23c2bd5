"""Any collection kind that implements the type interfaces is callable from
Python (docs/Contract.md 2.1, 7.1): the extension describes each argument
as the interfaces lower it (Module.abi, kvcache.abi.ArgumentABI), and
CPUModule and EmulatedGPUModule pack a value of the test dialect's CSR kind
(test/lib, registered by test builds of the extension) by that description
alone, as they pack the paged and continuous kinds."""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import _kvcache, abi  # noqa: E402

PAGED = "!kvcache.paged_collection<f16, num_heads = 2, head_size = 8, page_size = 4>"
CONTINUOUS = ("!kvcache.continuous_cache<i8, num_heads = 2, head_size = 8, "
              "scales = block<4>>")
NAMES = ["blocks", "cache_lengths", "lookup_table", "max_seq_length",
         "max_cache_length"]


def test_paged_collection_is_described_by_its_interface():
    argument = abi.describe_type(PAGED)
    assert argument.cache == {
        "kind": "paged", "role": "collection", "element_type": "f16",
        "num_heads": 2, "head_size": 8, "page_size": 4, "mla": False,
        "assert_write_mode": 0, "scales": None}
    assert [v.name for v in argument.values] == NAMES
    assert argument.form == NAMES
    blocks, lengths, table, max_seq, _ = argument.values
    assert (blocks.kind, blocks.element, blocks.bits) == ("memref", "f16", 16)
    assert blocks.shape == (None, 2, None, 4, 2, 8)
    assert blocks.strides == (None, None, None, 16, 8, 1)
    assert (blocks.offset, blocks.identity, blocks.layout) == (None, False, "strided")
    assert (table.shape, table.strides, table.identity) == (
        (None, None), (None, 1), True)
    assert (lengths.element, lengths.rank) == ("i32", 1)
    assert (max_seq.kind, max_seq.element, max_seq.bits, max_seq.integer) == (
        "scalar", "i32", 32, True)


def test_quantized_layer_cache_is_described_by_its_interface():
    argument = abi.describe_type(CONTINUOUS)
    assert (argument.cache["kind"], argument.cache["role"],
            argument.cache["page_size"], argument.cache["scales"]) == (
        "continuous", "cache", None, "block<4>")
    assert [v.name for v in argument.values] == NAMES + ["scales"]
    assert argument.form == NAMES + ["kv", "layer", "scales"]
    blocks, _, table, *_, scales = argument.values
    assert (blocks.shape, blocks.element) == ((None, None, 2, 8), "i8")
    assert table.shape == (None,)
    assert (scales.element, scales.shape, scales.strides) == (
        "f32", (None, None, 2, 2), (None, 4, 2, 1))


def test_plain_arguments_are_their_own_value():
    memref, index, vector = kvcache.parse(
        "func.func @f(%a: memref<3x?xf32, strided<[?, 1], offset: 2>>, "
        "%i: index, %v: vector<4xf32>) {\n  return\n}\n").abi()[0][1]
    assert memref["cache"] is None
    [value] = memref["values"]
    assert (value["shape"], value["strides"], value["offset"]) == (
        [3, None], [None, 1], 2)
    assert index["values"][0]["bits"] == 64
    assert vector["values"] is None
    with pytest.raises(kvcache.CompileError):
        abi.describe_type("!kvcache.no_such_type<f16>")


needs_test_dialect = pytest.mark.skipif(
    not _kvcache.HAS_TEST_DIALECTS,
    reason="the extension was built without KVCACHE_INCLUDE_TESTS")

# The test dialect's CSR kind: FlashInfer's page table (kv_indptr, kv_indices).
P, H, D = 2, 2, 4
CSR = f"f32, num_heads = {H}, head_size = {D}, page_size = {P}"
COLLECTION = f"!test_kv.csr_collection<{CSR}>"
CACHE = f"!test_kv.csr_cache<{CSR}>"
ROWS = f"memref<?x{H}x{D}xf32>"
CSR_IR = f"""
func.func @store_values(%c: {COLLECTION}, %layer: index, %new: {ROWS},
                        %offsets: memref<?xi32>) {{
  %v = kvcache.get_value_cache %c[%layer] : {COLLECTION}
  kvcache.store_ragged %v, %new, %offsets : {CACHE}, {ROWS}, memref<?xi32>
  return
}}

func.func @gather(%cache: {CACHE}, %out: {ROWS}, %offsets: memref<?xi32>) {{
  kvcache.gather_ragged %cache, %out, %offsets : {CACHE}, {ROWS}, memref<?xi32>
  return
}}
"""
CSR_NAMES = ["blocks", "kv_indptr", "kv_indices", "cache_lengths",
             "max_seq_length", "max_cache_length"]


class CSRCache:
    """Two sequences of 1 and 2 cached tokens, 2 and 1 new, each in two
    pages of 2 slots through kv_indices; 5 pages (page 2 unused), 2 layers,
    random f32 values."""

    def __init__(self, rng):
        self.blocks = rng.uniform(-1, 1, (5, 2, 2, P, H, D)).astype(np.float32)
        self.kv_indptr = np.array([0, 2, 4], np.int32)
        self.kv_indices = np.array([3, 0, 4, 1], np.int32)
        self.cache_lengths = np.array([1, 2], np.int32)

    def arguments(self):
        return (self.blocks, self.kv_indptr, self.kv_indices,
                self.cache_lengths, 2, 3)

    def where(self, b, t):
        """(page, slot) of token t of sequence b: the CSR lookup."""
        return self.kv_indices[self.kv_indptr[b] + t // P], t % P


@needs_test_dialect
def test_csr_kind_is_described_by_its_interface():
    [(_, [collection, *_]), (_, [cache, *_])] = kvcache.parse(CSR_IR).abi()
    assert collection["cache"]["kind"] == cache["cache"]["kind"] == "csr"
    assert [v["name"] for v in collection["values"]] == CSR_NAMES
    assert abi.ArgumentABI(cache).form == CSR_NAMES + ["kv", "layer"]
    # The launch arguments: blocks 3 + 2 * 6, three 1-D tables 5 each, two
    # i32; the layer's blocks view is 4-D (3 + 2 * 4) at blocks[:, 1, 1].
    csr = CSRCache(np.random.default_rng(0))
    args = abi.KernelArgs().argument(COLLECTION, csr).argument(
        CACHE, csr.arguments() + (1, 1))
    values = [int(v) for v in args.values()]
    assert len(values) == 32 + 28
    offset = (csr.blocks[0, 1, 1].ctypes.data - csr.blocks.ctypes.data) // 4
    assert values[32:32 + 3] == [csr.blocks.ctypes.data] * 2 + [offset]
    assert values[32 + 3:32 + 11] == [5, P, H, D, 2 * 2 * P * H * D, H * D, D, 1]


@needs_test_dialect
@pytest.mark.parametrize("target", ["cpu", "emulated_gpu"])
def test_kernel_ops_on_the_csr_kind_match_numpy(target):
    module = (kvcache.CPUModule(CSR_IR, threads=1) if target == "cpu"
              else kvcache.EmulatedGPUModule(CSR_IR, checked=True))
    rng = np.random.default_rng(7)
    cache = CSRCache(rng)
    new = rng.uniform(-1, 1, (3, H, D)).astype(np.float32)
    offsets = np.array([0, 2, 3], np.int32)
    expected = cache.blocks.copy()
    for b, r in [(0, 0), (0, 1), (1, 2)]:
        page, slot = cache.where(b, cache.cache_lengths[b] + r - offsets[b])
        expected[page, 1, 1, slot] = new[r]
    module.store_values(cache, 1, new, offsets)
    np.testing.assert_array_equal(cache.blocks, expected)

    out = np.zeros((6, H, D), np.float32)
    module.gather(cache.arguments() + (1, 1), out, np.array([0, 3, 6], np.int32))
    for r, (b, t) in enumerate([(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]):
        page, slot = cache.where(b, t)
        np.testing.assert_array_equal(out[r], expected[page, 1, 1, slot])

    with pytest.raises(ValueError, match=r"needs a 1-D kv_indptr \(a csr cache's\)"):
        module.store_values((cache.blocks, cache.kv_indptr[None],
                             *cache.arguments()[2:]), 1, new, offsets)
    with pytest.raises(TypeError, match=r"takes an object with arguments\(\) or "
                       r"\(blocks, kv_indptr, kv_indices, cache_lengths, "
                       r"max_seq_length, max_cache_length\), got 5 values"):
        module.store_values(cache.arguments()[:5], 1, new, offsets)
