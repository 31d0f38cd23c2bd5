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
