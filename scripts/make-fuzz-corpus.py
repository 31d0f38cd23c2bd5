#!/usr/bin/env python3
"""Writes the seed corpus of kvcache-fuzz: one file per `// -----` chunk of
every .mlir file under test/ and examples/, with comment lines (RUN, CHECK,
expected-error) removed. A chunk whose top level is functions (`func.func`
at column 0, closed by `}` at column 0) and the aliases they use is cut
further, one seed per function with every alias line of the chunk: each
input went through seven pipelines, PTX and emulated GPU included, and a
chunk of five kernels of 64 query heads took 23 s under the sanitizers,
past the fuzzer's limit per input then (10 s). The generated executed kernel tests
(test/Integration/CPU/kernel-*.mlir) are left out: their kernel ops are in
test/Conversion already, wrapped here in kilobytes of data set-up, and each
takes seconds through the pipelines, which a 60 s fuzzing run cannot afford.
So are the compile-time regression tests (test/Fuzz/*-compile-time.mlir):
their inputs are built to be the slowest the pipelines take (head 575 over a
GQA group of 128: about 6 s of the fuzzer's 10 s limit per input under the
sanitizers on the 2-core machine, over it when the machine is shared), and
their own lit tests bound that time.
The inputs under tools/kvcache-fuzz/regressions/ (each once found a crash,
see its first line) are seeds too, so that every run replays them.

    make-fuzz-corpus.py OUTPUT_DIR [SOURCE_ROOT]
"""

import os
import re
import sys

SPLIT = re.compile(r"^// -----\s*$", re.MULTILINE)
COMMENT_LINE = re.compile(r"^\s*//.*\n?", re.MULTILINE)
SKIPPED = re.compile(r"^test/Integration/CPU/kernel-|^test/Fuzz/.*-compile-time\.mlir$")
FUNCTION_START = re.compile(r"^func\.func ")
ALIAS_LINE = re.compile(r"^[!#][\w.$-]+ = ")


def split_functions(text):
    """The chunk's seeds: `text` itself, or one text per top-level function
    preceded by the chunk's alias lines when the chunk is only those."""
    aliases, bodies, current = [], [], None
    for line in text.splitlines():
        if current is not None:
            current.append(line)
            if line == "}":
                bodies.append("\n".join(current))
                current = None
        elif FUNCTION_START.match(line):
            current = [line]
        elif ALIAS_LINE.match(line):
            aliases.append(line)
        elif line.strip():
            return [text]
    if current is not None or len(bodies) < 2:
        return [text]
    return ["\n".join(aliases + [body]) for body in bodies]


def seeds(root):
    for top in ("test", "examples", "tools/kvcache-fuzz/regressions"):
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(".mlir"):
                    continue
                path = os.path.join(directory, name)
                if SKIPPED.match(os.path.relpath(path, root).replace(os.sep, "/")):
                    continue
                with open(path, encoding="utf-8") as f:
                    chunks = SPLIT.split(f.read())
                stem = os.path.relpath(path, root)[: -len(".mlir")]
                stem = stem.replace(os.sep, "_").replace("/", "_")
                for index, chunk in enumerate(chunks):
                    text = COMMENT_LINE.sub("", chunk).strip()
                    if not text:
                        continue
                    parts = split_functions(text)
                    if len(parts) == 1:
                        yield f"{stem}-{index}.mlir", text + "\n"
                        continue
                    for part, seed in enumerate(parts):
                        yield f"{stem}-{index}-{part}.mlir", seed + "\n"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    output = sys.argv[1]
    root = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    os.makedirs(output, exist_ok=True)
    count = 0
    for name, text in seeds(root):
        with open(os.path.join(output, name), "w", encoding="utf-8") as f:
            f.write(text)
        count += 1
    print(f"{count} seeds in {output}")


if __name__ == "__main__":
    main()
