"""Bad input never corrupts anything (docs/Contract.md 5): every kernel op
(store_ragged, gather_ragged, copy_pages, attention_ragged, merge_states)
and a decode step, on the CPU and on the GPU emulator, compiled with and
without checked=True, called with one argument made inconsistent with the
others (a short array, offsets past the end, decreasing or of the wrong
batch, a layer or page out of range, cache lengths negative or past a
sequence's capacity, max_cache_length too small or -1, copy pairs out of
range or overlapping). Each such call raises kvcache.CheckError naming the
function, the op, the argument and both values, before anything is
written: every array the call takes is bit-identical afterwards, and the
module goes on working (valid calls give the reference's results)."""

import re

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import builders, dtypes, reference, testing  # noqa: E402

CONFIG = kvcache.CacheConfig("f32", num_heads=2, head_size=8, page_size=4,
                             num_layers=2, q_heads=4)
HEADS, QHEADS, DIM = CONFIG.num_heads, CONFIG.query_heads, CONFIG.head_size
CACHE_LENGTHS, NEW = [3, 5], [2, 1]       # capacity 2 columns x 4 tokens: 8
CAPACITY = 8
ATTENTION_TOLERANCE = 2e-5

# A decode step whose attention writes an `out` the function computes (a
# call result: the check routine cannot trace it to an argument), so that
# only checked code checks it, inside the function, before the stores.
COMPUTED_OUT = """
func.func private @same(%m: memref<?x4x8xf32>) -> memref<?x4x8xf32> {
  return %m : memref<?x4x8xf32>
}
"""


def module_text():
    text = builders.module(
        builders.store_ragged(CONFIG), builders.gather_ragged(CONFIG),
        builders.copy_pages(CONFIG), builders.attention_ragged(CONFIG, lse=True),
        builders.merge_states(CONFIG), builders.decode_step(CONFIG))
    computed = builders.decode_step(CONFIG, name="decode_step_computed_out")
    computed = computed.replace(
        "  kvcache.store_ragged %key_cache",
        "  %computed = func.call @same(%out) : (memref<?x4x8xf32>) -> "
        "memref<?x4x8xf32>\n  kvcache.store_ragged %key_cache", 1)
    computed = re.sub(r"(kvcache.attention_ragged %q, %key_cache, "
                      r"%value_cache, %row_offsets, )%out", r"\1%computed",
                      computed)
    assert "%computed {" in computed
    return text + COMPUTED_OUT + computed


TARGETS = {"cpu": kvcache.CPUModule, "emulated-gpu": kvcache.EmulatedGPUModule}
MODULES = {}


def compiled(target, checked):
    """One module per target and mode, shared by the tests."""
    key = (target, checked)
    if key not in MODULES:
        MODULES[key] = TARGETS[target](module_text(), checked=checked,
                                       filename="bad_input.mlir")
    return MODULES[key]


# The arguments of each function after the collection's five (by name).
CACHE_FIELDS = ["blocks", "cache_lengths", "lookup_table", "max_seq_length",
                "max_cache_length"]
SIGNATURES = {
    "store_ragged": ["layer", "new", "row_offsets"],
    "gather_ragged": ["layer", "out", "ctx_offsets"],
    "copy_pages": ["pairs"],
    "attention_ragged": ["layer", "q", "row_offsets", "out", "lse"],
    "merge_states": ["out_a", "lse_a", "out_b", "lse_b", "out", "lse"],
    "decode_step": ["layer", "q", "new_keys", "new_values", "row_offsets",
                    "out"],
    "decode_step_computed_out": ["layer", "q", "new_keys", "new_values",
                                 "row_offsets", "out"],
}
# The kernel ops of each function (a message names one of them).
DECODE_OPS = ("store_ragged", "attention_ragged")
OPS = {"store_ragged": ("store_ragged",), "gather_ragged": ("gather_ragged",),
       "copy_pages": ("copy_pages",), "attention_ragged": ("attention_ragged",),
       "merge_states": ("merge_states",), "decode_step": DECODE_OPS,
       "decode_step_computed_out": DECODE_OPS}
