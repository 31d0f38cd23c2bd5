"""examples/decoder_layer: the whole decoder layer on tensors (linalg and the
kernel ops) against the same layer in PyTorch, whose K/V grow like Hugging
Face's past_key_values: a prefill of 2 sequences of different lengths, then
4 decode steps, on the CPU and on the GPU emulator (one module per target,
compiled once)."""

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


@pytest.fixture(scope="module", params=["cpu", "emulated-gpu"])
def module(request):
    return layer.compile_layer(SIZES, gpu=request.param == "emulated-gpu")


def test_decoder_layer_matches_torch(module):
    errors = layer.Run(module, SIZES, PROMPTS, STEPS).run(STEPS,
                                                          report=lambda _: None)
    assert len(errors) == STEPS + 1
    # The prompts' second page is reached: positions past one page, and
    # the cache holds every token the reference's past_key_values hold.
    assert max(PROMPTS) + STEPS > SIZES.page_size


def test_decoder_layer_reads_the_cache(module):
    # Decode steps read the earlier tokens from the paged cache: with the
    # cache wiped after the prefill, the next step no longer matches.
    run = layer.Run(module, SIZES, PROMPTS, STEPS)
    run.step(dict(zip(run.sequences, PROMPTS)))
    run.blocks.zero_()
    error, largest = run.step(dict.fromkeys(run.sequences, 1))
    assert error > 0.1 * largest


def test_instantiate_rewrites_the_sizes():
    text = layer.instantiate(layer.Sizes(kv_heads=8, head_size=128, group=4))
    assert "!q_heads = tensor<?x32x128xbf16>" in text
    assert "head_size = 128, page_size = 16" in text
    assert f"scale = {1 / 128 ** 0.5!r} : f32" in text
