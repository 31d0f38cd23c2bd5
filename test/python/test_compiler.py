"""Parse, verify, print, pass pipelines and diagnostics through the extension."""

import textwrap

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import builders, testing  # noqa: E402

CACHE = "!kvcache.paged_cache<f16, num_heads = 2, head_size = 8, page_size = 4>"
CONTINUOUS_CACHE = "!kvcache.continuous_cache<f16, num_heads = 2, head_size = 8>"
COLLECTION = ("!kvcache.paged_collection<bf16, num_heads = 1, head_size = 16, "
              "page_size = 4, mla = true, assert_write_mode = 1>")

ROW_SUM = textwrap.dedent("""\
    func.func @row_sum(%cache: {cache}, %b: index, %h: index, %t: index) -> f32 {{
      %c0 = arith.constant 0 : index
      %x = kvcache.load %cache[%b, %h, %t, %c0] : {cache} -> vector<8xf16>
      %wide = arith.extf %x : vector<8xf16> to vector<8xf32>
      %sum = vector.reduction <add>, %wide : vector<8xf32> into f32
      return %sum : f32
    }}
    """)
ACCESSES = ROW_SUM.format(cache=CACHE)
# The same function of a layer of a continuous cache, and its parameter count
# once lowered (Contract.md 7.2).
ROW_SUMS = {"paged": (CACHE, 25), "continuous": (CONTINUOUS_CACHE, 23)}


def test_round_trip_is_stable():
    text = str(kvcache.parse(ACCESSES))
    assert "kvcache.load" in text
    assert str(kvcache.parse(text)) == text
    generic = kvcache.parse(text).to_string(generic=True)
    assert '"kvcache.load"' in generic
    assert str(kvcache.parse(generic)) == text


@pytest.mark.parametrize("config", [
    kvcache.CacheConfig("f16", 8, 128, 16, q_heads=32),
    kvcache.CacheConfig("bf16", 1, 64, 4, num_layers=3, mla=True,
                        assert_write_mode=1),
    kvcache.CacheConfig("f32", 2, 24, 3, num_layers=2, q_heads=6),
    kvcache.CacheConfig("f8E4M3FN", 2, 16, 8),
    kvcache.CacheConfig("f16", 8, 128, q_heads=32, kind="continuous",
                        block_tokens=4096),
    kvcache.CacheConfig("bf16", 1, 64, num_layers=3, mla=True,
                        assert_write_mode=1, kind="continuous"),
])
def test_builders_round_trip(config):
    irs = [builders.kernels(config)]
    if config.has_attention or config.mla:
        irs.append(builders.decode_step(config))
    for ir in irs:
        text = str(kvcache.parse(ir))
        assert str(kvcache.parse(text)) == text
    # the defaults (mla = false, assert_write_mode = 0) are not printed
    assert ("mla" in text) == config.mla
    assert ("assert_write_mode" in text) == bool(config.assert_write_mode)
    assert ("page_size" in text) == config.has_pages
    assert builders.collection_type(config) in text


@pytest.mark.parametrize("cache_kind", ROW_SUMS)
def test_functions_lists_signatures(cache_kind):
    cache, parameters = ROW_SUMS[cache_kind]
    module = kvcache.parse(ROW_SUM.format(cache=cache))
    [(name, kind, arguments, results)] = module.functions()
    assert (name, kind, results) == ("row_sum", "func.func", ["f32"])
    assert arguments == [cache, "index", "index", "index"]
    lowered = kvcache.lower_to_cpu(module)
    [(name, kind, arguments, _)] = [f for f in lowered.functions()
                                    if f[0] == "row_sum"]
    assert kind == "llvm.func"
    assert len(arguments) == parameters + 3  # Contract.md 7.2: a cache is 25


def test_parse_error_has_location():
    with pytest.raises(kvcache.CompileError) as info:
        kvcache.parse("func.func @f() {\n  %x = arith.constant : i32\n}",
                      filename="broken.mlir")
    assert info.value.locations[0].startswith("broken.mlir:2:")
    assert str(info.value).startswith("broken.mlir:2:")


def test_verifier_error_has_location_and_message():
    ir = textwrap.dedent(f"""\
        func.func @f(%c: {COLLECTION}, %layer: index) {{
          %v = kvcache.get_value_cache %c[%layer] : {COLLECTION}
          return
        }}
        """)
    with pytest.raises(kvcache.CompileError) as info:
        kvcache.verify(ir, filename="mla.mlir")
    [diagnostic] = info.value.diagnostics
    assert diagnostic.severity == "error"
    assert diagnostic.location == "mla.mlir:2:8"
    assert "mla" in diagnostic.message
    assert "mla.mlir:2:8: error:" in str(info.value)


def test_builder_rejects_impossible_functions():
    config = kvcache.CacheConfig("f16", 1, 16, 4, mla=True)
    with pytest.raises(ValueError, match="value cache"):
        builders.store_ragged(config, kv="value")
    with pytest.raises(ValueError, match="mla"):
        builders.attention_ragged(config)
    with pytest.raises(ValueError, match="q_heads"):
        kvcache.CacheConfig("f16", 4, 16, 4, q_heads=6)
    with pytest.raises(ValueError, match="dtype"):
        kvcache.CacheConfig("f64", 4, 16, 4)


