"""Comments and blank lines as libcst trivia: ``// text`` becomes ``# text``."""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from ph2py.layout import GapLine

TWO_SPACES = cst.SimpleWhitespace("  ")


def comment(text: str) -> cst.Comment:
    return cst.Comment("# " + text if text else "#")


def comment_lines(texts: Iterable[str]) -> list[cst.EmptyLine]:
    return [cst.EmptyLine(comment=comment(text)) for text in texts]


def gap_lines(lines: Iterable[GapLine], max_blank: int) -> list[cst.EmptyLine]:
    """Comment lines and blank lines, no more than ``max_blank`` blank lines in a row."""
    out: list[cst.EmptyLine] = []
    blank_run = 0
    for line in lines:
        if line is None:
            blank_run += 1
            if blank_run <= max_blank:
                out.append(cst.EmptyLine(indent=False))
        else:
            blank_run = 0
            out.append(cst.EmptyLine(comment=comment(line)))
    return out


def blank_lines(count: int) -> list[cst.EmptyLine]:
    return [cst.EmptyLine(indent=False) for _ in range(count)]


def split_blanks(lines: tuple[GapLine, ...]) -> tuple[int, tuple[GapLine, ...]]:
    """The number of blank lines that open ``lines``, and the rest."""
    count = 0
    while count < len(lines) and lines[count] is None:
        count += 1
    return count, lines[count:]


def trailing(text: str | None) -> cst.TrailingWhitespace:
    """The end of a line: ``  # text``, or nothing."""
    if text is None:
        return cst.TrailingWhitespace()
    return cst.TrailingWhitespace(whitespace=TWO_SPACES, comment=comment(text))
