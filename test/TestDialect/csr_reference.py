#!/usr/bin/env python3
# ===- csr_reference.py - numpy model of the kernel ops on a CSR cache ----=== #
#
# Part of the kvcache-mlir project.
#
# The reference of the CSR execution tests (generate_csr_tests.py): the numpy
# model of the kernel ops of ../Integration/CPU/kernel_reference.py, whose
# cache model is given the CSR page table of the test_kv dialect (test/lib)
# in place of a lookup table. Written from the layout alone, without compiler
# code:
#
#   token t of sequence b lives at
#   blocks[kv_indices[kv_indptr[b] + t floordiv page_size], kv, l, t mod page_size, h, d]
#
#   kvcache-opt test.mlir -kvcache-to-cpu | mlir-runner ... \
#     | python3 csr_reference.py test.mlir
#
# The test's REFERENCE line holds kernel_reference.py's keys with
# "kv_indptr" ([batch + 1]) and "kv_indices" instead of "lookup_table"; a
# step may carry its own "kv_indices" (a collection built with another page
# list, e.g. pointing at copied pages). Records, tolerances and output are
# kernel_reference.py's.
#
# ===----------------------------------------------------------------------=== #

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "Integration", "CPU"))
import kernel_reference  # noqa: E402
from reference import Failure, PagedCacheModel  # noqa: E402


class CSRCacheModel(PagedCacheModel):
    """PagedCacheModel (blocks, fill, layout) addressed through kv_indptr
    and kv_indices."""

    def __init__(self, config):
        batch = len(config["cache_lengths"])
        if batch == 0:
            raise Failure("the CSR tests need at least one sequence")
        # The paged model validates a lookup table that this model never
        # reads: a one-column table of page 0.
        super().__init__(dict(config, lookup_table=[[0]] * batch))
        self.kv_indptr = [int(x) for x in config["kv_indptr"]]
        self.kv_indices = [int(x) for x in config["kv_indices"]]
        if len(self.kv_indptr) != batch + 1:
            raise Failure("kv_indptr must have batch + 1 entries")
        if any(a > b for a, b in zip(self.kv_indptr, self.kv_indptr[1:])):
            raise Failure("kv_indptr is not monotonic")
        if self.kv_indptr[-1] > len(self.kv_indices):
            raise Failure("kv_indptr points past kv_indices")
        if any(not 0 <= p < self.shape[0] for p in self.kv_indices):
            raise Failure("a kv_indices entry is not a page")

    def address(self, b, t):
        if not 0 <= b < len(self.kv_indptr) - 1:
            raise Failure(f"batch {b} is not a sequence")
        first, end = self.kv_indptr[b], self.kv_indptr[b + 1]
        logical = t // self.page_size
        if not 0 <= logical < end - first:
            raise Failure(f"token {t} of sequence {b} is past its pages")
        return self.kv_indices[first + logical], t % self.page_size


def run_steps_with_indices():
    """KernelModel.apply with a step's kv_indices swapped in for that step."""
    apply = kernel_reference.KernelModel.apply

    def apply_with_indices(self, index, step):
        saved = self.cache.kv_indices
        if "kv_indices" in step:
            self.cache.kv_indices = [int(x) for x in step["kv_indices"]]
            if any(not 0 <= p < self.cache.shape[0] for p in self.cache.kv_indices):
                raise Failure(f"step {index}: a kv_indices entry is not a page")
        try:
            apply(self, index, step)
        finally:
            self.cache.kv_indices = saved

    kernel_reference.KernelModel.apply = apply_with_indices


if __name__ == "__main__":
    kernel_reference.PagedCacheModel = CSRCacheModel
    run_steps_with_indices()
    sys.exit(kernel_reference.main())
