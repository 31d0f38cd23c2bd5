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


# Quantized caches (docs/Contract.md 2.2): a storage type with scales.
QUANTIZED = CacheConfig("f8E4M3FN", 8, 128, 16, scales="token_head", q_heads=32)
QUANTIZED_CONTINUOUS = CacheConfig("i8", 2, 64, num_layers=3, kind="continuous",
                                   block_tokens=32, scales="block<16>",
                                   rows_dtype="bf16")


@pytest.mark.parametrize("arguments, message", [
    (dict(dtype="f16", scales="tensor"), r"scales need a storage type "
     r"\(f8E4M3FN, f8E5M2, i8\), got dtype 'f16'"),
    (dict(dtype="bf16", scales="token_head"), "bf16 caches hold values"),
    (dict(dtype="i8", scales="token"), r"scales must be None, 'tensor', "
     r"'token_head' or 'block<G>' \(G a positive integer dividing head_size\), "
     r"got 'token'"),
    (dict(dtype="i8", scales="block"), "got 'block'"),
    (dict(dtype="i8", scales="block<-4>"), "got 'block<-4>'"),
    (dict(dtype="i8", scales=3), "scales must be None"),
    (dict(dtype="i8", scales="block<0>"), r"the G of scales='block<G>' must be "
     r"a positive integer dividing head_size \(128\), got 'block<0>'"),
    (dict(dtype="f8E5M2", scales="block<48>"), "dividing head_size"),
    (dict(dtype="f16", rows_dtype="f32"), "the rows of f16 caches without "
     "scales are f16"),
    (dict(dtype="i8", rows_dtype="f32"), "only a cache with scales takes"),
    (dict(dtype="i8", scales="tensor", rows_dtype="f64"), "rows_dtype of "
     "quantized i8 caches must be 'f32', 'f16', 'bf16' or 'i8'"),
    (dict(dtype="i8", scales="tensor", rows_dtype="f8E4M3FN"), "its codes"),
])
def test_bad_scales(arguments, message):
    with pytest.raises(ValueError, match=message):
        CacheConfig(**arguments)


def test_scales_of_configs():
    assert QUANTIZED.type_parameters() == (
        "f8E4M3FN, num_heads = 8, head_size = 128, page_size = 16, "
        "scales = token_head")
    # scales print last, after mla and assert_write_mode; block<G> is
    # normalized
    config = CacheConfig("i8", 1, 64, 4, mla=True, assert_write_mode=1,
                         scales=" block< 32 > ")
    assert config.scales == "block<32>"
    assert config.type_parameters() == (
        "i8, num_heads = 1, head_size = 64, page_size = 4, mla = true, "
        "assert_write_mode = 1, scales = block<32>")
    assert QUANTIZED_CONTINUOUS.type_parameters() == (
        "i8, num_heads = 2, head_size = 64, scales = block<16>")
    raw = CacheConfig("f8E5M2", 2, 16, 4)
    assert (raw.is_raw_storage, raw.is_quantized, raw.has_attention) == (
        True, False, False)
    assert (QUANTIZED.is_raw_storage, QUANTIZED.is_quantized,
            QUANTIZED.has_attention) == (False, True, True)
    assert not CacheConfig("i8", 2, 16, 4, mla=True, scales="tensor").has_attention
    assert (raw.rows_element, QUANTIZED.rows_element,
            QUANTIZED_CONTINUOUS.rows_element) == ("f8E5M2", "f32", "bf16")
    assert CacheConfig("i8", scales="tensor", rows_dtype="i8").rows_element == "i8"
    assert (QUANTIZED.scale_group, QUANTIZED_CONTINUOUS.scale_group,
            CacheConfig("i8", scales="tensor").scale_group) == (128, 16, None)


def test_scales_shape():
    assert CacheConfig("i8", 8, 128, 16, num_layers=4,
                       scales="tensor").scales_shape() == (4, 2)
    assert CacheConfig("i8", 8, 128, 16, mla=True,
                       scales="tensor").scales_shape(num_layers=3) == (3, 1)
    assert QUANTIZED.scales_shape(10, 4) == (10, 2, 4, 16, 8)
    assert QUANTIZED_CONTINUOUS.scales_shape(5) == (5, 2, 3, 32, 2, 4)
    assert QUANTIZED_CONTINUOUS.scales_shape(5, 1, 7) == (5, 2, 1, 7, 2, 4)
    with pytest.raises(ValueError, match="needs num_layers"):
        QUANTIZED.scales_shape(10)
    with pytest.raises(ValueError, match="needs num_blocks"):
        QUANTIZED.scales_shape(num_layers=2)
    with pytest.raises(ValueError, match="without scales have no scales"):
        PAGED.scales_shape(1, 1)


