"""Names in the Python spelling: which Phobos names Python can spell, and ``ph.<name>``."""

from __future__ import annotations

import keyword

import libcst as cst

from phobos.compile.diagnostics import error
from phobos.compile.span import Span

LANG_ALIAS = "ph"


def python_name(name: str, span: Span) -> cst.Name:
    """``name`` as a Python name; a ``PhobosError`` at ``span`` where Python cannot spell it."""
    if keyword.iskeyword(name):
        raise error(
            span,
            f"`{name}` is a Python keyword, so the Python spelling cannot use it as a name",
            help=f"rename it in the .ph file (say `{name}_`) and convert again",
        )
    if name == LANG_ALIAS:
        raise error(
            span,
            f"`{LANG_ALIAS}` names phobos.lang in the Python spelling",
            help=f"rename it in the .ph file (say `{name}_`) and convert again",
        )
    return cst.Name(name)


def lang(*path: str) -> cst.Attribute:
    """``ph.a.b``: a name of phobos.lang."""
    node: cst.BaseExpression = cst.Name(LANG_ALIAS)
    for part in path:
        node = cst.Attribute(node, cst.Name(part))
    assert isinstance(node, cst.Attribute)
    return node
