"""Parse, verify, print, pass pipelines and diagnostics through the extension."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import builders  # noqa: E402

CACHE = "!kvcache.paged_cache<f16, num_heads = 2, head_size = 8, page_size = 4>"
COLLECTION = ("!kvcache.paged_collection<bf16, num_heads = 1, head_size = 16, "
              "page_size = 4, mla = true, assert_write_mode = 1>")

ACCESSES = textwrap.dedent(f"""\
    func.func @row_sum(%cache: {CACHE}, %b: index, %h: index, %t: index) -> f32 {{
      %c0 = arith.constant 0 : index
      %x = kvcache.load %cache[%b, %h, %t, %c0] : {CACHE} -> vector<8xf16>
      %wide = arith.extf %x : vector<8xf16> to vector<8xf32>
      %sum = vector.reduction <add>, %wide : vector<8xf32> into f32
      return %sum : f32
    }}
    """)


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
])
def test_builders_round_trip(config):
    for ir in (builders.kernels(config), builders.decode_step(config)):
        text = str(kvcache.parse(ir))
        assert str(kvcache.parse(text)) == text
    # the defaults (mla = false, assert_write_mode = 0) are not printed
    assert ("mla" in text) == config.mla
    assert ("assert_write_mode" in text) == bool(config.assert_write_mode)


def test_functions_lists_signatures():
    module = kvcache.parse(ACCESSES)
    [(name, kind, arguments, results)] = module.functions()
    assert (name, kind, results) == ("row_sum", "func.func", ["f32"])
    assert arguments == [CACHE, "index", "index", "index"]
    lowered = kvcache.lower_to_cpu(module)
    [(name, kind, arguments, _)] = [f for f in lowered.functions()
                                    if f[0] == "row_sum"]
    assert kind == "llvm.func"
    assert len(arguments) == 25 + 3  # Contract.md 7.2: a cache is 25


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
    ir = builders.store_ragged(kvcache.CacheConfig("f8E4M3FN", 2, 16, 8))
    with pytest.raises(kvcache.CompileError) as info:
        kvcache.run_pipeline(ir, "kvcache-to-cpu", filename="f8.mlir")
    assert any(d.location.startswith("f8.mlir:") for d in info.value.diagnostics)
    assert "f8E4M3FN" in str(info.value)


def test_compile_ptx_errors():
    with pytest.raises(kvcache.CompileError, match="no GPU kernels"):
        kvcache.compile_ptx("func.func @f() { return }")
    with pytest.raises(ValueError, match="chip"):
        kvcache.compile_ptx(ACCESSES, chip="90")


def test_cpu_function_with_a_cache_argument_and_a_result():
    from kvcache import reference
    config = kvcache.CacheConfig("f16", 2, 8, 4, num_layers=2)
    cache = reference.random_cache(config, [6, 3], [0, 0], rng=1)
    cpu = kvcache.CPUModule(ACCESSES)
    for b, h, t in [(0, 1, 5), (1, 0, 2)]:
        view = cache.value_cache(1)
        expected = reference.to_float32(view.load(b, h, t, 0, 8), "f16").sum()
        assert cpu.row_sum(view, b, h, t) == pytest.approx(expected, rel=1e-6)


def test_cpu_argument_errors():
    config = kvcache.CacheConfig("f32", 2, 8, 4)
    cpu = kvcache.CPUModule(builders.gather_ragged(config))
    from kvcache import reference
    cache = reference.random_cache(config, [3], [0], rng=0)
    offsets = np.array([0, 3], np.int32)
    out = np.zeros((3, 2, 8), np.float32)
    with pytest.raises(TypeError, match="takes 8 arguments"):
        cpu.gather_ragged(*cache.arguments(), out, offsets)
    with pytest.raises(TypeError, match="float32"):
        cpu.gather_ragged(*cache.arguments(), 0, out.astype(np.float16), offsets)
    with pytest.raises(ValueError, match="dimension 1"):
        cpu.gather_ragged(*cache.arguments(), 0, np.zeros((3, 3, 8), np.float32),
                          offsets)
    with pytest.raises(ValueError, match="C-contiguous"):
        cpu.gather_ragged(*cache.arguments(), 0, out, np.zeros(8, np.int32)[::2])
    with pytest.raises(AttributeError):
        cpu.no_such_function


CHECKED_STORE = textwrap.dedent("""\
    import numpy as np, kvcache
    from kvcache import builders, reference
    config = kvcache.CacheConfig("f32", 1, 4, 2, assert_write_mode=1)
    cache = reference.random_cache(config, [3], [0], rng=0)  # 2 pages of 2
    cpu = kvcache.CPUModule(builders.store_ragged(config), filename="store.mlir")
    new = np.ones((2, 1, 4), np.float32)
    # tokens 3 and 4: token 4 needs a third lookup-table column
    cpu.store_ragged(*cache.arguments(), 0, new, np.array([0, 2], np.int32))
    """)


def test_failed_run_time_check_aborts_with_a_message():
    run = subprocess.run([sys.executable, "-c", CHECKED_STORE],
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode != 0
    # the store_ragged op of the function (line 4) failed its lookup check
    assert "kvcache run-time check failed" in run.stderr
    assert "store.mlir:4:" in run.stderr
    assert "the number of lookup_table columns is 2" in run.stderr