# The kernel op's operand a function argument is, where the names differ.
OPERANDS = {"new": "values", "new_keys": "values", "new_values": "values"}
# The ops a bad layer may be reported at.
LAYER_OPS = ("get_key_cache", "get_value_cache")


class Call:
    """The values of one valid call of `function` (a fresh copy each
    time): `values` by argument name, the collection's included."""

    def __init__(self, function):
        rng = np.random.default_rng(33)
        self.function = function
        self.cache = testing.random_cache(CONFIG, CACHE_LENGTHS, NEW, rng,
                                          spare_pages=2)
        rows = sum(NEW)
        v = dict(zip(CACHE_FIELDS, self.cache.arguments()))
        v["layer"] = 1
        v["row_offsets"] = testing.row_offsets(NEW)
        totals = [c + n for c, n in zip(CACHE_LENGTHS, NEW)]
        v["ctx_offsets"] = testing.row_offsets(totals)
        if function == "gather_ragged":
            v["out"] = np.zeros((sum(totals), HEADS, DIM), np.float32)
        else:
            v["out"] = np.zeros((rows, QHEADS, DIM), np.float32)
        for name in ("new", "new_keys", "new_values"):
            v[name] = testing.random_rows(rng, rows, HEADS, DIM, "f32")
        for name in ("q", "out_a", "out_b"):
            v[name] = testing.random_rows(rng, rows, QHEADS, DIM, "f32")
        for name in ("lse_a", "lse_b"):
            v[name] = rng.uniform(-2, 2, (rows, QHEADS)).astype(np.float32)
        v["lse"] = np.zeros((rows, QHEADS), np.float32)
        used = sorted(set(self.cache.lookup_table.ravel().tolist()))
        self.spare = sorted(set(range(self.cache.num_pages)) - set(used))
        self.used = used
        v["pairs"] = np.array([[self.spare[0], used[0]],
                               [self.spare[1], used[1]]], np.int32)
        self.values = v

    @property
    def num_pages(self):
        return self.values["blocks"].shape[0]

    def arguments(self):
        names = SIGNATURES[self.function]
        fields = [] if self.function == "merge_states" else CACHE_FIELDS
        return [self.values[name] for name in fields + names]

    def arrays(self):
        """Every array of the call (the whole blocks, not a view)."""
        return {name: value for name, value in self.values.items()
                if isinstance(value, np.ndarray)}

    def snapshot(self):
        return {name: array.tobytes() for name, array in self.arrays().items()}


class Mutation:
    """One argument made inconsistent: `mutate(call)` changes `call.values`;
    the message names `argument` (one of them, for a tuple), each of
    `numbers` (ints, or tuples of which one) and one of the function's
    kernel ops, or of `ops` when given."""

    def __init__(self, label, mutate, argument, numbers, ops=()):
        self.label, self.mutate = label, mutate
        self.argument, self.numbers, self.ops = argument, numbers, ops


def shorter(name):
    def mutate(call):
        call.values[name] = call.values[name][:-1].copy()
    return mutate


def offsets_past_the_end(name):
    def mutate(call):
        call.values[name] = call.values[name].copy()
        call.values[name][-1] += 2
    return mutate


def decreasing(name):
    def mutate(call):
        offsets = call.values[name].copy()
        offsets[1] = offsets[2] + 1
        call.values[name] = offsets
    return mutate


def set_value(name, value):
    def mutate(call):
        call.values[name] = value
    return mutate


def set_element(name, index, value):
    def mutate(call):
        array = call.values[name].copy()
        array[index] = value
        call.values[name] = array
    return mutate


def wrong_batch(name):
    """Offsets of a batch of 3 (the rows unchanged), 2 sequences cached."""
    def mutate(call):
        last = int(call.values[name][-1])
        call.values[name] = np.array([0, 1, 2, last], np.int32)
    return mutate


def longer_cache_lengths(offsets):
    """A batch of 3 in cache_lengths and the offsets, the table's 2 rows."""
    def mutate(call):
        call.values["cache_lengths"] = np.array(CACHE_LENGTHS + [0], np.int32)
        wrong_batch(offsets)(call)
    return mutate


