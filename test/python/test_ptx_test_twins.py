"""Execution twins of the PTX tests of the kernel ops.

The lit tests in test/Integration/GPU/ that compile kernel ops
(kvcache.store_ragged, gather_ragged, copy_pages, attention_ragged) to PTX
check the PTX text but never run it. Here the very same file text goes
through kvcache.EmulatedGPUModule (kvcache-to-emulated-gpu: the kernels
kvcache-to-ptx builds, run on the GPU emulator with its race, barrier,
shuffle, cp.async and shared-memory checks), and every function of every such
file is called on a random but valid batch and compared with the numpy model
(kvcache.reference).

Nothing here is specific to one file: the files are found by the kernel ops
they contain, and each function's op, operand order, cache parameters,
shapes and scale are read from its IR. A function that is not a single
kernel op over its arguments fails with a message saying so (it needs a
hand-written twin).

Each batch has several sequences: a prefill (no cached tokens, its new rows
crossing a page boundary), a chunked prefill (cached tokens and new rows
across a boundary), a decode step (one new row over a context of several
pages; for attention with a workspace, a context long enough to be split
across blocks and merged), and a sequence with nothing new. Every other case
runs in the emulator's reverse block and thread order (KVCACHE_EMU_ORDER,
read at each launch).
"""

import functools
import re
import zlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import caches, dtypes, reference, testing  # noqa: E402
from kvcache.config import parse_type  # noqa: E402
from sampling import sample  # noqa: E402

GPU_TESTS = Path(__file__).resolve().parents[1] / "Integration" / "GPU"
KERNEL_OPS = ("store_ragged", "gather_ragged", "copy_pages", "attention_ragged")
# The PTX tests this module was written for: discovery must find them all.
KNOWN_FILES = {"kernel-ops.mlir", "kernel-ops-narrow.mlir",
               "attention-groups.mlir", "attention-head-sizes.mlir",
               "attention-no-div64.mlir", "continuous-kernels.mlir",
               "raw-storage.mlir", "quantized-kernels.mlir"}

# As test_kernels.py: worst absolute error of attention outputs in [-1, 1].
ATTENTION_TOLERANCE = {"f32": 2e-5, "f16": 2e-3, "bf16": 1.6e-2}
SENTINEL = 7.0             # rows the ops must not touch hold it
KEYS_PER_SPLIT = 512       # convert-kvcache-to-gpu's default (KernelABI.md)
MAX_SPLITS = 16
CONTINUOUS_UNIT = 4        # page_size() of a continuous cache

_FUNC = re.compile(r"^\s*func\.func\s+@([\w$.]+)\s*\(", re.M)
_OP = re.compile(r"kvcache\.(" + "|".join(KERNEL_OPS) + r")\s+([^:{]*)")
_SCALE = re.compile(r"scale\s*=\s*([-+0-9.eE]+)\s*:\s*f32")


def _code(text):
    """The text without // comments (RUN and CHECK lines mention op names)."""
    return re.sub(r"//[^\n]*", "", text)


def _functions(text):
    """[(name, body text)] of the func.func ops of a file, in order."""
    code = _code(text)
    starts = list(_FUNC.finditer(code))
    ends = [m.start() for m in starts[1:]] + [len(code)]
    return [(m.group(1), code[m.start():end]) for m, end in zip(starts, ends)]


def _discover():
    files = {}
    for path in sorted(GPU_TESTS.glob("*.mlir")):
        text = path.read_text()
        if any(_OP.search(body) for _, body in _functions(text)):
            files[path.name] = text
    return files


FILES = _discover()


def _cases():
    return [(name, function) for name, text in FILES.items()
            for function, body in _functions(text) if _OP.search(body)]


ALL_CASES = _cases()
ORDERS = {case: ("reverse" if index % 2 else "forward")
          for index, case in enumerate(ALL_CASES)}
# Under the sanitizers, a sample (sampling.py); the orders stay as above.
CASES = sample(ALL_CASES)


def case_id(case):
    return f"{case[0]}:{case[1]}:{ORDERS[case]}"