def test_run_pipeline_text_and_module():
    ir = ACCESSES
    expanded = kvcache.run_pipeline(ir, "kvcache-expand-accesses")
    assert "kvcache.lookup" in expanded and "kvcache.page_load" in expanded
    anchored = kvcache.run_pipeline(ir, "builtin.module(kvcache-expand-accesses)")
    assert anchored == expanded
    module = kvcache.parse(ir)
    lowered = kvcache.run_pipeline(module, "convert-kvcache-to-memref,canonicalize")
    assert "kvcache." not in str(lowered)
    assert "kvcache.load" in str(module)  # the input is unchanged
    nested = kvcache.run_pipeline(ir, "func.func(kvcache-expand-accesses)")
    assert "kvcache.lookup" in nested


def test_invalid_pipeline_is_an_error():
    with pytest.raises(kvcache.CompileError, match="no-such-pass"):
        kvcache.run_pipeline(ACCESSES, "no-such-pass")


def test_failing_pass_reports_the_op_location():
    # Attention over scale groups narrower than a lane's slice: no GPU
    # lowering takes it.
    cache = ("!kvcache.paged_cache<f8E4M3FN, num_heads = 2, head_size = 128, "
             "page_size = 8, scales = block<2>>")
    rows = "memref<?x2x128xf32>"
    ir = (f"func.func @f(%q: {rows}, %k: {cache}, %v: {cache}, "
          f"%offsets: memref<?xi32>, %out: {rows}) {{\n"
          f"  kvcache.attention_ragged %q, %k, %v, %offsets, %out {{scale = 0.25 : f32}} "
          f": {rows}, {cache}, {cache}, memref<?xi32>, {rows}\n  return\n}}\n")
    with pytest.raises(kvcache.CompileError) as info:
        kvcache.run_pipeline(ir, "convert-kvcache-to-gpu", filename="f8.mlir")
    assert any(d.location.startswith("f8.mlir:") for d in info.value.diagnostics)
    assert "scale groups of 2 elements" in str(info.value)


def test_raw_storage_caches_compile_and_refuse_attention():
    # f8E4M3FN, f8E5M2 and i8 without scales: codes moved unchanged on the
    # CPU and the GPU; attention_ragged needs values.
    for dtype in ("f8E4M3FN", "f8E5M2", "i8"):
        config = kvcache.CacheConfig(dtype, 2, 16, 8)
        assert "attention" not in builders.kernel_names(config)
        kvcache.run_pipeline(builders.kernels(config), "kvcache-to-cpu")
        with pytest.raises(ValueError, match="raw " + dtype):
            builders.attention_ragged(config)


def test_compile_ptx_errors():
    with pytest.raises(kvcache.CompileError, match="no GPU kernels"):
        kvcache.compile_ptx("func.func @f() { return }")
    with pytest.raises(ValueError, match="chip"):
        kvcache.compile_ptx(ACCESSES, chip="90")


@pytest.mark.parametrize("kind", ROW_SUMS)
def test_cpu_function_with_a_cache_argument_and_a_result(kind):
    from kvcache import dtypes, testing
    shape = dict(page_size=4) if kind == "paged" else dict(kind=kind)
    config = kvcache.CacheConfig("f16", 2, 8, num_layers=2, **shape)
    cache = testing.random_cache(config, [6, 3], [0, 0], rng=1, spare_pages=2)
    cpu = kvcache.CPUModule(ROW_SUM.format(cache=ROW_SUMS[kind][0]))
    for b, h, t in [(0, 1, 5), (1, 0, 2)]:
        view = cache.value_cache(1)
        expected = dtypes.to_float32(view.load(b, h, t, 0, 8), "f16").sum()
        assert cpu.row_sum(view, b, h, t) == pytest.approx(expected, rel=1e-6)
        assert cpu.row_sum(view.parameters(), b, h, t) == pytest.approx(
            expected, rel=1e-6)


LOOKUP = textwrap.dedent("""\
    func.func @lookup(%c: {collection}, %b: index, %t: index) -> index {{
      %c0 = arith.constant 0 : index
      %c100000 = arith.constant 100000 : index
      %k = kvcache.get_key_cache %c[%c0] : {collection}
      %block, %slot = kvcache.lookup %k[%b, %t] : {cache}
      %scaled = arith.muli %block, %c100000 : index
      %both = arith.addi %scaled, %slot : index
      return %both : index
    }}
    """)


