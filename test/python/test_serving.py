"""kvcache.serving: the page allocator, the batch state and each step's
metadata (docs/Contract.md 1), copy-on-write of a shared prefix; and
examples/serving_loop.py at a small size: continuous batching (ragged
prefills, decode steps, sequences joining and leaving, forks of a shared
prefix) on the CPU and, for two steps, on the GPU emulator, every step
within the element type's tolerance of attention written in PyTorch, on
torch tensors written in place."""

import importlib.util
import os

import numpy as np
import pytest

from kvcache import serving

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                       "serving_loop.py")


def test_allocator_reference_counts():
    allocator = serving.PageAllocator(5, reserved=(0,))
    assert allocator.num_free == 4
    pages = [allocator.allocate() for _ in range(4)]
    assert pages == [1, 2, 3, 4]             # never the reserved page
    with pytest.raises(serving.OutOfPages):
        allocator.allocate()
    allocator.share(3)
    allocator.release(3)
    assert allocator.refs(3) == 1 and allocator.num_free == 0
    allocator.release(3)
    assert allocator.refs(3) == 0 and allocator.num_free == 1
    assert allocator.allocate() == 3         # the page freed last
    allocator.release(2)
    for misuse in (allocator.release, allocator.share):
        with pytest.raises(ValueError, match="page 2 is"):
            misuse(2)
    with pytest.raises(ValueError, match="leave none"):
        serving.PageAllocator(1)


def owned(state, table_row, sequence):
    """The lookup-table row: the sequence's pages, then the null page."""
    pages = state.pages(sequence)
    assert list(table_row[:len(pages)]) == pages
    assert set(table_row[len(pages):].tolist()) <= {state.null_page}
    return pages


def test_steps_metadata():
    state = serving.BatchState(num_pages=9, page_size=4)
    state.add("a")
    state.add("b")
    step = state.schedule({"a": 7, "b": 3})  # ragged prompts
    assert step.sequences == ("a", "b")
    assert step.cache_lengths.tolist() == [0, 0]
    assert step.row_offsets.tolist() == [0, 7, 10]
    assert step.context_offsets.tolist() == [0, 7, 10]
    assert (step.max_seq_length, step.max_cache_length) == (7, 7)
    assert step.lookup_table.shape == (2, 2)
    assert step.lookup_table.dtype == np.int32 and step.copy_pairs.shape == (0, 2)
    a = owned(state, step.lookup_table[0], "a")
    b = owned(state, step.lookup_table[1], "b")
    assert len(a) == 2 and len(b) == 1 and not set(a) & set(b)
    assert step.rows("b") == slice(7, 10) and step.num_rows == 10
    blocks = np.zeros(1)
    assert step.collection(blocks) == (blocks, step.cache_lengths,
                                       step.lookup_table, 7, 7)
    step = state.schedule({"b": 2, "a": 1})  # b grows into a new page
    assert step.sequences == ("b", "a")
    assert step.cache_lengths.tolist() == [3, 7]
    assert step.row_offsets.tolist() == [0, 2, 3]
    assert step.context_offsets.tolist() == [0, 5, 13]
    assert (step.max_seq_length, step.max_cache_length) == (2, 8)
    assert owned(state, step.lookup_table[0], "b")[0] == b[0]
    assert owned(state, step.lookup_table[1], "a") == a
    assert (state.length("a"), state.length("b")) == (8, 5)
    free = state.allocator.num_free
    state.finish("a")
    assert state.allocator.num_free == free + 2 and "a" not in state
    step = state.schedule({})
    assert step.lookup_table.shape == (0, 1) and step.max_cache_length == 0