def test_every_ptx_test_of_a_kernel_op_is_twinned():
    assert KNOWN_FILES <= set(FILES), sorted(FILES)
    assert len(ALL_CASES) >= 50, ALL_CASES
    # Functions on quantized caches (types with `scales`, docs/Contract.md
    # 2.2) run like the others: kvcache.reference models their scales and
    # the modules pass them (the sixth value of the kernel ABI).
    scaled = {case for case in ALL_CASES
              if any("scales =" in t for t in signatures(case[0])[case[1]])}
    assert {"gather_fp8_token_head", "gather_i8_block", "store_bf16_token_head",
            "attention_i8_block", "copy_with_scales"} <= {
                function for _, function in scaled}, sorted(scaled)


@functools.lru_cache(maxsize=None)
def emulated(name):
    """The file's whole text on the emulator, compiled once per file, as
    kvcache-compile compiles it for the PTX test: sm_90, not checked. (Its
    sm_80 build lowers to the same emulated module: the kernels depend on
    the chip only below sm_80, which has no cp.async.)"""
    return kvcache.EmulatedGPUModule(FILES[name], filename=name)


@functools.lru_cache(maxsize=None)
def signatures(name):
    """{function: [argument types]} of a file, aliases resolved."""
    return {function: arguments for function, _, arguments, _ in
            kvcache.compiler.parse(FILES[name], filename=name).functions()}


def memref_shape(type_text):
    match = re.fullmatch(r"memref<([^,>]*)>", type_text.strip())
    assert match, f"{type_text}: only identity-layout memrefs are handled"
    *dims, element = match.group(1).split("x")
    return [None if d == "?" else int(d) for d in dims], element


class Kernel:
    """The one kernel op of a function, its operands bound to the
    function's arguments."""

    def __init__(self, name, function):
        body = dict(_functions(FILES[name]))[function]
        ops = _OP.findall(body)
        assert len(ops) == 1, (f"{name}:@{function} has {len(ops)} kernel ops: "
                               "it needs a hand-written twin")
        self.op, operands = ops[0]
        self.operands = re.findall(r"%([\w$.]+)", operands)
        header = body[:body.index("{")]
        self.arguments = re.findall(r"%([\w$.]+)\s*:", header)
        self.types = dict(zip(self.arguments, signatures(name)[function]))
        assert set(self.arguments) == set(self.operands), (
            f"{name}:@{function}: the arguments {self.arguments} are not the "
            f"operands {self.operands} of its {self.op}: it needs a "
            "hand-written twin")
        cache_operand = 1 if self.op == "attention_ragged" else 0
        parsed = parse_type(self.type_of(cache_operand))
        assert parsed, self.type_of(cache_operand)
        self.config = parsed[0]
        scale = _SCALE.search(body)
        self.scale = float(scale.group(1)) if scale else None

    def type_of(self, position):
        return self.types[self.operands[position]]

    def call(self, module, function, values):
        """Calls `function` with the operands' values passed in the order of
        its arguments."""
        by_name = dict(zip(self.operands, values))
        getattr(module, function)(*[by_name[a] for a in self.arguments])


def page_size(config):
    """Tokens per page, or for a continuous cache, which has no pages, the
    unit its batch is drawn in (its blocks hold the longest sequence)."""
    return config.page_size if config.has_pages else CONTINUOUS_UNIT


def sequences(config, long_context):
    """(cache_length, new rows) of a batch: prefill, decode, chunked prefill
    and a sequence with nothing new, each across page boundaries."""
    P = page_size(config)
    decode = long_context or 2 * P + 1
    return [(0, P + 2), (decode, 1), (P - 1 if P > 1 else 2, 3), (P + 1, 0)]


def rng_for(case):
    return np.random.default_rng(zlib.crc32(repr(case).encode()))


def filled(rows, heads, head_size, dtype):
    values = np.full((rows, heads, head_size), SENTINEL, np.float32)
    return dtypes.from_float32(values, dtype)


def attention_error(expected, actual, dtype):
    return float(np.abs(dtypes.to_float32(expected, dtype) -
                        dtypes.to_float32(actual, dtype)).max(initial=0))


def assert_same_cache(actual, expected):
    """Codes bit for bit and, for a quantized cache, scales exactly."""
    np.testing.assert_array_equal(actual.blocks, expected.blocks)
    if expected.scales is not None:
        np.testing.assert_array_equal(actual.scales.view(np.uint32),
                                      expected.scales.view(np.uint32))


