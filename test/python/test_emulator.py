"""kvcache.EmulatedGPUModule: check failures and device asserts of the GPU
emulator raise kvcache.EmulatorError, and the interpreter and the module go on
working. (The kernel ops against the reference: test_kernels.py.)"""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import builders, testing  # noqa: E402

# A hand-written kernel: each thread stores its element in workgroup memory,
# then reads the mirrored element, which another thread stored. BARRIER is
# gpu.barrier in the correct kernel and missing in the planted bug.
REVERSE = """
module attributes {gpu.container_module} {
  gpu.module @planted {
    gpu.func @reverse(%data: memref<64xf32>)
        workgroup(%tile: memref<64xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %c63 = arith.constant 63 : index
      %x = memref.load %data[%t] : memref<64xf32>
      memref.store %x, %tile[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      BARRIER
      %mirror = arith.subi %c63, %t : index
      %y = memref.load %tile[%mirror] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %y, %data[%t] : memref<64xf32>
      gpu.return
    }
  }
  func.func @reverse(%data: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @planted::@reverse blocks in (%c1, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%data : memref<64xf32>)
    return
  }
}
"""
READ_LINE = 12  # the line of the load of the mirrored element in REVERSE


@pytest.fixture(scope="module")
def planted():
    return kvcache.EmulatedGPUModule(REVERSE.replace("BARRIER", ""),
                                     filename="planted.mlir")


@pytest.fixture(scope="module")
def correct():
    return kvcache.EmulatedGPUModule(REVERSE.replace("BARRIER", "gpu.barrier"))


def test_correct_kernel_runs(correct):
    data = np.arange(64, dtype=np.float32)
    correct.reverse(data)
    np.testing.assert_array_equal(data, np.arange(64, dtype=np.float32)[::-1])


@pytest.mark.parametrize("order", ["forward", "reverse", "random:3"])
def test_missing_barrier_raises_and_the_module_runs_again(planted, correct,
                                                          monkeypatch, order):
    monkeypatch.setenv("KVCACHE_EMU_ORDER", order)
    with pytest.raises(kvcache.EmulatorError) as raised:
        planted.reverse(np.arange(64, dtype=np.float32))
    error = raised.value
    assert len(error.reports) == 1 and str(error) == error.reports[0]
    assert error.kinds[0] in ("race", "uninitialized")
    assert error.reports[0].startswith(
        f"kvcache gpu emulator: {error.kinds[0]}: kernel reverse block (0,0,0)")
    assert error.reports[0].endswith(f"at planted.mlir:{READ_LINE}:12")
    # The same process, the same emulator: correct calls still work, and the
    # planted bug is found again (nothing left over from the jump back).
    test_correct_kernel_runs(correct)
    with pytest.raises(kvcache.EmulatorError):
        planted.reverse(np.arange(64, dtype=np.float32))


def test_continue_on_error_raises_at_the_end(planted, monkeypatch):
    monkeypatch.setenv("KVCACHE_EMU_ON_ERROR", "continue")
    data = np.arange(1, 65, dtype=np.float32)
    with pytest.raises(kvcache.EmulatorError) as raised:
        planted.reverse(data)
    kinds = raised.value.kinds
    assert kinds[0] == "uninitialized" and "race" in kinds
    assert str(raised.value) == "\n".join(raised.value.reports)
    # The kernel ran to the end: the last thread read what thread 0 stored.
    assert data[63] == 1.0


def store_step():
    config = kvcache.CacheConfig("f32", num_heads=2, head_size=8, page_size=4,
                                 num_layers=2)
    rng = np.random.default_rng(1)
    cache = testing.random_cache(config, [3, 6], [2, 1], rng)
    new = testing.random_rows(rng, 3, 2, 8, "f32")
    return config, cache, new, testing.row_offsets([2, 1])


def test_device_assert_raises_then_a_correct_call_runs():
    config, cache, new, offsets = store_step()
    config = config.__class__(**{**config.__dict__, "assert_write_mode": 1})
    module = kvcache.EmulatedGPUModule(builders.store_ragged(config))
    # Sequence 1 (6 cached tokens) writes token 6: logical page 1, whose
    # lookup-table entry is now past the last page.
    bad = cache.copy()
    bad.lookup_table[1, 1] = cache.num_pages + 5
    # The check routine stops the call on the host, before any launch.
    before = bad.blocks.copy()
    with pytest.raises(kvcache.CheckError, match=r"token 6 of sequence 1 is on page 11 .*num_pages is 6"):
        module.store_ragged(*bad.arguments(), 1, new, offsets)
    np.testing.assert_array_equal(bad.blocks, before)
    # Skipped, the kernel's own check of the write (assert_write_mode = 1)
    # stops at the device assert.
    values = module._values("store_ragged", [*bad.arguments(), 1, new, offsets])
    with pytest.raises(kvcache.EmulatorError) as raised:
        module._engine.invoke("store_ragged", values, check=False)
    assert raised.value.kinds == ["assert"]
    report = raised.value.reports[0]
    assert "kvcache run-time check failed: kvcache.store_ragged (kvcache.lookup)" \
        in report
    assert "physical page (lookup_table entry) is out of range" in report
    # Row 2 is looked up by lane 2 of the warp whose tile holds it (the
    # first: tiles of 32 rows of 2 x 8 f32).
    assert "Assertion" in report and "block: [0,0,0], thread: [2,0,0]" in report

    expected = cache.key_cache(1).store_ragged(new, offsets).blocks
    module.store_ragged(*cache.arguments(), 1, new, offsets)
    np.testing.assert_array_equal(cache.blocks, expected)


