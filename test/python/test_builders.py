"""kvcache.config and kvcache.builders without the compiler: CacheConfig's
checks, the type texts of both collection kinds, and the IR text the
builders produce (what the compiler accepts is checked in test_compiler.py
and test_kernels.py)."""

import re

import pytest

from kvcache import CacheConfig, builders
from kvcache.config import parse_type

PAGED = CacheConfig("f16", 8, 128, 16, q_heads=32)
CONTINUOUS = CacheConfig("bf16", 2, 64, num_layers=3, kind="continuous",
                         block_tokens=4096)
CONTINUOUS_DYNAMIC = CacheConfig("f32", 1, 8, kind="continuous", mla=True,
                                 assert_write_mode=1)


def test_paged_is_the_default_with_page_size_16():
    config = CacheConfig()
    assert (config.kind, config.page_size, config.block_tokens) == ("paged", 16, None)
    assert CacheConfig("f16", 8, 128, 16) == config
    assert config.has_pages and config.lookup_table_rank == 2


def test_continuous_config():
    assert not CONTINUOUS.has_pages
    assert CONTINUOUS.page_size is None
    assert CONTINUOUS.lookup_table_rank == 1
    assert CONTINUOUS.type_parameters() == "bf16, num_heads = 2, head_size = 64"
    assert CONTINUOUS_DYNAMIC.type_parameters() == (
        "f32, num_heads = 1, head_size = 8, mla = true, assert_write_mode = 1")


@pytest.mark.parametrize("arguments, message", [
    (dict(kind="ragged"), "kind must be one of 'paged', 'continuous'"),
    (dict(kind="continuous", page_size=16), "a continuous cache has no pages"),
    (dict(block_tokens=64), "block_tokens is a parameter of continuous caches"),
    (dict(kind="continuous", block_tokens=0), "block_tokens must be a positive"),
    (dict(kind="continuous", block_tokens=2.0), "block_tokens must be a positive"),
    (dict(page_size=0), "page_size must be a positive integer"),
    (dict(kind="continuous", q_heads=12), "q_heads must be a positive multiple"),
    (dict(kind="continuous", assert_write_mode=2), "assert_write_mode must be 0 or 1"),
])
def test_bad_configs(arguments, message):
    with pytest.raises(ValueError, match=message):
        CacheConfig(**arguments)


def test_type_texts():
    assert builders.collection_type(CONTINUOUS) == (
        "!kvcache.continuous_collection<bf16, num_heads = 2, head_size = 64>")
    assert builders.cache_type(CONTINUOUS_DYNAMIC) == (
        "!kvcache.continuous_cache<f32, num_heads = 1, head_size = 8, mla = true, "
        "assert_write_mode = 1>")
    assert builders.collection_type(PAGED) == (
        "!kvcache.paged_collection<f16, num_heads = 8, head_size = 128, page_size = 16>")
    assert builders.blocks_type(CONTINUOUS) == (
        "memref<?x2x3x4096x2x64xbf16, strided<[?, ?, ?, 128, 64, 1], offset: ?>>")
    assert builders.blocks_type(CONTINUOUS_DYNAMIC) == (
        "memref<?x1x?x?x1x8xf32, strided<[?, ?, ?, 8, 8, 1], offset: ?>>")
    assert builders.blocks_type(PAGED) == (
        "memref<?x2x?x16x8x128xf16, strided<[?, ?, ?, 1024, 128, 1], offset: ?>>")
    assert builders.lookup_table_type(CONTINUOUS) == "memref<?xi32>"
    assert builders.lookup_table_type(PAGED) == "memref<?x?xi32>"


@pytest.mark.parametrize("config", [PAGED, CONTINUOUS, CONTINUOUS_DYNAMIC])
@pytest.mark.parametrize("role", ["collection", "cache"])
def test_parse_type_inverts_the_type_text(config, role):
    text = getattr(builders, f"{role}_type")(config)
    parsed, parsed_role = parse_type(text)
    assert parsed_role == role
    # what the type does not fix is None
    assert parsed == CacheConfig(config.dtype, config.num_heads, config.head_size,
                                 config.page_size, mla=config.mla,
                                 assert_write_mode=config.assert_write_mode,
                                 kind=config.kind)
    assert parse_type("memref<?xi32>") is None
    assert parse_type("!kvcache.other_collection<f16, num_heads = 1>") is None


def test_continuous_constructor_and_signature():
    text = builders.store_ragged(CONTINUOUS)
    blocks = builders.blocks_type(CONTINUOUS)
    assert (f"func.func @store_ragged(%blocks: {blocks}, %cache_lengths: "
            "memref<?xi32>, %lookup_table: memref<?xi32>, %max_seq_length: i32, "
            "%max_cache_length: i32, %layer: index, %new: memref<?x2x64xbf16>, "
            "%row_offsets: memref<?xi32>)") in text
    assert ("%collection = kvcache.continuous_collection %blocks, %cache_lengths, "
            "%lookup_table, %max_seq_length, %max_cache_length : "
            f"{blocks}, memref<?xi32>, memref<?xi32> -> "
            f"{builders.collection_type(CONTINUOUS)}") in text
    assert (f"kvcache.store_ragged %key_cache, %new, %row_offsets : "
            f"{builders.cache_type(CONTINUOUS)}") in text
    assert "paged" not in text


def test_every_builder_serves_a_continuous_cache():
    config = CacheConfig("f16", 2, 16, kind="continuous", q_heads=4)
    functions = [builders.store_ragged(config, kv="value"),
                 builders.gather_ragged(config),
                 builders.attention_ragged(config, workspace=True),
                 builders.decode_step(config),
                 builders.decode_step(CONTINUOUS_DYNAMIC)]
    for text in functions:
        assert "kvcache.continuous_collection %blocks" in text
        assert "paged" not in text
    assert "kvcache.attention_ragged %q, %key_cache, %value_cache" in functions[2]


def test_copy_pages_needs_pages():
    with pytest.raises(ValueError, match="copy_pages needs a cache with pages"):
        builders.copy_pages(CONTINUOUS)
    assert "kvcache.copy_pages" in builders.copy_pages(PAGED)


@pytest.mark.parametrize("config", [PAGED, CONTINUOUS, CONTINUOUS_DYNAMIC])
def test_kernels_and_kernel_names_agree(config):
    text = builders.kernels(config)
    functions = re.findall(r"func\.func @(\w+)\(", text)
    assert sorted(functions) == sorted(builders.kernel_names(config))
    assert ("copy_pages" in functions) == config.has_pages
    assert ("attention" in functions) == (not config.mla)
