"""Phobos items → top-level Python statements: constants, ``@ph.func`` and ``@ph.kernel`` defs.

An item's leading comments stand above its decorators, with the blank lines
the .ph file had between them; definitions are set off by two blank lines, as
PEP 8 asks.  Parameters that the .ph wrote on several lines, or with comments,
stand one a line; the others, and every other long line, are wrapped by
``ph2py.wrap`` as ruff would wrap them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ph2py.expressions import ExpressionWriter
from ph2py.integers import definition_integers, module_integers
from ph2py.layout import GapLine, SourceLayout, place_comments
from ph2py.names import lang, python_name
from ph2py.statements import BodyWriter
from ph2py.trivia import blank_lines, comment, gap_lines, split_blanks, trailing
from ph2py.wrap import wrap_long_lines
from phobos.compile.diagnostics import Diagnostic
from phobos.compile.syntax import ast

INDENT = "    "
MAX_BLANK_AT_TOP = 2
_NO_SPACE = cst.SimpleWhitespace("")


@dataclass(frozen=True)
class ConvertedModule:
    """The top-level statements a .ph module becomes, its closing comments, and warnings."""

    statements: tuple[cst.BaseStatement, ...]
    footer: tuple[cst.EmptyLine, ...]
    warnings: tuple[Diagnostic, ...]


@dataclass
class ModuleWriter:
    module: ast.Module
    layout: SourceLayout
    line_length: int
    warnings: list[Diagnostic] = field(default_factory=list)

    def write(self) -> ConvertedModule:
        items = self.module.items
        functions = frozenset(i.name for i in items if isinstance(i, ast.Function))
        constants = frozenset(i.name for i in items if isinstance(i, ast.Const))
        integers = module_integers(self.module)
        statements: list[cst.BaseStatement] = []
        previous_end = 0
        for index, item in enumerate(items):
            first_line = self.first_line(item)
            gap = self.layout.gap_before(first_line, previous_end)
            after_params = self.after_params(item)
            leading = item.leading[: len(item.leading) - len(after_params)]
            tune_comment = self.tune_line_comment(item, leading, gap)
            leading = leading[:-1] if tune_comment is not None else leading
            _, lines = split_blanks(place_comments(leading, gap))
            previous = items[index - 1] if index else None
            leading_lines = blank_lines(self.blanks_before(item, previous, gap))
            leading_lines += gap_lines(lines, MAX_BLANK_AT_TOP)
            if isinstance(item, ast.Const):
                exprs = self.expressions(functions, constants, integers, item)
                statement: cst.BaseStatement = self.const(item, exprs, leading_lines)
            else:
                exprs = self.expressions(
                    functions, constants, definition_integers(item, integers), item
                )
                statement = self.definition(item, exprs, leading_lines, tune_comment, after_params)
            statements.append(wrap_long_lines(statement, self.line_length))
            previous_end = item.span.end_line
        return ConvertedModule(tuple(statements), self.footer(previous_end), tuple(self.warnings))

    def expressions(
        self,
        functions: frozenset[str],
        constants: frozenset[str],
        integers: frozenset[str],
        item: ast.Item,
    ) -> ExpressionWriter:
        return ExpressionWriter(self.layout.lines, functions, constants | _declared(item), integers)

    # ------------------------------------------------------------------ layout

    def first_line(self, item: ast.Item) -> int:
        """The item's first line: its ``@autotune`` line, if it has one."""
        line = item.span.line
        if isinstance(item, ast.Kernel) and item.autotune:
            line = min(line, item.autotune[0].span.line)
            while line > 1 and "@" not in self.layout.lines[line - 1].split("//")[0]:
                line -= 1
        return line

    def tune_line_comment(
        self, item: ast.Item, leading: tuple[str, ...], gap: tuple[GapLine, ...]
    ) -> str | None:
        """The comment at the end of a kernel's ``@autotune(...)`` line, if that is the last
        of its ``leading``: it stays on the ``@ph.autotune(...)`` line."""
        if not isinstance(item, ast.Kernel) or not item.autotune:
            return None
        in_gap = sum(line is not None for line in gap)
        line = item.span.line - 1
        found = self.layout.comments.get(line)
        if len(leading) != in_gap + 1 or found is None or line not in self.layout.code_lines:
            return None
        return found.text if found.text == leading[-1] else None

    def after_params(self, item: ast.Item) -> tuple[str, ...]:
        """The comments between a definition's last parameter and its ``)``; the parser
        ends its ``leading`` with them, and they stay after the last Python parameter."""
        if isinstance(item, ast.Const) or not item.params:
            return ()
        lines = range(item.params[-1].span.end_line + 1, item.body.span.line)
        texts = tuple(
            self.layout.comments[n].text
            for n in lines
            if n in self.layout.comments and n not in self.layout.code_lines
        )
        return texts if texts and item.leading[-len(texts) :] == texts else ()

    def blanks_before(
        self, item: ast.Item, previous: ast.Item | None, gap: tuple[GapLine, ...]
    ) -> int:
        """Two blank lines around definitions; between constants, what the .ph had."""
        if not isinstance(item, ast.Const) or not isinstance(previous, (ast.Const, type(None))):
            return 2
        if previous is None:
            return 1
        return min(split_blanks(gap)[0], MAX_BLANK_AT_TOP)

    def footer(self, last_end: int) -> tuple[cst.EmptyLine, ...]:
        """The module's closing comments, after the blank lines that set them off."""
        comments = self.module.end_comments
        if not comments:
            return ()
        gap = self.layout.gap_after(last_end) if self.module.items else ()
        blanks, lines = split_blanks(place_comments(comments, gap))
        if self.module.items:
            last = self.module.items[-1]
            blanks = 2 if not isinstance(last, ast.Const) else min(blanks, MAX_BLANK_AT_TOP)
        else:
            blanks = 1
        return tuple(blank_lines(blanks) + gap_lines(lines, MAX_BLANK_AT_TOP))

    # ------------------------------------------------------------------ items

    def const(
        self, item: ast.Const, exprs: ExpressionWriter, leading_lines: list[cst.EmptyLine]
    ) -> cst.SimpleStatementLine:
        binding = cst.AnnAssign(
            python_name(item.name, item.span), cst.Annotation(lang("const")), exprs.expr(item.value)
        )
        return cst.SimpleStatementLine(
            [binding], leading_lines=leading_lines, trailing_whitespace=trailing(item.trailing)
        )

    def definition(
        self,
        item: ast.Kernel | ast.Function,
        exprs: ExpressionWriter,
        leading_lines: list[cst.EmptyLine],
        tune_comment: str | None = None,
        after_params: tuple[str, ...] = (),
    ) -> cst.FunctionDef:
        body = BodyWriter(exprs, self.layout).block(item.body)
        decorators = [cst.Decorator(lang("kernel" if isinstance(item, ast.Kernel) else "func"))]
        if isinstance(item, ast.Kernel) and item.autotune:
            decorators.append(
                cst.Decorator(
                    self.autotune(item.autotune, exprs), trailing_whitespace=trailing(tune_comment)
                )
            )
        returns = None
        if isinstance(item, ast.Function) and item.result is not None:
            returns = cst.Annotation(exprs.scalar_type(item.result))
        params = [
            cst.Param(python_name(p.name, p.span), cst.Annotation(exprs.type_(p.type)))
            for p in item.params
        ]
        node = cst.FunctionDef(
            python_name(item.name, item.span),
            cst.Parameters(params),
            body,
            decorators=decorators,
            returns=returns,
            leading_lines=leading_lines,
        )
        return lay_out_params(node, item.params, after_params)

    def autotune(self, tunes: tuple[ast.TuneParam, ...], exprs: ExpressionWriter) -> cst.Call:
        """``@ph.autotune(B=[16, 8192], C={2, 1})``."""
        args = []
        for tune in tunes:
            space = tune.space
            if isinstance(space, ast.PowerRange):
                value: cst.BaseExpression = cst.List(
                    [cst.Element(exprs.expr(space.low)), cst.Element(exprs.expr(space.high))]
                )
            else:
                value = cst.Set([cst.Element(exprs.expr(v)) for v in space.values])
            equal = cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE)
            args.append(cst.Arg(value, keyword=python_name(tune.name, tune.span), equal=equal))
        return cst.Call(lang("autotune"), args)


