"""Python comments as Phobos trivia.

``ast`` drops comments, so they are read with ``tokenize`` and handed out in source
order while the translators walk the tree, by the rules of the .ph parser:

- *leading*: comments before a statement, parameter or item (and comments inside a
  multi-line statement or header, which have nowhere else to go);
- *trailing*: the comment at the end of a simple statement's, parameter's or
  constant's last line;
- a block's *end comments*: comments after its last statement, indented deeper than
  the statement that owns the block;
- the module's *end comments*: comments after the last item, when nothing else follows.

A comment on a compound statement's header line (``for ...:  # note``) leads the first
statement of its body, as ``for ... {  // note`` does in a .ph file.
"""

from __future__ import annotations

import bisect
import io
import tokenize
from dataclasses import dataclass

Position = tuple[int, int]  # (line, 1-based column)

_OPENERS = frozenset("([{")
_CLOSERS = frozenset(")]}")


@dataclass(frozen=True)
class Comment:
    line: int
    col: int
    text: str
    own_line: bool

    @property
    def position(self) -> Position:
        return (self.line, self.col)


def comment_text(token: str) -> str:
    """``# note`` → ``note``: the marker, its first space and trailing blanks are not text."""
    text = token[1:].rstrip()
    return text[1:] if text.startswith(" ") else text


class CommentStream:
    """The file's comments in order; each is taken once, by the first construct that claims it."""

    def __init__(self, source: str) -> None:
        self._comments: list[Comment] = []
        self._header_colons: list[Position] = []
        self._else_keywords: list[Position] = []
        self._next = 0
        self._scan(source)

    def _scan(self, source: str) -> None:
        depth = 0
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            line, col0 = token.start
            if token.type == tokenize.COMMENT:
                own_line = not token.line[:col0].strip()
                self._comments.append(Comment(line, col0 + 1, comment_text(token.string), own_line))
            elif token.type == tokenize.OP and token.string in _OPENERS:
                depth += 1
            elif token.type == tokenize.OP and token.string in _CLOSERS:
                depth -= 1
            elif token.type == tokenize.OP and token.string == ":" and depth == 0:
                self._header_colons.append((line, col0 + 1))
            elif token.type == tokenize.NAME and token.string == "else":
                self._else_keywords.append((line, col0 + 1))

    # ------------------------------------------------------------------ positions

    def header_end(self, start: Position) -> Position:
        """Where the ``:`` ending the compound statement that starts at ``start`` stands."""
        return self._header_colons[bisect.bisect_left(self._header_colons, start)]

    def else_keyword(self, after: Position) -> Position:
        """Where the ``else`` of an if whose then-block ends at ``after`` stands."""
        return self._else_keywords[bisect.bisect_left(self._else_keywords, after)]

    # ------------------------------------------------------------------ taking

    def _peek(self) -> Comment | None:
        return self._comments[self._next] if self._next < len(self._comments) else None

    def take_before(self, position: Position) -> list[Comment]:
        """Every comment not yet taken that stands before ``position``."""
        taken: list[Comment] = []
        while (comment := self._peek()) is not None and comment.position < position:
            taken.append(comment)
            self._next += 1
        return taken

    def leading(self, position: Position) -> tuple[str, ...]:
        return tuple(c.text for c in self.take_before(position))

    def trailing(self, line: int) -> str | None:
        """The comment at the end of ``line``, if it is there and not yet taken."""
        comment = self._peek()
        if comment is not None and comment.line == line and not comment.own_line:
            self._next += 1
            return comment.text
        return None

    def block_end(self, owner_col: int, limit: Position) -> tuple[str, ...]:
        """Comments after a block's last statement, indented deeper than its owner, before ``limit``."""
        taken: list[str] = []
        while (
            (comment := self._peek()) is not None
            and comment.position < limit
            and comment.col > owner_col
        ):
            taken.append(comment.text)
            self._next += 1
        return tuple(taken)

    def rest(self) -> tuple[str, ...]:
        """Every comment not yet taken (the module's end comments)."""
        taken = tuple(c.text for c in self._comments[self._next :])
        self._next = len(self._comments)
        return taken
