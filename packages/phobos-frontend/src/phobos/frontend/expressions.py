"""Python expressions → Phobos expressions, types and index items.

``ExpressionTranslator`` knows the module's ``phobos.lang`` alias and its ``@ph.func``
names; everything else it is told is a node.  Constructs with no Phobos meaning
raise a ``PhobosError`` at their own position.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, replace

from phobos.compile.syntax import ast as ph
from phobos.compile.syntax.lexer import KEYWORDS, RESERVED_NAMES
from phobos.frontend.aliases import LangAliases
from phobos.frontend.rejections import attribute_help, rejected
from phobos.frontend.source import SourceFile

BINARY_OPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "/",
    ast.Mod: "%",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}

# ``x op= e``: every binary operator but ``@`` (accumulate a product with ph.dot(a, b, acc)).
AUGMENTED_OPS = {op: sign for op, sign in BINARY_OPS.items() if sign != "@"}

COMPARE_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}

UNARY_OPS: dict[type[ast.unaryop], str] = {ast.USub: "-", ast.Not: "!", ast.Invert: "~"}

BOOL_OPS: dict[type[ast.boolop], str] = {ast.And: "&&", ast.Or: "||"}

SCALAR_TYPES = frozenset(ph.SCALAR_TYPES)
TILE_CONSTRUCTORS = frozenset({"zeros"})
# ph.<name> that are markers, decorators or type constructors, never called inside a kernel.
NOT_CALLABLE = frozenset({"kernel", "func", "autotune", "let", "var", "const", "tensor", "zeros"})
# Python builtins a kernel author reaches for, and their Phobos spelling.
PYTHON_BUILTIN_HELP = {
    "abs": "write ph.abs(x)",
    "max": "write ph.max(t, axis=k) to reduce, or ph.maximum(a, b) for the larger of two",
    "min": "write ph.min(t, axis=k) to reduce, or ph.minimum(a, b) for the smaller of two",
    "sum": "write ph.sum(t, axis=k)",
    "any": "write ph.any(t, axis=k)",
    "all": "write ph.all(t, axis=k)",
    "int": "write a cast: ph.i32(x), ph.i64(x) or ph.index(x)",
    "float": "write a cast: ph.f32(x), ph.f16(x), ...",
    "bool": "write a cast, ph.bool(x), or a comparison such as x != 0",
    "len": "a tensor's extents are the names in its type: N in ph.tensor[ph.f32][N]",
    "pow": "write ph.pow(a, b) (floats), or multiply",
    "round": "write ph.round(x) (a whole float, ties to even)",
    "print": "a kernel cannot print; store values into an output tensor and print them on the host",
}
CTX_GROUPS = frozenset({"block", "grid"})
CTX_AXES = frozenset({"x", "y", "z"})


@dataclass(frozen=True)
class ExpressionTranslator:
    source: SourceFile
    aliases: LangAliases
    functions: frozenset[str]

    # ------------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> ph.Expr:
        span = self.source.span(node)
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            if (node.id,) in self.aliases.prefixes:
                raise self.source.reject(
                    node, f"`{node.id}` (phobos.lang) is not a value", help="use one of its names"
                )
            path = self.aliases.path(node)
            if path is not None:
                return self.lang_value(node, path)
            return ph.Name(self.identifier(node, node.id), span=span)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.BinOp):
            op = BINARY_OPS.get(type(node.op))
            if op is None:
                raise self.source.reject(
                    node,
                    "`**` has no Phobos meaning",
                    help="write ph.pow(a, b) (floats), or multiply",
                )
            return ph.Binary(op, self.expr(node.left), self.expr(node.right), span=span)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Slice):
            raise self.source.reject(
                node,
                "a slice stands only inside t[...]",
                help="write t[a:+L] for L elements from a",
            )
        raise rejected(self.source, node)

    def identifier(self, node: ast.AST, name: str) -> str:
        """``name`` as a Phobos name; Phobos's own words cannot name a value."""
        if name in KEYWORDS or name in RESERVED_NAMES:
            raise self.source.reject(
                node,
                f"`{name}` is a Phobos keyword and cannot name a value",
                help=f"rename it (say `{name}_`)",
            )
        return name

    def constant(self, node: ast.Constant) -> ph.Expr:
        span = self.source.span(node)
        value = node.value
        if isinstance(value, bool):
            return ph.BoolLit(value, span=span)
        if isinstance(value, int):
            return ph.IntLit(value, span=span)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.source.reject(
                    node, "a float literal must be finite", help="write ph.inf for infinity"
                )
            return ph.FloatLit(value, span=span)
        if value is None:
            raise self.source.reject(
                node, "None has no Phobos meaning here", help="None stands only in t[:, None]"
            )
        kind = "a string" if isinstance(value, str) else f"the literal {value!r}"
        raise self.source.reject(
            node, f"{kind} has no Phobos meaning", help="Phobos values are numbers and booleans"
        )

    def attribute(self, node: ast.Attribute) -> ph.Expr:
        path = self.aliases.path(node)
        if path is None:
            raise self.source.reject(
                node,
                f"the attribute `.{node.attr}` has no Phobos meaning",
                help=attribute_help(node.attr, ast.unparse(node.value), self.lang_prefix()),
            )
        return self.lang_value(node, path)

    def lang_value(self, node: ast.Attribute | ast.Name, path: str) -> ph.Expr:
        """A ``phobos.lang`` name used as a value: ``ph.inf``, ``ph.ctx.block.x`` (or imported)."""
        span = self.source.span(node)
        if path == "inf":
            return ph.Name("inf", span=span)
        parts = path.split(".")
        if parts[0] == "ctx":
            if len(parts) == 3 and parts[1] in CTX_GROUPS and parts[2] in CTX_AXES:
                return ph.Ctx(parts[1], parts[2], span=span)
            raise self.source.reject(
                node,
                f"ph.{path} is not a launch coordinate",
                help="write ph.ctx.block.x|y|z or ph.ctx.grid.x|y|z",
            )
        if path in SCALAR_TYPES:
            raise self.source.reject(
                node, f"the type ph.{path} is not a value", help=f"cast with ph.{path}(value)"
            )
        raise self.source.reject(node, f"ph.{path} is not a value in a kernel")

    def unary(self, node: ast.UnaryOp) -> ph.Expr:
        op = UNARY_OPS.get(type(node.op))
        if op is None:
            raise self.source.reject(
                node,
                "unary `+` has no Phobos meaning outside t[a:+L]",
                help="drop the +, or write a window as t[a:+L]",
            )
        return ph.Unary(op, self.expr(node.operand), span=self.source.span(node))

    def bool_op(self, node: ast.BoolOp) -> ph.Expr:
        op = BOOL_OPS[type(node.op)]
        first, *rest = node.values
        result = self.expr(first)
        for value in rest:
            span = self.source.span_between(first, value)
            result = ph.Binary(op, result, self.expr(value), span=span)
        return result

    def compare(self, node: ast.Compare) -> ph.Expr:
        if len(node.ops) > 1:
            raise self.source.reject(
                node,
                "a chained comparison has no Phobos meaning",
                help="compare two values at a time: (a < b) and (b < c)",
            )
        op = COMPARE_OPS.get(type(node.ops[0]))
        if op is None:
            word = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
            raise self.source.reject(
                node,
                f"`{word[type(node.ops[0])]}` has no Phobos meaning",
                help="compare values with ==, !=, <, <=, > or >=",
            )
        left, right = self.expr(node.left), self.expr(node.comparators[0])
        return ph.Binary(op, left, right, span=self.source.span(node))

    # ------------------------------------------------------------------ calls

    def call(self, node: ast.Call) -> ph.Expr:
        span = self.source.span(node)
        name = self.callee(node.func)
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.source.reject(arg, "*args has no Phobos meaning", help="pass each value")
        if name in SCALAR_TYPES:
            folded = self.folded_literal(node, name)
            if folded is not None:
                return folded
        args = tuple(self.expr(arg) for arg in node.args)
        keywords = tuple(self.keyword(kw) for kw in node.keywords)
        return ph.Call(name, args, keywords, span=span)

    def callee(self, func: ast.expr) -> str:
        """The Phobos name a call's function spells: a ph builtin, a cast or a @ph.func."""
        path = self.aliases.path(func)
        if path is not None:
            if "." in path or path in NOT_CALLABLE:
                lang = self.lang_prefix()
                help = (
                    f"a tile of zeros is {lang}zeros[{lang}f32][M, N]" if path == "zeros" else None
                )
                raise self.source.reject(
                    func, f"{lang}{path} cannot be called inside a kernel", help=help
                )
            return path
        if isinstance(func, ast.Name) and func.id in self.functions:
            return func.id
        if isinstance(func, ast.Name) and func.id == "range":
            raise self.source.reject(
                func, "range stands only in a loop header", help="write for k in range(a, b, step):"
            )
        help = (
            "call a phobos.lang builtin (ph.exp, ph.sum, ph.f16, ...) or a @ph.func of this module"
        )
        if isinstance(func, ast.Name):
            help = PYTHON_BUILTIN_HELP.get(func.id, help)
        elif isinstance(func, ast.Attribute) and func.attr in ("to", "astype"):  # t.to(ph.f16)
            help = attribute_help(func.attr, ast.unparse(func.value), self.lang_prefix())
        raise self.source.reject(func, f"`{ast.unparse(func)}` is not a Phobos function", help=help)

    def lang_prefix(self) -> str:
        """``"ph."`` (the module's alias of ``phobos.lang``), or ``""`` for imported names."""
        alias = self.aliases.python_alias
        return f"{alias}." if alias else ""

    def keyword(self, node: ast.keyword) -> ph.Keyword:
        if node.arg is None:
            raise self.source.reject(
                node, "**kwargs has no Phobos meaning", help="name each keyword"
            )
        return ph.Keyword(node.arg, self.expr(node.value), span=self.source.span(node))

    def folded_literal(self, node: ast.Call, type_name: str) -> ph.Expr | None:
        """``ph.f16(2.5)`` is the literal ``2.5f16`` and ``ph.i64(7)`` is ``7i64``.

        The .ph parser folds ``f16(2.5)`` the same way, so both spellings give one tree.
        """
        if len(node.args) != 1 or node.keywords:
            return None
        arg = node.args[0]
        if not isinstance(arg, ast.Constant) or isinstance(arg.value, bool):
            return None
        literal = self.constant(arg)
        if isinstance(literal, ph.IntLit | ph.FloatLit):
            return replace(literal, suffix=type_name, span=self.source.span(node))
        return None

    # ------------------------------------------------------------------ subscripts

    def subscript(self, node: ast.Subscript) -> ph.Expr:
        span = self.source.span(node)
        ctor = self.tile_constructor(node)
        if ctor is not None:
            return ctor
        base_path = self.aliases.path(node.value)
        if base_path is not None and base_path.split(".")[0] in {"tensor", "zeros"}:
            raise self.source.reject(
                node,
                f"ph.{base_path}[...] must be followed by its element type, then its shape",
                help="write ph.zeros[ph.f32][BM, BN]; ph.tensor[...] stands only in a parameter type",
            )
        items = tuple(self.index_item(item) for item in _items(node.slice))
        if not items:
            raise self.source.reject(node, "an empty subscript", help="write t[i] or t[a:+L]")
        return ph.Subscript(self.expr(node.value), items, span=span)

    def index_item(self, node: ast.expr) -> ph.IndexItem:
        span = self.source.span(node)
        if isinstance(node, ast.Constant) and node.value is None:
            return ph.NewAxis(span=span)
        if isinstance(node, ast.Starred):
            raise rejected(self.source, node)
        if not isinstance(node, ast.Slice):
            return ph.Point(self.expr(node), span=span)
        if node.step is not None:
            raise self.source.reject(
                node, "a slice with a step has no Phobos meaning", help="write t[a:+L]"
            )
        if node.lower is None and node.upper is None:
            return ph.FullAxis(span=span)
        upper = node.upper
        if isinstance(upper, ast.UnaryOp) and isinstance(upper.op, ast.UAdd):
            if node.lower is None:
                raise self.source.reject(
                    node, "a window needs its start", help="write t[0:+L] for the first L elements"
                )
            return ph.Window(self.expr(node.lower), self.expr(upper.operand), span=span)
        raise self.source.reject(
            node,
            "a plain slice a:b has no Phobos meaning",
            help="write a window as t[a:+L]: the L elements from a (L a compile-time length)",
        )

    def tile_constructor(self, node: ast.Subscript) -> ph.TileCtor | None:
        """``ph.zeros[ph.f32][BM, BN]``: kind, element type, then shape."""
        inner = node.value
        if not isinstance(inner, ast.Subscript):
            return None
        kind = self.aliases.path(inner.value)
        if kind not in TILE_CONSTRUCTORS:
            return None
        shape = tuple(self.expr(item) for item in _items(node.slice))
        return ph.TileCtor(kind, self.scalar_type(inner.slice), shape, span=self.source.span(node))

    # ------------------------------------------------------------------ types

    def scalar_type(self, node: ast.expr) -> ph.ScalarType:
        path = self.aliases.path(node)
        if path not in SCALAR_TYPES:
            names = ", ".join(f"ph.{t}" for t in ph.SCALAR_TYPES)
            raise self.source.reject(
                node, f"`{ast.unparse(node)}` is not an element type", help=f"write one of {names}"
            )
        return ph.ScalarType(path, span=self.source.span(node))

    def param_type(self, node: ast.expr) -> ph.Type:
        """``ph.f32`` or ``ph.tensor[ph.f32][N, K]``."""
        inner = node.value if isinstance(node, ast.Subscript) else None
        if isinstance(inner, ast.Subscript) and self.aliases.path(inner.value) == "tensor":
            dtype = self.scalar_type(inner.slice)
            dims = tuple(self.dimension(d) for d in _items(node.slice))
            return ph.TensorType(dtype, dims, span=self.source.span(node))
        if self.aliases.path(node) in SCALAR_TYPES:
            return self.scalar_type(node)
        lang = self.lang_prefix()
        help = f"write a scalar type ({lang}f32) or a tensor ({lang}tensor[{lang}f32][N, K])"
        if ast.unparse(node).endswith("constexpr"):  # Triton's tl.constexpr
            help = (
                f"a compile-time value is a name of @{lang}autotune(...), or one given at the "
                "launch (k[grid](..., BLOCK=64)); remove the parameter and use the name"
            )
        raise self.source.reject(
            node, f"`{ast.unparse(node)}` is not a Phobos parameter type", help=help
        )

    def dimension(self, node: ast.expr) -> ph.Expr:
        """A tensor dimension: a named extent or an integer, bound when the kernel launches."""
        if isinstance(node, ast.Name) or (
            isinstance(node, ast.Constant) and type(node.value) is int
        ):
            return self.expr(node)
        raise self.source.reject(
            node,
            "a tensor dimension is a named extent (N) or an integer (64)",
            help="name the extent and compute with it in the body",
        )


def _items(node: ast.expr) -> list[ast.expr]:
    """The comma-separated items of a subscript (``t[a, b]`` holds a tuple)."""
    return node.elts if isinstance(node, ast.Tuple) else [node]
