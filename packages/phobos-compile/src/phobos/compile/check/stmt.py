"""Lowering statements: bindings, assignments and stores, loops, branches, returns."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from phobos.compile.check import scope as names
from phobos.compile.check.atomics import gives_value, is_atomic_call, lower_atomic
from phobos.compile.check.broadcast import broadcast_shapes, is_partial, shape_of, to_shape
from phobos.compile.check.debugging import DEBUG_CALLS, DebugStatements
from phobos.compile.check.expr import ExprLowerer
from phobos.compile.check.inline import inline_fn
from phobos.compile.check.messages import describe, shown, type_name
from phobos.compile.check.scope import Binding, PoisonedUse, Scope
from phobos.compile.check.spelling import Spelling
from phobos.compile.check.triton_names import triton_hint
from phobos.compile.check.types import Literal, Value, is_int, literal_fits, make_const
from phobos.compile.diagnostics import PhobosError, error
from phobos.compile.ir import nodes as ir
from phobos.compile.limits import MAX_NESTING
from phobos.compile.span import Span
from phobos.compile.syntax import ast


@contextmanager
def _leaving(ctx) -> Iterator[None]:
    """Close the block's level when it ends, however it ends."""
    try:
        yield
    finally:
        ctx.level -= 1


def cannot_assign_help(kind: str, name: str, spelling: Spelling) -> str:
    """What to write instead of assigning to the ``kind`` (a scope kind) ``name``."""
    copy = f"copy it into a var first: `{spelling.var(name + '_v', name)}`"
    var = spelling.lang("var")
    return {
        names.TENSOR: f"store into a window of it instead: `{spelling.windows(name)} = ...`",
        names.SCALAR: copy,
        names.EXTENT: copy,
        names.CONST: f"constants never change; use a `{var}` for a value that does",
        names.TUNE: f"compile-time values never change; use a `{var}` for a value that does",
        names.LOOP: "the loop sets it; copy it into a var to change it",
        names.FN_PARAM: copy,
    }[kind]


