"""The Python examples keep working: examples/python_decode_step.py (the
newcomer's first run) and examples/cascade_attention.py (a shared prefix
attended once and merged, equal to plain attention)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("kvcache._kvcache")

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
EXAMPLE = os.path.join(EXAMPLES, "python_decode_step.py")


def test_python_decode_step_example(tmp_path):
    ptx = tmp_path / "step.ptx"
    run = subprocess.run([sys.executable, EXAMPLE, "--ptx", str(ptx)],
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "K/V stored as the reference" in run.stdout
    assert "decode_step_attention_ragged (78 parameters)" in run.stdout
    assert ".visible .entry decode_step_attention_merge" in ptx.read_text()


def test_cascade_attention_example():
    # A small batch (3 sequences, a 256-token prefix) keeps it to a second.
    run = subprocess.run([sys.executable, os.path.join(EXAMPLES, "cascade_attention.py"),
                          "--batch", "3", "--prefix", "256"],
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "cascade == plain attention over prefix + suffix" in run.stdout
    assert "K/V bytes read: cascade" in run.stdout


@pytest.mark.parametrize("batch, reads", [
    ("4", "1 time(s) for 4 rows (query tiles"),
    ("2", "2 time(s) for 2 rows (a block per row"),
])
def test_cascade_attention_example_on_the_emulated_gpu(batch, reads):
    # The same step as GPU kernels (noncausal + lse, causal + lse,
    # merge_states) on the emulator; the script checks the bytes the kernels
    # copied: with 4 rows (one mma tile at GQA 4) the prefix once, in one
    # query tile; with 2, once per row.
    run = subprocess.run([sys.executable, os.path.join(EXAMPLES, "cascade_attention.py"),
                          "--batch", batch, "--prefix", "128", "--emulated-gpu"],
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "kvcache-to-emulated-gpu" in run.stdout
    assert "cascade == plain attention over prefix + suffix" in run.stdout
    assert "K/V bytes the GPU kernels copied (emulator profile)" in run.stdout
    assert f"the prefix step copied the prefix {reads}" in run.stdout
