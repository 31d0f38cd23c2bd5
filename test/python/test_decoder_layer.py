"""examples/decoder_layer: the whole decoder layer on tensors (linalg and the
kernel ops) against the same layer in PyTorch, whose K/V grow like Hugging
Face's past_key_values: a prefill of 2 sequences of different lengths, then
4 decode steps, on the CPU, on the GPU emulator, and on the emulator with
the linalg ops as GPU kernels too (linalg-to-gpu); one module per target,
compiled once."""

import importlib.util
import os

import pytest

pytest.importorskip("kvcache._kvcache")

RUN = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                   "decoder_layer", "run.py")
_spec = importlib.util.spec_from_file_location("decoder_layer_run", RUN)
layer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layer)

SIZES = layer.Sizes(kv_heads=2, head_size=32, group=4, mlp=128, page_size=16)
PROMPTS = [11, 20]
STEPS = 4
TARGETS = {"cpu": {}, "emulated-gpu": {"gpu": True},
           "emulated-gpu-linalg": {"gpu": True, "linalg_to_gpu": True}}
_modules = {}


def compiled(target):
    """The layer compiled for `target` (once per test run)."""
    if target not in _modules:
        _modules[target] = layer.compile_layer(SIZES, **TARGETS[target])
    return _modules[target]


@pytest.mark.parametrize("target", TARGETS)
def test_decoder_layer_matches_torch(target):
    run = layer.Run(compiled(target), SIZES, PROMPTS, STEPS)
    errors = run.run(STEPS, report=lambda _: None)
    assert len(errors) == STEPS + 1
    # The longer prompt's tokens fill its first page: positions and
    # attention cross a page boundary.
    assert max(PROMPTS) > SIZES.page_size


@pytest.mark.parametrize("target", ["cpu", "emulated-gpu"])
def test_decoder_layer_reads_the_cache(target):
    # Decode steps read the earlier tokens from the paged cache: with the
    # cache wiped after the prefill, the next step no longer matches.
    run = layer.Run(compiled(target), SIZES, PROMPTS, STEPS)
    run.step(dict(zip(run.sequences, PROMPTS)))
    run.blocks.zero_()
    error, largest = run.step(dict.fromkeys(run.sequences, 1))
    assert error > 0.1 * largest


def test_instantiate_rewrites_the_sizes():
    text = layer.instantiate(layer.Sizes(kv_heads=8, head_size=128, group=4))
    assert "!q_heads = tensor<?x32x128xbf16>" in text
    assert "head_size = 128, page_size = 16" in text
    assert f"scale = {1 / 128 ** 0.5!r} : f32" in text
