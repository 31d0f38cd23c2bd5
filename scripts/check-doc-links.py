#!/usr/bin/env python3
"""Checks the relative links of Markdown files: every `[text](target)` and
`![alt](target)` outside code names a file or directory that exists inside
the repository, and a `#fragment` names a heading of the Markdown file it
points into (GitHub's anchors). Links to web addresses are not followed.

    check-doc-links.py [--root DIR] PATH...

PATH is a Markdown file or a directory (its *.md files, recursively); DIR,
the repository root no link may leave, defaults to the directory above this
script. Prints one line per broken link, `FILE:LINE: 'TARGET': why`, then a
summary; exits 1 when a link is broken. test/Docs/links.test runs it on
README.md and docs/.
"""

import argparse
import functools
import os
import re
import sys

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
# [text](target) or ![alt](target), with an optional "title"; the text may
# hold one level of brackets.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks, code
    spans removed."""
    inside = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield number, CODE_SPAN.sub("", line)


def slug(heading):
    """GitHub's anchor of a heading: its text without markup, lower case,
    characters other than word characters, spaces and hyphens dropped,
    spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors(path):
    """The anchors of the headings of a Markdown file (repeats numbered as
    GitHub numbers them)."""
    seen = {}
    names = set()
    inside = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                inside = not inside
                continue
            match = None if inside else HEADING.match(line)
            if match:
                base = slug(match.group(1))
                count = seen.get(base, 0)
                seen[base] = count + 1
                names.add(base if count == 0 else f"{base}-{count}")
    return names


def problem(source, target, root):
    """Why the link `target` of file `source` is broken, or None."""
    if SCHEME.match(target):
        return None
    if target.startswith("/"):
        return "an absolute path (links must be relative)"
    path, _, fragment = target.partition("#")
    resolved = os.path.normpath(
        os.path.join(os.path.dirname(source), path)) if path else source
    if os.path.commonpath([root, os.path.abspath(resolved)]) != root:
        return "outside the repository"
    if not os.path.exists(resolved):
        return "no such file or directory"
    if fragment and resolved.endswith(".md") and os.path.isfile(resolved):
        if fragment not in anchors(resolved):
            return f"no heading with the anchor #{fragment} in {path or 'this file'}"
    return None


def markdown_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for directory, _, names in sorted(os.walk(path)):
                yield from (os.path.join(directory, n) for n in sorted(names)
                            if n.endswith(".md"))
        else:
            yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    links = broken = files = 0
    for source in markdown_files(args.paths):
        files += 1
        for number, line in prose_lines(source):
            for match in LINK.finditer(line):
                links += 1
                why = problem(source, match.group(1), root)
                if why:
                    broken += 1
                    print(f"{source}:{number}: '{match.group(1)}': {why}")
    where = f"{files} file{'s' if files != 1 else ''}"
    if broken:
        print(f"{broken} of {links} links in {where} are broken")
        return 1
    print(f"{links} links in {where}, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
