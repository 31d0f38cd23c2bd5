"""Run by install-consumer.test on the installed package (PYTHONPATH naming
only <prefix>/lib/python3/dist-packages): says where kvcache, its extension
and the GPU emulator runtime were found, then stores rows with a kernel op
compiled for this CPU and compares the cache with the package's numpy
reference, bit for bit."""

import os
import sys

import numpy as np

import kvcache
from kvcache import builders, emulator, testing

package = os.path.dirname(os.path.abspath(kvcache.__file__))
prefix = os.path.abspath(sys.argv[1])
print("package under prefix:", package.startswith(prefix + os.sep))
print("extension next to it:",
      os.path.dirname(os.path.abspath(kvcache._kvcache.__file__)) == package)
print("emulator runtime next to it:",
      os.path.dirname(emulator.find_emulator_library()) == package)

config = kvcache.CacheConfig("f16", 2, 8, 4)
cache = testing.random_cache(config, [5, 2], [3, 1], rng=0)
new = np.random.default_rng(1).uniform(-1, 1, (4, 2, 8)).astype(np.float16)
offsets = np.array([0, 3, 4], np.int32)
expected = cache.key_cache(1).store_ragged(new, offsets).blocks
cpu = kvcache.CPUModule(builders.store_ragged(config), threads=1)
cpu.store_ragged(*cache.arguments(), 1, new, offsets)
print("store_ragged matches the reference:",
      np.array_equal(cache.blocks, expected))
