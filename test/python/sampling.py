"""Subsampling of the slowest parametrized tests, for the sanitizer stage.

scripts/sanitize.sh runs the lit suite, this pytest suite included, on an
ASan + UBSan build, where the emulator runs ~10x slower. It sets
KVCACHE_TEST_SAMPLE=N (passed through by test/lit.cfg.py): the random
configurations and the PTX-test twins then run every N-th case (each stage
of scripts/test.sh still runs every case once: stage 1 unsampled). Unset or
1: every case.
"""

import os

SAMPLE = max(int(os.environ.get("KVCACHE_TEST_SAMPLE", "1") or 1), 1)


def sample(cases):
    """Every SAMPLE-th element of `cases` (a list), the first one included."""
    return list(cases)[::SAMPLE]
