"""A readable, stable text form of a kernel variant (what ``--emit ir`` prints).

Variables print as ``%name``; parameters, extents and ``ctx`` values by name;
each definition shows its type, and ``?`` marks a tile that may have absent lanes::

    kernel saxpy(x: tensor<f32>[N], ..., alpha: f32) [BLOCK=256] {
        %base: index = mul(ctx.block.x, 256)
        store out[%base :+ 256] = add(mul(splat(alpha), load x[%base :+ 256]), ...)
    }
"""

from __future__ import annotations

import math

from phobos.compile.ir import nodes as ir
from phobos.compile.ir.nesting import check_ir_nesting

INDENT = "    "


def format_kernel(kernel: ir.Kernel) -> str:
    """The kernel's text; ``PhobosError`` if it nests deeper than the printer may recurse."""
    check_ir_nesting(kernel)
    params = ", ".join(_param(p) for p in kernel.params)
    values = ", ".join(f"{name}={value}" for name, value in kernel.values)
    header = f"kernel {kernel.name}({params})" + (f" [{values}]" if values else "") + " {"
    return "\n".join([header, *_block(kernel.body, 1), "}"]) + "\n"


def format_expr(expr: ir.Expr) -> str:
    """One expression, nested calls inline."""
    if isinstance(expr, ir.Const):
        return _const(expr.value)
    if isinstance(expr, ir.ScalarArg):
        return expr.param.name
    if isinstance(expr, ir.Extent):
        return expr.name
    if isinstance(expr, ir.CtxValue):
        return f"ctx.{expr.group}.{expr.axis}"
    if isinstance(expr, ir.Read):
        return f"%{expr.var.name}"
    if isinstance(expr, ir.Load):
        return f"load {_access(expr.tensor, expr.indices)}"
    if isinstance(expr, (ir.Unary, ir.Binary)):
        operands = (expr.operand,) if isinstance(expr, ir.Unary) else (expr.left, expr.right)
        return _call(expr.op, *operands)
    if isinstance(expr, ir.Math):
        return _call(expr.fn, *expr.operands)
    if isinstance(expr, ir.Select):
        return _call("select", expr.cond, expr.if_true, expr.if_false)
    if isinstance(expr, ir.Cast):
        return _call(f"cast<{expr.type.dtype}>", expr.operand)
    if isinstance(expr, ir.Splat):
        return _call(f"splat<{_shape(expr.type.shape)}>", expr.operand)
    if isinstance(expr, ir.ExpandDims):
        return _call(f"expand_dims<{expr.axis}>", expr.operand)
    if isinstance(expr, ir.Broadcast):
        return _call(f"broadcast<{_shape(expr.type.shape)}>", expr.operand)
    if isinstance(expr, ir.Reduce):
        return _call(f"reduce_{expr.op}<{expr.axis}>", expr.operand)
    if isinstance(expr, ir.Dot):
        return _call("dot", expr.a, expr.b, expr.acc)
    if isinstance(expr, ir.Transpose):
        return _call("trans", expr.operand)
    if isinstance(expr, ir.Iota):
        return f"iota<{expr.type.dtype}>{_shape(expr.type.shape)}"
    if isinstance(expr, ir.Full):
        return f"full<{expr.type.dtype}>{_shape(expr.type.shape)}({_const(expr.value)})"
    if isinstance(expr, ir.Fill):
        return _call("fill", expr.operand, expr.value)
    raise TypeError(f"not an IR expression: {expr!r}")


def _block(stmts: tuple[ir.Stmt, ...], depth: int) -> list[str]:
    lines: list[str] = []
    pad = INDENT * depth
    for stmt in stmts:
        if isinstance(stmt, ir.Define):
            keyword = "var " if stmt.var.mutable else ""
            lines.append(
                f"{pad}{keyword}%{stmt.var.name}: {stmt.var.type} = {format_expr(stmt.value)}"
            )
        elif isinstance(stmt, ir.Assign):
            lines.append(f"{pad}%{stmt.var.name} = {format_expr(stmt.value)}")
        elif isinstance(stmt, ir.Store):
            access = _access(stmt.tensor, stmt.indices)
            lines.append(f"{pad}store {access} = {format_expr(stmt.value)}")
        elif isinstance(stmt, ir.AtomicAdd):
            access = _access(stmt.tensor, stmt.indices)
            lines.append(f"{pad}atomic_add {access} += {format_expr(stmt.value)}")
        elif isinstance(stmt, (ir.AtomicMax, ir.AtomicXchg, ir.AtomicCas)):
            lines.append(pad + _swap(stmt))
        elif isinstance(stmt, ir.For):
            head = f"for %{stmt.var.name}: {stmt.var.type} in {format_expr(stmt.start)} .. "
            head += f"{format_expr(stmt.stop)} step {format_expr(stmt.step)} {{"
            lines += [pad + head, *_block(stmt.body, depth + 1), pad + "}"]
        elif isinstance(stmt, ir.If):
            lines += [f"{pad}if {format_expr(stmt.cond)} {{", *_block(stmt.then, depth + 1)]
            if stmt.orelse:
                lines += [pad + "} else {", *_block(stmt.orelse, depth + 1)]
            lines.append(pad + "}")
        elif isinstance(stmt, ir.While):
            lines += [f"{pad}while {format_expr(stmt.cond)} {{", *_block(stmt.body, depth + 1)]
            lines.append(pad + "}")
        elif isinstance(stmt, ir.Return):
            lines.append(pad + "return")
        elif isinstance(stmt, ir.Trace):
            when = "" if stmt.when is None else f" when {format_expr(stmt.when)}"
            lines.append(f"{pad}trace{when} {format_expr(stmt.value)}")
        elif isinstance(stmt, ir.DeviceAssert):
            lines.append(f"{pad}assert {format_expr(stmt.cond)}, {stmt.message!r}")
        else:
            raise TypeError(f"not an IR statement: {stmt!r}")
    return lines


def _swap(stmt: ir.AtomicMax | ir.AtomicXchg | ir.AtomicCas) -> str:
    """``%old: i32 = atomic_cas lock[0], 0, 1``; the atomics other than add."""
    name = {ir.AtomicMax: "atomic_max", ir.AtomicXchg: "atomic_xchg", ir.AtomicCas: "atomic_cas"}
    operands = [stmt.compare, stmt.value] if isinstance(stmt, ir.AtomicCas) else [stmt.value]
    text = f"{name[type(stmt)]} {_access(stmt.tensor, stmt.indices)}, "
    text += ", ".join(format_expr(o) for o in operands)
    result = None if isinstance(stmt, ir.AtomicMax) else stmt.result
    if result is None:
        return text
    return f"{'var ' if result.mutable else ''}%{result.name}: {result.type} = {text}"


def _param(param: ir.Param) -> str:
    if isinstance(param, ir.TensorParam):
        return f"{param.name}: tensor<{param.dtype}>[{', '.join(map(str, param.dims))}]"
    return f"{param.name}: {param.dtype}"


def _access(tensor: ir.TensorParam, indices: tuple[ir.TensorIndex, ...]) -> str:
    items = [
        f"{format_expr(i.start)} :+ {i.length}"
        if isinstance(i, ir.WindowIndex)
        else format_expr(i.index)
        for i in indices
    ]
    return f"{tensor.name}[{', '.join(items)}]"


def _call(name: str, *operands: ir.Expr) -> str:
    return f"{name}({', '.join(format_expr(o) for o in operands)})"


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _const(value: int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    return str(value)
