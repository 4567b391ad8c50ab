"""Top-level definitions → Phobos items: ``@ph.kernel`` and ``@ph.func`` defs, ``ph.const``s.

Every other top-level statement (imports, host functions, ``if __name__ ...``) is
Python's business and is skipped, with its comments.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from phobos.compile.span import Span
from phobos.compile.syntax import ast as ph
from phobos.frontend.aliases import LangAliases
from phobos.frontend.comments import Comment, CommentStream, Position
from phobos.frontend.expressions import ExpressionTranslator
from phobos.frontend.nesting import check_nesting_of
from phobos.frontend.source import SourceFile
from phobos.frontend.statements import (
    StatementTranslator,
    docstring_lines,
    end_of,
    is_docstring,
    start_of,
)

END_OF_FILE: Position = (1 << 62, 0)
DECORATORS = frozenset({"kernel", "func", "autotune"})


@dataclass(frozen=True)
class Decorators:
    """What a def's ``ph.`` decorators say it is."""

    kind: str | None  # "kernel", "func", or None for a host function
    autotune: ast.Call | None


def translate_module(
    source: SourceFile, tree: ast.Module, imported: LangAliases | None = None
) -> ph.Module:
    return ModuleTranslator(source, tree, imported).module()


class ModuleTranslator:
    def __init__(
        self, source: SourceFile, tree: ast.Module, imported: LangAliases | None = None
    ) -> None:
        self.source = source
        self.tree = tree
        self.aliases = LangAliases.of_module(source, tree)
        if imported is not None:
            self.aliases = self.aliases.with_imported(imported)
        self.comments = CommentStream(source.text)
        functions = frozenset(
            stmt.name
            for stmt in tree.body
            if isinstance(stmt, ast.FunctionDef) and self.decorators(stmt).kind == "func"
        )
        self.exprs = ExpressionTranslator(source, self.aliases, functions)
        self.stmts = StatementTranslator(self.exprs, self.comments)

    def module(self) -> ph.Module:
        items: list[ph.Item] = []
        last_is_item = False
        body = self.tree.body
        for index, stmt in enumerate(body):
            next_start = item_start(body[index + 1]) if index + 1 < len(body) else END_OF_FILE
            before = self.comments.take_before(item_start(stmt))
            item = self.item(stmt, module_leading(before), next_start)
            last_is_item = item is not None
            if item is None:
                self.comments.take_before(end_of(stmt))
            else:
                items.append(item)
        end_comments = self.comments.rest() if last_is_item else ()
        lines = self.source.lines
        span = Span(
            self.source.filename, 1, 1, max(len(lines), 1), len(lines[-1]) + 1 if lines else 1
        )
        return ph.Module(
            tuple(items),
            end_comments,
            span=span,
            python_alias=self.aliases.python_alias,
            host_constants=host_constants(self.tree),
        )

    def item(
        self, stmt: ast.stmt, leading: tuple[str, ...], next_start: Position
    ) -> ph.Item | None:
        if isinstance(stmt, ast.AnnAssign):
            if self.aliases.path(stmt.annotation) is not None:
                self.check_nesting(stmt)
            return self.const(stmt, leading, next_start)
        if isinstance(stmt, ast.AsyncFunctionDef) and self.decorators(stmt).kind is not None:
            raise self.source.reject(stmt, "a kernel cannot be async", help="write a plain def")
        if not isinstance(stmt, ast.FunctionDef):
            return None
        decorators = self.decorators(stmt)
        if decorators.kind is not None:
            self.check_nesting(stmt)
        if decorators.kind == "kernel":
            return self.kernel(stmt, decorators.autotune, leading, next_start)
        if decorators.kind == "func":
            return self.function(stmt, leading, next_start)
        return None

    def check_nesting(self, stmt: ast.stmt) -> None:
        """A definition nested too deeply for the translators is an error before they start."""
        check_nesting_of(self.source, stmt, self.aliases.python_alias)

    # ------------------------------------------------------------------ decorators

    def decorators(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> Decorators:
        found: dict[str, ast.expr] = {}
        autotune: ast.Call | None = None
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            path = self.aliases.path(target)
            if path is None:
                continue
            if path not in DECORATORS:
                raise self.source.reject(
                    decorator,
                    f"ph.{path} is not a decorator",
                    help="decorate with @ph.kernel, @ph.func or @ph.autotune(...)",
                )
            if path in found:
                raise self.source.reject(decorator, f"@ph.{path} is given twice")
            found[path] = decorator
            if path == "autotune":
                if not isinstance(decorator, ast.Call):
                    raise self.source.reject(
                        decorator,
                        "@ph.autotune needs its space",
                        help="write @ph.autotune(BLOCK=[16, 8192])",
                    )
                autotune = decorator
            elif isinstance(decorator, ast.Call) and not _gives_source(decorator, path):
                raise self.source.reject(
                    decorator,
                    f"@ph.{path} takes no arguments"
                    + (" but `source=`" if path == "kernel" else ""),
                    help=f"write @ph.{path}",
                )
        if not found:
            return Decorators(None, None)
        others = [d for d in node.decorator_list if d not in found.values()]
        if others:
            raise self.source.reject(
                others[0],
                "a Phobos definition takes only ph decorators",
                help="remove this decorator; Phobos reads the function and never runs it",
            )
        if "kernel" in found and "func" in found:
            raise self.source.reject(
                found["func"], "a definition is either @ph.kernel or @ph.func, not both"
            )
        if "autotune" in found and "kernel" not in found:
            raise self.source.reject(
                found["autotune"],
                "@ph.autotune applies to kernels",
                help="add @ph.kernel (a @ph.func takes its compile-time names from the kernel)",
            )
        return Decorators("kernel" if "kernel" in found else "func", autotune)

    def tune_params(self, call: ast.Call) -> tuple[ph.TuneParam, ...]:
        """``@ph.autotune(BLOCK=[16, 8192], BN={64, 128})``."""
        if call.args:
            raise self.source.reject(
                call.args[0],
                "@ph.autotune takes named spaces",
                help="write @ph.autotune(BLOCK=[16, 8192], BN={64, 128})",
            )
        params = []
        for keyword in call.keywords:
            if keyword.arg is None:
                raise self.source.reject(keyword, "**kwargs has no Phobos meaning")
            params.append(
                ph.TuneParam(
                    self.exprs.identifier(keyword, keyword.arg),
                    self.space(keyword.value),
                    span=self.source.span(keyword),
                )
            )
        return tuple(params)

    def space(self, node: ast.expr) -> ph.PowerRange | ph.ValueSet:
        span = self.source.span(node)
        if isinstance(node, ast.List) and len(node.elts) == 2:
            low, high = (self.exprs.expr(e) for e in node.elts)
            return ph.PowerRange(low, high, span=span)
        if isinstance(node, ast.Set):
            return ph.ValueSet(tuple(self.exprs.expr(e) for e in node.elts), span=span)
        raise self.source.reject(
            node,
            "an autotune space is [low, high] (the powers of two between) or {a, b, ...}",
            help="write BLOCK=[16, 8192] or BN={64, 128, 256}",
        )

    # ------------------------------------------------------------------ definitions

    def kernel(
        self,
        node: ast.FunctionDef,
        autotune: ast.Call | None,
        leading: tuple[str, ...],
        next_start: Position,
    ) -> ph.Kernel:
        if node.returns is not None and not _is_none(node.returns):
            raise self.source.reject(
                node.returns,
                "a kernel returns nothing",
                help="store results into an output tensor parameter",
            )
        tune = self.tune_params(autotune) if autotune is not None else ()
        params, header = self.header(node, leading)
        doc, body = self.body(node, next_start)
        return ph.Kernel(
            self.def_name(node),
            params,
            body,
            tune,
            leading=header + doc,
            span=self.source.span(node),
        )

    def function(
        self, node: ast.FunctionDef, leading: tuple[str, ...], next_start: Position
    ) -> ph.Function:
        result = None
        if node.returns is not None and not _is_none(node.returns):
            result = self.exprs.scalar_type(node.returns)
        params, header = self.header(node, leading)
        doc, body = self.body(node, next_start)
        return ph.Function(
            self.def_name(node),
            params,
            result,
            body,
            leading=header + doc,
            span=self.source.span(node),
        )

    def def_name(self, node: ast.FunctionDef) -> str:
        return self.exprs.identifier(node, node.name)

    def header(
        self, node: ast.FunctionDef, leading: tuple[str, ...]
    ) -> tuple[tuple[ph.Param, ...], tuple[str, ...]]:
        """The parameters, and the comments that lead the item (before it and in its header)."""
        if getattr(node, "type_params", None):
            raise self.source.reject(
                node.type_params[0],
                "type parameters have no Phobos meaning",
                help="a scalar parameter type already serves every tile of that element type",
            )
        args = node.args
        for extra in (*args.posonlyargs, args.vararg, *args.kwonlyargs, args.kwarg):
            if extra is not None:
                raise self.source.reject(
                    extra,
                    "Phobos parameters are plain named parameters",
                    help="remove /, *args, keyword-only parameters and **kwargs",
                )
        for default in (*args.defaults, *args.kw_defaults):
            if default is not None:
                raise self.source.reject(
                    default,
                    "a parameter default has no Phobos meaning",
                    help="pass every argument at the launch; compile-time names go in @ph.autotune",
                )
        leading += self.comments.leading(start_of(node))
        header_end = self.comments.header_end(start_of(node))
        params = tuple(
            self.param(arg, args.args, index, header_end) for index, arg in enumerate(args.args)
        )
        leading += self.comments.leading(header_end)
        return params, leading

    def param(
        self, arg: ast.arg, args: list[ast.arg], index: int, header_end: Position
    ) -> ph.Param:
        if arg.annotation is None:
            raise self.source.reject(
                arg,
                f"parameter `{arg.arg}` needs a type",
                help=f"write {arg.arg}: ph.f32 or {arg.arg}: ph.tensor[ph.f32][N]",
            )
        leading = self.comments.leading(start_of(arg))
        param_type = self.exprs.param_type(arg.annotation)
        next_start = start_of(args[index + 1]) if index + 1 < len(args) else header_end
        trailing = None
        if next_start[0] != arg.end_lineno:
            trailing = self.comments.trailing(arg.end_lineno)
        return ph.Param(
            self.exprs.identifier(arg, arg.arg),
            param_type,
            leading=leading,
            trailing=trailing,
            span=self.source.span(arg),
        )

    def body(self, node: ast.FunctionDef, next_start: Position) -> tuple[tuple[str, ...], ph.Block]:
        """The docstring's lines (they lead the item) and the body block."""
        stmts = node.body
        span = self.source.span_between(stmts[0], stmts[-1])
        doc = docstring_lines(stmts[0]) if is_docstring(stmts[0]) else ()
        rest = stmts[1:] if is_docstring(stmts[0]) else stmts
        return doc, self.stmts.block(rest, node.col_offset + 1, next_start, span=span)

    def const(
        self, node: ast.AnnAssign, leading: tuple[str, ...], next_start: Position
    ) -> ph.Const | None:
        """``C: ph.const = 4``; a module-level ``ph.let``/``ph.var`` is an error."""
        kind = self.aliases.path(node.annotation)
        if kind is None:
            return None
        if kind != "const":
            raise self.source.reject(
                node.annotation,
                f"a module-level name is a constant, not ph.{kind}",
                help="write C: ph.const = value",
            )
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.source.reject(node, "write a constant as C: ph.const = value")
        value = self.exprs.expr(node.value)
        leading += self.comments.leading(end_of(node))
        trailing = (
            None if next_start[0] == node.end_lineno else self.comments.trailing(node.end_lineno)
        )
        return ph.Const(
            self.exprs.identifier(node.target, node.target.id),
            value,
            leading=leading,
            trailing=trailing,
            span=self.source.span(node),
        )


def host_constants(tree: ast.Module) -> tuple[tuple[str, str], ...]:
    """The module's plain ``NAME = number`` lines: Python variables a kernel does not see,
    named in the undefined-name error (``NAME: ph.const = number`` is what a kernel sees)."""
    found = []
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target, value = stmt.targets[0], stmt.value
        number = value.operand if isinstance(value, ast.UnaryOp) else value
        if (
            isinstance(target, ast.Name)
            and isinstance(number, ast.Constant)
            and type(number.value) in (int, float)
        ):
            found.append((target.id, ast.unparse(value)))
    return tuple(found)


def item_start(stmt: ast.stmt) -> Position:
    """Where a top-level statement starts, decorators included."""
    decorators = getattr(stmt, "decorator_list", None)
    if decorators:
        return (decorators[0].lineno, 0)
    return start_of(stmt)


def module_leading(comments: list[Comment]) -> tuple[str, ...]:
    """The comments that lead an item: own-line, unindented (indented ones close host code)."""
    return tuple(c.text for c in comments if c.own_line and c.col == 1)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _gives_source(decorator: ast.Call, path: str) -> bool:
    """``@ph.kernel(source=text)``: the module's text for Python code that keeps none
    (phobos.lang reads it; the text itself is what is translated here)."""
    return (
        path == "kernel"
        and not decorator.args
        and [k.arg for k in decorator.keywords] == ["source"]
    )