@pytest.mark.parametrize("config", [QUANTIZED, QUANTIZED_CONTINUOUS,
                                    CacheConfig("f8E5M2", 1, 8, 2, mla=True,
                                                scales="tensor")])
@pytest.mark.parametrize("role", ["collection", "cache"])
def test_parse_type_reads_scales(config, role):
    text = getattr(builders, f"{role}_type")(config)
    assert f"scales = {config.scales}>" in text
    parsed, parsed_role = parse_type(text)
    assert parsed_role == role
    assert parsed == CacheConfig(config.dtype, config.num_heads, config.head_size,
                                 config.page_size, mla=config.mla,
                                 kind=config.kind, scales=config.scales)
    spaced = text.replace(f"scales = {config.scales}",
                          f"scales = {config.scales.replace('<', ' < ')}")
    assert parse_type(spaced)[0].scales == config.scales


def test_scales_type():
    assert builders.scales_type(PAGED) is None
    assert builders.scales_type(CacheConfig("i8", 2, 16, 4, num_layers=3,
                                            scales="tensor")) == (
        "memref<3x2xf32, strided<[?, 1], offset: ?>>")
    assert builders.scales_type(CacheConfig("i8", 2, 16, 4, mla=True,
                                            scales="tensor")) == (
        "memref<?x1xf32, strided<[?, 1], offset: ?>>")
    assert builders.scales_type(QUANTIZED) == (
        "memref<?x2x?x16x8xf32, strided<[?, ?, ?, 8, 1], offset: ?>>")
    assert builders.scales_type(QUANTIZED_CONTINUOUS) == (
        "memref<?x2x3x32x2x4xf32, strided<[?, ?, ?, 8, 4, 1], offset: ?>>")
    assert builders.scales_type(CacheConfig(
        "f8E5M2", 2, 16, kind="continuous", scales="block<8>")) == (
        "memref<?x2x?x?x2x2xf32, strided<[?, ?, ?, 4, 2, 1], offset: ?>>")


def test_builders_take_the_scales_sixth():
    text = builders.store_ragged(QUANTIZED_CONTINUOUS)
    blocks = builders.blocks_type(QUANTIZED_CONTINUOUS)
    scales = builders.scales_type(QUANTIZED_CONTINUOUS)
    assert (f"func.func @store_ragged(%blocks: {blocks}, %cache_lengths: "
            "memref<?xi32>, %lookup_table: memref<?xi32>, %max_seq_length: i32, "
            f"%max_cache_length: i32, %scales: {scales}, %layer: index, "
            "%new: memref<?x2x64xbf16>, %row_offsets: memref<?xi32>)") in text
    assert ("%collection = kvcache.continuous_collection %blocks, %cache_lengths, "
            "%lookup_table, %max_seq_length, %max_cache_length, %scales : "
            f"{blocks}, memref<?xi32>, memref<?xi32>, {scales} -> "
            f"{builders.collection_type(QUANTIZED_CONTINUOUS)}") in text
    copy = builders.copy_pages(QUANTIZED)
    assert "%max_cache_length: i32, %scales: memref<?x2x?x16x8xf32" in copy
    assert "%scales: " not in builders.store_ragged(PAGED)
    attention = builders.attention_ragged(QUANTIZED)
    assert "%q: memref<?x32x128xf32>" in attention
    assert ("memref<?x32x128xf32>, !kvcache.paged_cache<f8E4M3FN, num_heads = 8, "
            "head_size = 128, page_size = 16, scales = token_head>") in attention


def test_rows_of_codes_on_a_quantized_cache():
    config = CacheConfig("f8E5M2", 2, 16, 4, scales="token_head",
                         rows_dtype="f8E5M2")
    assert "%new: memref<?x2x16xf8E5M2>" in builders.store_ragged(config)
    with pytest.raises(ValueError, match="attention_ragged takes f32, f16 or "
                       "bf16 q and out .* not f8E5M2 codes: set the config's "
                       "rows_dtype"):
        builders.attention_ragged(config)
    functions = re.findall(r"func\.func @(\w+)\(", builders.kernels(config))
    assert sorted(functions) == sorted(builders.kernel_names(config))
    assert "attention" not in functions and "copy_pages" in functions
    with pytest.raises(ValueError, match="does not take a raw f8E5M2 cache"):
        builders.attention_ragged(CacheConfig("f8E5M2", 2, 16, 4))
