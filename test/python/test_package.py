"""The layout of the kvcache package: each module imports alone, in a fresh
interpreter, and no module imports one that imports it back (at module
level: a function may import the extension when it is called); the names
that moved out of kvcache.reference are still there, the same objects."""

import ast
import os
import subprocess
import sys

import pytest

import kvcache
from kvcache import caches, dtypes, reference, testing

PACKAGE = os.path.dirname(kvcache.__file__)
MODULES = sorted(name[:-3] for name in os.listdir(PACKAGE)
                 if name.endswith(".py") and name != "__init__.py")
HAS_EXTENSION = any(name.startswith("_kvcache") for name in os.listdir(PACKAGE))
NEEDS_EXTENSION = {"compiler", "cpu", "emulator"}


def module_level_imports(name):
    """The sibling modules `name` imports when it is loaded: the relative
    imports of its body, outside functions and classes."""
    with open(os.path.join(PACKAGE, name + ".py")) as source:
        tree = ast.parse(source.read())
    siblings = set()
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                siblings.add(node.module.split(".")[0])
            else:
                siblings.update(alias.name for alias in node.names)
        pending.extend(ast.iter_child_nodes(node))
    return siblings & (set(MODULES) | {"_kvcache"})


def test_no_module_imports_one_that_imports_it():
    graph = {name: module_level_imports(name) for name in MODULES}
    assert graph["dtypes"] == {"config"}
    assert "reference" not in graph["caches"] | graph["testing"] | \
        graph["attention_reference"]

    def visit(name, path):
        assert name not in path, f"import cycle: {' -> '.join(path + [name])}"
        for imported in graph.get(name, ()):
            visit(imported, path + [name])

    for name in MODULES:
        visit(name, [])


@pytest.mark.parametrize("name", MODULES)
def test_each_module_imports_alone(name):
    """The module and what it imports, in a fresh interpreter, without the
    package's __init__ (which imports every module) running first."""
    if name in NEEDS_EXTENSION and not HAS_EXTENSION:
        pytest.skip("the compiler extension is not built")
    script = (
        "import importlib, sys, types\n"
        "package = types.ModuleType('kvcache')\n"
        f"package.__path__ = [{PACKAGE!r}]\n"
        "sys.modules['kvcache'] = package\n"
        f"importlib.import_module('kvcache.{name}')\n"
        "print(sorted(m for m in sys.modules if m.startswith('kvcache.')))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    loaded = {m.split(".", 1)[1] for m in eval(run.stdout)}
    assert name in loaded
    if name in ("config", "dtypes", "caches", "testing", "builders"):
        assert "reference" not in loaded and "_kvcache" not in loaded


# Every name kvcache.reference had before the split, by its new module.
MOVED = {dtypes: ["FP8_FORMATS", "MAX_FINITE", "dequantize", "dynamic_scale",
                  "fp8_encode", "fp8_values", "from_float32", "group_scales",
                  "i8_encode", "quantize", "storage_dtype", "to_float32"],
         caches: ["CacheCollection", "CacheView", "ContinuousCache",
                  "PagedCache"],
         testing: ["random_cache", "random_rows", "row_offsets"]}
STAYED = ["attention_ragged", "copy_pages", "decode_step", "gather_ragged",
          "key_range", "merge_states", "store_ragged", "CacheConfig",
          "ELEMENT_TYPES"]


def test_moved_names_are_still_in_reference():
    for module, names in MOVED.items():
        for name in names:
            assert getattr(reference, name) is getattr(module, name), name
            assert name in module.__all__
    for name in STAYED:
        assert hasattr(reference, name), name
    assert reference.__all__ == [
        "CacheCollection", "CacheView", "ContinuousCache", "PagedCache",
        "attention_ragged", "copy_pages", "decode_step", "dequantize",
        "dynamic_scale", "fp8_encode", "fp8_values", "from_float32",
        "gather_ragged", "group_scales", "key_range", "merge_states",
        "mla_attention_ragged", "quantize", "random_cache", "random_rows",
        "rope_ragged", "rope_rows", "rotate", "row_offsets", "storage_dtype",
        "store_ragged", "to_float32"]
    # as before the split, and mla_attention_ragged, rope_ragged, rope_rows,
    # rotate
    from kvcache.reference import PagedCache, random_cache, to_float32  # noqa: F401
