#!/usr/bin/env python3
"""Fails when a file defines a second copy of the GPU emulator's ABI.

  check-emulator-abi.py [--runtime] [--exclude DIR]... HEADER FILE_OR_DIR...

HEADER is include/KVCache/ExecutionEngine/EmulatorABI.h, the one definition
of the interface between kvcache-emulate-nvvm and the emulator runtime. The
names to look for are read from it: its enums, its flag constants and the
values of its enumerators, its special-register names, its runtime entry
points and the device functions they replace. Directories are searched for
.h, .cpp, .c, .inc, .td and .py files, except HEADER itself and what is under
an --exclude directory. Outside comments, a file must not

  - define an enum named like one of the header's (EmulatorAccessFlags is
    like AccessFlags);
  - assign an integer literal to a name like one of the header's flag
    constants (kEmulatorAccessWrite = 1, ACCESS_WRITE = 1), or the same
    value to a name like one of its enumerators (Bfly = 0, kSharedSpace = 3);
  - list special registers: a string literal that is a register's name
    ("tid.x"), or a line naming three of the header's register enumerators;
  - spell a runtime entry point in a string literal ("__kvemu_launch", or a
    prefix of one such as "__kvemu_nv_"): the pass builds the names from the
    header's X-macros;
  - list the device functions the runtime replaces: string literals of
    three or more of them ("__nv_expf", "llvm.nvvm.ex2.approx.f32"; a
    kernel generator may name the one or two intrinsics it emits);
  - declare a runtime entry point in C or C++ (`void __kvemu_launch(`),
    except with --runtime, for the runtime's sources, which define them and
    include the header so that the compiler checks each definition against
    it.

Prints one line per finding, `path:line: what`, and exits 1 if there is any;
prints the number of files checked otherwise.
"""
import argparse
import os
import re
import sys

EXTENSIONS = (".h", ".cpp", ".c", ".inc", ".td", ".py")
C_EXTENSIONS = (".h", ".cpp", ".c", ".inc")


def normalize(name):
    """`kEmulatorAccessWrite`, `ACCESS_WRITE` -> comparable lower case."""
    return name.replace("_", "").lower()


def blank_comments(src, python):
    """Blanks comments, keeping string literals and newlines."""
    out, i, n = [], 0, len(src)
    while i < n:
        if (python and src[i] == "#") or (not python and src.startswith("//", i)):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif not python and src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src[i] == '"' or (python and src[i] == "'"):
            quote, j = src[i], i + 1
            while j < n and src[j] != quote and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


class ABI:
    """The names EmulatorABI.h defines."""

    def __init__(self, path):
        src = blank_comments(open(path).read(), python=False)
        self.enums = re.findall(r"\benum\s+(?:class\s+)?(\w+)", src)
        # `kAccessWrite = 1`: flag constants, compared without the `k`.
        self.constants = {normalize(name[1:]): name for name, _ in
                          re.findall(r"\b(k[A-Z]\w*)\s*=\s*(0x[0-9a-fA-F]+|\d+)", src)}
        # `Shared = 3` in `enum class AddressSpace`: each enumerator with its
        # value and the last word of its enum's name ("space").
        self.enumerators = []
        for enum, body in re.findall(r"\benum\s+class\s+(\w+)[^{]*\{([^}]*)\}", src):
            word = re.findall(r"[A-Z][a-z0-9]*", enum)[-1].lower()
            for name, value in re.findall(r"\b([A-Za-z]\w*)\s*=\s*(\d+)", body):
                self.enumerators.append((normalize(name), int(value), word))
        registers = re.search(r"#define KVEMU_SPECIAL_REGISTERS\(X\)(.*?)\n\n", src, re.S)
        self.registers = re.findall(r'X\((\w+),\s*"([^"]+)"\)', registers.group(1))
        self.entries = sorted(set(re.findall(r"\bX\((__kvemu_\w+)", src)))
        self.replaced = re.findall(r'X\(__kvemu_\w+,\s*"([^"]+)"\)', src)


def check_file(path, abi, runtime):
    """Yields (line, what) for each second definition in `path`."""
    src = blank_comments(open(path, errors="replace").read(), path.endswith(".py"))
    register_names = {suffix for _, suffix in abi.registers}
    register_enumerators = {name for name, _ in abi.registers}
    replaced = set(re.findall(r'"([^"\n]*)"', src)) & set(abi.replaced)
    for number, line in enumerate(src.split("\n"), 1):
        for name in re.findall(r"\benum\s+(?:class\s+|struct\s+)?(\w+)", line):
            for enum in abi.enums:
                if enum in name:
                    yield number, f"enum '{name}' is like EmulatorABI.h's {enum}"
        for name, value in re.findall(r"\b([A-Za-z_]\w*)\s*=\s*(0x[0-9a-fA-F]+|\d+)\b", line):
            key, value = normalize(name), int(value, 0)
            for constant, original in abi.constants.items():
                if constant in key:
                    yield number, f"'{name}' is like EmulatorABI.h's {original}"
            for enumerator, enum_value, word in abi.enumerators:
                if value == enum_value and (key == enumerator or
                                            (enumerator in key and word in key)):
                    yield number, (f"'{name} = {value}' is like an enumerator of "
                                   f"EmulatorABI.h")
        named = set(re.findall(r"\b\w+\b", line)) & register_enumerators
        if len(named) >= 3:
            yield number, "lists special registers like EmulatorABI.h's"
        for literal in re.findall(r'"([^"\n]*)"', line):
            if literal in register_names:
                yield number, f'"{literal}" is a special register of EmulatorABI.h'
            if literal in replaced and len(replaced) >= 3:
                yield number, (f'"{literal}" is one of {len(replaced)} device functions '
                               f'of EmulatorABI.h listed here')
            if literal.startswith("__kvemu_") and len(literal) > len("__kvemu_") and any(
                    entry.startswith(literal) for entry in abi.entries):
                yield number, f'"{literal}" names a runtime entry point of EmulatorABI.h'
        if not runtime and path.endswith(C_EXTENSIONS):
            for name in re.findall(r"\b(__kvemu_\w+)\s*\(", line):
                if name in abi.entries:
                    yield number, f"declares runtime entry point '{name}'"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runtime", action="store_true",
                        help="the runtime's sources: definitions of entry points are allowed")
    parser.add_argument("--exclude", action="append", default=[],
                        help="a directory not to search")
    parser.add_argument("header")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    abi = ABI(args.header)
    files = []
    for path in args.paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, name) for name in sorted(names)
                          if name.endswith(EXTENSIONS)]
        else:
            files.append(path)
    header = os.path.realpath(args.header)
    excluded = [os.path.join(os.path.realpath(path), "") for path in args.exclude]
    files = [path for path in sorted(files) if os.path.realpath(path) != header and
             not any(os.path.realpath(path).startswith(d) for d in excluded)]
    findings = [f"{path}:{line}: {what}" for path in files
                for line, what in check_file(path, abi, args.runtime)]
    for finding in findings:
        print(finding)
    if findings:
        print(f"{len(findings)} second definitions of the emulator ABI in "
              f"{len(files)} files")
        return 1
    print(f"{len(files)} files, no second definition of the emulator ABI "
          f"({len(abi.entries)} entry points, {len(abi.registers)} special "
          f"registers, {len(abi.constants)} flags)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
