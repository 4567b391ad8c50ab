"""Source positions: which file, line and column a construct came from."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A range in a user's file; lines and columns count from 1, ``end_col`` is exclusive."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def to(self, other: Span) -> Span:
        """The span from the start of this one to the end of ``other``."""
        return Span(self.file, self.line, self.col, other.end_line, other.end_col)


NO_SPAN = Span("<unknown>", 0, 0, 0, 0)


@dataclass(frozen=True)
class SpanMap:
    """Where each construct of a generated Phobos text came from in the user's file.

    ``entries`` pairs a span in the Phobos text with the span of the construct in
    the user's file (the Python source, say).  The printer records one entry per
    printed node; ``lookup`` maps a span found while compiling the text back to the
    innermost recorded construct that encloses it (so ``a + b`` and its operand
    ``a``, which start together, map to different constructs), else the innermost
    one that contains its start.
    """

    entries: tuple[tuple[Span, Span], ...] = ()

    def lookup(self, span: Span) -> Span:
        best: tuple[Span, Span] | None = None
        for text_span, source_span in self.entries:
            if _encloses(text_span, span) and (best is None or _encloses(best[0], text_span)):
                best = (text_span, source_span)
        if best is None:
            for text_span, source_span in self.entries:
                if _contains(text_span, span.line, span.col) and (
                    best is None or _contains(best[0], text_span.line, text_span.col)
                ):
                    best = (text_span, source_span)
        return best[1] if best else span


def _encloses(outer: Span, inner: Span) -> bool:
    starts_inside = _contains(outer, inner.line, inner.col)
    ends_inside = (inner.end_line, inner.end_col) <= (outer.end_line, outer.end_col)
    return starts_inside and ends_inside


def _contains(outer: Span, line: int, col: int) -> bool:
    after_start = (line, col) >= (outer.line, outer.col)
    before_end = (line, col) < (outer.end_line, outer.end_col)
    return after_start and before_end
