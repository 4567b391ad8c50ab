"""The Phobos syntax: the tree (``ast``), the parser and the canonical printer."""

from phobos.compile.syntax.lexer import KEYWORDS, RESERVED_NAMES
from phobos.compile.syntax.parser import parse
from phobos.compile.syntax.printer import format_module, format_with_span_map, remap_spans

__all__ = [
    "KEYWORDS",
    "RESERVED_NAMES",
    "format_module",
    "format_with_span_map",
    "parse",
    "remap_spans",
]
