"""The Python file being translated: its name, its lines, and spans of its ast nodes.

Python's ``ast`` counts columns in UTF-8 bytes from 0; Phobos spans count
characters from 1.  Every span the front end makes goes through ``SourceFile.span``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from phobos.compile.diagnostics import PhobosError, error
from phobos.compile.span import Span


@dataclass(frozen=True)
class SourceFile:
    filename: str
    text: str
    lines: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Python ends lines only at \n (the text's \r\n and \r are \n already), not at every
        # character ``str.splitlines`` takes for a line break (\x0c, \x1c, \u2028, ...).
        lines = self.text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        object.__setattr__(self, "lines", tuple(lines))

    def column(self, line: int, byte_offset: int) -> int:
        """The 1-based character column of a 0-based UTF-8 byte offset on ``line``."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_offset + 1
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace")) + 1

    def span(self, node: ast.AST) -> Span:
        """Where ``node`` stands in the file."""
        line, end_line = node.lineno, node.end_lineno or node.lineno
        end_offset = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return Span(
            self.filename,
            line,
            self.column(line, node.col_offset),
            end_line,
            self.column(end_line, end_offset),
        )

    def span_between(self, first: ast.AST, last: ast.AST) -> Span:
        """From the start of ``first`` to the end of ``last``."""
        return self.span(first).to(self.span(last))

    def reject(self, node: ast.AST, message: str, help: str | None = None) -> PhobosError:
        """A ``PhobosError`` at ``node`` (raise it)."""
        return error(self.span(node), message, help=help)
