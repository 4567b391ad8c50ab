"""Where a long line may break, and the printer that picks the breaks as ruff format does.

A line is described as a small document: text, possible line breaks, indented
parts and groups.  The printer reads it left to right; each group it meets goes
on one line if that fits (counting what follows it up to the next possible
break), else its breaks are taken and the groups inside it get the same choice.
This is the algorithm of the Wadler/Prettier printers that ruff format follows,
so the outermost brackets open first and inner ones only where still needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

INDENT_WIDTH = 4

# A document: text, a break, a group, an indented part, or a sequence of them.
Doc: TypeAlias = "str | Group | Indent | Line | IfBreak | tuple[Doc, ...]"


@dataclass(frozen=True)
class Group:
    """Parts printed on one line if they fit, else with their line breaks taken."""

    parts: tuple[Doc, ...]


@dataclass(frozen=True)
class Indent:
    """Parts whose line breaks start one level deeper."""

    parts: tuple[Doc, ...]


@dataclass(frozen=True)
class Line:
    """A possible line break: when not taken, a space (or nothing, if ``soft``)."""

    soft: bool


@dataclass(frozen=True)
class IfBreak:
    """Text written only when the enclosing group breaks (a trailing comma, a parenthesis)."""

    text: str


SOFT = Line(soft=True)
SPACE = Line(soft=False)
_FLAT, _BREAK = False, True


def render(doc: Doc, width: int) -> str:
    """The text of ``doc`` in lines of at most ``width`` columns, where the breaks allow."""
    out: list[str] = []
    column = 0
    stack: list[tuple[int, bool, Doc]] = [(0, _BREAK, doc)]
    while stack:
        indent, mode, part = stack.pop()
        if isinstance(part, str):
            out.append(part)
            column += len(part)
        elif isinstance(part, tuple):
            stack.extend((indent, mode, p) for p in reversed(part))
        elif isinstance(part, Indent):
            stack.extend((indent + INDENT_WIDTH, mode, p) for p in reversed(part.parts))
        elif isinstance(part, Group):
            flat = mode == _FLAT or _fits((indent, _FLAT, part.parts), stack, width - column)
            stack.append((indent, _FLAT if flat else _BREAK, part.parts))
        elif isinstance(part, Line):
            if mode == _FLAT:
                out.append("" if part.soft else " ")
                column += 0 if part.soft else 1
            else:
                out.append("\n" + " " * indent)
                column = indent
        elif isinstance(part, IfBreak) and mode == _BREAK:
            out.append(part.text)
            column += len(part.text)
    return "".join(out)


def _fits(first: tuple[int, bool, Doc], rest: Sequence[tuple[int, bool, Doc]], room: int) -> bool:
    """Whether ``first``, flat, and what follows it up to the next line break fit in ``room``."""
    pending = [first]
    next_rest = len(rest)
    while room >= 0:
        if not pending:
            if next_rest == 0:
                return True
            next_rest -= 1
            pending.append(rest[next_rest])
            continue
        indent, mode, part = pending.pop()
        if isinstance(part, str):
            room -= len(part)
        elif isinstance(part, tuple):
            pending.extend((indent, mode, p) for p in reversed(part))
        elif isinstance(part, Indent):
            pending.extend((indent, mode, p) for p in reversed(part.parts))
        elif isinstance(part, Group):
            pending.append((indent, mode, part.parts))
        elif isinstance(part, Line):
            if mode == _BREAK:
                return True
            room -= 0 if part.soft else 1
        elif isinstance(part, IfBreak) and mode == _BREAK:
            room -= len(part.text)
    return False


def has_group(doc: Doc) -> bool:
    """Whether ``doc`` has a group, somewhere it may break."""
    if isinstance(doc, Group):
        return True
    if isinstance(doc, Indent):
        return has_group(doc.parts)
    return isinstance(doc, tuple) and any(has_group(part) for part in doc)
