"""Tests of kvcache.abi, the launch-argument packer (docs/Contract.md 7)."""

import ctypes
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kvcache_tools import find_tool

from kvcache import abi
from kvcache import errors as kvcache_errors

PAGES, KV, LAYERS, PAGE, HEADS, DIM = 5, 2, 3, 4, 2, 8


def make_cache(dtype=np.float16):
    blocks = np.zeros((PAGES, KV, LAYERS, PAGE, HEADS, DIM), dtype)
    cache_lengths = np.array([3, 7], np.int32)
    lookup_table = np.array([[0, 1], [2, 4]], np.int32)
    return blocks, cache_lengths, lookup_table


def as_ints(values):
    return [int(v) for v in values]


def test_paged_cache_params_layout():
    blocks, lengths, table = make_cache()
    params = abi.paged_cache_params(blocks, lengths, table, 4, 8, kv=1, layer=2)
    assert len(params) == 25
    base = blocks.__array_interface__["data"][0]
    row = HEADS * DIM
    layer_stride = PAGE * row
    kv_stride = LAYERS * layer_stride
    page_stride = KV * kv_stride
    view = as_ints(params[:11])
    assert view == [base, base, 1 * kv_stride + 2 * layer_stride,
                    PAGES, PAGE, HEADS, DIM, page_stride, row, DIM, 1]
    lengths_ptr = lengths.__array_interface__["data"][0]
    assert as_ints(params[11:16]) == [lengths_ptr, lengths_ptr, 0, 2, 1]
    table_ptr = table.__array_interface__["data"][0]
    assert as_ints(params[16:23]) == [table_ptr, table_ptr, 0, 2, 2, 2, 1]
    assert params[23].dtype == np.uint32 and int(params[23]) == 4
    assert params[24].dtype == np.uint32 and int(params[24]) == 8
    assert all(p.dtype == np.uint64 for p in params[:23])


def test_view_offset_addresses_the_right_element():
    """The view (offset + strides) of layer 2's V points at blocks[p, 1, 2]."""
    blocks, lengths, table = make_cache(np.float32)
    blocks[...] = np.arange(blocks.size, dtype=np.float32).reshape(blocks.shape)
    view = as_ints(abi.paged_cache_params(blocks, lengths, table, 1, 1,
                                          kv=1, layer=2)[:11])
    offset, strides = view[2], view[7:11]
    flat = blocks.reshape(-1)
    for page, slot, head, d in [(0, 0, 0, 0), (4, 3, 1, 7), (2, 1, 0, 5)]:
        index = offset + page * strides[0] + slot * strides[1] + head * strides[2] + d
        assert flat[index] == blocks[page, 1, 2, slot, head, d]


def test_strided_blocks():
    big = np.zeros((2 * PAGES, KV, LAYERS, PAGE, HEADS, DIM), np.float16)
    blocks = big[::2]  # every other page: the page stride doubles
    _, lengths, table = make_cache()
    params = abi.paged_collection_params(blocks, lengths, table, 1, 1)
    assert len(params) == 29
    strides = as_ints(params[9:15])
    assert strides[0] == 2 * KV * LAYERS * PAGE * HEADS * DIM
    assert strides[3:] == [HEADS * DIM, DIM, 1]


@pytest.mark.parametrize("bad, message", [
    (np.zeros((PAGES, KV, PAGE, HEADS, DIM), np.float16), "6-D"),
    (np.zeros((PAGES, KV, LAYERS, PAGE, DIM, HEADS), np.float16)
     .transpose(0, 1, 2, 3, 5, 4), "contiguous"),
])
def test_bad_blocks(bad, message):
    _, lengths, table = make_cache()
    with pytest.raises(ValueError, match=message):
        abi.paged_cache_params(bad, lengths, table, 1, 1)


