#!/usr/bin/env python3
"""Fails when a source file is longer than a limit (default 600 lines).

  check-file-length.py [--limit N] FILE_OR_DIR...

Directories are searched for C++ (.cpp, .h), TableGen (.td) and Python (.py)
files. Prints one line per file over the limit, `path: N lines (limit L)`, and
exits 1 if there is any; prints the number of files checked otherwise. A long
file is split by concern (one job per file), not trimmed.
"""
import argparse
import os
import sys

SUFFIXES = (".cpp", ".h", ".td", ".py")


def source_files(paths):
    for path in paths:
        if os.path.isfile(path):
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(SUFFIXES):
                    yield os.path.join(root, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=600)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    checked, long_files = 0, []
    for path in source_files(args.paths):
        checked += 1
        with open(path, errors="replace") as f:
            lines = sum(1 for _ in f)
        if lines > args.limit:
            long_files.append((path, lines))
    for path, lines in long_files:
        print(f"{path}: {lines} lines (limit {args.limit})")
    if long_files:
        print(f"{len(long_files)} of {checked} files are longer than "
              f"{args.limit} lines")
        return 1
    print(f"{checked} files, none longer than {args.limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
