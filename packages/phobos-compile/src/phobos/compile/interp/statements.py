"""Statements compiled to closures that run one block; each returns True once the block returned."""

from __future__ import annotations

from collections.abc import Sequence

from phobos.compile.diagnostics import error
from phobos.compile.interp import access, atomics, debugging
from phobos.compile.interp.dtypes import compute_dtype
from phobos.compile.interp.expressions import ExprCompiler
from phobos.compile.interp.frame import Frame, Step
from phobos.compile.ir import nodes as ir


class StmtCompiler:
    def __init__(self, expr: ExprCompiler) -> None:
        self.expr = expr

    def body(self, stmts: Sequence[ir.Stmt]) -> Step:
        steps = [self.stmt(s) for s in stmts]
        if len(steps) == 1:
            return steps[0]

        def run_all(frame: Frame) -> bool:
            return any(step(frame) for step in steps)

        return run_all

    def stmt(self, node: ir.Stmt) -> Step:
        if isinstance(node, (ir.Define, ir.Assign)):
            return self._bind(node)
        if isinstance(node, ir.Store):
            return access.compile_store(node, self.expr, self.expr.launch, self.expr.tracker)
        if isinstance(node, (ir.AtomicAdd, ir.AtomicMax, ir.AtomicXchg, ir.AtomicCas)):
            return atomics.compile_atomic(node, self.expr, self.expr.launch, self.expr.tracker)
        if isinstance(node, ir.Trace):
            return debugging.compile_trace(node, self.expr)
        if isinstance(node, ir.DeviceAssert):
            return debugging.compile_assert(node, self.expr)
        if isinstance(node, ir.For):
            return self._for(node)
        if isinstance(node, ir.If):
            return self._if(node)
        if isinstance(node, ir.While):
            return self._while(node)
        if isinstance(node, ir.Return):
            return lambda frame: True
        raise TypeError(f"not a statement: {node!r}")

    def _bind(self, node: ir.Define | ir.Assign) -> Step:
        name, value = node.var.name, self.expr(node.value)

        def bind(frame: Frame) -> bool:
            frame.variables[name] = value(frame)
            return False

        return bind

    def _for(self, node: ir.For) -> Step:
        name = node.var.name
        start, stop, step = self.expr(node.start), self.expr(node.stop), self.expr(node.step)
        body = self.body(node.body)
        make = compute_dtype(node.var.type.dtype).type

        def loop(frame: Frame) -> bool:
            first, end, stride = int(start(frame)), int(stop(frame)), int(step(frame))
            if stride <= 0:
                raise error(
                    node.span,
                    f"{frame.where()}: the loop's step is {stride}; it must be positive",
                )
            for value in range(first, end, stride):
                frame.variables[name] = make(value)
                if body(frame):
                    return True
            return False

        return loop

    def _if(self, node: ir.If) -> Step:
        cond, then = self.expr(node.cond), self.body(node.then)
        orelse = self.body(node.orelse)
        return lambda frame: then(frame) if cond(frame) else orelse(frame)

    def _while(self, node: ir.While) -> Step:
        cond, body = self.expr(node.cond), self.body(node.body)

        def loop(frame: Frame) -> bool:
            while cond(frame):
                if body(frame):
                    return True
            return False

        return loop