@pytest.mark.parametrize("kind, parameters", [("paged", 29), ("continuous", 27)])
def test_cpu_function_with_a_collection_argument(kind, parameters):
    from kvcache import testing
    shape = dict(page_size=4) if kind == "paged" else dict(kind=kind)
    config = kvcache.CacheConfig("f32", 1, 4, **shape)
    ir = LOOKUP.format(collection=builders.collection_type(config),
                       cache=builders.cache_type(config))
    [(_, _, arguments, _)] = [f for f in kvcache.lower_to_cpu(ir).functions()
                              if f[0] == "lookup"]
    assert len(arguments) == parameters + 2  # Contract.md 7.2
    cache = testing.random_cache(config, [9, 2], [3, 0], rng=4, spare_pages=3)
    cpu = kvcache.CPUModule(ir)
    for b, t in [(0, 0), (0, 5), (0, 11), (1, 1)]:
        block, slot = cache.lookup(b, t)
        assert cpu.lookup(cache, b, t) == block * 100000 + slot
        assert cpu.lookup(cache.arguments(), b, t) == block * 100000 + slot


def test_cpu_cache_argument_of_the_other_kind_is_an_error():
    from kvcache import testing
    paged = testing.random_cache(kvcache.CacheConfig("f16", 2, 8, 4), [3], [0])
    continuous = testing.random_cache(
        kvcache.CacheConfig("f16", 2, 8, kind="continuous"), [3], [0])
    paged_cpu = kvcache.CPUModule(ACCESSES)
    continuous_cpu = kvcache.CPUModule(ROW_SUM.format(cache=CONTINUOUS_CACHE))
    with pytest.raises(ValueError,
                       match=r"needs a 1-D lookup_table \(a continuous cache's\)"):
        continuous_cpu.row_sum(paged.key_cache(0), 0, 0, 0)
    with pytest.raises(ValueError,
                       match=r"needs a 2-D lookup_table \(a paged cache's\)"):
        paged_cpu.row_sum(continuous.key_cache(0), 0, 0, 0)
    narrow = continuous.copy(np.zeros(continuous.shape[:5] + (4,), np.float16))
    with pytest.raises(ValueError, match=r"needs blocks\[:, kv, layer\] of "
                       r"shape \[\?, \?, 2, 8\]"):
        continuous_cpu.row_sum(narrow.key_cache(0), 0, 0, 0)


def test_copy_pages_of_a_continuous_collection_is_rejected():
    config = kvcache.CacheConfig("f16", 2, 8, kind="continuous")
    blocks = builders.blocks_type(config)
    collection = builders.collection_type(config)
    ir = textwrap.dedent(f"""\
        func.func @copy(%blocks: {blocks}, %cache_lengths: memref<?xi32>, %lookup_table: memref<?xi32>, %max_seq_length: i32, %max_cache_length: i32, %pairs: memref<?x2xi32>) {{
          %c = kvcache.continuous_collection %blocks, %cache_lengths, %lookup_table, %max_seq_length, %max_cache_length : {blocks}, memref<?xi32>, memref<?xi32> -> {collection}
          kvcache.copy_pages %c, %pairs : {collection}, memref<?x2xi32>
          return
        }}
        """)
    kvcache.verify(ir.replace("  kvcache.copy_pages", "  // "))  # the rest is valid
    with pytest.raises(kvcache.CompileError) as info:
        kvcache.verify(ir, filename="copy.mlir")
    assert info.value.locations[0].startswith("copy.mlir:3:")


def store_past_the_capacity(config, lengths, new):
    """A cache of `config` (assert_write_mode = 1), its store_ragged module
    and a call that stores tokens 3 and 4 of sequence 0, one past what it
    holds: the check routine raises CheckError before anything is written,
    the process goes on and the same module stores valid rows."""
    cache = testing.random_cache(config, lengths, new, rng=0)
    cpu = kvcache.CPUModule(builders.store_ragged(config), filename="store.mlir")
    new_rows = np.ones((2, 1, 4), np.float32)
    before = cache.blocks.copy()
    with pytest.raises(kvcache.CheckError) as info:
        cpu.store_ragged(*cache.arguments(), 0, new_rows,
                         np.array([0, 2], np.int32))
    np.testing.assert_array_equal(cache.blocks, before)
    cpu.store_ragged(*cache.arguments(), 0, new_rows[:1],
                     np.array([0, 1], np.int32))
    assert not np.array_equal(cache.blocks, before)
    error = info.value
    assert isinstance(error, ValueError) and error.function == "store_ragged"
    # the store_ragged op of the function (line 4), the values that disagree
    assert "kvcache.store_ragged at store.mlir:4:" in str(error)
    return str(error)


def test_failed_argument_check_raises_before_the_write():
    config = kvcache.CacheConfig("f32", 1, 4, 2, assert_write_mode=1)
    message = store_past_the_capacity(config, [3], [0])  # 2 pages of 2
    assert ("sequence 0 needs 5 token positions (cache_lengths[0] = 3 + 2 "
            "rows), but 'cache' holds 4 (lookup_table columns x page_size"
            in message)


def test_failed_argument_check_of_a_continuous_cache():
    config = kvcache.CacheConfig("f32", 1, 4, kind="continuous",
                                 assert_write_mode=1)
    message = store_past_the_capacity(config, [3], [1])  # blocks of 4 slots
    assert "but 'cache' holds 4 (block_tokens" in message