def test_emulator_error_is_exported():
    assert kvcache.EmulatorError is kvcache.errors.EmulatorError
    assert "EmulatorError" in kvcache.__all__
    assert "EmulatedGPUModule" in kvcache.__all__
    error = kvcache.EmulatorError(["kvcache gpu emulator: race: kernel k", "x"])
    assert str(error) == "kvcache gpu emulator: race: kernel k\nx"
    assert error.kinds == ["race", "assert"]


def test_missing_runtime_library_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("KVCACHE_GPU_EMULATOR_LIBRARY", "/nonexistent/libemu.so")
    with pytest.raises(FileNotFoundError, match="KVCACHE_GPU_EMULATOR_LIBRARY"):
        kvcache.EmulatedGPUModule(REVERSE.replace("BARRIER", "gpu.barrier"))
    monkeypatch.delenv("KVCACHE_GPU_EMULATOR_LIBRARY")
    assert kvcache.emulator.find_emulator_library().endswith(
        "libKVCacheGPUEmulator.so")


def test_bad_thread_order_is_an_exception(correct, monkeypatch):
    monkeypatch.setenv("KVCACHE_EMU_ORDER", "backwards")
    with pytest.raises(ValueError, match="KVCACHE_EMU_ORDER"):
        correct.reverse(np.zeros(64, np.float32))


def test_bad_options_are_rejected_before_compiling():
    with pytest.raises(ValueError, match="chip"):
        kvcache.EmulatedGPUModule(REVERSE, chip="gfx90a")
    with pytest.raises(ValueError, match="opt_level"):
        kvcache.EmulatedGPUModule(REVERSE, opt_level=4)


# Two launches in one host function: the planted `reverse` (no barrier),
# then `fill`, which writes 7 to every element of `out`.
TWO_LAUNCHES = REVERSE.replace("BARRIER", "").replace("""  func.func @reverse""", """  gpu.module @second {
    gpu.func @fill(%out: memref<64xf32>) kernel {
      %t = gpu.thread_id x
      %seven = arith.constant 7.0 : f32
      memref.store %seven, %out[%t] : memref<64xf32>
      gpu.return
    }
  }
  func.func @reverse_then_fill(%data: memref<64xf32>, %out: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @planted::@reverse blocks in (%c1, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%data : memref<64xf32>)
    gpu.launch_func @second::@fill blocks in (%c1, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%out : memref<64xf32>)
    return
  }
  func.func @reverse""")


@pytest.fixture(scope="module")
def two_launches():
    return kvcache.EmulatedGPUModule(TWO_LAUNCHES)


def test_a_failed_launch_skips_the_later_launches_of_the_call(two_launches,
                                                             monkeypatch):
    monkeypatch.setenv("KVCACHE_EMU_ORDER", "forward")
    out = np.zeros(64, np.float32)
    with pytest.raises(kvcache.EmulatorError) as raised:
        two_launches.reverse_then_fill(np.arange(64, dtype=np.float32), out)
    assert len(raised.value.reports) == 1
    assert raised.value.reports[0].startswith(
        "kvcache gpu emulator: uninitialized: kernel reverse")
    # `fill` did not run: the launch after the failed one returned at once.
    np.testing.assert_array_equal(out, np.zeros(64, np.float32))
    # With KVCACHE_EMU_ON_ERROR=continue no launch ends: both run.
    monkeypatch.setenv("KVCACHE_EMU_ON_ERROR", "continue")
    with pytest.raises(kvcache.EmulatorError):
        two_launches.reverse_then_fill(np.arange(64, dtype=np.float32), out)
    np.testing.assert_array_equal(out, np.full(64, 7, np.float32))


def test_failed_calls_in_a_loop_leave_the_module_working(two_launches,
                                                          correct):
    out = np.zeros(64, np.float32)
    for _ in range(200):
        with pytest.raises(kvcache.EmulatorError) as raised:
            two_launches.reverse_then_fill(np.arange(64, dtype=np.float32),
                                           out)
        # Nothing accumulates from one call to the next.
        assert len(raised.value.reports) == 1
    np.testing.assert_array_equal(out, np.zeros(64, np.float32))
    test_correct_kernel_runs(correct)


# Every thread asserts that its element of `data` is not negative, then
# marks itself in `marks` (2 blocks of 64 threads).
ASSERTING = """
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @check(%data: memref<64xf32>, %marks: memref<2x64xf32>) kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %x = memref.load %data[%t] : memref<64xf32>
      %ok = arith.cmpf oge, %x, %zero : f32
      cf.assert %ok, "negative input"
      memref.store %one, %marks[%b, %t] : memref<2x64xf32>
      gpu.return
    }
  }
  func.func @check(%data: memref<64xf32>, %marks: memref<2x64xf32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @kernels::@check blocks in (%c2, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%data : memref<64xf32>, %marks : memref<2x64xf32>)
    return
  }
}
"""


def test_device_assert_ends_the_launch_at_the_failing_thread(monkeypatch):
    monkeypatch.setenv("KVCACHE_EMU_ORDER", "forward")
    module = kvcache.EmulatedGPUModule(ASSERTING, filename="asserting.mlir")
    data = np.ones(64, np.float32)
    data[5] = -1
    marks = np.zeros((2, 64), np.float32)
    with pytest.raises(kvcache.EmulatorError) as raised:
        module.check(data, marks)
    assert raised.value.kinds == ["assert"]
    assert "block: [0,0,0], thread: [5,0,0] Assertion `negative input`" \
        in raised.value.reports[0]
    # Threads 0..4 of block 0 ran before thread 5; the rest of the launch
    # (block 0's later threads, block 1) did not run.
    expected = np.zeros((2, 64), np.float32)
    expected[0, :5] = 1
    np.testing.assert_array_equal(marks, expected)
    data[5] = 1
    module.check(data, marks)
    np.testing.assert_array_equal(marks, np.ones((2, 64), np.float32))