def table_entry(b, column, page):
    def mutate(call):
        table = call.values["lookup_table"]
        table[b, column] = page  # the cache's own table: a fresh copy
    return mutate


def pairs(*rows):
    """Copy pairs from rows of ("spare", i) / ("used", i) / ints."""
    def mutate(call):
        def page(p):
            return p if isinstance(p, int) else getattr(call, p[0])[p[1]]
        call.values["pairs"] = np.array([[page(s), page(d)] for s, d in rows],
                                        np.int32)
    return mutate


def a_context_past_the_capacity(call):
    """Sequence 1's context one token past its capacity (`out` has the
    rows the offsets say, so that only the capacity is wrong)."""
    offsets = np.array([0, 3, 3 + CAPACITY + 1], np.int32)
    call.values["ctx_offsets"] = offsets
    call.values["out"] = np.zeros((offsets[-1], HEADS, DIM), np.float32)


U32_MINUS_1 = 2**32 - 1
NUM_PAGES = Call("copy_pages").num_pages
ROWS = sum(NEW)
CONTEXT_ROWS = sum(CACHE_LENGTHS) + sum(NEW)


# The op whose rows a decode step's arrays are.
ROW_OPS = {"new_keys": ("store_ragged",), "new_values": ("store_ragged",),
           "q": ("attention_ragged",), "out": ("attention_ragged",)}


def row_mutations(function, row_arrays, offsets, rows):
    """Short arrays, offsets past the end, decreasing, of the wrong batch."""
    row_ops = ROW_OPS if function == "decode_step" else {}
    found = [Mutation(f"short {name}", shorter(name), name, [rows - 1, rows],
                      row_ops.get(name, ()))
             for name in row_arrays]
    first = row_arrays[0]
    found += [
        Mutation(f"{offsets} past the end", offsets_past_the_end(offsets),
                 (first, offsets), [rows, rows + 2]),
        Mutation(f"{offsets} decreasing", decreasing(offsets), offsets,
                 [rows + 1, rows]),
        Mutation(f"{offsets} of a batch of 3", wrong_batch(offsets),
                 ("cache_lengths", "lookup_table", offsets), [3, 2]),
    ]
    return found


def cache_mutations(function, offsets, page_b, page_column,
                    sizes_from_lengths):
    """A layer and a page (the table's [page_b, page_column], which the op
    reads) out of range; cache lengths past the capacity; max_cache_length
    too small and -1 (`sizes_from_lengths`: the op's lowering sizes
    something from it)."""
    layer_ops = LAYER_OPS + OPS[function]
    found = [
        Mutation("layer 2 of 2", set_value("layer", 2), "layer", [2],
                 layer_ops),
        Mutation("layer 5 of 2", set_value("layer", 5), "layer", [5, 2],
                 layer_ops),
        Mutation("page past num_pages through the table",
                 table_entry(page_b, page_column, 99), "lookup_table",
                 [99, NUM_PAGES]),
        Mutation("cache_lengths of a batch of 3, table of 2",
                 longer_cache_lengths(offsets), "lookup_table", [3, 2]),
    ]
    if function != "gather_ragged":  # gather reads positions [0, rows(b))
        found += [
            Mutation("negative cache length", set_element("cache_lengths", 0, -1),
                     "cache_lengths",
                     [(U32_MINUS_1, U32_MINUS_1 + NEW[0]), CAPACITY]),
            Mutation("cache length past the capacity",
                     set_element("cache_lengths", 1, CAPACITY),
                     "cache_lengths", [(CAPACITY + NEW[1], CAPACITY)]),
        ]
    if sizes_from_lengths:
        longest = max(c + n for c, n in zip(CACHE_LENGTHS, NEW))
        found += [
            Mutation("max_cache_length too small",
                     set_value("max_cache_length", 1), "max_cache_length",
                     [1, longest]),
            Mutation("max_cache_length -1", set_value("max_cache_length", -1),
                     "max_cache_length", [U32_MINUS_1, CAPACITY]),
            Mutation("max_seq_length too small", set_value("max_seq_length", 1),
                     "max_seq_length", [1, max(NEW)]),
        ]
    return found


