"""Reading a ``.ph`` file: its bytes are UTF-8, and anything else is an error at its place.

A byte order mark at the start is allowed (and is not part of line 1).  The first
byte that does not decode is reported at its line and column, with the line shown
as far as it decodes (the bad bytes as U+FFFD).
"""

from __future__ import annotations

from pathlib import Path

from phobos.compile.diagnostics import PhobosError, error, register_source
from phobos.compile.span import Span


def decode_ph(data: bytes, file: str) -> str:
    """The text of a ``.ph`` file's bytes; ``PhobosError`` at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(data, exc, file) from None


def read_ph(path: str | Path) -> str:
    """Read and decode a ``.ph`` file; errors name the path as given."""
    path = Path(path)
    return decode_ph(path.read_bytes(), str(path))


def _not_utf8(data: bytes, exc: UnicodeDecodeError, file: str) -> PhobosError:
    start = exc.start
    line_start = data.rfind(b"\n", 0, start) + 1
    line = data.count(b"\n", 0, start) + 1
    col = len(data[line_start:start].decode("utf-8")) + 1
    if line == 1 and data.startswith(b"\xef\xbb\xbf"):
        col -= 1  # the byte order mark is not a column
    register_source(file, data.decode("utf-8", "replace").removeprefix("\ufeff"))
    bad = " ".join(f"0x{b:02x}" for b in data[exc.start : exc.end])
    return error(
        Span(file, line, col, line, col + 1),
        f"the file is not valid UTF-8: {bad} ({exc.reason})",
        help="a .ph file is UTF-8 text: save it as UTF-8 (the line above shows the bytes that "
        "do not decode as \ufffd)",
    )
