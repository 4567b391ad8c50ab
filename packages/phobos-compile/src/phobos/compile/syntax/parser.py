"""Phobos text → ``ast.Module``: a recursive-descent parser.

Spans run from a node's first token to its last; a parenthesised expression's
own span excludes its parentheses, while the node around it includes them (so
``(a + b) * c`` starts at the ``(``).  Statement and item spans exclude their
comments; a kernel's span starts at ``kernel``, after its ``@autotune`` line.

Comments are attached by position (see ``ast``): the unclaimed comments before a
statement, parameter or item are its ``leading``; a comment after its last
token on the same line is its ``trailing``.  A comment *inside* a construct
(within a multi-line expression, between ``@autotune(...)`` and ``kernel``, or
after the last parameter) joins the ``leading`` of the statement, parameter or
item that holds it, so printing moves it onto its own line just above.  A
comment after ``{`` on the same line leads the block's first statement.

A cast of an unsigned, unsuffixed number (``f16(2.5)``) is folded into a typed
literal (``2.5f16``): both spellings give one tree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from phobos.compile.diagnostics import PhobosError, error, register_source
from phobos.compile.limits import MAX_NESTING
from phobos.compile.span import Span
from phobos.compile.syntax import ast
from phobos.compile.syntax.lexer import Comment, Token, tokenize
from phobos.compile.syntax.nesting import check_nesting, nesting_error

_Node = TypeVar("_Node")
_ASSIGN_OPS = {
    "=": None,
    "+=": "+",
    "-=": "-",
    "*=": "*",
    "/=": "/",
    "%=": "%",
    "&=": "&",
    "|=": "|",
    "^=": "^",
    "<<=": "<<",
    ">>=": ">>",
}
_UNARY_OPS = frozenset({"-", "!", "~"})
_STATEMENT_END = frozenset({"newline", "}", "eof"})
_LOOP_HELP = "a loop is written `for k in a .. b step s { ... }` (`step s` is optional)"
_TUNE_HELP = (
    "write `NAME in [lo, hi]` (the powers of two from lo to hi) "
    "or `NAME in {a, b, c}` (exactly these values)"
)
# What to do when one of these turns up where it cannot stand.
_FOUND_HELP = {
    ":+": "a window `a :+ L` is written only inside a subscript: `t[a :+ L]`",
    ".": "only `ctx` has fields: `ctx.block.x`, `ctx.grid.y`",
    "and": "Phobos writes `&&` for `and`",
    "or": "Phobos writes `||` for `or`",
    "not": "Phobos writes `!` for `not`",
    "elif": "write `} else if c {`",
}
_ONE_PER_LINE = "each statement and each item starts on a line of its own"
_EXPRESSION_HELP = (
    "an expression starts with a name, a number, `true`, `false`, `ctx`, `(`, `-`, `!` or `~`"
)
_MULTILINE_HELP = (
    "a statement ends at the end of its line; to continue an expression on the "
    "next line, wrap it in parentheses"
)


def parse(text: str, file: str = "<string>") -> ast.Module:
    """Parse a whole ``.ph`` program; a syntax error raises ``PhobosError`` at its line and column."""
    register_source(file, text)
    tokens, comments = tokenize(text, file)
    module = _Parser(tokens, comments, file).module()
    check_nesting(module)
    return module


class _Parser:
    def __init__(self, tokens: list[Token], comments: list[Comment], file: str) -> None:
        self.tokens = tokens
        self.pos = 0
        self.comments = comments
        self.next_comment = 0
        self.file = file
        # Blocks, expressions and parentheses open here: the parser recurses once or a few
        # times for each, so past MAX_NESTING it stops with an error, not a RecursionError.
        self.level = 0

    # ------------------------------------------------------------------ tokens

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def peek(self, ahead: int) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def at(self, kind: str) -> bool:
        return self.tokens[self.pos].kind == kind

    def advance(self) -> Token:
        tok = self.tokens[self.pos]
        if tok.kind != "eof":
            self.pos += 1
        return tok

    def accept(self, kind: str) -> Token | None:
        return self.advance() if self.tokens[self.pos].kind == kind else None

    def expect(self, kind: str, what: str | None = None, help: str | None = None) -> Token:
        if self.tokens[self.pos].kind == kind:
            return self.advance()
        raise self.unexpected(what or f"`{kind}`", help)

    def expect_name(self, what: str, help: str | None = None) -> Token:
        if self.at("name"):
            return self.advance()
        raise self.unexpected(what, help)

    def skip_newlines(self) -> None:
        while self.tokens[self.pos].kind == "newline":
            self.pos += 1

    def span_of(self, tok: Token) -> Span:
        return Span(self.file, tok.line, tok.col, tok.line, tok.end_col)

    def span_from(self, first: Token) -> Span:
        """From ``first`` to the end of the last token consumed."""
        last = self.tokens[self.pos - 1]
        return Span(self.file, first.line, first.col, last.line, last.end_col)

    def too_deep(self) -> PhobosError:
        return nesting_error(
            self.span_of(self.tok),
            f"nested too deeply: more than {MAX_NESTING} levels of blocks, expressions and "
            f"parentheses here; the limit is {MAX_NESTING}",
            "bind inner parts to names first (`let x = ...`), and nest fewer blocks",
        )

    def unexpected(self, expected: str, help: str | None = None) -> PhobosError:
        tok = self.tok
        if tok.kind in ("newline", "eof") and expected == "an expression":
            help = _MULTILINE_HELP
        else:
            help = _FOUND_HELP.get(tok.text, help)
        return error(self.span_of(tok), f"expected {expected}, found {_describe(tok)}", help=help)

    # ---------------------------------------------------------------- comments

    def comments_before(self, line: int, col: int) -> tuple[str, ...]:
        """Claim every unclaimed comment that starts before ``line:col``."""
        comments, i = self.comments, self.next_comment
        start = i
        while i < len(comments) and (comments[i].line, comments[i].col) < (line, col):
            i += 1
        self.next_comment = i
        return tuple(c.text for c in comments[start:i])

    def leading(self) -> tuple[str, ...]:
        """The comments before the current token."""
        return self.comments_before(self.tok.line, self.tok.col)

    def trivia(self, leading: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
        """Finish a node's trivia after its last token: inner comments join ``leading``;
        a comment on the last token's line, before the next token, is ``trailing``."""
        last = self.tokens[self.pos - 1]
        leading = leading + self.comments_before(last.line, last.end_col)
        trailing = None
        if self.next_comment < len(self.comments):
            comment = self.comments[self.next_comment]
            if comment.line == last.line and (comment.line, comment.col) < (
                self.tok.line,
                self.tok.col,
            ):
                trailing = comment.text
                self.next_comment += 1
        return leading, trailing

    # ------------------------------------------------------------------ items

    def module(self) -> ast.Module:
        self.skip_newlines()
        first = self.tok
        items = []
        while not self.at("eof"):
            items.append(self.item())
            if not self.at("eof"):
                self.expect("newline", "the end of the line after an item", _ONE_PER_LINE)
            self.skip_newlines()
        end_comments = tuple(c.text for c in self.comments[self.next_comment :])
        self.next_comment = len(self.comments)
        last = self.tok
        span = Span(self.file, first.line, first.col, last.line, last.col)
        return ast.Module(tuple(items), end_comments, span)

    def item(self) -> ast.Item:
        leading = self.leading()
        if self.at("@"):
            tunes = self.autotune_decorators()
            if not self.at("kernel"):
                raise self.unexpected(
                    "`kernel` after `@autotune(...)`", "only a kernel has an autotune space"
                )
            return self.kernel(leading + self.leading(), tunes)
        if self.at("kernel"):
            return self.kernel(leading, ())
        if self.at("fn"):
            return self.function(leading)
        if self.at("const"):
            return self.const(leading)
        raise self.unexpected(
            "`kernel`, `fn`, `const` or `@autotune`",
            "statements go inside a kernel or fn body",
        )

    def const(self, leading: tuple[str, ...]) -> ast.Const:
        first = self.advance()
        name = self.expect_name(
            "a constant's name after `const`", "a constant is written `const NAME = value`"
        ).text
        self.expect("=", help="a constant is written `const NAME = value`")
        value = self.expr()
        leading, trailing = self.trivia(leading)
        return ast.Const(name, value, leading, trailing, self.span_from(first))

    def function(self, leading: tuple[str, ...]) -> ast.Function:
        first = self.advance()
        name = self.expect_name(
            "a function name after `fn`", "a function is written `fn name(a: f32) -> f32 { ... }`"
        ).text
        params = self.params()
        result = None
        if self.accept("->"):
            result = self.scalar_type("a result type after `->`")
        leading = leading + self.leading()
        body = self.block()
        leading, trailing = self.trivia(leading)
        return ast.Function(name, params, result, body, leading, trailing, self.span_from(first))

    def kernel(self, leading: tuple[str, ...], tunes: tuple[ast.TuneParam, ...]) -> ast.Kernel:
        first = self.advance()
        name = self.expect_name(
            "a kernel name after `kernel`",
            "a kernel is written `kernel name(x: tensor<f32>[N]) { ... }`",
        ).text
        params = self.params()
        if self.at("->"):
            raise self.unexpected(
                "`{`", "a kernel returns nothing; it writes its results to tensors"
            )
        leading = leading + self.leading()
        body = self.block()
        leading, trailing = self.trivia(leading)
        return ast.Kernel(name, params, body, tunes, leading, trailing, self.span_from(first))

    def autotune_decorators(self) -> tuple[ast.TuneParam, ...]:
        tunes: list[ast.TuneParam] = []
        seen: dict[str, ast.TuneParam] = {}
        while self.accept("@"):
            word = self.tok
            if not (word.kind == "name" and word.text == "autotune"):
                raise self.unexpected(
                    "`autotune` after `@`", "the only decorator is `@autotune(...)`"
                )
            self.advance()
            self.expect("(", help=_TUNE_HELP)
            for tune in self.comma_list(")", self.tune_param):
                if tune.name in seen:
                    raise error(
                        tune.span,
                        f"autotune parameter `{tune.name}` is given twice",
                        help="give each parameter one space of values",
                    )
                seen[tune.name] = tune
                tunes.append(tune)
            self.skip_newlines()
        return tuple(tunes)

    def tune_param(self) -> ast.TuneParam:
        first = self.expect_name("an autotune parameter name", _TUNE_HELP)
        if not self.at("in"):
            python_help = f"`{first.text}=...` is the Python spelling; in Phobos, " + _TUNE_HELP
            raise self.unexpected(
                f"`in` after `{first.text}`", python_help if self.at("=") else _TUNE_HELP
            )
        self.advance()
        open_tok = self.tok
        space: ast.PowerRange | ast.ValueSet
        if self.accept("["):
            low = self.expr()
            self.expect(",", help=_TUNE_HELP)
            high = self.expr()
            self.expect("]", help=_TUNE_HELP)
            space = ast.PowerRange(low, high, self.span_from(open_tok))
        elif self.accept("{"):
            values = self.comma_list("}", self.expr)
            if not values:
                raise error(self.span_from(open_tok), "an empty autotune set", help=_TUNE_HELP)
            space = ast.ValueSet(values, self.span_from(open_tok))
        else:
            raise self.unexpected("`[` or `{`", _TUNE_HELP)
        return ast.TuneParam(first.text, space, self.span_from(first))

    def params(self) -> tuple[ast.Param, ...]:
        self.expect("(", help="a parameter list is written `(x: tensor<f32>[N], alpha: f32)`")
        params: list[ast.Param] = []
        while not self.at(")"):
            leading = self.leading()
            first = self.expect_name("a parameter name", "a parameter is written `name: type`")
            self.expect(":", help=f"give `{first.text}` a type: `{first.text}: f32`")
            type_ = self.type_()
            span = self.span_from(first)
            more = self.accept(",") is not None
            leading, trailing = self.trivia(leading)
            params.append(ast.Param(first.text, type_, leading, trailing, span))
            if not more:
                break
        self.expect(")", "`,` or `)` after a parameter", "parameters are separated by `,`")
        return tuple(params)

    def type_(self) -> ast.Type:
        tok = self.tok
        if tok.kind == "name" and tok.text == "tensor":
            self.advance()
            self.expect("<", help="a tensor type is written `tensor<f32>[N, K]`")
            dtype = self.scalar_type("an element type")
            self.expect(">", help="a tensor type is written `tensor<f32>[N, K]`")
            self.expect("[", help="a tensor type is written `tensor<f32>[N, K]`")
            dims = self.comma_list("]", self.dimension)
            if not dims:
                raise error(
                    self.span_from(tok),
                    "a tensor needs at least one dimension",
                    help="a tensor type is written `tensor<f32>[N, K]`",
                )
            return ast.TensorType(dtype, dims, self.span_from(tok))
        return self.scalar_type("a type")

    def scalar_type(self, what: str) -> ast.ScalarType:
        tok = self.tok
        if tok.kind == "name" and tok.text in ast.SCALAR_TYPES:
            self.advance()
            return ast.ScalarType(tok.text, self.span_of(tok))
        raise self.unexpected(what, f"a scalar type is one of {', '.join(ast.SCALAR_TYPES)}")

    def dimension(self) -> ast.Expr:
        tok = self.tok
        if tok.kind == "name":
            self.advance()
            return ast.Name(tok.text, self.span_of(tok))
        if tok.kind == "int":
            self.advance()
            return ast.IntLit(tok.value, tok.suffix, self.span_of(tok))
        raise self.unexpected(
            "a dimension", "a tensor dimension is a named extent (`N`) or an integer (`64`)"
        )

    def comma_list(self, close: str, parse_one: Callable[[], _Node]) -> tuple[_Node, ...]:
        """``a, b, c`` up to ``close`` (consumed); a trailing comma is allowed."""
        out: list[_Node] = []
        while not self.at(close):
            out.append(parse_one())
            if not self.accept(","):
                break
        self.expect(close, f"`,` or `{close}`", "is a `,` or an operator missing before it?")
        return tuple(out)

    # ------------------------------------------------------------- statements

    def block(self) -> ast.Block:
        open_tok = self.expect("{", help="a block is written in braces: `{ ... }`")
        self.level += 1
        if self.level > MAX_NESTING:
            raise self.too_deep()
        body: list[ast.Stmt] = []
        self.skip_newlines()
        while not self.at("}"):
            body.append(self.statement())
            if self.at("newline"):
                self.skip_newlines()
            elif not self.at("}"):
                raise self.unexpected("the end of the line after a statement", _ONE_PER_LINE)
        end_comments = self.leading()
        close = self.advance()
        # `} // c` closes the block's comments: Python, which has no closing brace, keeps
        # such a comment after the block's last line, and both spellings must agree.
        if self.next_comment < len(self.comments):
            comment = self.comments[self.next_comment]
            if comment.line == close.line and (comment.line, comment.col) < (
                self.tok.line,
                self.tok.col,
            ):
                end_comments += (comment.text,)
                self.next_comment += 1
        self.level -= 1
        return ast.Block(tuple(body), end_comments, self.span_from(open_tok))

    def statement(self) -> ast.Stmt:
        leading = self.leading()
        kind = self.tok.kind
        if kind in ("let", "var"):
            return self.binding(leading)
        if kind == "for":
            return self.for_loop(leading)
        if kind == "if":
            return self.if_chain(leading, outermost=True)
        if kind == "while":
            return self.while_loop(leading)
        if kind == "return":
            return self.return_(leading)
        if kind == "else":
            raise self.unexpected(
                "a statement", "`else` goes on the same line as the `}` before it: `} else {`"
            )
        if self.tok.text == "elif":
            raise self.unexpected("a statement")
        return self.assign_or_expr(leading)

    def binding(self, leading: tuple[str, ...]) -> ast.Let | ast.Var:
        first = self.advance()
        name = self.expect_name(
            f"a name after `{first.kind}`", f"write `{first.kind} x = value`"
        ).text
        self.expect("=", help=f"write `{first.kind} {name} = value`")
        value = self.expr()
        leading, trailing = self.trivia(leading)
        node = ast.Let if first.kind == "let" else ast.Var
        return node(name, value, leading, trailing, self.span_from(first))

    def for_loop(self, leading: tuple[str, ...]) -> ast.For:
        first = self.advance()
        var = self.expect_name("a loop variable after `for`", _LOOP_HELP).text
        self.expect("in", help=_LOOP_HELP)
        start = self.expr()
        self.expect("..", help=_LOOP_HELP)
        stop = self.expr()
        step = None
        if self.tok.kind == "name" and self.tok.text == "step":
            self.advance()
            step = self.expr()
        leading = leading + self.leading()
        body = self.block()
        leading, trailing = self.trivia(leading)
        return ast.For(var, start, stop, step, body, leading, trailing, self.span_from(first))

    def if_chain(self, leading: tuple[str, ...], outermost: bool) -> ast.If:
        """``if c { } else if d { } else { }``; only the outermost If takes the trailing comment."""
        first = self.advance()
        cond = self.expr()
        leading = leading + self.leading()
        then = self.block()
        orelse = None
        if self.accept("else"):
            if self.at("if"):
                nested = self.if_chain((), outermost=False)
                orelse = ast.Block((nested,), (), nested.span)
            elif self.at("{"):
                orelse = self.block()
            else:
                raise self.unexpected(
                    "`{` or `if` after `else`", "write `} else {` or `} else if c {`"
                )
        trailing = None
        if outermost:
            leading, trailing = self.trivia(leading)
        return ast.If(cond, then, orelse, leading, trailing, self.span_from(first))

    def while_loop(self, leading: tuple[str, ...]) -> ast.While:
        first = self.advance()
        cond = self.expr()
        leading = leading + self.leading()
        body = self.block()
        leading, trailing = self.trivia(leading)
        return ast.While(cond, body, leading, trailing, self.span_from(first))

    def return_(self, leading: tuple[str, ...]) -> ast.Return:
        first = self.advance()
        value = None if self.tok.kind in _STATEMENT_END else self.expr()
        leading, trailing = self.trivia(leading)
        return ast.Return(value, leading, trailing, self.span_from(first))

    def assign_or_expr(self, leading: tuple[str, ...]) -> ast.Assign | ast.ExprStmt:
        first = self.tok
        target = self.expr()
        if self.tok.kind not in _ASSIGN_OPS:
            leading, trailing = self.trivia(leading)
            return ast.ExprStmt(target, leading, trailing, self.span_from(first))
        if not isinstance(target, (ast.Name, ast.Subscript)):
            raise error(
                self.span_from(first),
                "cannot assign to this expression",
                help="assign to a name (`x = e`) or a slice of a tensor or tile (`t[a :+ L] = e`)",
            )
        op = _ASSIGN_OPS[self.advance().kind]
        value = self.expr()
        leading, trailing = self.trivia(leading)
        return ast.Assign(target, value, op, leading, trailing, self.span_from(first))

    # ------------------------------------------------------------ expressions

    def expr(self, min_prec: int = 1) -> ast.Expr:
        """Precedence climbing over ``ast.BINARY_PRECEDENCE`` (all left-associative)."""
        self.level += 1
        if self.level > MAX_NESTING:
            raise self.too_deep()
        first = self.tok
        left = self.unary()
        precedence = ast.BINARY_PRECEDENCE
        while True:
            op = self.tok.kind
            prec = precedence.get(op)
            if prec is None or prec < min_prec:
                self.level -= 1
                return left
            self.advance()
            right = self.expr(prec + 1)
            left = ast.Binary(op, left, right, self.span_from(first))

    def unary(self) -> ast.Expr:
        """Prefix operators, read in a loop (a long chain of them is no deeper for the parser)."""
        ops: list[Token] = []
        while self.tok.kind in _UNARY_OPS:
            ops.append(self.advance())
        if self.tok.kind == "+":
            raise error(self.span_of(self.tok), "there is no unary `+`", help="remove the `+`")
        node = self.postfix()
        for tok in reversed(ops):
            node = ast.Unary(tok.kind, node, self.span_from(tok))
        return node

    def postfix(self) -> ast.Expr:
        first = self.tok
        node = self.primary()
        while True:
            if self.accept("["):
                items = self.comma_list("]", self.index_item)
                if not items:
                    raise error(self.span_from(first), "an empty subscript", help="write `t[i]`")
                node = ast.Subscript(node, items, self.span_from(first))
            elif self.at("("):
                raise error(
                    self.span_of(self.tok),
                    "only a function named directly can be called",
                    help="call it by name: `f(x)`",
                )
            else:
                return node

    def primary(self) -> ast.Expr:
        tok = self.tok
        kind = tok.kind
        if kind == "name":
            return self.named(tok)
        if kind == "int":
            self.advance()
            return ast.IntLit(tok.value, tok.suffix, self.span_of(tok))
        if kind == "float":
            self.advance()
            return ast.FloatLit(tok.value, tok.suffix, self.span_of(tok))
        if kind in ("true", "false"):
            self.advance()
            return ast.BoolLit(kind == "true", self.span_of(tok))
        if kind == "string":
            self.advance()
            return ast.StrLit(tok.text[1:-1], self.span_of(tok))
        if kind == "(":
            self.advance()
            inner = self.expr()
            self.expect(")", "`)`", "is an operator missing before it?")
            return inner
        raise self.unexpected("an expression", _EXPRESSION_HELP)

    def named(self, tok: Token) -> ast.Expr:
        """A name, a call, ``ctx.block.x`` or a tile constructor ``zeros<f32>[M, N]``."""
        if tok.text == "ctx":
            return self.ctx()
        if tok.text == "newaxis":
            raise error(
                self.span_of(tok),
                "`newaxis` stands only alone as a subscript item",
                help="write `t[:, newaxis]` to add an axis of extent 1",
            )
        after = self.peek(1)
        if after.kind == "(":
            return self.call()
        if after.kind == "<" and self.peek(3).kind == ">" and self.peek(4).kind == "[":
            dtype = self.peek(2)
            if dtype.kind == "name" and dtype.text in ast.SCALAR_TYPES:
                return self.tile_ctor()
        self.advance()
        return ast.Name(tok.text, self.span_of(tok))

    def ctx(self) -> ast.Ctx:
        first = self.advance()
        ctx_help = "the block context is `ctx.block.x|y|z` or `ctx.grid.x|y|z`"
        self.expect(".", help=ctx_help)
        group = self.expect_name("`block` or `grid`", ctx_help)
        if group.text not in ("block", "grid"):
            raise error(self.span_of(group), f"`ctx` has no `{group.text}`", help=ctx_help)
        self.expect(".", help=ctx_help)
        axis = self.expect_name("`x`, `y` or `z`", ctx_help)
        if axis.text not in ("x", "y", "z"):
            raise error(
                self.span_of(axis), f"`ctx.{group.text}` has no axis `{axis.text}`", help=ctx_help
            )
        return ast.Ctx(group.text, axis.text, self.span_from(first))

    def tile_ctor(self) -> ast.TileCtor:
        first = self.advance()
        self.advance()  # <
        dtype = self.scalar_type("an element type")
        self.advance()  # >
        self.advance()  # [
        shape = self.comma_list("]", self.expr)
        if not shape:
            raise error(
                self.span_from(first), "a tile needs a shape", help="write `zeros<f32>[BM, BN]`"
            )
        return ast.TileCtor(first.text, dtype, shape, self.span_from(first))

    def call(self) -> ast.Expr:
        first = self.advance()
        self.advance()  # (
        args: list[ast.Expr] = []
        keywords: list[ast.Keyword] = []
        while not self.at(")"):
            if self.at("name") and self.peek(1).kind == "=":
                name = self.advance()
                self.advance()
                value = self.expr()
                keywords.append(ast.Keyword(name.text, value, self.span_from(name)))
            elif keywords:
                raise self.unexpected(
                    "a keyword argument", "positional arguments come before keyword arguments"
                )
            else:
                args.append(self.expr())
            if not self.accept(","):
                break
        self.expect(")", "`,` or `)` in the call", "arguments are separated by `,`")
        span = self.span_from(first)
        if first.text in ast.SCALAR_TYPES and len(args) == 1 and not keywords:
            literal = args[0]
            if isinstance(literal, ast.IntLit) and literal.suffix is None:
                return ast.IntLit(literal.value, first.text, span)
            if isinstance(literal, ast.FloatLit) and literal.suffix is None:
                return ast.FloatLit(literal.value, first.text, span)
        return ast.Call(first.text, tuple(args), tuple(keywords), span)

    def index_item(self) -> ast.IndexItem:
        tok = self.tok
        if tok.kind == ":":
            self.advance()
            if self.tok.kind not in (",", "]"):
                raise self.unexpected(
                    "`,` or `]` after `:`",
                    "`:` alone is a whole axis; a window is written `a :+ L`",
                )
            return ast.FullAxis(self.span_of(tok))
        if tok.kind == "name" and tok.text == "newaxis":
            self.advance()
            return ast.NewAxis(self.span_of(tok))
        if tok.kind == ":+":
            raise error(
                self.span_of(tok),
                "a window needs a start",
                help="write `t[a :+ L]`: the L elements from a",
            )
        start = self.expr()
        if self.accept(":+"):
            length = self.expr()
            return ast.Window(start, length, self.span_from(tok))
        if self.at(":"):
            raise error(
                self.span_of(self.tok),
                "Python-style slices are not Phobos",
                help="a window is written `a :+ L` (the L elements from a), "
                "with no space between `:` and `+`",
            )
        return ast.Point(start, self.span_from(tok))


def _describe(tok: Token) -> str:
    if tok.kind == "newline":
        return "the end of the line"
    if tok.kind == "eof":
        return "the end of the file"
    if tok.kind in ("int", "float"):
        return f"the number `{tok.text}`"
    return f"`{tok.text}`"