MUTATIONS = {
    "store_ragged": row_mutations("store_ragged", ["new"], "row_offsets", ROWS)
    + cache_mutations("store_ragged", "row_offsets", 0, 1, False),
    "gather_ragged": row_mutations("gather_ragged", ["out"], "ctx_offsets",
                                   CONTEXT_ROWS)
    + cache_mutations("gather_ragged", "ctx_offsets", 1, 1, False)
    + [Mutation("a context past the capacity",
                a_context_past_the_capacity,
                "ctx_offsets", [CAPACITY + 1, CAPACITY]),
       ],
    "copy_pages": [
        Mutation("source page past num_pages", pairs((99, ("used", 0))),
                 "pairs", [99, NUM_PAGES]),
        Mutation("destination page past num_pages", pairs((("spare", 0), 99)),
                 "pairs", [99, NUM_PAGES]),
        Mutation("negative page", pairs((("spare", 0), -1)),
                 "pairs", [U32_MINUS_1, NUM_PAGES]),
        Mutation("a destination that another pair copies from",
                 pairs((("spare", 0), ("used", 0)), (("used", 0), ("used", 1))),
                 "pairs", []),
        Mutation("a destination twice",
                 pairs((("spare", 0), ("used", 0)), (("spare", 1), ("used", 0))),
                 "pairs", []),
    ],
    "attention_ragged": row_mutations("attention_ragged", ["q", "out", "lse"],
                                      "row_offsets", ROWS)
    + cache_mutations("attention_ragged", "row_offsets", 0, 1, True),
    "merge_states": [
        Mutation(f"short {name}", shorter(name), name, [ROWS - 1, ROWS])
        for name in ("lse_a", "out_b", "lse_b", "out", "lse")],
    "decode_step": row_mutations("decode_step",
                                 ["new_keys", "new_values", "q", "out"],
                                 "row_offsets", ROWS)
    + cache_mutations("decode_step", "row_offsets", 0, 1, True),
}
CASES = [(function, index) for function, found in MUTATIONS.items()
         for index in range(len(found))]


def case_id(case):
    function, index = case
    return f"{function}: {MUTATIONS[function][index].label}"


def expect_check_error(module, call, mutation):
    """Calls with the mutated values: CheckError naming the function, the
    op, the argument and the numbers, every array unchanged."""
    mutation.mutate(call)
    before = call.snapshot()
    with pytest.raises(kvcache.CheckError) as raised:
        module.call(call.function, *call.arguments())
    error = raised.value
    message = str(error)
    assert error.function == call.function and error.message == message
    assert call.function in message
    ops = mutation.ops or OPS[call.function]
    assert any(f"kvcache.{op}" in message for op in ops), (ops, message)
    names = mutation.argument if isinstance(mutation.argument, tuple) \
        else (mutation.argument,)
    # The kernel op's name of the operand (store_ragged's 'values').
    names += tuple(OPERANDS[name] for name in names if name in OPERANDS)
    assert any(name in message for name in names), message
    for number in mutation.numbers:
        options = number if isinstance(number, tuple) else (number,)
        assert any(re.search(rf"(?<![\d.]){n}(?![\d.])", message)
                   for n in options), (number, message)
    after = call.snapshot()
    changed = [name for name in before if before[name] != after[name]]
    assert not changed, f"{changed} written by a failed call: {message}"