def test_bad_metadata_and_indices():
    blocks, lengths, table = make_cache()
    with pytest.raises(ValueError, match="cache_lengths"):
        abi.paged_cache_params(blocks, lengths.astype(np.int64), table, 1, 1)
    with pytest.raises(ValueError, match="lookup_table must be contiguous"):
        abi.paged_cache_params(blocks, lengths, np.asfortranarray(
            np.zeros((3, 2), np.int32)), 1, 1)
    with pytest.raises(ValueError, match="layer=3"):
        abi.paged_cache_params(blocks, lengths, table, 1, 1, layer=3)
    with pytest.raises(ValueError, match="kv=2"):
        abi.paged_cache_params(blocks, lengths, table, 1, 1, kv=2)
    with pytest.raises(TypeError, match="not an array"):
        abi.paged_cache_params([1, 2], lengths, table, 1, 1)


def test_kernel_args_and_ctypes_pointers():
    blocks, lengths, table = make_cache()
    out = np.zeros((4, HEADS, DIM), np.float16)
    args = abi.KernelArgs().cache(blocks, lengths, table, 2, 8, layer=1) \
        .index(3).i32(-1).f32(0.5).memref(out)
    assert len(args) == 25 + 1 + 1 + 1 + 9
    pointers = args.ctypes_pointers()
    read = [ctypes.cast(pointers[i], ctypes.POINTER(ctypes.c_uint64)).contents.value
            for i in (0, 25)]
    assert read == [blocks.__array_interface__["data"][0], 3]
    assert ctypes.cast(pointers[26], ctypes.POINTER(ctypes.c_uint32)).contents.value == 0xFFFFFFFF
    assert ctypes.cast(pointers[27], ctypes.POINTER(ctypes.c_float)).contents.value == 0.5


# A continuous cache: one block of TOKENS slots per sequence, a 1-D table.
BLOCKS, TOKENS = 4, 6


def make_continuous(dtype=np.float16):
    blocks = np.zeros((BLOCKS, KV, LAYERS, TOKENS, HEADS, DIM), dtype)
    cache_lengths = np.array([3, 5], np.int32)
    lookup_table = np.array([2, 0], np.int32)
    return blocks, cache_lengths, lookup_table


def test_continuous_cache_params_layout():
    blocks, lengths, table = make_continuous()
    params = abi.continuous_cache_params(blocks, lengths, table, 4, 6, kv=1,
                                         layer=2)
    assert len(params) == 23
    base = blocks.__array_interface__["data"][0]
    row = HEADS * DIM
    layer_stride = TOKENS * row
    kv_stride = LAYERS * layer_stride
    block_stride = KV * kv_stride
    assert as_ints(params[:11]) == [base, base, kv_stride + 2 * layer_stride,
                                    BLOCKS, TOKENS, HEADS, DIM,
                                    block_stride, row, DIM, 1]
    lengths_ptr = lengths.__array_interface__["data"][0]
    assert as_ints(params[11:16]) == [lengths_ptr, lengths_ptr, 0, 2, 1]
    table_ptr = table.__array_interface__["data"][0]
    assert as_ints(params[16:21]) == [table_ptr, table_ptr, 0, 2, 1]
    assert params[21].dtype == np.uint32 and int(params[21]) == 4
    assert params[22].dtype == np.uint32 and int(params[22]) == 6
    assert all(p.dtype == np.uint64 for p in params[:21])
    same = abi.cache_params(blocks, lengths, table, 4, 6, kv=1, layer=2,
                            kind="continuous")
    assert as_ints(same) == as_ints(params)


def test_continuous_view_offset_addresses_the_right_element():
    blocks, lengths, table = make_continuous(np.float32)
    blocks[...] = np.arange(blocks.size, dtype=np.float32).reshape(blocks.shape)
    view = as_ints(abi.continuous_cache_params(blocks, lengths, table, 1, 1,
                                               kv=0, layer=1)[:11])
    offset, strides = view[2], view[7:11]
    flat = blocks.reshape(-1)
    for block, slot, head, d in [(0, 0, 0, 0), (3, 5, 1, 7), (2, 1, 0, 5)]:
        index = offset + block * strides[0] + slot * strides[1] + head * strides[2] + d
        assert flat[index] == blocks[block, 0, 1, slot, head, d]


