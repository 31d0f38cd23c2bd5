#!/usr/bin/env python3
"""The kernel traffic of one rank of the head-sharded decoder layer
(examples/decoder_layer/decoder_layer_sharded.mlir), emulated.

The layer is partitioned for 1, 2 and 4 devices (inline,
sharding-propagation, shard-partition) and one rank's function is run on the
emulated GPU (kvcache.EmulatedGPUModule) with random inputs of its
partitioned types, the emulator's profile (KVCACHE_EMU_PROFILE) giving each
kernel launch's requested global loads and stores. The emulator has no MPI:
the all-reduces become the identity and the device index 0, which changes
the rows, not the kernels' traffic. A wrapper writes the rows into an
argument (Python calls take no returned tensors).

    PYTHONPATH=build/python /usr/bin/python3 bench/sharded_layer.py
"""

import json
import os
import re
import tempfile

import numpy as np

import kvcache

HERE = os.path.dirname(os.path.abspath(__file__))
LAYER = os.path.join(HERE, "..", "examples", "decoder_layer", "decoder_layer_sharded.mlir")
PARTITION = "builtin.module(inline,func.func(sharding-propagation,shard-partition))"


def rank_module(devices):
    """One rank's @layer for `devices` devices, without the shard ops, and
    @run(its arguments..., rows) writing its rows into `rows`."""
    with open(LAYER) as f:
        text = f.read().replace("shape = 2", f"shape = {devices}")
    text = kvcache.run_pipeline(text, PARTITION)
    text = re.sub(r"(%\w+) = shard\.all_reduce (%\w+) on @grid grid_axes = \[0\] : (\S+) -> (\S+)",
                  r"\1 = tensor.cast \2 : \3 to \4", text)
    text = re.sub(r"(%\w+) = shard\.process_multi_index on @grid axes = \[0\] : index",
                  r"\1 = arith.constant 0 : index", text)
    text = re.sub(r"(%\w+) = shard\.grid_shape @grid axes = \[0\] : index",
                  rf"\1 = arith.constant {devices} : index", text)
    assert "shard.all_reduce" not in text
    signature = re.search(r"func\.func @layer\((.*?)\) -> \((.*?)\)", text)
    types = re.findall(r"%arg\d+: ([^,]+)", signature.group(1))
    arguments = ", ".join(f"%a{i}" for i in range(len(types)))
    declared = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    wrapper = f"""
  func.func @run({declared}, %rows: memref<5x32xf32>) {{
    %y, %blocks = func.call @layer({arguments}) : ({", ".join(types)}) -> ({signature.group(2)})
    bufferization.materialize_in_destination %y in restrict writable %rows
        : (tensor<5x32xf32>, memref<5x32xf32>) -> ()
    return
  }}
}}"""
    text = text.rstrip()
    return text[:-1] + wrapper, types


def random_argument(rng, type_text):
    """Random f32 data for a tensor type, the layer's metadata for the i32 ones."""
    if type_text == "i32":
        return None
    shape = [int(d) for d in re.match(r"tensor<([\dx]+)x[fi]32>", type_text).group(1).split("x")]
    return rng.uniform(-1, 1, shape).astype(np.float32)


def profile(devices):
    text, types = rank_module(devices)
    module = kvcache.EmulatedGPUModule(text)
    rng = np.random.default_rng(38)
    arguments = [random_argument(rng, t) for t in types]
    # Cached tokens 3 and 0, new rows 2 and 3, pages [2, 0] and [1, 3].
    arguments[1:5] = [np.array([3, 0], np.int32), np.array([[2, 0], [1, 3]], np.int32), 3, 5]
    arguments[6] = np.array([0, 2, 5], np.int32)
    path = os.path.join(tempfile.mkdtemp(), "profile.jsonl")
    os.environ["KVCACHE_EMU_PROFILE"] = path
    try:
        module.run(*arguments, np.zeros((5, 32), np.float32))
    finally:
        del os.environ["KVCACHE_EMU_PROFILE"]
    with open(path) as f:
        return [json.loads(line) for line in f]


def main():
    rows = {}
    for devices in (1, 2, 4):
        for launch in profile(devices):
            kernel = launch["kernel"].removeprefix("layer_")
            rows.setdefault(kernel, {})[devices] = (launch["global_load_bytes"],
                                                   launch["global_store_bytes"])
    print("| kernel | loads 1 / 2 / 4 ranks (B) | stores 1 / 2 / 4 ranks (B) |")
    print("| --- | --- | --- |")
    for kernel, by_devices in rows.items():
        loads = " / ".join(str(by_devices[n][0]) for n in (1, 2, 4))
        stores = " / ".join(str(by_devices[n][1]) for n in (1, 2, 4))
        print(f"| {kernel} | {loads} | {stores} |")


if __name__ == "__main__":
    main()