@pytest.mark.parametrize("checked", [False, True], ids=["unchecked", "checked"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input_raises_and_writes_nothing(case, target, checked):
    function, index = case
    module = compiled(target, checked)
    assert function in module.checks
    expect_check_error(module, Call(function), MUTATIONS[function][index])


def check_valid_call(module, function):
    """A valid call of `function` gives the reference's results."""
    call = Call(function)
    v, cache = call.values, call.cache
    expected = cache
    layer = v["layer"]
    if function == "store_ragged":
        expected = cache.key_cache(layer).store_ragged(v["new"], v["row_offsets"])
    elif function == "copy_pages":
        expected = cache.copy_pages(v["pairs"])
    elif function == "gather_ragged":
        out = reference.gather_ragged(cache.key_cache(layer), v["ctx_offsets"],
                                      v["out"])
    elif function == "attention_ragged":
        out, lse = reference.attention_ragged(
            v["q"], cache.key_cache(layer), cache.value_cache(layer),
            v["row_offsets"], v["out"], CONFIG.default_scale, lse=v["lse"])
    elif function == "merge_states":
        out, lse = reference.merge_states(v["out_a"], v["lse_a"], v["out_b"],
                                          v["lse_b"], "f32")
    else:
        expected, out = reference.decode_step(
            cache, layer, v["q"], v["new_keys"], v["new_values"],
            v["row_offsets"], v["out"], CONFIG.default_scale)
    module.call(function, *call.arguments())
    np.testing.assert_array_equal(v["blocks"], expected.blocks)
    if function in ("gather_ragged", "merge_states"):
        np.testing.assert_allclose(v["out"], out, atol=ATTENTION_TOLERANCE)
    if function in ("attention_ragged", "merge_states", "decode_step",
                    "decode_step_computed_out"):
        error = np.abs(dtypes.to_float32(out, "f32") - v["out"]).max()
        assert error <= ATTENTION_TOLERANCE
    if function in ("attention_ragged", "merge_states"):
        np.testing.assert_allclose(v["lse"], lse, atol=ATTENTION_TOLERANCE)


@pytest.mark.parametrize("checked", [False, True], ids=["unchecked", "checked"])
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("function", SIGNATURES)
def test_valid_calls_match_the_reference(function, target, checked):
    module = compiled(target, checked)
    check_valid_call(module, function)


@pytest.mark.parametrize("target", TARGETS)
def test_pages_the_op_does_not_touch_are_not_checked(target):
    """Lookup-table entries past a sequence's tokens may hold anything (the
    rule is on the pages an op touches): a table with a third column of
    garbage is a valid call."""
    module = compiled(target, False)
    call = Call("decode_step")
    table = call.values["lookup_table"]
    wide = np.full((table.shape[0], 3), 12345, np.int32)
    wide[:, :2] = table
    call.values["lookup_table"] = wide
    call.cache.lookup_table = wide
    expected, out = reference.decode_step(
        call.cache, 1, call.values["q"], call.values["new_keys"],
        call.values["new_values"], call.values["row_offsets"],
        call.values["out"], CONFIG.default_scale)
    module.call("decode_step", *call.arguments())
    np.testing.assert_array_equal(call.values["blocks"], expected.blocks)
    assert np.abs(out - call.values["out"]).max() <= ATTENTION_TOLERANCE


@pytest.mark.parametrize("target", TARGETS)
def test_a_check_inside_a_checked_function_raises_before_any_write(target):
    """`out` computed in the function (a call's result) is not traced by
    the check routine: checked code checks it inside the function, before
    the stores that come first, and the call raises CheckError in capture
    mode; the module is called again afterwards."""
    module = compiled(target, True)
    assert module._engine.captures_checks
    mutation = Mutation("short out", shorter("out"), "out", [ROWS - 1, ROWS])
    for _ in range(3):  # the recorded failure is cleared each time
        expect_check_error(module, Call("decode_step_computed_out"), mutation)
        check_valid_call(module, "decode_step_computed_out")


@pytest.mark.parametrize("target", TARGETS)
def test_unchecked_modules_do_not_capture(target):
    assert not compiled(target, False)._engine.captures_checks


def test_check_error_is_a_value_error_and_exported():
    error = kvcache.CheckError("f", "f: kvcache.store_ragged: 'new' has 1 rows")
    assert isinstance(error, ValueError)
    assert kvcache.CheckError is kvcache.errors.CheckError
    assert "CheckError" in kvcache.__all__
    assert (error.function, error.message, str(error)) == \
        ("f", "f: kvcache.store_ragged: 'new' has 1 rows",
         "f: kvcache.store_ragged: 'new' has 1 rows")
    import pickle
    again = pickle.loads(pickle.dumps(error))
    assert (again.function, again.message) == (error.function, error.message)


# The protocol between the modules and the compiler's checks, on check
# routines written by hand (docs/Contract.md 5: a public
# `kvcache_check_<F>` taking F's arguments and a message buffer, returning
# non-zero on a failure; `kvcache_check_capture` and
# `kvcache_check_failure` of checked code): @fill writes `n` ones to `out`
# unless `n` exceeds out's size, in which case it records TEXT and returns
# (as checked code does in capture mode); its check routine refuses any
# `n` over 1000, writing TEXT into the message buffer.
TEXT = "fill: 'out' has 4 rows, n is 6"
TEXT_BYTES = ", ".join(str(b) for b in TEXT.encode() + b"\0")
HAND_WRITTEN = f"""
memref.global "private" @recorded : memref<64xi8> = dense<0>
memref.global "private" constant @text : memref<{len(TEXT) + 1}xi8> = dense<[{TEXT_BYTES}]>

func.func private @copy_text(%to: memref<?xi8>) {{
  %text = memref.get_global @text : memref<{len(TEXT) + 1}xi8>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %size = memref.dim %to, %c0 : memref<?xi8>
  %length = arith.constant {len(TEXT) + 1} : index
  %n = arith.minui %size, %length : index
  scf.for %i = %c0 to %n step %c1 {{
    %b = memref.load %text[%i] : memref<{len(TEXT) + 1}xi8>
    memref.store %b, %to[%i] : memref<?xi8>
  }}
  return
}}

func.func @kvcache_check_capture(%on: i32) {{
  %recorded = memref.get_global @recorded : memref<64xi8>
  %c0 = arith.constant 0 : index
  %nul = arith.constant 0 : i8
  memref.store %nul, %recorded[%c0] : memref<64xi8>
  return
}}

func.func @kvcache_check_failure() -> !llvm.ptr {{
  %recorded = memref.get_global @recorded : memref<64xi8>
  %address = memref.extract_aligned_pointer_as_index %recorded : memref<64xi8> -> index
  %i = arith.index_cast %address : index to i64
  %pointer = llvm.inttoptr %i : i64 to !llvm.ptr
  return %pointer : !llvm.ptr
}}

func.func @fill(%out: memref<?xf32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %size = memref.dim %out, %c0 : memref<?xf32>
  %bad = arith.cmpi ugt, %n, %size : index
  scf.if %bad {{
    %recorded = memref.get_global @recorded : memref<64xi8>
    %dynamic = memref.cast %recorded : memref<64xi8> to memref<?xi8>
    func.call @copy_text(%dynamic) : (memref<?xi8>) -> ()
  }} else {{
    scf.for %i = %c0 to %n step %c1 {{
      memref.store %one, %out[%i] : memref<?xf32>
    }}
  }}
  return
}}

func.func @kvcache_check_fill(%out: memref<?xf32>, %n: index,
                              %message: memref<?xi8>) -> i32 {{
  %limit = arith.constant 1000 : index
  %bad = arith.cmpi ugt, %n, %limit : index
  scf.if %bad {{
    func.call @copy_text(%message) : (memref<?xi8>) -> ()
  }}
  %result = arith.extui %bad : i1 to i32
  return %result : i32
}}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_the_modules_run_check_routines_and_capture_failures(target):
    module = TARGETS[target](HAND_WRITTEN)
    assert module.checks == {"fill"} and module._engine.captures_checks
    # The check routine fails: @fill does not run (it would write 1500).
    out = np.zeros(2000, np.float32)
    with pytest.raises(kvcache.CheckError) as raised:
        module.fill(out, 1500)
    assert (raised.value.function, str(raised.value)) == ("fill", TEXT)
    assert not out.any()
    # The routine passes, @fill records a failure: raised after the call,
    # once (the recorded message is cleared).
    out = np.zeros(4, np.float32)
    for _ in range(2):
        with pytest.raises(kvcache.CheckError, match="'out' has 4 rows"):
            module.fill(out, 6)
        assert not out.any()
    module.fill(out, 3)
    np.testing.assert_array_equal(out, [1, 1, 1, 0])
    # Without the check routine (check=False, for measurements) @fill runs.
    big = np.zeros(2000, np.float32)
    module._engine.invoke("fill", module._values("fill", (big, 1500)),
                          check=False)
    assert big.sum() == 1500
