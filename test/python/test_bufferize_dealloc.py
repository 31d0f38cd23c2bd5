"""kvcache-bufferize frees the buffers bufferization allocates: a
tensor-level function with a 4 MiB intermediate value, called 30 times,
leaves the resident memory of the process where it was (it grew by 120 MiB
before), on the CPU and on the GPU emulator with the intermediate in device
memory (linalg-to-gpu: gpu.alloc, freed with gpu.dealloc)."""

import numpy as np
import pytest

pytest.importorskip("kvcache._kvcache")

import kvcache  # noqa: E402

IR = """
func.func @thrice(%a: tensor<?xf32>, %out: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %empty = tensor.empty(%n) : tensor<?xf32>
  %twice = linalg.add ins(%a, %a : tensor<?xf32>, tensor<?xf32>)
                      outs(%empty : tensor<?xf32>) -> tensor<?xf32>
  %thrice = linalg.add ins(%twice, %a : tensor<?xf32>, tensor<?xf32>)
                       outs(%out : tensor<?xf32>) -> tensor<?xf32>
  return %thrice : tensor<?xf32>
}
"""
ELEMENTS = 1 << 20  # the intermediate: 4 MiB
CALLS = 30
MIB = 1 << 20
TARGETS = {
    "cpu": lambda: kvcache.CPUModule(IR, threads=1),
    "emulated-gpu-linalg":
        lambda: kvcache.EmulatedGPUModule(IR, linalg_to_gpu=True),
}


def resident_bytes():
    """The resident memory of this process (VmRSS)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    pytest.skip("no VmRSS in /proc/self/status")


def under_address_sanitizer():
    """Whether AddressSanitizer's runtime is loaded (scripts/sanitize.sh): its
    quarantine keeps freed memory resident, so resident memory says nothing
    about leaks there."""
    with open("/proc/self/maps") as maps:
        return "libclang_rt.asan" in maps.read()


@pytest.mark.parametrize("target", TARGETS)
def test_repeated_calls_do_not_grow_memory(target):
    if under_address_sanitizer():
        pytest.skip("AddressSanitizer's quarantine keeps freed memory "
                    "resident")
    module = TARGETS[target]()
    a = np.arange(ELEMENTS, dtype=np.float32) % 1000
    out = np.zeros_like(a)
    # The first calls settle the allocator (and the emulator's state).
    for _ in range(3):
        module.call("thrice", a, out)
    np.testing.assert_array_equal(out, 3 * a)
    before = resident_bytes()
    for _ in range(CALLS):
        module.call("thrice", a, out)
    grown = resident_bytes() - before
    np.testing.assert_array_equal(out, 3 * a)
    # Leaked, the intermediates would add CALLS * 4 MiB = 120 MiB.
    assert grown < 16 * MIB, f"resident memory grew by {grown / MIB:.1f} MiB"
