"""Every node under a kernel body: what the kernel-wide choices look at before emission."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields

from phobos.compile.ir import nodes as ir


def walk(body: tuple[ir.Stmt, ...]) -> Iterator[object]:
    """Every statement and expression node under ``body``."""
    stack: list[object] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, tuple):
            stack.extend(node)
            continue
        for f in fields(node):  # type: ignore[arg-type]
            child = getattr(node, f.name)
            if isinstance(child, tuple) or _is_ir(child):
                stack.append(child)


def _is_ir(value: object) -> bool:
    return type(value).__module__ == ir.__name__ and not isinstance(
        value, (ir.ScalarT, ir.TileT, ir.Variable, ir.TensorParam, ir.ScalarParam)
    )