def test_continuous_collection_params_of_strided_blocks():
    big = np.zeros((2 * BLOCKS, KV, LAYERS, TOKENS, HEADS, DIM), np.float16)
    blocks = big[::2]
    _, lengths, table = make_continuous()
    params = abi.continuous_collection_params(blocks, lengths, table, 2, 6)
    assert len(params) == 27
    assert as_ints(params[3:9]) == [BLOCKS, KV, LAYERS, TOKENS, HEADS, DIM]
    strides = as_ints(params[9:15])
    assert strides[0] == 2 * KV * LAYERS * TOKENS * HEADS * DIM
    assert strides[3:] == [HEADS * DIM, DIM, 1]
    table_ptr = table.__array_interface__["data"][0]
    assert as_ints(params[20:25]) == [table_ptr, table_ptr, 0, 2, 1]
    assert as_ints(params[25:]) == [2, 6]


def test_kind_mismatches_are_errors():
    blocks, lengths, table = make_continuous()
    with pytest.raises(ValueError, match=r"needs a 2-D lookup_table \(a paged "
                       r"cache's\).* pass kind='continuous'"):
        abi.paged_cache_params(blocks, lengths, table, 1, 1)
    _, _, paged_table = make_cache()
    with pytest.raises(ValueError, match=r"needs a 1-D lookup_table \(a "
                       r"continuous cache's\).* pass kind='paged'"):
        abi.continuous_collection_params(blocks, lengths, paged_table, 1, 1)
    with pytest.raises(ValueError, match="lookup_table must be contiguous"):
        abi.continuous_cache_params(blocks, lengths, np.zeros(4, np.int32)[::2], 1, 1)
    with pytest.raises(ValueError, match=r"6-D \[num_blocks, kv_dim, num_layers, "
                       r"tokens, num_heads, head_size\]"):
        abi.continuous_cache_params(blocks[0], lengths, table, 1, 1)
    with pytest.raises(ValueError, match="kind must be one of"):
        abi.KernelArgs().cache(blocks, lengths, table, 1, 1, kind="ragged")


def test_kernel_args_of_continuous_caches():
    blocks, lengths, table = make_continuous()
    out = np.zeros((4, HEADS, DIM), np.float16)
    args = (abi.KernelArgs()
            .cache(blocks, lengths, table, 2, 6, kv=1, layer=1, kind="continuous")
            .collection(blocks, lengths, table, 2, 6, kind="continuous")
            .index(3).memref(out))
    assert len(args) == 23 + 27 + 1 + 9
    values = as_ints(args.values())
    assert values[:23] == as_ints(abi.continuous_cache_params(
        blocks, lengths, table, 2, 6, kv=1, layer=1))
    assert values[23:50] == as_ints(abi.continuous_collection_params(
        blocks, lengths, table, 2, 6))
    assert values[50] == 3


KERNEL = textwrap.dedent("""
    !cache = !kvcache.{kind}_cache<f16, num_heads = 2, head_size = 8{pages}>
    gpu.module @kernels {{
      gpu.func @read(%k: !cache, %batch: index, %out: memref<?x2x8xf16>) kernel {{
        %t = gpu.block_id x
        %c0 = arith.constant 0 : index
        %x = kvcache.load %k[%batch, %c0, %t, %c0] : !cache -> vector<8xf16>
        vector.store %x, %out[%t, %c0, %c0] : memref<?x2x8xf16>, vector<8xf16>
        gpu.return
      }}
    }}
""")


@pytest.mark.parametrize("kind, make, cache_params", [
    ("paged", make_cache, 25), ("continuous", make_continuous, 23)],
    ids=["paged", "continuous"])
def test_packer_matches_compiled_kernel_parameters(tmp_path, kind, make,
                                                   cache_params):
    """The packed list has one entry per PTX parameter, of the same width."""
    tool = find_tool("kvcache-compile")
    if tool is None:
        pytest.skip("kvcache-compile is not built")
    source = tmp_path / "kernel.mlir"
    pages = ", page_size = 4" if kind == "paged" else ""
    source.write_text(KERNEL.format(kind=kind, pages=pages))
    ptx = subprocess.run([tool, str(source), "-o", "-"], check=True,
                         capture_output=True, text=True).stdout
    widths = re.findall(r"\.param \.(u64|u32|b64|b32)", ptx)
    blocks, lengths, table = make()
    out = np.zeros((4, HEADS, DIM), np.float16)
    args = abi.KernelArgs().cache(blocks, lengths, table, 1, 4, kind=kind) \
        .index(0).memref(out).values()
    assert len(widths) == len(args) == cache_params + 1 + 9
    assert [w[1:] for w in widths] == [str(a.dtype.itemsize * 8) for a in args]


