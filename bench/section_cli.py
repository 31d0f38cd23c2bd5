"""The command line of a report section module run on its own
(`/usr/bin/python3 bench/<section>.py [--build DIR] [--quick]`): prints the
section instead of writing bench/report.md."""

import argparse
import os


def run_section(section, description):
    """Parses --build (default: the repository's build/) and --quick, then
    calls `section(build, quick, lines)`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    section(os.path.abspath(args.build), args.quick, [])


def import_package(build, lines):
    """(numpy, kvcache, kvcache.builders, kvcache.reference) from `build`'s
    Python package, or None after adding a "Not measured" line to `lines`
    when it is not built."""
    import sys
    sys.path.insert(0, os.path.join(build, "python"))
    try:
        import numpy
        import kvcache
        import kvcache.builders  # noqa: F401  (kvcache.builders, .reference)
        import kvcache.reference  # noqa: F401
    except ImportError as error:
        lines += [f"Not measured: the Python package is not built ({error}).", ""]
        return None
    return numpy, kvcache, kvcache.builders, kvcache.reference
