"""The Python examples of docs/Python.md run as written: its `python`
code blocks, in order, in one namespace (a block may use what an earlier
one defined, as a reader pasting them would), on the CPU and the GPU
emulator. Their assertions compare the compiled kernels with the numpy
reference; an exception fails the test at the block's line in the doc."""

import pathlib
import re

import pytest

pytest.importorskip("kvcache._kvcache")

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "Python.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_python_doc_examples_run():
    text = DOC.read_text(encoding="utf-8")
    blocks = list(BLOCK.finditer(text))
    assert len(blocks) >= 4, "docs/Python.md lost its examples"
    namespace = {}
    for block in blocks:
        # Padded with the lines above it, so a traceback names the doc's line.
        line = text.count("\n", 0, block.start(1))
        exec(compile("\n" * line + block.group(1), str(DOC), "exec"), namespace)
