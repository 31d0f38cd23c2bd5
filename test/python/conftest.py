"""Sampling of the slowest tests under the sanitizers (sampling.py): with
KVCACHE_TEST_SAMPLE=N (8 there), every N-th parametrized case of each
sampled test function runs (the first one included) and the others are
deselected. Unsampled runs keep every case.

SAMPLED names the modules whose every parametrized function is sampled
(the emulator-heavy ones: quantized caches, attention clauses, query
tiles, emulator profiles, the softmax's rescale, MLA's blocks of 64
heads), and for the others the functions that are: cases that differ in
shapes, types or seeds, not in the code they reach. The cases of bad input
(a wrong argument, an error to raise) all run. test_attention_rope.py and
test_ptx_test_twins.py sample their cases themselves (sampling.py)."""

from sampling import SAMPLE

EVERY_FUNCTION = None
SAMPLED = {
    "test_attention_variants.py": EVERY_FUNCTION,
    "test_emulator_profile.py": EVERY_FUNCTION,
    "test_mla_attention.py": EVERY_FUNCTION,
    "test_prefill_tiles.py": EVERY_FUNCTION,
    "test_quantized.py": EVERY_FUNCTION,
    "test_scaled_caches.py": EVERY_FUNCTION,
    "test_softmax_rescale.py": EVERY_FUNCTION,
    "test_attention_decode.py": EVERY_FUNCTION,
    "test_attention_tiles.py": EVERY_FUNCTION,
    "test_decoder_layer.py": {"test_decoder_layer_matches_torch"},
    "test_example.py": {"test_cascade_attention_example_on_the_emulated_gpu"},
    "test_kernels.py": {"test_raw_storage_kernel_ops_match_the_reference",
                        "test_decode_step_matches_the_reference",
                        "test_mla_decode_step_matches_the_reference",
                        "test_cpu_attention_blocks_at_every_head_size"},
    "test_parallel.py": {"test_kernel_ops_do_not_depend_on_threads"},
    "test_rope.py": {"test_matches_reference_and_leaves_the_rest",
                     "test_meta_llama_interleaved", "test_hugging_face_half",
                     "test_emulated_gpu"},
    "test_torch_tensors.py": {
        "test_producers_are_written_in_place_as_numpy_arrays_are"},
}


def _sampled(item):
    functions = SAMPLED.get(item.path.name, ())
    return functions is EVERY_FUNCTION or item.originalname in functions


def pytest_collection_modifyitems(config, items):
    if SAMPLE == 1:
        return
    kept, deselected, seen = [], [], {}
    for item in items:
        if not _sampled(item):
            kept.append(item)
            continue
        key = (item.path.name, item.originalname)
        index = seen.get(key, 0)
        seen[key] = index + 1
        (kept if index % SAMPLE == 0 else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
