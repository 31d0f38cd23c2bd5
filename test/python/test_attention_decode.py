"""attention_ragged's decode kernel on the CPU (docs/Design.md, "CPU
attention"), against kvcache.reference: rows whose tile has fewer than 16
lanes (rows x the GQA group's heads) run one pass per row and up to 8 heads
of a group over the keys in blocks of 16, the group's heads the rows of one
micro-kernel. Decode rows (and short tiles) of MHA and GQA 2, 4 and 8,
pages of 1 and 16, contexts from 1 to ~3000 keys (blocks cut by the
row's end: 1, 15, 16, 17 keys), f32, f16 and bf16, every clause (window,
chunk, noncausal, sinks, lse, alibi, softcap), head sizes of 16, 32 and 128
and a scale large enough that the online softmax's rescale between blocks
matters; quantized caches and head sizes the kernel does not take go
through the per-row loop's KeyPass; every core against one thread; tasks
of whole sequences (every KV head) for decode batches of at least 4
sequences per thread, bit for bit the same as one KV head per task; the
scores' sweeps of the head row for 1, 2, 4 and 8 heads per pass and the
per-head trees for 3; a bf16 cache's q . K by AVX512-BF16's dot products
(cpu_features "host" on a CPU that has them) and without them ("")."""

import functools

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402
from kvcache import builders, reference, testing  # noqa: E402
import attention_checks as checks  # noqa: E402
from attention_checks import CLAUSES, assert_close  # noqa: E402


def attend(config, cached, new, rng, clauses=(), scale=2.0, threads=None,
           cpu_features="host"):
    return checks.attend(config, cached, new, rng, clauses, scale, threads,
                         cpu_features)


config_of = functools.partial(checks.config_of, head_size=32)


# (page size, KV heads, query heads): MHA, GQA 2, 4 and 8 (8 x 2 lanes
# of a decode row: still the decode kernel).
SHAPES = [(1, 2, 2), (16, 2, 4), (16, 2, 8), (1, 1, 8)]


@pytest.mark.parametrize("page_size, num_heads, q_heads", SHAPES)
def test_decode_rows(page_size, num_heads, q_heads):
    # Contexts of 1 to 3000 keys: a block cut after 1, 15 and 16 keys, one
    # full block and one more key, and long contexts; a sequence of 3 rows
    # (fewer than 16 lanes at GQA 2, 4: each row one pass).
    rng = np.random.default_rng(page_size + 7 * q_heads)
    config = config_of("f32", page_size, num_heads, q_heads)
    cached = [0, 14, 15, 16, 300, 2999, 1200]
    new = [1, 1, 1, 1, 1, 1, 3 if q_heads < 8 else 1]
    assert_close(*attend(config, cached, new, rng), "f32")


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_decode_in_f16_and_bf16(dtype):
    rng = np.random.default_rng(len(dtype))
    config = config_of(dtype, 16, 2, 8, head_size=128)
    assert_close(*attend(config, [0, 70, 1000], [1, 1, 1], rng, scale=0.3), dtype)


@pytest.mark.parametrize("head_size", [16, 128])
def test_decode_head_sizes(head_size):
    # One chunk of 16 (the tree's partial sums one product each) and 8.
    rng = np.random.default_rng(head_size)
    config = config_of("f32", 16, 2, 8, head_size=head_size)
    assert_close(*attend(config, [33, 200], [1, 1], rng, scale=4.0 / head_size ** 0.5),
                 "f32")


