#!/usr/bin/env python3
"""Fails when a C++ function is longer than a limit (default 120 lines).

  check-function-length.py [--limit N] FILE_OR_DIR...

Directories are searched for .cpp and .h files. A function is a brace block
at namespace or class scope whose head ends with a parameter list (lambdas
and nested blocks count toward the function around them); its length is the
number of lines from the line of its opening brace to its closing brace.
Comments and string literals are ignored. Prints one line per function over
the limit, `path:line: 'head' is N lines (limit L)`, and exits 1 if there is
any; prints the number of functions checked otherwise.
"""
import argparse
import os
import re
import sys


def strip_comments_and_strings(src):
    """Blanks comments and literals, keeping newlines (line numbers)."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith('R"(', i):
            j = src.find(')"', i)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src[i] in "\"'" and not (src[i] == "'" and i > 0 and src[i - 1].isalnum()):
            quote, j = src[i], i + 1
            while j < n and src[j] != quote and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(quote + re.sub(r"[^\n]", " ", src[i + 1:j]) + quote)
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


def functions(path):
    """Yields (line, length, head) of every function defined in `path`."""
    text = strip_comments_and_strings(open(path, encoding="utf-8", errors="replace").read())
    stack, line = [], 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            k = i - 1
            while k >= 0 and text[k] not in ";{}":
                k -= 1
            head = " ".join(text[k + 1:i].split())
            if any(kind == "function" for kind, _, _ in stack):
                kind = "block"
            elif re.search(r"\b(namespace|class|struct|enum|union)\b", head) and not re.search(r"\)\s*(const)?\s*(override)?\s*$", head):
                kind = "scope"
            elif ")" in head:
                kind = "function"
            else:
                kind = "scope"
            stack.append((kind, line, head))
        elif c == "}" and stack:
            kind, start, head = stack.pop()
            if kind == "function":
                yield start, line - start + 1, head


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=120)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    files = []
    for path in args.paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, name) for name in sorted(names) if name.endswith((".cpp", ".h"))]
        else:
            files.append(path)
    checked, long = 0, []
    for path in sorted(files):
        for start, length, head in functions(path):
            checked += 1
            if length > args.limit:
                long.append(f"{path}:{start}: '{head[-80:]}' is {length} lines (limit {args.limit})")
    for message in long:
        print(message)
    if long:
        print(f"{len(long)} of {checked} functions are longer than {args.limit} lines: split them into named steps")
        return 1
    print(f"{checked} functions, none longer than {args.limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