# Quantized caches (docs/Contract.md 2.2, 7.1): the scales are a sixth
# value. Sizes of the make_cache / make_continuous blocks.
GROUPS = 2           # block<4>: head_size 8 / 4


def make_scales(kind, blocks):
    """float32 scales of `kind` for `blocks`, each element its flat index."""
    num_blocks, kv, layers, tokens, heads, _ = blocks.shape
    shape = {"tensor": (layers, kv),
             "token_head": (num_blocks, kv, layers, tokens, heads),
             "block<4>": (num_blocks, kv, layers, tokens, heads, GROUPS)}[kind]
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def scales_at(params, scales):
    """The elements a descriptor (pointer, aligned pointer, offset, sizes,
    strides) of `scales` addresses, by multi-index of its view."""
    values = as_ints(params)
    rank = (len(values) - 3) // 2
    offset, sizes, strides = values[2], values[3:3 + rank], values[3 + rank:]
    assert values[0] == values[1] == scales.__array_interface__["data"][0]
    flat = scales.reshape(-1)
    return {index: flat[offset + sum(i * s for i, s in zip(index, strides))]
            for index in np.ndindex(*sizes)}


@pytest.mark.parametrize("kind, count", [("tensor", 3), ("token_head", 9),
                                         ("block<4>", 11)])
def test_cache_params_with_scales(kind, count):
    blocks, lengths, table = make_cache(np.int8)
    scales = make_scales(kind, blocks)
    plain = abi.paged_cache_params(blocks, lengths, table, 4, 8, kv=1, layer=2)
    params = abi.cache_params(blocks, lengths, table, 4, 8, kv=1, layer=2,
                              scales=scales)
    assert len(params) == 25 + count
    assert as_ints(params[:25]) == as_ints(plain)
    assert all(p.dtype == np.uint64 for p in params[25:])
    # the view addresses scales[layer, kv] (tensor) or scales[*, kv, layer]
    got = scales_at(params[25:], scales)
    if kind == "tensor":
        assert got == {(): scales[2, 1]}
    else:
        view = scales[:, 1, 2]
        assert got == {index: view[index] for index in np.ndindex(*view.shape)}
        assert as_ints(params[28:28 + view.ndim]) == list(view.shape)


@pytest.mark.parametrize("kind, count", [("tensor", 7), ("token_head", 13),
                                         ("block<4>", 15)])