def test_fork_copies_a_shared_page_on_write():
    state = serving.BatchState(num_pages=12, page_size=4)
    state.add("prefix")
    state.schedule({"prefix": 6})            # a full page and a half
    full, half = state.pages("prefix")
    state.fork("prefix", "x")
    state.fork("prefix", "y")
    assert state.pages("x") == [full, half] and state.length("x") == 6
    assert state.allocator.refs(half) == 3
    step = state.schedule({"x": 3, "y": 1})  # both write into `half`
    x, y = state.pages("x"), state.pages("y")
    assert x[0] == y[0] == full              # full pages stay shared
    assert step.copy_pairs.tolist() == [[half, x[1]], [half, y[1]]]
    assert len({half, x[1], y[1], x[2]}) == 4
    assert owned(state, step.lookup_table[0], "x") == x
    assert step.cache_lengths.tolist() == [6, 6]
    assert state.allocator.refs(half) == 1 and state.allocator.refs(full) == 3
    step = state.schedule({"prefix": 1})     # its sole holder now: no copy
    assert step.copy_pairs.shape == (0, 2) and state.pages("prefix")[1] == half
    state.finish("prefix")                   # x and y still hold `full`
    assert state.allocator.refs(full) == 2 and state.allocator.refs(half) == 0
    state.fork("x", "z")                     # 9 tokens: a shared half page
    step = state.schedule({"x": 3})          # x fills it: a copy
    assert step.copy_pairs[0, 0] == state.pages("z")[2]
    state.fork("x", "w")                     # 12 tokens, 3 full pages
    step = state.schedule({"w": 1})
    assert step.copy_pairs.shape == (0, 2)   # a new page, nothing copied
    assert state.pages("w")[:3] == state.pages("x")
    for name in ("x", "y", "z", "w"):
        state.finish(name)
    assert state.allocator.num_free == 11    # every page but the null one


def test_out_of_pages_and_capacity_leave_the_state_unchanged():
    state = serving.BatchState(num_pages=4, page_size=2, max_pages=2)
    state.add("a")
    state.add("b")
    step = state.schedule({"a": 3})
    assert step.lookup_table.shape == (1, 2)  # max_pages columns
    state.fork("a", "c")
    before = (state.pages("a"), state.pages("c"), state.allocator.num_free)
    with pytest.raises(serving.OutOfPages, match="needs 2 pages, 1 are free"):
        state.schedule({"a": 1, "c": 1, "b": 1})  # a copy, b's page
    with pytest.raises(ValueError, match="more than 2 pages of 2"):
        state.schedule({"b": 5})
    assert (state.pages("a"), state.pages("c"), state.allocator.num_free) == \
        before and state.length("b") == 0
    state.schedule({"a": 1, "c": 1})         # c copies; a is then alone
    with pytest.raises(KeyError, match="no sequence 'd'"):
        state.schedule({"d": 1})
    with pytest.raises(KeyError, match="already"):
        state.add("a")
    with pytest.raises(KeyError, match="already"):
        state.fork("a", "b")


def load_example():
    spec = importlib.util.spec_from_file_location("serving_loop", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


SMALL = ["--batch", "4", "--heads", "1", "--q-heads", "2", "--head-size", "16",
         "--page-size", "4", "--layers", "2", "--max-prompt", "6",
         "--max-new", "4", "--prefix", "5"]


@pytest.mark.parametrize("target, steps", [("cpu", 16), ("gpu", 2)])
def test_serving_loop_example(target, steps):
    pytest.importorskip("kvcache._kvcache")
    torch = pytest.importorskip("torch")
    example = load_example()
    args = example.parse_args(SMALL + ["--steps", str(steps)] +
                              (["--gpu"] if target == "gpu" else []))
    loop = example.ServingLoop(args)
    pointers = {name: getattr(loop, name).data_ptr()
                for name in ("blocks", "q", "keys", "values", "out")}
    tolerance = example.TOLERANCE[args.dtype]
    left = batches = 0
    for index in range(steps):
        batch, rows, gone, error = loop.step(first=index == 0)
        assert error <= tolerance, (index, error)
        assert torch.count_nonzero(loop.out[:, :rows]) > 0  # written there
        assert {name: getattr(loop, name).data_ptr() for name in pointers} \
            == pointers
        left += len(gone)
        batches = max(batches, batch)
    assert batches == 4 + 1                  # the first step: the prefix too
    if target == "cpu":
        assert left > 0 and loop.served > 4 and loop.copies > 0
    assert loop.close()                      # every page free again


def test_serving_loop_example_fails_on_a_wrong_result(monkeypatch):
    """The example's check fails when the kernels' output is not attention
    (here: scaled by 1.05)."""
    pytest.importorskip("kvcache._kvcache")
    pytest.importorskip("torch")
    example = load_example()
    loop = example.ServingLoop(example.parse_args(SMALL))
    decode_step = loop.module.decode_step

    def wrong(*arguments):
        decode_step(*arguments)
        arguments[-1].mul_(1.05)
    monkeypatch.setattr(loop, "module", type("M", (), {
        "decode_step": staticmethod(wrong),
        "copy_pages": loop.module.copy_pages}))
    _, _, _, error = loop.step(first=True)
    assert error > example.TOLERANCE["bf16"]
