"""The tile IR (``nodes``) and its text form (``format_kernel``)."""

from phobos.compile.ir.printer import format_expr, format_kernel

__all__ = ["format_expr", "format_kernel"]
