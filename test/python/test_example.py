"""examples/python_decode_step.py, the newcomer's first run, keeps working."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("kvcache._kvcache")

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                       "python_decode_step.py")


def test_python_decode_step_example(tmp_path):
    ptx = tmp_path / "step.ptx"
    run = subprocess.run([sys.executable, EXAMPLE, "--ptx", str(ptx)],
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "K/V stored as the reference" in run.stdout
    assert "decode_step_attention_ragged (78 parameters)" in run.stdout
    assert ".visible .entry decode_step_attention_merge" in ptx.read_text()