def test_growing_and_falling_scores():
    # Every key's score above the last (a new max each block: each block
    # rescales what came before), then every key's below.
    rng = np.random.default_rng(5)
    config = config_of("f32", 16, 1, 4)
    cache = testing.random_cache(config, [100, 100], [1, 1], rng)
    q = np.ones((2, 4, 32), np.float32)
    for b, sign in ((0, 1), (1, -1)):
        for token in range(100):
            # K rows of one constant (q . k = 32 x level: scores from -25 to
            # 25 in natural units), V rows random.
            page, slot = cache.lookup(b, token)
            cache.blocks[page, 0, 1, slot] = sign * (token - 50) / 8.0
    offsets = testing.row_offsets([1, 1])
    ir = builders.attention_ragged(config, "attention", scale=0.125, lse=True)
    out = np.zeros_like(q)
    lse = np.zeros((2, 4), np.float32)
    expected = reference.attention_ragged(q, cache.key_cache(1), cache.value_cache(1),
                                          offsets, np.zeros_like(q), 0.125,
                                          lse=np.zeros_like(lse))
    kvcache.CPUModule(ir).attention(*cache.arguments(), 1, q, offsets, out, lse)
    assert_close((out, lse), expected, "f32")


@pytest.mark.parametrize("clauses", CLAUSES, ids=lambda c: "-".join(c))
def test_decode_clauses(clauses):
    # Windows and chunks whose start is inside a block, a noncausal
    # sequence with nothing cached (lse -inf, out 0 without a sink).
    got, expected = attend(config_of("f32", 16, 2, 8), [0, 37, 130], [1, 1, 1],
                           np.random.default_rng(CLAUSES.index(clauses)), clauses,
                           scale=0.7)
    assert_close(got, expected, "f32")


@pytest.mark.parametrize("dtype, scales, head_size", [
    ("i8", "token_head", 32), ("f8E4M3FN", "block<8>", 32), ("f8E5M2", "tensor", 32),
    ("f8E4M3FN", "token_head", 24)])
def test_quantized_decode(dtype, scales, head_size):
    # One scale per head row (token_head, tensor): the decode kernel, the
    # scales folded into the block's scores and weights; block<8>, and
    # token_head at head 24 (not a multiple of 16): the per-row loop's
    # KeyPass (a token_head scale folded into the scores and weights).
    rng = np.random.default_rng(len(dtype + scales))
    config = config_of(dtype, 16, 2, 8, head_size=head_size, scales=scales,
                       rows_dtype="f32")
    assert_close(*attend(config, [9, 300], [1, 1], rng, scale=0.5), "f32")


def test_head_size_for_the_key_pass():
    # Head 24 is not a multiple of 16: the per-row loop's KeyPass.
    rng = np.random.default_rng(24)
    config = config_of("f32", 16, 2, 8, head_size=24)
    assert_close(*attend(config, [5, 100], [1, 1], rng), "f32")


def test_decode_results_do_not_depend_on_threads():
    checks.assert_same_on_every_core(config_of("bf16", 16, 2, 8), [500, 17], [1, 1])


# Tasks of whole sequences (AttentionToSCF.cpp): with at least 4 sequences
# per thread and decode rows only, a task takes every KV head of its
# sequence, the KV heads in turn per block of keys. 9 sequences: 2 threads
# take that form, 8 threads one task per KV head; the two give the same
# bits (each head's keys in the same order) and match the reference.
# (dtype, page size, KV heads, query heads, head size): GQA 4 at head 128,
# MHA on pages of 1 (no tiles: a lookup per key), GQA 2 with 8 KV heads.
WHOLE_SEQUENCES = [("bf16", 16, 4, 16, 128), ("f32", 1, 3, 3, 32),
                   ("f16", 16, 8, 16, 64)]
WHOLE_CACHED = [0, 14, 15, 16, 17, 300, 1000, 31, 2]
WHOLE_NEW = [1, 1, 1, 1, 1, 1, 1, 1, 3]


@pytest.mark.parametrize("dtype, page_size, num_heads, q_heads, head_size",
                         WHOLE_SEQUENCES)
def test_tasks_of_whole_sequences(dtype, page_size, num_heads, q_heads, head_size):
    config = config_of(dtype, page_size, num_heads, q_heads, head_size=head_size)
    whole, expected = attend(config, WHOLE_CACHED, WHOLE_NEW,
                             np.random.default_rng(q_heads), scale=0.4, threads=2)
    assert_close(whole, expected, dtype)
    per_head, _ = attend(config, WHOLE_CACHED, WHOLE_NEW,
                         np.random.default_rng(q_heads), scale=0.4, threads=8)
    for got, other in zip(whole, per_head):
        np.testing.assert_array_equal(got, other)