def lay_out_params(
    node: cst.FunctionDef, params: tuple[ast.Param, ...], after: tuple[str, ...]
) -> cst.FunctionDef:
    """One parameter a line where the .ph wrote them on several lines or with comments;
    the others are left to ``wrap_long_lines``."""
    has_comments = after or any(p.leading or p.trailing is not None for p in params)
    one_line = not params or params[0].span.line == params[-1].span.end_line
    if has_comments or not one_line:
        return _one_per_line(node, params, after)
    return node


def _one_per_line(
    node: cst.FunctionDef, params: tuple[ast.Param, ...], after: tuple[str, ...] = ()
) -> cst.FunctionDef:
    """A parameter a line, each with its comments, and a trailing comma; ``after``
    stands below the last parameter."""
    laid_out = []
    for index, (param, source) in enumerate(zip(node.params.params, params)):
        following = params[index + 1].leading if index + 1 < len(params) else after
        indent = INDENT if index + 1 < len(params) else ""
        comma = cst.Comma(
            whitespace_after=_line_break(indent, source.trailing, _param_comments(following))
        )
        laid_out.append(param.with_changes(comma=comma))
    first = params[0].leading if params else ()
    return node.with_changes(
        whitespace_before_params=_line_break(INDENT, None, _param_comments(first)),
        params=node.params.with_changes(params=laid_out),
    )


def _param_comments(texts: tuple[str, ...]) -> list[cst.EmptyLine]:
    return [
        cst.EmptyLine(whitespace=cst.SimpleWhitespace(INDENT), comment=comment(text))
        for text in texts
    ]


def _line_break(
    indent: str, end_comment: str | None = None, lines: list[cst.EmptyLine] | None = None
) -> cst.ParenthesizedWhitespace:
    """A line break inside parentheses: ``end_comment`` on this line, then ``lines``, then ``indent``."""
    return cst.ParenthesizedWhitespace(
        first_line=trailing(end_comment),
        empty_lines=lines or [],
        indent=True,
        last_line=cst.SimpleWhitespace(indent),
    )


def _declared(item: ast.Item) -> frozenset[str]:
    """The names ``item`` binds: parameters, extents, autotune names and locals."""
    if isinstance(item, ast.Const):
        return frozenset()
    names = {p.name for p in item.params}
    for param in item.params:
        if isinstance(param.type, ast.TensorType):
            names.update(d.id for d in param.type.dims if isinstance(d, ast.Name))
    if isinstance(item, ast.Kernel):
        names.update(t.name for t in item.autotune)
    blocks = [item.body]
    while blocks:
        for stmt in blocks.pop().body:
            if isinstance(stmt, (ast.Let, ast.Var)):
                names.add(stmt.name)
            elif isinstance(stmt, ast.For):
                names.add(stmt.var)
                blocks.append(stmt.body)
            elif isinstance(stmt, ast.While):
                blocks.append(stmt.body)
            elif isinstance(stmt, ast.If):
                blocks.extend(b for b in (stmt.then, stmt.orelse) if b is not None)
    return frozenset(names)