def test_collection_params_with_scales(kind, count):
    blocks, lengths, table = make_continuous(np.uint8)
    scales = make_scales(kind, blocks)
    params = abi.collection_params(blocks, lengths, table, 2, 6,
                                   kind="continuous", scales=scales)
    assert len(params) == 27 + count
    assert as_ints(params[:27]) == as_ints(abi.continuous_collection_params(
        blocks, lengths, table, 2, 6))
    rank = scales.ndim
    assert as_ints(params[27:]) == [
        scales.ctypes.data, scales.ctypes.data, 0, *scales.shape,
        *[s // 4 for s in scales.strides]]
    assert rank == (count - 3) // 2
    args = abi.KernelArgs().collection(blocks, lengths, table, 2, 6,
                                       kind="continuous", scales=scales) \
        .cache(blocks, lengths, table, 2, 6, kv=0, layer=1, kind="continuous",
               scales=scales)
    assert len(args) == 27 + count + 23 + {7: 3, 13: 9, 15: 11}[count]


def test_strided_scales():
    blocks, lengths, table = make_cache(np.int8)
    big = np.zeros((2 * PAGES, KV, LAYERS, PAGE, HEADS, GROUPS), np.float32)
    scales = big[::2]                       # every other page
    scales[...] = make_scales("block<4>", blocks)
    params = abi.cache_params(blocks, lengths, table, 1, 1, kv=0, layer=1,
                              scales=scales)
    view = scales[:, 0, 1]
    got = scales_at(params[25:], big)
    assert got == {index: view[index] for index in np.ndindex(*view.shape)}


def test_bad_scales():
    blocks, lengths, table = make_cache(np.int8)
    scales = make_scales("token_head", blocks)
    with pytest.raises(ValueError, match="f32"):
        abi.cache_params(blocks, lengths, table, 1, 1, scales=scales.astype(np.int32))
    with pytest.raises(ValueError, match=r"needs token_head scales of shape "
                       r"\(5, 2, 3, 4, 2\), got \(4, 2, 3, 4, 2\)"):
        abi.cache_params(blocks, lengths, table, 1, 1, scales=scales[1:])
    with pytest.raises(ValueError, match=r"needs tensor scales of shape \(3, 2\)"):
        abi.collection_params(blocks, lengths, table, 1, 1,
                              scales=np.zeros((LAYERS, 3), np.float32))
    with pytest.raises(ValueError, match="head_size / G"):
        abi.collection_params(blocks, lengths, table, 1, 1, scales=np.zeros(
            (PAGES, KV, LAYERS, PAGE, HEADS, 3), np.float32))
    with pytest.raises(ValueError, match="must be contiguous"):
        abi.collection_params(blocks, lengths, table, 1, 1, scales=np.zeros(
            (PAGES, KV, LAYERS, HEADS, PAGE), np.float32).transpose(0, 1, 2, 4, 3))
    with pytest.raises(TypeError, match="pass a quantized cache's scales as "
                       "scales="):
        abi.collection_params(blocks, lengths, table, 1, 1, scales)


SCALED_KERNEL = textwrap.dedent("""
    !t = !kvcache.{kind}_{role}<i8, num_heads = 2, head_size = 8{pages}, scales = {scales}>
    gpu.module @kernels {{
      gpu.func @read(%k: !t, %batch: index, %out: memref<?x2x8xf16>) kernel {{
        gpu.return
      }}
    }}
""")


@pytest.mark.parametrize("role", ["cache", "collection"])
@pytest.mark.parametrize("scales", ["tensor", "token_head", "block<4>"])
@pytest.mark.parametrize("kind", ["paged", "continuous"])
def test_packer_matches_compiled_kernel_parameters_with_scales(
        tmp_path, kind, scales, role):
    """A quantized cache or collection: the packed list has one entry per
    PTX parameter, of the same width (docs/KernelABI.md: 25/23 + 3, 9, 11
    for a layer cache, 29/27 + 7, 13, 15 for a collection)."""
    tool = find_tool("kvcache-compile")
    if tool is None:
        pytest.skip("kvcache-compile is not built")
    source = tmp_path / "kernel.mlir"
    pages = ", page_size = 4" if kind == "paged" else ""
    source.write_text(SCALED_KERNEL.format(kind=kind, role=role, pages=pages,
                                           scales=scales))
    ptx = subprocess.run([tool, str(source), "-o", "-"], check=True,
                         capture_output=True, text=True).stdout
    widths = re.findall(r"\.param \.(u64|u32|b64|b32)", ptx)
    pointers = [i for i, line in enumerate(re.findall(r"\.param [^\n]*", ptx))
                if ".ptr" in line]
    blocks, lengths, table = (make_cache if kind == "paged" else make_continuous)(np.int8)
    out = np.zeros((4, HEADS, DIM), np.float16)
    scale_values = make_scales(scales, blocks)
    args = abi.KernelArgs()
    add = args.cache if role == "cache" else args.collection
    add(blocks, lengths, table, 1, 4, kind=kind,
        scales=scale_values).index(0).memref(out)
    # the memrefs' pointers (allocated, aligned) where the PTX has them:
    # blocks, cache_lengths, lookup_table, scales, out, in this order
    bases = [a.ctypes.data for a in (blocks, lengths, table, scale_values, out)]
    packed = [i for i, v in enumerate(as_ints(args.values())) if v in bases]
    assert packed == pointers
    assert [as_ints(args.values())[i] for i in packed[::2]] == bases
    base = {("paged", "cache"): 25, ("paged", "collection"): 29,
            ("continuous", "cache"): 23, ("continuous", "collection"): 27}
    extra = {"cache": {"tensor": 3, "token_head": 9, "block<4>": 11},
             "collection": {"tensor": 7, "token_head": 13, "block<4>": 15}}
    assert len(widths) == len(args) == base[kind, role] + extra[role][scales] + 10
    assert [w[1:] for w in widths] == [str(a.dtype.itemsize * 8)
                                       for a in args.values()]


SOURCE_PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "python")
PACKED = """\
blocks = np.zeros((5, 2, 3, 4, 2, 8), np.int8)
lengths, table = np.array([3, 7], np.int32), np.array([[0, 1], [2, 4]], np.int32)
scales = np.zeros((5, 2, 3, 4, 2), np.float32)
args = (abi.KernelArgs()
        .cache(blocks, lengths, table, 4, 8, kv=1, layer=2, scales=scales)
        .collection(blocks, lengths, table, 4, 8).index(3))
pointers = {a.ctypes.data for a in (blocks, lengths, table, scales)}
packed = [None if int(v) in pointers else int(v) for v in args.values()]
"""


@pytest.mark.skipif(not os.path.isdir(os.path.join(SOURCE_PACKAGE, "kvcache")),
                    reason="no source tree")
def test_kinds_pack_the_same_without_the_extension():
    """From a source checkout without the compiler extension (a GPU
    machine where nothing is built), the kinds' functions pack the arrays
    as given, unchecked: the same parameters (but the pointers) as with it."""
    script = ("import sys\nsys.path.insert(0, sys.argv[1])\n"
              "import numpy as np\nimport kvcache.abi as abi\n"
              "assert not abi._has_extension()\n" + PACKED + "print(packed)\n")
    run = subprocess.run([sys.executable, "-c", script,
                          os.path.abspath(SOURCE_PACKAGE)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    described = {"np": np, "abi": abi}
    exec(PACKED, described)
    assert abi._has_extension()
    assert len(described["packed"]) == 34 + 29 + 1
    assert eval(run.stdout) == described["packed"]


@pytest.mark.parametrize("extension", [True, False])
def test_the_packer_checks_the_arrays_against_each_other(extension,
                                                         monkeypatch):
    """What the packer sees of the arrays' relations (docs/KernelABI.md):
    max_cache_length (unsigned) within a sequence's capacity, blocks of a
    cache element type, of 1-byte codes with scales, the metadata of i32;
    with the compiler's description and without it."""
    if not extension:
        monkeypatch.setattr(abi, "_has_extension", lambda: False)
    blocks, lengths, table = make_cache()
    # 2 columns of pages of 4 tokens: 8 tokens a sequence.
    abi.paged_cache_params(blocks, lengths, table, 1, 8)
    for value, shown in [(9, 9), (-1, 2**32 - 1)]:
        with pytest.raises(ValueError, match=rf"max_cache_length is {shown}, "
                           r".*2 columns of pages of 4 tokens hold 8"):
            abi.KernelArgs().cache(blocks, lengths, table, 1, value)
    continuous, lengths2, table2 = make_continuous()
    abi.continuous_collection_params(continuous, lengths2, table2, 1, TOKENS)
    with pytest.raises(ValueError, match=rf"max_cache_length is {TOKENS + 1}, "
                       rf".*a block \(blocks dim 3\) holds {TOKENS} tokens"):
        abi.continuous_collection_params(continuous, lengths2, table2, 1,
                                         TOKENS + 1)
    with pytest.raises(kvcache_errors.ArgumentTypeError,
                       match="elements of a cache .* got float64"):
        abi.paged_collection_params(blocks.astype(np.float64), lengths, table,
                                    1, 8)
    scales = make_scales("token_head", blocks)
    with pytest.raises(kvcache_errors.ArgumentTypeError,
                       match="1-byte codes .* got float16"):
        abi.cache_params(blocks, lengths, table, 1, 8, scales=scales)
    abi.cache_params(blocks.astype(np.int8), lengths, table, 1, 8,
                     scales=scales)
    with pytest.raises(kvcache_errors.ArgumentTypeError,
                       match="lookup_table of i32 elements .* got int64"):
        abi.paged_cache_params(blocks, lengths, table.astype(np.int64), 1, 8)