class StmtLowerer(DebugStatements, ExprLowerer):
    """Lowers a block of statements, emitting into the context's current statement list."""

    in_fn = False

    def block(self, block: ast.Block, scope: Scope) -> tuple[ir.Stmt, ...]:
        """The block's statements; a statement with an error is recorded and skipped."""
        inner = scope.child()
        ctx = self.ctx
        ctx.level += 1
        if ctx.level > MAX_NESTING:
            ctx.level -= 1
            raise self.too_deep(block.span)
        with ctx.collect() as out, _leaving(ctx):
            for stmt in block.body:
                try:
                    self.statement(stmt, inner)
                except (PhobosError, PoisonedUse) as failure:
                    if isinstance(failure, PhobosError):
                        self.ctx.errors += failure.diagnostics
                    if isinstance(stmt, (ast.Let, ast.Var)):
                        inner.poison(stmt.name, Binding(names.POISONED, stmt.name, stmt.span))
        return tuple(out)

    def statement(self, stmt: ast.Stmt, scope: Scope) -> None:
        method = getattr(self, "_stmt_" + type(stmt).__name__.lower())
        method(stmt, scope)

    def inline_call(self, fn: ast.Function, call: ast.Call, scope: Scope) -> Value | None:
        return inline_fn(self, fn, call, scope)

    # ------------------------------------------------------------------ bindings

    def _stmt_let(self, stmt: ast.Let, scope: Scope) -> None:
        self._bind(stmt.name, stmt.value, stmt.span, scope, mutable=False)

    def _stmt_var(self, stmt: ast.Var, scope: Scope) -> None:
        self._bind(stmt.name, stmt.value, stmt.span, scope, mutable=True)

    def _bind(self, name: str, expr: ast.Expr, span: Span, scope: Scope, mutable: bool) -> None:
        kind = names.VAR if mutable else names.LET
        if isinstance(expr, ast.Call) and is_atomic_call(expr) and gives_value(expr.func):
            var = lower_atomic(
                self, expr, scope, lambda t: self.ctx.new_variable(name, t, mutable, span)
            )
            assert var is not None
            scope.declare(name, Binding(kind, var, span))
            return
        value = self.typed(expr, scope)
        var = self.ctx.new_variable(name, value.type, mutable, span)
        scope.declare(name, Binding(kind, var, span))
        self.ctx.emit(ir.Define(var, value, span))

    # ------------------------------------------------------------------ assignment

    def _stmt_assign(self, stmt: ast.Assign, scope: Scope) -> None:
        value_expr = stmt.value
        if stmt.op is not None:
            value_expr = ast.Binary(stmt.op, stmt.target, stmt.value, stmt.span)
        if isinstance(stmt.target, ast.Subscript):
            self._store(stmt.target, value_expr, stmt, scope)
            return
        if not isinstance(stmt.target, ast.Name):
            raise error(stmt.target.span, "only a variable or a tensor window can be assigned")
        name = stmt.target.id
        sp = self.ctx.spelling
        found = scope.lookup(name, stmt.target.span, sp)
        if found.kind == names.LET:
            raise error(
                stmt.span,
                f"cannot assign twice to '{name}': it is bound with let",
                help=f"declare it with var: `{sp.var(name)}`",
            )
        if found.kind != names.VAR:
            raise error(
                stmt.span,
                f"cannot assign to the {found.kind} '{name}'",
                help=cannot_assign_help(found.kind, name, sp),
            )
        var = found.value
        assert isinstance(var, ir.Variable)
        if stmt.op is None and is_atomic_call(value_expr) and gives_value(value_expr.func):
            self._assign_old_value(name, var, value_expr, scope)
            return
        value = self._coerce(self.value(value_expr, scope), var.type, value_expr, f"'{name}'")
        if is_partial(value) and not is_partial_type(var.type):
            self.ctx.wants_partial.add(var.name)
        self.ctx.emit(ir.Assign(var, value, stmt.span))

    def _assign_old_value(self, name: str, var: ir.Variable, call: ast.Call, scope: Scope) -> None:
        """``x = atomic_cas(...)``: the atomic defines a new variable, then ``x`` takes its value."""

        def old_value(type: ir.ScalarT) -> ir.Variable:
            if type != var.type:
                raise error(
                    call.span,
                    f"'{name}' is a {shown(var.type)}, but {call.func} gives a {type} old value",
                    help=f"declare a new name for it: `{self.ctx.spelling.let('old', describe(call))}`",
                )
            return self.ctx.new_variable("old", type, False, call.span)

        old = lower_atomic(self, call, scope, old_value)
        assert old is not None
        self.ctx.emit(ir.Assign(var, ir.Read(old, old.type, call.span), call.span))

    def _coerce(self, got: Value, want: ir.IRType, expr: ast.Expr, what: str) -> ir.Expr:
        """``got`` as a value of ``want``'s type and shape; literals adapt, nothing else does."""
        if isinstance(got, Literal):
            if not literal_fits(got, want.dtype):
                raise error(
                    expr.span, f"a {got.describe()} cannot be assigned to {what} ({shown(want)})"
                )
            got = make_const(got, want.dtype, self.ctx.spelling, expr.span)
        if got.type.dtype != want.dtype:
            raise error(
                expr.span,
                f"{what} holds {want.dtype}, but the value is {got.type.dtype}",
                help=f"convert it: `{self.ctx.spelling.call(want.dtype, describe(expr))}`",
            )
        if shape_of(got) != (want.shape if isinstance(want, ir.TileT) else None):
            raise error(
                expr.span,
                f"{what} is a {shown(want)}, but the value is a {shown(got.type)}",
                help="a var keeps its shape; declare a new name for a value of another shape",
            )
        return got

    def _store(self, target: ast.Subscript, value_expr: ast.Expr, stmt: ast.Assign, scope: Scope):
        tensor, indices, value = self.window_update(target, value_expr, stmt.span, scope)
        self.ctx.emit(ir.Store(tensor, indices, value, stmt.span))

    def window_update(
        self, target: ast.Subscript, value_expr: ast.Expr, span: Span, scope: Scope
    ) -> tuple[ir.TensorParam, tuple[ir.TensorIndex, ...], ir.Expr]:
        """The tensor, indices and value of a store or atomic: the value broadcast to the window."""
        base = target.base
        found = scope.find(base.id) if isinstance(base, ast.Name) else None
        if found is None or found.kind != names.TENSOR:
            if isinstance(base, ast.Name):
                scope.lookup(base.id, base.span, self.ctx.spelling)
            raise error(
                target.span,
                "only a window of a tensor parameter can be stored into",
                help="tiles are values: build a new one, e.g. with "
                f"`{self.ctx.spelling.call('where', 'c', 'a', 'b')}`",
            )
        tensor = found.value
        assert isinstance(tensor, ir.TensorParam)
        indices, shape = self.tensor_indices(tensor, target, scope)
        got = self.element_value(tensor, value_expr, scope)
        if shape:
            value_shape = shape_of(got)
            if (
                value_shape is not None
                and broadcast_shapes([value_shape, shape], span, self.ctx.spelling) != shape
            ):
                raise error(
                    span,
                    f"a {type_name(got)} does not fit the window's shape {list(shape)}",
                    help="the value must broadcast to the window",
                )
            got = to_shape(got, shape, value_expr.span) if value_shape != shape else got
        elif isinstance(got.type, ir.TileT):
            raise error(
                span,
                f"a {shown(got.type)} cannot be stored into one element of '{tensor.name}'",
                help=f"store into a window: `{self.ctx.spelling.windows('t')} = ...`, "
                "or reduce the tile first",
            )
        return tensor, indices, got

    def element_value(self, tensor: ir.TensorParam, expr: ast.Expr, scope: Scope) -> ir.Expr:
        """``expr`` as a value of the tensor's element type (a literal adapts, nothing else)."""
        got = self.value(expr, scope)
        if isinstance(got, Literal):
            if not literal_fits(got, tensor.dtype):
                raise error(expr.span, f"a {got.describe()} cannot be stored into {tensor.dtype}")
            got = make_const(got, tensor.dtype, self.ctx.spelling, expr.span)
        if got.type.dtype != tensor.dtype:
            raise error(
                expr.span,
                f"'{tensor.name}' holds {tensor.dtype}, but the value is {got.type.dtype}",
                help=f"convert it: `{self.ctx.spelling.call(tensor.dtype, describe(expr))}`",
            )
        return got

    # ------------------------------------------------------------------ control flow

    def _stmt_exprstmt(self, stmt: ast.ExprStmt, scope: Scope) -> None:
        call = stmt.value
        if isinstance(call, ast.Call) and call.func in DEBUG_CALLS:
            self.debug_statement(call, scope)
            return
        if isinstance(call, ast.Call) and is_atomic_call(call):
            lower_atomic(self, call, scope, None)
            return
        if isinstance(call, ast.Call) and call.func in self.ctx.functions:
            self.inline_call(self.ctx.functions[call.func], call, scope)
            return
        if isinstance(call, ast.Call) and triton_hint(call, self.ctx.spelling) is not None:
            raise self._unknown_function(call)
        raise error(
            stmt.span,
            "this expression's value is unused",
            help=f"bind it with `{self.ctx.spelling.let('x')}` or store it into a tensor",
        )

    def _stmt_for(self, stmt: ast.For, scope: Scope) -> None:
        parts = [stmt.start, stmt.stop] + ([stmt.step] if stmt.step is not None else [])
        values = [self.value(e, scope) for e in parts]
        for expr, got in zip(parts, values):
            bad = isinstance(got, Literal) and not got.is_int
            if not isinstance(got, Literal):
                bad = isinstance(got.type, ir.TileT) or not is_int(got.type.dtype)
            if bad:
                raise error(
                    expr.span,
                    f"loop bounds and step must be integer scalars, got {type_name(got)}",
                    help="use an integer expression such as "
                    f"`{self.ctx.spelling.loop('0', 'N', 'BLOCK')}`",
                )
        step = values[2] if stmt.step is not None else None
        if stmt.step is not None and isinstance(step, (Literal, ir.Const)) and step.value <= 0:
            raise error(stmt.step.span, f"a loop step must be positive, got {step.value}")
        typed = self.unify(parts, values, stmt.span)
        dtype = typed[0].type.dtype
        step_ir = typed[2] if len(typed) == 3 else ir.Const(1, ir.ScalarT(dtype), stmt.span)
        inner = scope.child()
        var = self.ctx.new_variable(stmt.var, ir.ScalarT(dtype), False, stmt.span)
        inner.declare(stmt.var, Binding(names.LOOP, var, stmt.span))
        body = self.block(stmt.body, inner)
        self.ctx.emit(ir.For(var, typed[0], typed[1], step_ir, body, stmt.span))

    def _stmt_if(self, stmt: ast.If, scope: Scope) -> None:
        cond = self.condition(stmt.cond, scope, "if")
        then = self.block(stmt.then, scope)
        orelse = self.block(stmt.orelse, scope) if stmt.orelse is not None else ()
        self.ctx.emit(ir.If(cond, then, orelse, stmt.span))

    def _stmt_while(self, stmt: ast.While, scope: Scope) -> None:
        with self.ctx.collect() as pre:
            cond = self.condition(stmt.cond, scope, "while")
        if pre:
            raise error(
                stmt.cond.span,
                "a while condition cannot call a fn (it is evaluated on every iteration)",
                help="compute it into a var before the loop and again at the end of the body",
            )
        body = self.block(stmt.body, scope)
        self.ctx.emit(ir.While(cond, body, stmt.span))

    def condition(self, expr: ast.Expr, scope: Scope, keyword: str) -> ir.Expr:
        got = self.typed(expr, scope)
        if isinstance(got.type, ir.TileT):
            raise error(
                expr.span,
                f"the condition of `{keyword}` must be a block-uniform scalar, not a {shown(got.type)}",
                help=f"choose per lane with `{self.ctx.spelling.call('where', 'c', 'a', 'b')}`, "
                "or reduce the tile first",
            )
        if got.type.dtype != "bool":
            raise error(
                expr.span,
                f"the condition of `{keyword}` must be bool, got {shown(got.type)}",
                help=f"compare it, e.g. `{describe(expr)} != 0`",
            )
        return got

    def _stmt_return(self, stmt: ast.Return, scope: Scope) -> None:
        if self.in_fn:
            raise error(
                stmt.span,
                "a fn returns only as the last statement of its body",
                help="compute the result into a var and return it at the end",
            )
        if stmt.value is not None:
            raise error(
                stmt.span,
                "a kernel returns no value",
                help="store results into a tensor parameter; write a bare `return` to exit early",
            )
        self.ctx.emit(ir.Return(stmt.span))


def is_partial_type(type: ir.IRType) -> bool:
    return isinstance(type, ir.TileT) and type.partial
