"""Show a Phobos error the way Python shows a SyntaxError: the user's line, not our frames.

A ``PhobosError`` already names the user's file, line and column and shows the line
with a caret, so the frames of the compiler that found it only hide the message.
Inside ``user_facing()`` such an error loses its internal traceback; set
``PHOBOS_DEBUG=1`` to keep every frame.
"""

from __future__ import annotations

import os
from types import TracebackType

from phobos.compile.diagnostics import PhobosError


class user_facing:
    """Context manager: drop the compiler's frames from a ``PhobosError`` passing through."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if isinstance(error, PhobosError) and not os.environ.get("PHOBOS_DEBUG"):
            error.__traceback__ = None
            error.__suppress_context__ = True
        return False
