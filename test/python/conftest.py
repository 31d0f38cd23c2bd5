"""Sampling of the emulator-heavy tests (quantized caches, attention
clauses, query tiles, emulator profiles, the softmax's rescale, MLA's blocks
of 64 heads, the rope clause on q) under the
sanitizers (sampling.py): with KVCACHE_TEST_SAMPLE=N (8 there), every N-th parametrized case of
each test function in SAMPLED_MODULES runs (the first one included) and
the others are deselected. Unsampled runs keep every case."""

from sampling import SAMPLE

SAMPLED_MODULES = {"test_attention_rope.py", "test_attention_variants.py",
                   "test_emulator_profile.py", "test_mla_attention.py",
                   "test_prefill_tiles.py", "test_quantized.py",
                   "test_scaled_caches.py", "test_softmax_rescale.py"}


def pytest_collection_modifyitems(config, items):
    if SAMPLE == 1:
        return
    kept, deselected, seen = [], [], {}
    for item in items:
        if item.path.name not in SAMPLED_MODULES:
            kept.append(item)
            continue
        key = (item.path.name, item.originalname)
        index = seen.get(key, 0)
        seen[key] = index + 1
        (kept if index % SAMPLE == 0 else deselected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
