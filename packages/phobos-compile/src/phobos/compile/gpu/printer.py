"""The GPU IR as text (``phobos-compile --emit gpuir``).

One op a line, MLIR-like: ``%12 = binary{op=mul} %10, %11 : tile<f32>[128, 64] #L3``.
Layouts print once, as ``#L<n> = #layout<...>`` lines before the kernel, and
types name them; regions are indented between braces, with their arguments::

    %20 = for %5, %7, %8, %19 (%kv: i32, %acc: tile<f32>[128, 64] #L1) {
        ...
        yield %31
    }
"""

from __future__ import annotations

from phobos.compile.gpu import ir
from phobos.compile.gpu.layouts import Layout

INDENT = "    "


class _Names:
    def __init__(self) -> None:
        self.values: dict[ir.Value, str] = {}
        self.layouts: dict[Layout, str] = {}
        self.used: set[str] = set()

    def value(self, v: ir.Value) -> str:
        if v not in self.values:
            base = v.name or "v"
            name = f"%{base}"
            n = 1
            while name in self.used:
                name = f"%{base}.{n}"
                n += 1
            self.used.add(name)
            self.values[v] = name
        return self.values[v]

    def layout(self, layout: Layout) -> str:
        if layout not in self.layouts:
            self.layouts[layout] = f"#L{len(self.layouts)}"
        return self.layouts[layout]

    def type(self, t: ir.Type) -> str:
        if isinstance(t, ir.Tile) and t.layout is not None:
            return f"{t} {self.layout(t.layout)}"
        return str(t)


def format_kernel(kernel: ir.Kernel) -> str:
    names = _Names()
    values = ", ".join(f"{n}={v}" for n, v in kernel.values) or "none"
    head = (
        f"gpu.kernel {kernel.name} [{values}] threads={kernel.threads} arch={kernel.arch} "
        f"index=i{kernel.index_width}"
    )
    if kernel.producer_threads:
        head += f" producer_threads={kernel.producer_threads}"
    if kernel.min_ctas is not None:
        head += f" min_ctas={kernel.min_ctas}"
    if kernel.thread_values_pinned:
        head += " thread_values_pinned"
    if kernel.shared_bytes:
        head += f" smem={kernel.shared_bytes}"
    body = _block(kernel.body, names, 1)
    layouts = [f"{name} = {layout}" for layout, name in names.layouts.items()]
    return "\n".join([*layouts, head + " {", *body, "}"]) + "\n"


def format_op(op: ir.Op) -> str:
    """One op alone (operands by their own names), for messages and tests."""
    return "\n".join(_op(op, _Names(), 0))


def _block(block: ir.Block, names: _Names, depth: int) -> list[str]:
    lines: list[str] = []
    for op in block.ops:
        lines += _op(op, names, depth)
    return lines


def _attr(value: object) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join("_" if v is None else str(v) for v in value) + ")"
    if isinstance(value, Layout):
        return str(value)
    return str(value)


def _op(op: ir.Op, names: _Names, depth: int) -> list[str]:
    pad = INDENT * depth
    operands = ", ".join(names.value(v) for v in op.operands)
    attrs = op.attributes()
    attr_text = ""
    if attrs:
        attr_text = "{" + ", ".join(f"{k}={_attr(v)}" for k, v in attrs.items()) + "}"
    results = ", ".join(names.value(v) for v in op.results)
    types = ", ".join(names.type(v.type) for v in op.results)
    line = f"{pad}{results + ' = ' if results else ''}{op.NAME}{attr_text}"
    if operands:
        line += f" {operands}"
    if not op.regions:
        return [line + (f" : {types}" if types else "")]
    lines = [line + (f" -> {types}" if types else "")]
    for region in op.regions:
        args = ", ".join(f"{names.value(a)}: {names.type(a.type)}" for a in region.args)
        lines[-1] += f" ({args}) {{" if args else " {"
        lines += _block(region, names, depth + 1)
        lines.append(f"{pad}}}")
    return lines
