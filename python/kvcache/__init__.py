"""kvcache-mlir from Python.

So far: `kvcache.abi`, which packs the launch arguments of kernels that take
`!kvcache.paged_cache` / `!kvcache.paged_collection` values (SPEC section 6),
for cupy's RawKernel or the CUDA driver API.
"""

from . import abi  # noqa: F401