def run_ragged(kernel, module, function, rng):
    """store_ragged or gather_ragged of rows of the memref's element type:
    the cache's, or float rows of a quantized cache (quantized on store,
    dequantized on gather)."""
    config = kernel.config
    seqs = sequences(config, None)
    cached = [c for c, _ in seqs]
    new = [n for _, n in seqs]
    cache = testing.random_cache(config, cached, new, rng, spare_pages=2)
    layer = int(rng.integers(0, cache.num_layers))
    kv = int(rng.integers(0, cache.kv_dim))
    view = caches.CacheView(cache, kv, layer)
    H, D = config.num_heads, config.head_size
    _, element = memref_shape(kernel.type_of(1))
    if kernel.op == "store_ragged":
        start = 2  # the first sequence's rows do not start at row 0
        offsets = testing.row_offsets(new) + start
        rows = testing.random_rows(rng, int(offsets[-1]) + 1, H, D, element)
        expected = view.store_ragged(rows, offsets)
        kernel.call(module, function, [view, rows, offsets])
        assert_same_cache(cache, expected)
    else:
        totals = [c + n for c, n in seqs]
        offsets = testing.row_offsets(totals) + 2
        out = filled(int(offsets[-1]) + 1, H, D, element)
        expected = reference.gather_ragged(view, offsets, out)
        kernel.call(module, function, [view, out, offsets])
        np.testing.assert_array_equal(out, expected)


def run_copy_pages(kernel, module, function, rng):
    config = kernel.config
    seqs = sequences(config, None)
    cache = testing.random_cache(config, [c for c, _ in seqs],
                                 [n for _, n in seqs], rng, spare_pages=3,
                                 num_layers=3)
    used = sorted(set(cache.lookup_table.ravel().tolist()))
    spare = sorted(set(range(cache.num_pages)) - set(used))
    sources = list(rng.permutation(spare))
    targets = list(rng.permutation(used))[:len(sources)]
    pairs = np.array(list(zip(sources, targets)), np.int32).reshape(-1, 2)
    assert len(pairs) == 3
    expected = cache.copy_pages(pairs)
    kernel.call(module, function, [cache, pairs])
    assert_same_cache(cache, expected)


def run_attention(kernel, module, function, rng):
    config = kernel.config
    q_shape, element = memref_shape(kernel.type_of(0))
    q_heads, D = q_shape[1], q_shape[2]
    assert D == config.head_size and q_heads % config.num_heads == 0
    workspace_given = len(kernel.operands) == 6
    # With a workspace, a decode context split 3 ways (max_cache_length over
    # twice keys-per-split), the last split partial; else several pages.
    if workspace_given:
        long_context = 2 * KEYS_PER_SPLIT + 88
    else:
        long_context = 5 * page_size(config) + 3
    seqs = sequences(config, long_context)
    cached = [c for c, _ in seqs]
    new = [n for _, n in seqs]
    cache = testing.random_cache(config, cached, new, rng, spare_pages=2)
    layer = int(rng.integers(0, cache.num_layers))
    keys, values = cache.key_cache(layer), cache.value_cache(layer)
    start = 1
    offsets = testing.row_offsets(new) + start
    rows = int(offsets[-1])
    q = testing.random_rows(rng, rows, q_heads, D, element)
    out = filled(rows + 1, q_heads, D, element)
    expected = reference.attention_ragged(q, keys, values, offsets, out,
                                          kernel.scale)
    operands = [q, keys, values, offsets, out]
    if workspace_given:
        workspace = np.zeros(rows * q_heads * (D + 2) * MAX_SPLITS, np.float32)
        operands.append(workspace)
    kernel.call(module, function, operands)
    error = attention_error(expected, out, element)
    assert error <= ATTENTION_TOLERANCE[element], error
    if workspace_given:  # the split path ran: partial states were written
        assert cache.max_cache_length > KEYS_PER_SPLIT
        assert np.any(workspace != 0)


RUNNERS = {"store_ragged": run_ragged, "gather_ragged": run_ragged,
           "copy_pages": run_copy_pages, "attention_ragged": run_attention}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_ptx_test_function_runs_on_the_emulator(case, monkeypatch):
    name, function = case
    monkeypatch.setenv("KVCACHE_EMU_ORDER", ORDERS[case])
    kernel = Kernel(name, function)
    RUNNERS[kernel.op](kernel, emulated(name), function, rng_for(case))
