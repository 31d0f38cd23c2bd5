"""Quantized caches (docs/Contract.md 2.2) on the CPU: dequantizing loads and
the scale ops against kvcache.reference's fp8/int8 codec, every storage type
x every scales kind."""

import functools

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import caches, dtypes, reference  # noqa: E402
from kvcache.config import ELEMENT_TYPES  # noqa: E402

HEADS, HEAD_SIZE, PAGE_SIZE, LAYERS, PAGES, GROUP = 2, 16, 4, 2, 5, 8
STORAGE = ["f8E4M3FN", "f8E5M2", "i8"]
SCALES = ["tensor", "token_head", f"block<{GROUP}>"]
TABLE = np.array([[3, 1], [0, 4]], np.int32)   # sequence 0: pages 3, 1; 1: 0, 4


def scales_shape(scales):
    if scales == "tensor":
        return (LAYERS, 2)
    shape = (PAGES, 2, LAYERS, PAGE_SIZE, HEADS)
    return shape + ((HEAD_SIZE // GROUP,) if scales.startswith("block") else ())


def memref(shape, element, dynamic=()):
    dims = "x".join("?" if i in dynamic else str(n) for i, n in enumerate(shape))
    return f"memref<{dims}x{element}>"


def collection_types(dtype, scales):
    """(collection type, cache type, blocks memref, scales memref) of the
    paged test cache of `dtype` with `scales`."""
    ctype = (f"!kvcache.paged_collection<{dtype}, num_heads = {HEADS}, head_size = "
             f"{HEAD_SIZE}, page_size = {PAGE_SIZE}, scales = {scales}>")
    cache = ctype.replace("paged_collection", "paged_cache")
    blocks = memref((PAGES, 2, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE), dtype, (0, 2))
    return ctype, cache, blocks, memref(scales_shape(scales), "f32", (0,))


def module(dtype, scales):
    ctype, cache, blocks, smem = collection_types(dtype, scales)
    prologue = (f"%blocks: {blocks}, %lengths: memref<?xi32>, %table: memref<?x?xi32>, "
                f"%msl: i32, %mcl: i32, %scales: {smem}, %layer: index, %b: index, "
                f"%h: index, %t: index, %d: index")
    collection = (f"  %c = kvcache.paged_collection %blocks, %lengths, %table, %msl, %mcl, "
                  f"%scales : {blocks}, memref<?xi32>, memref<?x?xi32>, {smem} -> {ctype}\n"
                  f"  %v = kvcache.get_value_cache %c[%layer] : {ctype}\n"
                  f"  %c0 = arith.constant 0 : index\n")
    reads = ""
    for name, element in (("f32", "f32"), ("f16", "f16"), ("bf16", "bf16")):
        reads += (f"  %{name} = kvcache.load %v[%b, %h, %t, %d] : {cache} -> vector<8x{element}>\n"
                  f"  vector.store %{name}, %out_{name}[%c0] : memref<8x{element}>, "
                  f"vector<8x{element}>\n")
    return (f"func.func @read({prologue}, %out_f32: memref<8xf32>, %out_f16: memref<8xf16>, "
            f"%out_bf16: memref<8xbf16>) -> f32 {{\n{collection}{reads}"
            f"  %s = kvcache.load_scale %v[%b, %h, %t, %d] : {cache} -> f32\n"
            f"  return %s : f32\n}}\n"
            f"func.func @write_scale({prologue}, %value: f32) {{\n{collection}"
            f"  kvcache.store_scale %value, %v[%b, %h, %t, %d] : {cache}\n"
            f"  return\n}}\n")


def scale_index(scales, layer, page, slot, head, element):
    if scales == "tensor":
        return (layer, 1)
    index = (page, 1, layer, slot, head)
    return index + ((element // GROUP,) if scales.startswith("block") else ())


def nan_equal(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("dtype", STORAGE)
def test_dequantizing_loads_and_scale_ops(dtype, scales):
    rng = np.random.default_rng(len(dtype) * 7 + len(scales))
    storage = np.dtype(ELEMENT_TYPES[dtype])
    blocks = rng.integers(0, 256, (PAGES, 2, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE),
                          dtype=np.uint8).view(storage)
    scale_values = rng.uniform(2.0**-10, 4.0, scales_shape(scales)).astype(np.float32)
    scale_values.flat[0] = 0.0
    lengths = np.array([6, 8], np.int32)
    table = TABLE.copy()
    cpu = compiled("cpu", module(dtype, scales))
    outs = {"f32": np.zeros(8, np.float32), "f16": np.zeros(8, np.float16),
            "bf16": np.zeros(8, np.uint16)}
    args = (blocks, lengths, table, 2, 8, scale_values)
    for layer in range(LAYERS):
        for b in range(2):
            for t in (0, 3, 5, 7):
                for h in range(HEADS):
                    for d in (0, 8):
                        page, slot = int(TABLE[b, t // PAGE_SIZE]), t % PAGE_SIZE
                        scale = np.float32(scale_values[scale_index(
                            scales, layer, page, slot, h, d)])
                        got = cpu.read(*args, layer, b, h, t, d, outs["f32"],
                                       outs["f16"], outs["bf16"])
                        assert np.float32(got) == scale
                        codes = blocks[page, 1, layer, slot, h, d:d + 8]
                        # stored * scale in f32, then rounded to f16 / bf16
                        values = dtypes.to_float32(codes, dtype) * scale
                        assert nan_equal(outs["f32"], values), (layer, b, t, h, d)
                        with np.errstate(over="ignore"):  # f16 saturates to inf
                            assert nan_equal(outs["f16"], values.astype(np.float16))
                        assert nan_equal(dtypes.to_float32(outs["bf16"], "bf16"),
                                         dtypes.to_float32(
                                             dtypes.from_float32(values, "bf16"), "bf16"))
    # store_scale writes the scale of the element (the layer's V scale for
    # tensor), and nothing else.
    expected = scale_values.copy()
    cpu.write_scale(*args, 1, 1, 1, 7, 9, 0.5)
    expected[scale_index(scales, 1, int(TABLE[1, 1]), 3, 1, 9)] = 0.5
    np.testing.assert_array_equal(scale_values, expected)


def test_decoding_covers_every_code():
    # Every code of each fp8 type through a dequantizing load with scale 1:
    # the reference's table, NaNs and (E5M2) infinities included. Codes
    # 0..255 fill V of page 0 in layers 0 and 1 (128 elements each).
    per_layer = PAGE_SIZE * HEADS * HEAD_SIZE
    for dtype in ("f8E4M3FN", "f8E5M2"):
        blocks = np.zeros((PAGES, 2, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE), np.uint8)
        for layer in range(LAYERS):
            blocks[0, 1, layer] = np.arange(layer * per_layer, (layer + 1) * per_layer,
                                            dtype=np.uint8).reshape(PAGE_SIZE, HEADS, HEAD_SIZE)
        scale_values = np.ones(scales_shape("tensor"), np.float32)
        table = np.array([[0, 1], [2, 3]], np.int32)
        cpu = compiled("cpu", module(dtype, "tensor"))
        outs = [np.zeros(8, np.float32), np.zeros(8, np.float16), np.zeros(8, np.uint16)]
        got = []
        for code in range(0, 256, 8):
            layer, rest = divmod(code, per_layer)
            slot, rest = divmod(rest, HEADS * HEAD_SIZE)
            head, d = divmod(rest, HEAD_SIZE)
            cpu.read(blocks, np.array([4, 4], np.int32), table, 1, 4, scale_values,
                     layer, 0, head, slot, d, *outs)
            got.extend(outs[0].tolist())
        assert nan_equal(got, dtypes.fp8_values(dtype))


def kernel_module(dtype, scales, rows_element):
    """@gather (V of a layer into rows of `rows_element`), @store (K, rows of
    codes), @store_rows (K, rows of `rows_element`), @copy (copy_pages) on
    a paged cache with `scales`."""
    ctype, cache, blocks, smem = collection_types(dtype, scales)
    rows = f"memref<?x{HEADS}x{HEAD_SIZE}x{rows_element}>"
    codes = f"memref<?x{HEADS}x{HEAD_SIZE}x{dtype}>"
    head = (f"%blocks: {blocks}, %lengths: memref<?xi32>, %table: memref<?x?xi32>, "
            f"%msl: i32, %mcl: i32, %scales: {smem}")
    collection = (f"  %c = kvcache.paged_collection %blocks, %lengths, %table, %msl, %mcl, "
                  f"%scales : {blocks}, memref<?xi32>, memref<?x?xi32>, {smem} -> {ctype}\n")
    return (f"func.func @gather({head}, %layer: index, %out: {rows}, %offsets: memref<?xi32>) {{\n"
            f"{collection}  %v = kvcache.get_value_cache %c[%layer] : {ctype}\n"
            f"  kvcache.gather_ragged %v, %out, %offsets : {cache}, {rows}, memref<?xi32>\n"
            f"  return\n}}\n"
            f"func.func @store({head}, %layer: index, %new: {codes}, %offsets: memref<?xi32>) {{\n"
            f"{collection}  %k = kvcache.get_key_cache %c[%layer] : {ctype}\n"
            f"  kvcache.store_ragged %k, %new, %offsets : {cache}, {codes}, memref<?xi32>\n"
            f"  return\n}}\n"
            f"func.func @store_rows({head}, %layer: index, %new: {rows}, "
            f"%offsets: memref<?xi32>) {{\n"
            f"{collection}  %k = kvcache.get_key_cache %c[%layer] : {ctype}\n"
            f"  kvcache.store_ragged %k, %new, %offsets : {cache}, {rows}, memref<?xi32>\n"
            f"  return\n}}\n"
            f"func.func @copy({head}, %pairs: memref<?x2xi32>) {{\n"
            f"{collection}  kvcache.copy_pages %c, %pairs : {ctype}, memref<?x2xi32>\n"
            f"  return\n}}\n")


@functools.cache
def compiled(target, ir):
    """`ir` compiled for the CPU or the emulated GPU: sm_90 (fp8 codes
    converted by the chip's cvt instructions, as the emulator models them)
    or sm_80 (no such instructions: the integer encoder and decoder).
    Compiled once per process: the tests of one storage type, scales and
    rows share the module of kernel_module() (the modules are not checked:
    a call leaves no state behind in them)."""
    if target == "cpu":
        return kvcache.CPUModule(ir)
    return kvcache.EmulatedGPUModule(ir, chip=GPU_CHIPS[target])


GPU_CHIPS = {"emulated-gpu": "sm_90", "emulated-sm80": "sm_80"}
TARGETS = ["cpu", "emulated-gpu", "emulated-sm80"]


def random_quantized_cache(rng, dtype, scales):
    storage = np.dtype(ELEMENT_TYPES[dtype])
    blocks = rng.integers(0, 256, (PAGES, 2, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE),
                          dtype=np.uint8).view(storage)
    scale_values = rng.uniform(2.0**-8, 2.0, scales_shape(scales)).astype(np.float32)
    return blocks, scale_values


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rows", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("dtype", STORAGE)
def test_gather_ragged_dequantizes(dtype, scales, rows, target):
    rng = np.random.default_rng(sum(map(ord, dtype + scales + rows)))
    blocks, scale_values = random_quantized_cache(rng, dtype, scales)
    lengths = np.array([6, 7], np.int32)
    offsets = np.array([1, 7, 14], np.int32)          # row 0 and 14 untouched
    storage = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[rows]
    out = np.full((15, HEADS, HEAD_SIZE), 7, storage)
    module = compiled(target, kernel_module(dtype, scales, rows))
    layer = 1
    module.gather(blocks, lengths, TABLE, 2, 8, scale_values, layer, out, offsets)
    expected = np.full((15, HEADS, HEAD_SIZE), np.nan, np.float32)
    for b in range(2):
        for t in range(offsets[b + 1] - offsets[b]):
            page, slot = int(TABLE[b, t // PAGE_SIZE]), t % PAGE_SIZE
            for h in range(HEADS):
                for d in range(HEAD_SIZE):
                    scale = scale_values[scale_index(scales, layer, page, slot, h, d)]
                    value = dtypes.to_float32(blocks[page, 1, layer, slot, h, d], dtype)
                    expected[offsets[b] + t, h, d] = np.float32(value) * np.float32(scale)
    with np.errstate(over="ignore"):
        if rows == "f16":
            expected = expected.astype(np.float16).astype(np.float32)
        elif rows == "bf16":
            expected = dtypes.to_float32(dtypes.from_float32(expected, "bf16"), "bf16")
    got = dtypes.to_float32(out, rows) if rows == "bf16" else out.astype(np.float32)
    assert nan_equal(got[1:14], expected[1:14])
    assert np.all(out[0] == 7) and np.all(out[14] == 7)  # untouched (raw)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["f8E4M3FN", "f8E5M2"])
def test_gather_decodes_every_code(dtype, target):
    # Every code of the type through a dequantizing gather into f32 rows,
    # scale 1: on sm_90 the chip's cvt.rn.f16x2 (as the emulator models it,
    # f16 subnormals of E5M2 included), elsewhere the integer decoder; both
    # must give the reference's table, NaNs and (E5M2) infinities included.
    blocks = np.zeros((PAGES, 2, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE), np.uint8)
    codes = np.arange(256, dtype=np.uint8).reshape(8, HEADS, HEAD_SIZE)
    blocks[3, 1, 0, :] = codes[:4]                    # sequence 0: pages 3, 1
    blocks[1, 1, 0, :] = codes[4:]
    scale_values = np.ones(scales_shape("tensor"), np.float32)
    out = np.zeros((8, HEADS, HEAD_SIZE), np.float32)
    module = compiled(target, kernel_module(dtype, "tensor", "f32"))
    module.gather(blocks, np.array([8, 0], np.int32), TABLE, 0, 8, scale_values, 0,
                  out, np.array([0, 8, 8], np.int32))
    assert nan_equal(out.reshape(-1), dtypes.fp8_values(dtype))
    # -0 keeps its sign.
    assert np.signbit(out.reshape(-1)[0x80]) and not np.signbit(out.reshape(-1)[0])


@pytest.mark.parametrize("target", ["cpu", "emulated-gpu"])
@pytest.mark.parametrize("scales", SCALES)
def test_raw_copies_and_copy_pages_on_quantized_caches(target, scales):
    # store_ragged and gather_ragged of codes (scales untouched) on the CPU
    # and the GPU; copy_pages moves per-page scales with the pages.
    dtype = "f8E5M2"
    rng = np.random.default_rng(len(scales))
    blocks, scale_values = random_quantized_cache(rng, dtype, scales)
    module_type = kvcache.CPUModule if target == "cpu" else kvcache.EmulatedGPUModule
    module = module_type(kernel_module(dtype, scales, dtype))
    lengths = np.array([2, 5], np.int32)
    new = rng.integers(0, 256, (4, HEADS, HEAD_SIZE), dtype=np.uint8)
    offsets = np.array([0, 1, 4], np.int32)           # 1 token after 2, 3 after 5
    expected_blocks, expected_scales = blocks.copy(), scale_values.copy()
    for b, (start, count) in enumerate(((2, 1), (5, 3))):
        for i in range(count):
            t = start + i
            page, slot = int(TABLE[b, t // PAGE_SIZE]), t % PAGE_SIZE
            expected_blocks[page, 0, 1, slot] = new[offsets[b] + i]
    module.store(blocks, lengths, TABLE, 2, 8, scale_values, 1, new, offsets)
    np.testing.assert_array_equal(blocks, expected_blocks)
    np.testing.assert_array_equal(scale_values, expected_scales)
    out = np.zeros((8, HEADS, HEAD_SIZE), np.uint8)
    module.gather(blocks, lengths, TABLE, 2, 8, scale_values, 0,
                  out, np.array([0, 3, 8], np.int32))
    np.testing.assert_array_equal(out[:3], blocks[3, 1, 0, :3])
    np.testing.assert_array_equal(out[3:7], blocks[0, 1, 0, :4])
    np.testing.assert_array_equal(out[7], blocks[4, 1, 0, 0])
    pairs = np.array([[2, 3], [4, 0]], np.int32)
    module.copy(blocks, lengths, TABLE, 2, 8, scale_values, pairs)
    for src, dst in pairs:
        expected_blocks[dst] = expected_blocks[src]
        if scales != "tensor":
            expected_scales[dst] = expected_scales[src]
    np.testing.assert_array_equal(blocks, expected_blocks)
    np.testing.assert_array_equal(scale_values, expected_scales)


ROW_DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}


def float_rows(rng, count, rows):
    """`count` rows of `rows` element type (bf16 as uint16 bits) and their
    float32 values: random magnitudes from 2^-30 to 2^20 per head and group,
    with NaN, +-inf, -0, an all-zero head and an all-NaN group of 8."""
    values = rng.standard_normal((count, HEADS, HEAD_SIZE)).astype(np.float32)
    values *= np.exp2(rng.integers(-30, 21, (count, HEADS, 2, 1))).repeat(
        HEAD_SIZE // 2, axis=3).reshape(count, HEADS, HEAD_SIZE).astype(np.float32)
    values[0, 0, 3] = np.nan
    values[0, 1, 5] = np.inf
    values[1, 0, 0] = -np.inf
    values[1, 1, 7] = -0.0
    values[2, 0] = 0.0
    values[2, 1, 8:] = np.nan
    with np.errstate(over="ignore"):                 # f16 overflows to inf
        stored = dtypes.from_float32(values, rows)
    return stored, dtypes.to_float32(stored, rows)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rows", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("dtype", STORAGE)
def test_store_ragged_quantizes(dtype, scales, rows, target):
    # Float rows into a quantized K cache: token_head and block<G> write
    # amax / max_finite per group, tensor uses the layer's scale; codes are
    # saturate(rne(value / scale)). Compared bit for bit with the reference.
    rng = np.random.default_rng(sum(map(ord, "store" + dtype + scales + rows)))
    blocks, scale_values = random_quantized_cache(rng, dtype, scales)
    lengths = np.array([2, 5], np.int32)
    offsets = np.array([0, 3, 6], np.int32)           # 3 tokens after 2, 3 after 5
    new, values = float_rows(rng, 6, rows)
    module = compiled(target, kernel_module(dtype, scales, rows))
    layer = 1
    expected_blocks, expected_scales = blocks.copy(), scale_values.copy()
    group = GROUP if scales.startswith("block") else HEAD_SIZE
    for b, start in enumerate(lengths):
        for i in range(offsets[b + 1] - offsets[b]):
            t, r = int(start) + i, int(offsets[b]) + i
            page, slot = int(TABLE[b, t // PAGE_SIZE]), t % PAGE_SIZE
            for h in range(HEADS):
                for d in range(0, HEAD_SIZE, group):
                    chunk = values[r, h, d:d + group]
                    index = scale_index(scales, layer, page, slot, h, d)
                    index = (index[0], 0) if scales == "tensor" else \
                        index[:1] + (0,) + index[2:]
                    if scales == "tensor":
                        scale = scale_values[index]
                    else:
                        scale = dtypes.dynamic_scale(chunk, dtype)
                        expected_scales[index] = scale
                    codes = dtypes.quantize(chunk, dtype, scale)
                    expected_blocks[page, 0, layer, slot, h, d:d + group] = \
                        codes.view(blocks.dtype)
    module.store_rows(blocks, lengths, TABLE, 2, 8, scale_values, layer, new, offsets)
    np.testing.assert_array_equal(scale_values.view(np.uint32),
                                  expected_scales.view(np.uint32))
    np.testing.assert_array_equal(blocks.view(np.uint8), expected_blocks.view(np.uint8))


def edge_values(dtype):
    """float32 values around every rounding decision of `dtype`: each finite
    code's value, the midpoints between neighbours (ties) and the float32
    values next to them, the saturation bound and beyond, both signs, and
    NaN, +-inf, +-0."""
    if dtype == "i8":
        points = np.arange(-130, 131, dtype=np.float64)
        ties = points + 0.5
    else:
        table = dtypes.fp8_values(dtype)[:128]
        points = np.sort(table[np.isfinite(table)])
        ties = (points[:-1] + points[1:]) / 2
        top = points[-1]
        step = top - points[-2]
        points = np.concatenate([points, [top + step / 2, top + step, 2 * top]])
    ties = ties.astype(np.float32)
    values = np.concatenate([points.astype(np.float32), ties,
                             np.nextafter(ties, np.float32(np.inf)),
                             np.nextafter(ties, np.float32(-np.inf)),
                             [np.float32(1e30), np.float32(2.0**-140)]])
    values = np.concatenate([values, -values, [np.nan, -np.nan, np.inf, -np.inf,
                                               0.0, -0.0]]).astype(np.float32)
    return values


def store_with_tensor_scale(dtype, values, scale, target="cpu"):
    """The codes store_ragged writes for float32 `values` on a tensor-scaled
    cache of `dtype` whose scales are all `scale`, checked against
    dtypes.quantize."""
    per_call = 16 * HEADS * HEAD_SIZE                 # 2 sequences x 8 tokens
    padded = np.zeros(-(-values.size // per_call) * per_call, np.float32)
    padded[:values.size] = values
    module = compiled(target, kernel_module(dtype, "tensor", "f32"))
    storage = np.dtype(ELEMENT_TYPES[dtype])
    scale_values = np.full(scales_shape("tensor"), scale, np.float32)
    codes = []
    for start in range(0, padded.size, per_call):
        blocks = np.zeros((PAGES, 2, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE), storage)
        rows = padded[start:start + per_call].reshape(16, HEADS, HEAD_SIZE)
        module.store_rows(blocks, np.zeros(2, np.int32), TABLE, 8, 8, scale_values, 0,
                          rows.copy(), np.array([0, 8, 16], np.int32))
        for b in range(2):
            for t in range(8):
                page, slot = int(TABLE[b, t // PAGE_SIZE]), t % PAGE_SIZE
                codes.append(blocks[page, 0, 0, slot].reshape(-1).view(np.uint8))
    got = np.concatenate(codes)[:values.size]
    expected = dtypes.quantize(values, dtype, scale).view(np.uint8)
    mismatches = np.flatnonzero(got != expected)
    assert mismatches.size == 0, [(values[i], got[i], expected[i]) for i in mismatches[:8]]
    return got


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", STORAGE)
def test_quantizing_rounds_saturates_and_keeps_signs(dtype, target):
    # Scale 1 (tensor): the stored codes of edge_values(dtype), against the
    # reference's table-based encoder and a few values worked out by hand.
    values = edge_values(dtype)
    got = store_with_tensor_scale(dtype, values, 1.0, target)
    by_hand = {
        "f8E4M3FN": {448.0: 0x7E, 464.0: 0x7E, 1e30: 0x7E, np.inf: 0x7E, -np.inf: 0xFE,
                     -0.0: 0x80, 2.0**-10: 0x00, 3 * 2.0**-10: 0x02, 1.0625: 0x38,
                     1.1875: 0x3A},
        "f8E5M2": {57344.0: 0x7B, 61440.0: 0x7B, np.inf: 0x7B, -0.0: 0x80,
                   2.0**-17: 0x00, 1.125: 0x3C, 1.375: 0x3E},
        "i8": {2.5: 2, 3.5: 4, -2.5: 0xFE, 127.5: 127, -np.inf: 0x81, -0.0: 0},
    }[dtype]
    for value, code in by_hand.items():
        index = np.flatnonzero((values == np.float32(value)) &
                               (np.signbit(values) == np.signbit(value)))[0]
        assert got[index] == code, (value, got[index], code)
    nan_code = {"f8E4M3FN": 0x7F, "f8E5M2": 0x7E, "i8": 0}[dtype]
    nans = np.flatnonzero(np.isnan(values))
    assert sorted(got[nans] & 0x7F) == [nan_code, nan_code]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", STORAGE)
def test_quantizing_every_binade(dtype, target):
    # Scale 1 (tensor): in every float32 binade (subnormals, +-inf and NaN
    # payloads included), mantissas at and next to the positions where the
    # fp8 (i8) rounding decides: its ties (bit 19 for E4M3, 20 for E5M2)
    # and the carries into the exponent, against the reference.
    mantissas = np.array([0, 1, 0x3FFFF, 0x40000, 0x7FFFF, 0x80000, 0x80001,
                          0xFFFFF, 0x100000, 0x100001, 0x17FFFF, 0x180000,
                          0x180001, 0x280000, 0x380000, 0x7FFFFF], np.uint32)
    exponents = np.arange(256, dtype=np.uint32) << 23
    bits = (exponents[:, None] | mantissas[None, :]).reshape(-1)
    bits = np.concatenate([bits, bits | np.uint32(0x80000000)])
    store_with_tensor_scale(dtype, bits.view(np.float32), 1.0, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("scale", [0.1, 3.0, 2.0**-20])
@pytest.mark.parametrize("dtype", STORAGE)
def test_quantizing_divides(dtype, scale, target):
    # value / scale is the correctly rounded division: the values put the
    # quotient next to the rounding ties (a multiply by the reciprocal
    # lands on the other side of some of them).
    edges = edge_values(dtype)
    edges = edges[np.isfinite(edges) & (np.abs(edges) < 1e29)].astype(np.float64)
    products = (edges * np.float64(np.float32(scale))).astype(np.float32)
    values = np.concatenate([products, np.nextafter(products, np.float32(np.inf)),
                             np.nextafter(products, np.float32(-np.inf))])
    store_with_tensor_scale(dtype, values, scale, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", STORAGE)
def test_dynamic_scales_divide_amax(dtype, target):
    # token_head: each head's amax is one where amax / max_finite and
    # amax * (1 / max_finite) differ in float32; the stored scale must be
    # the quotient.
    rng = np.random.default_rng(len(dtype))
    limit = np.float32(dtypes.MAX_FINITE[dtype])
    candidates = rng.uniform(1e-3, 1e3, 4096).astype(np.float32)
    divided = candidates / limit
    multiplied = candidates * (np.float32(1) / limit)
    amax = candidates[divided != multiplied][:16 * HEADS]
    assert amax.size == 16 * HEADS
    rows = rng.uniform(-1, 1, (16, HEADS, HEAD_SIZE)).astype(np.float32)
    rows *= amax.reshape(16, HEADS, 1)
    rows[:, :, 0] = -amax.reshape(16, HEADS)
    module = compiled(target, kernel_module(dtype, "token_head", "f32"))
    blocks = np.zeros((PAGES, 2, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE),
                      np.dtype(ELEMENT_TYPES[dtype]))
    scale_values = np.zeros(scales_shape("token_head"), np.float32)
    module.store_rows(blocks, np.zeros(2, np.int32), TABLE, 8, 8, scale_values, 0,
                   rows, np.array([0, 8, 16], np.int32))
    for r in range(16):
        b, t = divmod(r, 8)
        page, slot = int(TABLE[b, t // PAGE_SIZE]), t % PAGE_SIZE
        got = scale_values[page, 0, 0, slot]
        expected = amax[r * HEADS:(r + 1) * HEADS] / limit
        np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
        np.testing.assert_array_equal(
            blocks[page, 0, 0, slot].view(np.uint8),
            np.stack([dtypes.quantize(rows[r, h], dtype, expected[h])
                      for h in range(HEADS)]).view(np.uint8))


@pytest.mark.parametrize("head_size, rows_dtype", [
    (512, "f32"), (128, "f32"), (128, "f16"), (80, "f32"), (48, "f32"),
    (128, "bf16"), (80, "f16"), (48, "bf16")])
@pytest.mark.parametrize("dtype", STORAGE)
def test_quantizing_whole_heads(dtype, head_size, rows_dtype):
    # token_head groups of 3 to 32 chunks (16 f32 or 32 f16 values each):
    # up to 16 chunks the store computes every scale of a row from
    # registers (a tree of maxima) and then writes the codes; a head of 512
    # f32 values reads its group twice in loops instead. Each row holds its
    # largest magnitude at another position, so every chunk of a group is
    # once the one that sets the scale. f16 and bf16 rows take their amax
    # on the values' bits (pairs of chunks, an odd one out beside itself):
    # NaNs must drop out of it, infinities not.
    heads, pages, tokens = 2, 9, 16
    ctype = (f"!kvcache.paged_collection<{dtype}, num_heads = {heads}, "
             f"head_size = {head_size}, page_size = 2, scales = token_head>")
    cache = ctype.replace("paged_collection", "paged_cache")
    blocks_t = f"memref<{pages}x2x1x2x{heads}x{head_size}x{dtype}>"
    scales_t = f"memref<{pages}x2x1x2x{heads}xf32>"
    rows_t = f"memref<?x{heads}x{head_size}x{rows_dtype}>"
    ir = (f"func.func @store(%blocks: {blocks_t}, %lengths: memref<?xi32>, "
          f"%table: memref<?x?xi32>, %scales: {scales_t}, %new: {rows_t}, "
          f"%offsets: memref<?xi32>) {{\n"
          f"  %msl = arith.constant 18 : i32\n"
          f"  %c = kvcache.paged_collection %blocks, %lengths, %table, %msl, %msl, %scales"
          f" : {blocks_t}, memref<?xi32>, memref<?x?xi32>, {scales_t} -> {ctype}\n"
          f"  %c0 = arith.constant 0 : index\n"
          f"  %k = kvcache.get_key_cache %c[%c0] : {ctype}\n"
          f"  kvcache.store_ragged %k, %new, %offsets : {cache}, {rows_t}, memref<?xi32>\n"
          f"  return\n}}\n")
    rng = np.random.default_rng(head_size)
    rows = (rng.standard_normal((tokens, heads, head_size)) * 40).astype(np.float32)
    for r in range(tokens):
        for h in range(heads):
            spot = ((r * heads + h) * head_size // (tokens * heads) + 7) % head_size
            rows[r, h, spot] = (-1) ** r * 1000
    rows[1, 0, 30] = np.nan
    rows[2, 1, :] = np.nan                           # amax 0: scale 1
    rows[3, 0, 9] = -np.inf                          # amax inf
    rows[4, 1, head_size - 1] = np.nan               # NaN past the amax
    rows[5, 0, :] = -0.0
    rows[6, 1, :] *= np.float32(2.0 ** -20)          # f16 subnormals
    rows = dtypes.from_float32(rows, rows_dtype)
    blocks = np.zeros((pages, 2, 1, 2, heads, head_size), np.dtype(ELEMENT_TYPES[dtype]))
    scales = np.zeros((pages, 2, 1, 2, heads), np.float32)
    table = np.array([[8, 0, 3, 1, 5, 2, 7, 4, 6]], np.int32)
    kvcache.CPUModule(ir).store(blocks, np.array([1], np.int32), table, scales, rows,
                                np.array([0, tokens], np.int32))
    for r in range(tokens):
        t = r + 1
        page, slot = int(table[0, t // 2]), t % 2
        for h in range(heads):
            values = dtypes.to_float32(rows[r, h], rows_dtype)
            scale = dtypes.dynamic_scale(values, dtype)
            assert scales[page, 0, 0, slot, h].view(np.uint32) == \
                np.float32(scale).view(np.uint32), (r, h)
            np.testing.assert_array_equal(
                blocks[page, 0, 0, slot, h].view(np.uint8),
                dtypes.quantize(values, dtype, scale).view(np.uint8))


def element_scales(scales, scale_values):
    """The scale of every element of the blocks (broadcastable to them)."""
    if scales == "tensor":
        return scale_values.T[None, :, :, None, None, None]
    if scales == "token_head":
        return scale_values[..., None]
    return np.repeat(scale_values, GROUP, axis=-1)


Q_HEADS = 4


def attention_module(dtype, scales, q_dtype):
    ctype, cache, blocks, smem = collection_types(dtype, scales)
    rows = f"memref<?x{Q_HEADS}x{HEAD_SIZE}x{q_dtype}>"
    return (f"func.func @attention(%blocks: {blocks}, %lengths: memref<?xi32>, "
            f"%table: memref<?x?xi32>, %msl: i32, %mcl: i32, %scales: {smem}, "
            f"%layer: index, %q: {rows}, %offsets: memref<?xi32>, %out: {rows}) {{\n"
            f"  %c = kvcache.paged_collection %blocks, %lengths, %table, %msl, %mcl, "
            f"%scales : {blocks}, memref<?xi32>, memref<?x?xi32>, {smem} -> {ctype}\n"
            f"  %k = kvcache.get_key_cache %c[%layer] : {ctype}\n"
            f"  %v = kvcache.get_value_cache %c[%layer] : {ctype}\n"
            f"  kvcache.attention_ragged %q, %k, %v, %offsets, %out {{scale = 0.25 : f32}} "
            f": {rows}, {cache}, {cache}, memref<?xi32>, {rows}\n"
            f"  return\n}}\n")


ATTENTION_TOLERANCE = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("scales", SCALES)
@pytest.mark.parametrize("dtype", STORAGE)
def test_attention_over_quantized_caches(dtype, scales, target):
    # K and V dequantized (stored * scale, f32) in the kernel; q and out of
    # any float type. Against the float64 reference on the dequantized
    # values: the error of f32 attention plus one rounding to q's type.
    q_dtype = ["f32", "f16", "bf16"][(len(dtype) + len(scales)) % 3]
    rng = np.random.default_rng(sum(map(ord, "attention" + dtype + scales)))
    shape = (PAGES, 2, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE)
    # Scales that map [-1, 1] onto most of the codes.
    scale_values = (rng.uniform(1, 2, scales_shape(scales)) /
                    dtypes.MAX_FINITE[dtype]).astype(np.float32)
    per_element = element_scales(scales, scale_values)
    codes = dtypes.quantize(rng.uniform(-1, 1, shape), dtype, per_element)
    blocks = codes.view(np.dtype(ELEMENT_TYPES[dtype]))
    values = dtypes.dequantize(blocks, dtype, per_element)
    lengths = np.array([3, 6], np.int32)
    offsets = np.array([0, 2, 3], np.int32)           # 2 rows after 3, 1 after 6
    q32 = rng.uniform(-1, 1, (3, Q_HEADS, HEAD_SIZE)).astype(np.float32)
    q = dtypes.from_float32(q32, q_dtype)
    q32 = dtypes.to_float32(q, q_dtype)
    out = np.zeros_like(q)
    layer = 1
    compiled(target, attention_module(dtype, scales, q_dtype)).attention(
        blocks, lengths, TABLE, 2, 8, scale_values, layer, q, offsets, out)
    float_cache = caches.PagedCache(values, lengths, TABLE, 2, 8, "f32")
    expected = reference.attention_ragged(
        q32, float_cache.key_cache(layer), float_cache.value_cache(layer), offsets,
        np.zeros(q32.shape, np.float32), 0.25)
    expected = dtypes.to_float32(dtypes.from_float32(expected, q_dtype), q_dtype)
    got = dtypes.to_float32(out, q_dtype)
    assert np.abs(got - expected).max() <= ATTENTION_TOLERANCE[q_dtype]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("planted", ["key", "value"])
@pytest.mark.parametrize("scales", ["token_head", "tensor"])
@pytest.mark.parametrize("dtype", ["f8E4M3FN", "f8E5M2"])
def test_attention_over_nan_codes(dtype, scales, planted, target):
    # A NaN code in a K row makes that key's scores NaN, so the outputs of
    # the rows that see it, for the query heads of its KV head; in a V row
    # it makes one column of those outputs NaN: NaN for NaN, as in the
    # reference, whatever folds the kernel does with the row's scale.
    rng = np.random.default_rng(sum(map(ord, dtype + scales + planted)))
    shape = (PAGES, 2, LAYERS, PAGE_SIZE, HEADS, HEAD_SIZE)
    scale_values = (rng.uniform(1, 2, scales_shape(scales)) /
                    dtypes.MAX_FINITE[dtype]).astype(np.float32)
    per_element = element_scales(scales, scale_values)
    codes = dtypes.quantize(rng.uniform(-1, 1, shape), dtype, per_element)
    layer, kv = 1, (0 if planted == "key" else 1)
    # Sequence 1, token 4 (page TABLE[1, 1], slot 0), KV head 1, element 5.
    page = int(TABLE[1, 4 // PAGE_SIZE])
    codes[page, kv, layer, 4 % PAGE_SIZE, 1, 5] = 0xFF if dtype == "f8E4M3FN" else 0x7E
    blocks = codes.view(np.dtype(ELEMENT_TYPES[dtype]))
    values = dtypes.dequantize(blocks, dtype, per_element)
    lengths = np.array([3, 6], np.int32)
    offsets = np.array([0, 2, 3], np.int32)           # 2 rows after 3, 1 after 6
    q = rng.uniform(-1, 1, (3, Q_HEADS, HEAD_SIZE)).astype(np.float32)
    out = np.zeros_like(q)
    compiled(target, attention_module(dtype, scales, "f32")).attention(
        blocks, lengths, TABLE, 2, 8, scale_values, layer, q, offsets, out)
    float_cache = caches.PagedCache(values, lengths, TABLE, 2, 8, "f32")
    with np.errstate(invalid="ignore"):
        expected = reference.attention_ragged(
            q, float_cache.key_cache(layer), float_cache.value_cache(layer), offsets,
            np.zeros(q.shape, np.float32), 0.25)
    nan = np.isnan(expected)
    assert nan.any() and not nan.all()
    np.testing.assert_array_equal(np.isnan(out), nan)
    assert np.abs(out[~nan] - expected[~nan]).max() <= ATTENTION_TOLERANCE["f32"]


def test_split_attention_over_a_quantized_cache_on_the_emulated_gpu():
    # A decode row over 700 keys: with a workspace the GPU kernel splits the
    # context (keys-per-split 512) and a second kernel merges the splits
    # into bf16 out.
    dtype, scales, q_dtype, page, pages = "f8E5M2", f"block<{GROUP}>", "bf16", 64, 12
    ctype = (f"!kvcache.paged_collection<{dtype}, num_heads = {HEADS}, head_size = "
             f"{HEAD_SIZE}, page_size = {page}, scales = {scales}>")
    cache = ctype.replace("paged_collection", "paged_cache")
    blocks_t = memref((pages, 2, 1, page, HEADS, HEAD_SIZE), dtype, (0,))
    scales_shape_ = (pages, 2, 1, page, HEADS, HEAD_SIZE // GROUP)
    smem = memref(scales_shape_, "f32", (0,))
    rows = f"memref<?x{Q_HEADS}x{HEAD_SIZE}x{q_dtype}>"
    ir = (f"func.func @attention(%blocks: {blocks_t}, %lengths: memref<?xi32>, "
          f"%table: memref<?x?xi32>, %msl: i32, %mcl: i32, %scales: {smem}, "
          f"%q: {rows}, %offsets: memref<?xi32>, %out: {rows}, %ws: memref<?xf32>) {{\n"
          f"  %c = kvcache.paged_collection %blocks, %lengths, %table, %msl, %mcl, "
          f"%scales : {blocks_t}, memref<?xi32>, memref<?x?xi32>, {smem} -> {ctype}\n"
          f"  %c0 = arith.constant 0 : index\n"
          f"  %k = kvcache.get_key_cache %c[%c0] : {ctype}\n"
          f"  %v = kvcache.get_value_cache %c[%c0] : {ctype}\n"
          f"  kvcache.attention_ragged %q, %k, %v, %offsets, %out, %ws {{scale = 0.25 : f32}} "
          f": {rows}, {cache}, {cache}, memref<?xi32>, {rows}, memref<?xf32>\n"
          f"  return\n}}\n")
    rng = np.random.default_rng(11)
    shape = (pages, 2, 1, page, HEADS, HEAD_SIZE)
    scale_values = (rng.uniform(1, 2, scales_shape_) /
                    dtypes.MAX_FINITE[dtype]).astype(np.float32)
    per_element = np.repeat(scale_values, GROUP, axis=-1)
    blocks = dtypes.quantize(rng.uniform(-1, 1, shape), dtype, per_element).view(
        np.dtype(ELEMENT_TYPES[dtype]))
    values = dtypes.dequantize(blocks, dtype, per_element)
    lengths = np.array([700], np.int32)
    table = rng.permutation(pages)[:11].astype(np.int32).reshape(1, 11)
    offsets = np.array([0, 1], np.int32)
    q = dtypes.from_float32(rng.uniform(-1, 1, (1, Q_HEADS, HEAD_SIZE)), q_dtype)
    out = np.zeros_like(q)
    workspace = np.zeros(Q_HEADS * (HEAD_SIZE + 2) * 16, np.float32)
    kvcache.EmulatedGPUModule(ir).attention(blocks, lengths, table, 1, 701, scale_values,
                                            q, offsets, out, workspace)
    assert np.any(workspace != 0)                     # the split path ran
    float_cache = caches.PagedCache(values, lengths, table, 1, 701, "f32")
    expected = reference.attention_ragged(
        dtypes.to_float32(q, q_dtype), float_cache.key_cache(0),
        float_cache.value_cache(0), offsets, np.zeros(q.shape, np.float32), 0.25)
    expected = dtypes.to_float32(dtypes.from_float32(expected, q_dtype), q_dtype)
    got = dtypes.to_float32(out, q_dtype)
    assert np.abs(got - expected).max() <= ATTENTION_TOLERANCE[q_dtype]
