"""Where the .ph file put its comments and blank lines.

The syntax tree keeps comments as text only; the blank lines between statements
and the line a comment stood on are not in it.  ``SourceLayout`` reads them
back from the .ph text, so the Python can keep the file's spacing and put a
comment that followed ``{`` on the line of the Python header.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.syntax.lexer import Comment, tokenize

# One line between two constructs: None for a blank line, else a comment's text.
GapLine = str | None


@dataclass(frozen=True)
class SourceLayout:
    """The lines of a .ph file: which are blank, which hold only a comment, which hold code."""

    lines: tuple[str, ...]
    comments: dict[int, Comment]  # line → the comment on it (a line holds at most one)
    code_lines: frozenset[int]

    @classmethod
    def of(cls, text: str, file: str) -> SourceLayout:
        tokens, comments = tokenize(text, file)
        code_lines = frozenset(t.line for t in tokens if t.kind not in ("newline", "eof"))
        lines = tuple(text.removeprefix("\ufeff").splitlines())
        return cls(lines, {c.line: c for c in comments}, code_lines)

    def gap_before(self, line: int, after: int) -> tuple[GapLine, ...]:
        """The blank and comment-only lines just above ``line``, below line ``after``."""
        found: list[GapLine] = []
        for number in range(line - 1, after, -1):
            if number in self.code_lines:
                break
            comment = self.comments.get(number)
            found.append(comment.text if comment is not None else None)
        found.reverse()
        return tuple(found)

    def gap_after(self, line: int) -> tuple[GapLine, ...]:
        """The blank and comment-only lines below ``line``, up to the next code or the end."""
        found: list[GapLine] = []
        for number in range(line + 1, len(self.lines) + 1):
            if number in self.code_lines:
                break
            comment = self.comments.get(number)
            found.append(comment.text if comment is not None else None)
        while found and found[-1] is None:
            found.pop()
        return tuple(found)

    def comment_after(self, line: int, col: int) -> str | None:
        """The text of the comment on ``line`` that starts after column ``col``, if any."""
        comment = self.comments.get(line)
        if comment is not None and comment.col > col:
            return comment.text
        return None


def place_comments(comments: tuple[str, ...], gap: tuple[GapLine, ...]) -> tuple[GapLine, ...]:
    """``comments`` as lines, with the blank lines the source had between the first of them.

    ``gap`` is what stood above the construct; its comments must be the first of
    ``comments`` (the rest stood inside the construct and follow without blanks).
    Where they are not, the comments come back without blank lines.
    """
    in_gap = tuple(line for line in gap if line is not None)
    if comments[: len(in_gap)] != in_gap:
        return comments
    return gap + comments[len(in_gap) :]