@pytest.mark.parametrize("clauses", CLAUSES[::3], ids=lambda c: "-".join(c))
def test_whole_sequence_clauses(clauses):
    got, expected = attend(config_of("f32", 16, 2, 8), WHOLE_CACHED, WHOLE_NEW,
                           np.random.default_rng(3 * CLAUSES.index(clauses)),
                           clauses, scale=0.7, threads=2)
    assert_close(got, expected, "f32")


# The decode kernel's scores (AttentionDecodeToSCF.cpp): a power-of-two
# number of heads per pass takes the head row in sweeps whose q chunks fill
# at most 16 vectors (4 sweeps of 32 elements at 8 heads and head 128; 256
# then 16 elements for one head of 272; one sweep of 96 for 2 heads), the
# heads' partial sums halved together per key and the keys in groups of
# 16 / heads; 3 heads per pass (GQA 3) keep one tree per head.
SWEEPS = [("bf16", 16, 1, 8, 128), ("f32", 16, 2, 2, 272), ("f16", 1, 2, 4, 96),
          ("f32", 16, 2, 6, 32)]


@pytest.mark.parametrize("dtype, page_size, num_heads, q_heads, head_size", SWEEPS)
def test_decode_sweeps(dtype, page_size, num_heads, q_heads, head_size):
    config = config_of(dtype, page_size, num_heads, q_heads, head_size=head_size)
    got, expected = attend(config, WHOLE_CACHED, WHOLE_NEW,
                           np.random.default_rng(head_size + q_heads),
                           scale=2.0 / head_size ** 0.5)
    assert_close(got, expected, dtype)


HOST_BF16 = "avx512bf16" in kvcache.cpu.host_cpu_features()

# (page size, KV heads, query heads, head size): GQA 4 at head 128 (tasks
# of whole sequences), pages of 1 (a lookup per key), one head per pass,
# 8 heads per pass at head 256, head 96 (3 pieces of 32); head 48 and 3
# heads per pass do not take the dot products (a head not a multiple of 32
# elements, not a power of two heads per pass).
BF16_DOTS = [(16, 4, 16, 128, True), (1, 2, 8, 64, True), (16, 2, 2, 32, True),
             (16, 1, 8, 256, True), (16, 2, 4, 96, True), (16, 2, 4, 48, False),
             (16, 2, 6, 64, False)]


@pytest.mark.parametrize("features", ["", "host"])
@pytest.mark.parametrize("page_size, num_heads, q_heads, head_size, dots", BF16_DOTS)
def test_bf16_dot_products(features, page_size, num_heads, q_heads, head_size, dots):
    if features == "host" and not HOST_BF16:
        pytest.skip("this CPU has no AVX512-BF16")
    config = config_of("bf16", page_size, num_heads, q_heads, head_size=head_size)
    ir = builders.attention_ragged(config, "attention", scale=0.3)
    lowered = str(kvcache.lower_to_cpu(ir, cpu_features=features))
    assert ("avx512bf16.dpbf16ps" in lowered) == (dots and features == "host")
    got, expected = attend(config, WHOLE_CACHED, WHOLE_NEW,
                           np.random.default_rng(head_size + q_heads),
                           scale=3.0 / head_size ** 0.5, threads=2,
                           cpu_features=features)
    assert_close(got, expected, "bf16")


@pytest.mark.skipif(not HOST_BF16, reason="this CPU has no AVX512-BF16")
@pytest.mark.parametrize("clauses", CLAUSES[::2], ids=lambda c: "-".join(c))
def test_bf16_dot_product_clauses(clauses):
    # The scale applied to the dot products (q stays as stored): soft cap,
    # ALiBi and the sinks see the same scores as with q scaled.
    got, expected = attend(config_of("bf16", 16, 2, 8, head_size=64), WHOLE_CACHED,
                           WHOLE_NEW, np.random.default_rng(CLAUSES.index(clauses)),
                           clauses, scale=0.2, threads=2, cpu_features="+avx512bf16")
    assert_close(got, expected, "bf16")


