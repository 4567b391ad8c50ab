"""``phobos-cache``: list, inspect, verify, prune and clear the kernel cache."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from phobos.cache import _cli
from phobos.cache.cache import Cache
from phobos.cache.entry import EntryInfo
from phobos.cache.location import (
    MAX_BYTES_ENV,
    ROOT_ENV,
    TRUSTED_OWNER_ENV,
    default_max_bytes,
    default_root,
)
from phobos.cache.trust import describe, owner_uid, you

PROG = "phobos-cache"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    return _cli.run(PROG, lambda: _main(parser, args))


def _main(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:  # the environment's settings first: a bad one is a usage error, whatever the root
        default_max_bytes()
        if args.trusted_owner is not None:
            owner_uid(args.trusted_owner)
    except ValueError as exc:
        parser.exit(2, _cli.paint(f"{PROG}: error: {exc}\n"))
    named = args.root if args.root is not None else os.environ.get(ROOT_ENV, "").strip() or None
    root = Path(named).expanduser() if named is not None else default_root()
    if not root.is_dir():
        if args.root is not None or root.exists():
            where = "--root" if args.root is not None else f"${ROOT_ENV}"
            what = "is not a folder" if root.exists() else "no such folder"
            return _error(f"{where} {root}: {what} (phobos-cache makes no cache folder)")
        print(f"no kernel cache at {root} yet: the first compile makes it")
        return 1 if args.command in (_info, _pin) else 0
    try:
        os.listdir(root)
    except OSError as exc:
        return _error(f"cannot read the kernel cache {root}: {exc.strerror or exc}")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        cache = Cache(root=root, trusted_owner=args.trusted_owner)
    if cache.refused is not None:  # the warning would say the same, less to the point
        return _error(f"not using {cache.refused}; nothing was read")
    writes = args.command in (_clear, _prune, _pin) or getattr(args, "remove", False)
    if writes and cache.in_memory and not cache.shared:
        return _error(f"{root} cannot be written here: {args.command.__name__[1:]} needs to")
    for warning in said:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return args.command(cache, args)


def _error(message: str) -> int:
    _cli.say(PROG, "error", message)
    return 1


def _parser() -> argparse.ArgumentParser:
    parser = _cli.Parser(
        prog=PROG,
        description="Inspect and maintain the Phobos kernel cache (layout: docs/cache.md).",
        epilog=f"The cache folder is ${ROOT_ENV}, else the user's cache folder + 'phobos'; "
        f"its size bound is ${MAX_BYTES_ENV}, else 2 GiB. NO_COLOR=1 turns colour off; "
        "PHOBOS_DEBUG=1 shows a traceback with an error.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {_cli.version(PROG, __file__)}"
    )
    parser.add_argument("--root", help=f"the cache folder (default: ${ROOT_ENV} or the default)")
    parser.add_argument(
        "--trusted-owner",
        metavar="ACCOUNT",
        help="read the root as a shared cache that this account (name or uid) pinned "
        f"(default: ${TRUSTED_OWNER_ENV})",
    )
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")
    listing = commands.add_parser("list", help="one line per entry, most recently used first")
    listing.set_defaults(command=_list)
    info = commands.add_parser("info", help="an entry's record, files and state")
    info.add_argument("key", help="the key, or enough of its first digits to name one entry")
    info.set_defaults(command=_info)
    verify = commands.add_parser("verify", help="check every file's sha256; exit 1 if any is bad")
    verify.add_argument("--remove", action="store_true", help="also remove the bad entries")
    verify.set_defaults(command=_verify)
    prune = commands.add_parser(
        "prune", help="evict least-recently-used entries to the size bound; delete stale temp"
    )
    prune.set_defaults(command=_prune)
    clear = commands.add_parser(
        "clear", help="remove every entry (asks first on a terminal; --yes elsewhere)"
    )
    clear.add_argument("-y", "--yes", action="store_true", help="do not ask")
    clear.add_argument(
        "-n", "--dry-run", action="store_true", help="say what would be removed; remove nothing"
    )
    clear.set_defaults(command=_clear)
    pin = commands.add_parser(
        "pin", help="pin every good entry, so that other accounts may read this cache (shared)"
    )
    pin.set_defaults(command=_pin)
    return parser


def _list(cache: Cache, args: argparse.Namespace) -> int:
    entries = cache.entries()
    rows = [("KEY", "KERNEL", "ARCH", "SIZE", "LAST USED")]
    rows += [
        (
            info.key[:16],
            _name(info),
            str(info.record.get("arch", "-")),
            _bytes(info.size),
            _time(info.last_used),
        )
        for info in entries
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])
    total = sum(info.size for info in entries)
    print(f"{len(entries)} entries, {_bytes(total)} of {_bytes(cache.max_bytes)}, {_where(cache)}")
    return 0


def _info(cache: Cache, args: argparse.Namespace) -> int:
    matches = cache.find(args.key)
    if not matches:
        return _error(f"no entry has a key starting with {args.key!r}")
    if len(matches) > 1:
        _cli.say(PROG, "error", f"{args.key!r} names {len(matches)} entries:")
        for key in matches:
            print(f"  {key}", file=sys.stderr)
        return 2
    key = matches[0]
    info = cache.info(key)
    if info is None:
        return _error(f"entry {key} was removed just now")
    problem = cache.check(key)
    print(f"key:       {key}")
    print(f"path:      {info.path or '(in memory)'}")
    print(f"size:      {_bytes(info.size)}")
    print(f"created:   {_time(info.created)}")
    print(f"last used: {_time(info.last_used)}")
    print(f"state:     {'ok' if problem is None else 'CORRUPT: ' + problem.message}")
    print("files:")
    for name, size in _files(info):
        print(f"  {name}  {_bytes(size)}")
    print("record:")
    print(json.dumps(dict(info.record), indent=2, sort_keys=True, ensure_ascii=False))
    return 0 if problem is None else 1


def _verify(cache: Cache, args: argparse.Namespace) -> int:
    checked = len(cache.keys())
    problems = cache.verify(remove=args.remove)
    for problem in problems:
        print(f"BAD {problem}" + (" (removed)" if args.remove else ""))
    print(f"{checked} entries checked, {len(problems)} bad")
    return 1 if problems else 0


def _prune(cache: Cache, args: argparse.Namespace) -> int:
    pruned = cache.prune()
    print(
        f"evicted {len(pruned.evicted)} entries, deleted {pruned.temp_folders} stale "
        "temporary folders"
    )
    return 0


def _clear(cache: Cache, args: argparse.Namespace) -> int:
    if cache.shared:
        return _error(f"{cache.root} is a shared cache: read-only")
    entries = cache.entries()
    total = _bytes(sum(info.size for info in entries))
    if args.dry_run:
        for info in entries:
            print(f"would remove {info.key[:16]}  {_name(info)}  {_bytes(info.size)}")
        print(f"would remove {len(entries)} entries ({total}) from {cache.root}")
        return 0
    if entries and not args.yes:
        if not sys.stdin.isatty():
            return _error(
                f"clear would remove {len(entries)} entries from {cache.root}: "
                "add --yes (or --dry-run to see them)"
            )
        answer = input(f"remove {len(entries)} entries ({total}) from {cache.root}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing removed")
            return 1
    print(f"removed {cache.clear()} entries")
    return 0


def _pin(cache: Cache, args: argparse.Namespace) -> int:
    try:
        pins = cache.pin()
    except OSError as exc:
        return _error(_cli.describe(exc))
    for problem in pins.bad:
        print(f"BAD {problem} (not pinned)")
    print(f"pinned {len(pins.keys)} entries in {pins.path}; {len(pins.bad)} bad left out")
    print(
        f"other accounts read it with {ROOT_ENV}={cache.root} "
        f"{TRUSTED_OWNER_ENV}={_account()} (every folder above it must let them in)"
    )
    return 1 if pins.bad else 0


def _where(cache: Cache) -> str:
    if cache.shared:
        return f"{cache.root} (shared by {describe(cache.trusted_owner)}, read-only)"
    return "in memory" if cache.in_memory else str(cache.root)


def _account() -> str:
    """Your account's name, as a user of the shared cache would name its owner."""
    try:
        import pwd

        return pwd.getpwuid(you()).pw_name
    except (ImportError, KeyError):
        return str(you())


def _files(info: EntryInfo) -> list[tuple[str, int]]:
    """The entry's files (name, bytes), as they lie in its folder."""
    if info.path is None:
        return []
    try:
        return sorted((p.name, p.stat().st_size) for p in Path(info.path).iterdir() if p.is_file())
    except OSError:
        return []


def _name(info: EntryInfo) -> str:
    record = info.record
    if "record_namespace" in record:
        return f"record {record['record_namespace']}: {record.get('record_key', '')}"[:48]
    return str(record.get("kernel", "-"))


def _bytes(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    scaled = float(size)
    for unit in ("KiB", "MiB", "GiB"):
        scaled /= 1024
        if scaled < 1024 or unit == "GiB":
            break
    return f"{scaled:.1f} {unit}"


def _time(seconds: float) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) if seconds else "-"
    except (ValueError, OverflowError, OSError):
        return "-"


if __name__ == "__main__":
    sys.exit(main())
