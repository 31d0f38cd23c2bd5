"""Paths of the kvcache command-line tools the tests run."""

import os
import shutil


def find_tool(name):
    """Path of tool `name` (kvcache-opt, kvcache-compile): in $KVCACHE_BIN
    when set, else the source tree's build/bin, else on PATH; None when
    there is none."""
    bin_dir = os.environ.get("KVCACHE_BIN")
    candidates = [os.path.join(bin_dir, name)] if bin_dir else []
    candidates.append(os.path.join(os.path.dirname(__file__), "..", "..",
                                   "build", "bin", name))
    for path in candidates:
        if os.path.exists(path):
            return path
    return shutil.which(name)