def test_cpu_features_errors():
    ir = builders.attention_ragged(config_of("bf16", 16, 2, 8), "attention")
    with pytest.raises(kvcache.CompileError, match="cpu-features takes 'host' or "
                       "LLVM feature names each with"):
        kvcache.lower_to_cpu(ir, cpu_features="avx512bf16")
    with pytest.raises(ValueError, match="cpu_features must be a string"):
        kvcache.lower_to_cpu(ir, cpu_features="+avx512bf16 +avx512f")
    with pytest.raises(ValueError, match="cpu_features must be a string"):
        kvcache.CPUModule(ir, cpu_features=None)
    # A feature this CPU lacks: an error, not a JIT that stops the process.
    with pytest.raises(ValueError, match="names nosuchfeature, which this CPU "
                       "does not have"):
        kvcache.CPUModule(ir, cpu_features="+avx2,+nosuchfeature")


def test_host_cpu_features():
    features = kvcache.cpu.host_cpu_features()
    assert features == sorted(features) and all(
        isinstance(name, str) and name[:1] not in "+-" for name in features)
    # Each one may be named: the module compiles and runs.
    if features:
        config = config_of("f32", 16, 2, 8)
        got, expected = attend(config, [40], [1], np.random.default_rng(2),
                               cpu_features=",".join("+" + f for f in features[:3]))
        assert_close(got, expected, "f32")


# (dtype, scales, page size, KV heads, query heads, head size): quantized
# caches with one scale per head row on the decode kernel. E4M3FN codes
# decode to their value / 2^8 (the 2^8 goes into the scales), E5M2 and i8
# to their value; GQA 4 at head 128 (tasks of whole sequences on 2
# threads), pages of 1 (a lookup per key), a per-layer scale.
QUANTIZED_BLOCKS = [("f8E4M3FN", "token_head", 16, 2, 8, 128),
                    ("f8E4M3FN", "token_head", 1, 2, 8, 64),
                    ("f8E5M2", "token_head", 16, 4, 16, 64),
                    ("i8", "token_head", 16, 1, 4, 32),
                    ("f8E4M3FN", "tensor", 16, 2, 8, 64)]


@pytest.mark.parametrize("dtype, scales, page_size, num_heads, q_heads, head_size",
                         QUANTIZED_BLOCKS)
def test_quantized_decode_blocks(dtype, scales, page_size, num_heads, q_heads,
                                 head_size):
    config = config_of(dtype, page_size, num_heads, q_heads, head_size=head_size,
                       scales=scales, rows_dtype="bf16")
    ir = builders.attention_ragged(config, "attention", scale=0.3)
    lowered = str(kvcache.lower_to_cpu(ir))
    # Pages of 16: blocks are tiles, loaded a block ahead.
    assert ("llvm.inline_asm" in lowered) == (page_size == 16)
    whole, expected = attend(config, WHOLE_CACHED, WHOLE_NEW,
                             np.random.default_rng(head_size + q_heads),
                             scale=2.0 / head_size ** 0.5, threads=2)
    assert_close(whole, expected, "bf16")
    per_head, _ = attend(config, WHOLE_CACHED, WHOLE_NEW,
                         np.random.default_rng(head_size + q_heads),
                         scale=2.0 / head_size ** 0.5, threads=8)
    for got, other in zip(whole, per_head):
        np.testing.assert_array_equal(got, other)


@pytest.mark.parametrize("clauses", CLAUSES[1::3], ids=lambda c: "-".join(c))
def test_quantized_decode_block_clauses(clauses):
    config = config_of("f8E4M3FN", 16, 2, 8, head_size=64, scales="token_head",
                       rows_dtype="f32")
    got, expected = attend(config, WHOLE_CACHED, WHOLE_NEW,
                           np.random.default_rng(CLAUSES.index(clauses)), clauses,
                           scale=0.6, threads=2)
    assert_close(got, expected, "f32")
