"""``ph2py``: convert .ph files to the Python spelling.

    ph2py saxpy.ph                 # writes saxpy.py beside it (merging into it if it exists)
    ph2py saxpy.ph -o kernels.py   # writes kernels.py
    ph2py kernels/                 # every .ph below kernels/
    ph2py --check kernels/         # exit 1 and name each .py that is out of date; write nothing
    ph2py --stdout saxpy.ph        # print the Python instead of writing it
    ph2py --line-length 100 k.ph   # wrap lines longer than 100 columns

Without --line-length, lines are wrapped at the line-length of the ruff
configuration nearest the .py (a pyproject.toml's [tool.ruff]), else at 88.

An error in a .ph file prints like a compiler's (file:line:col, the line, a
caret); that file's .py is not written and the exit status is 1.  Set
PHOBOS_DEBUG=1 to see a traceback as well.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ph2py import _cli
from ph2py.files import Job, UsageError, jobs, write_atomically
from phobos.compile.diagnostics import PhobosError

PROG = "ph2py"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    options = parser.parse_args(argv)
    return _cli.run(PROG, lambda: _main(options))


def _main(options: argparse.Namespace) -> int:
    try:
        found = jobs(options.paths, options.output, options.line_length)
        if options.stdout and len(found) != 1:
            raise UsageError("--stdout prints the Python of one .ph file")
        return max((_run(job, options) for job in found), default=0)
    except (UsageError, OSError) as exc:
        if os.environ.get("PHOBOS_DEBUG") == "1":
            raise
        _cli.say(PROG, "error", _cli.describe(exc) if isinstance(exc, OSError) else str(exc))
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = _cli.Parser(
        prog=PROG,
        description="Convert Phobos .ph files to the Python spelling, keeping comments and layout.",
        epilog="Set PHOBOS_DEBUG=1 to see a traceback with an error; NO_COLOR=1 turns colour off.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {_cli.version(PROG, __file__)}"
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="a .ph file, or a folder of them"
    )
    parser.add_argument(
        "-o", dest="output", type=Path, metavar="OUT.py", help="where the Python goes"
    )
    parser.add_argument(
        "--line-length",
        type=_positive,
        metavar="N",
        help="wrap lines longer than N columns (default: the project's ruff line-length, else 88)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and name every .py that is missing or out of date",
    )
    mode.add_argument("--stdout", action="store_true", help="print the Python instead")
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of columns")
    return value


def _run(job: Job, options: argparse.Namespace) -> int:
    """Convert one file; 1 for an error (or, with --check, a .py out of date), else 0."""
    try:
        conversion, existing = job.convert()
    except PhobosError as exc:
        if os.environ.get("PHOBOS_DEBUG") == "1":
            raise
        print(_cli.paint(exc.render()), file=sys.stderr)
        return 1
    for diagnostic in conversion.warnings:
        print(_cli.paint(diagnostic.render()), file=sys.stderr)
    if options.stdout:
        sys.stdout.write(conversion.python)
        return 0
    if conversion.python == existing:
        return 0
    if options.check:
        if existing is None:
            print(f"{job.target} is missing: ph2py would write it from {job.source}")
        else:
            print(f"{job.target} is out of date with {job.source}")
        return 1
    write_atomically(job.target, conversion.python)
    print(f"wrote {job.target}", file=sys.stderr)
    return 0
