"""Code in messages and help texts, written the way the user writes it: Phobos text or Python.

A kernel spelled in Python (``@ph.kernel``) is checked as the Phobos it spells, but
a help text that says "write `f32(x)`" would be wrong there: the user writes
``ph.f32(x)``.  ``Spelling`` writes each kind of snippet a help text shows in the
module's own spelling; ``Module.python_alias`` says which one that is.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.syntax import ast

# Phobos operators that Python spells with a word.
PYTHON_OPERATORS = {"&&": "and", "||": "or", "!": "not"}


@dataclass(frozen=True)
class Spelling:
    """``python_alias`` is None for Phobos text, else the module's name for ``phobos.lang``;
    ``host_constants`` are the Python module's ``NAME = number`` lines (``ast.Module``)."""

    python_alias: str | None = None
    host_constants: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, module: ast.Module) -> Spelling:
        return cls(module.python_alias, module.host_constants)

    def const(self, name: str, value: str) -> str:
        """A module constant: ``const C = 4`` / ``C: ph.const = 4``."""
        return (
            f"{name}: {self.lang('const')} = {value}"
            if self.is_python
            else f"const {name} = {value}"
        )

    @property
    def is_python(self) -> bool:
        return self.python_alias is not None

    def lang(self, name: str) -> str:
        """A name of the language: a builtin, a type, ``ctx``, ``inf`` (``exp`` / ``ph.exp``)."""
        return f"{self.python_alias}.{name}" if self.python_alias else name

    def call(self, func: str, *args: str) -> str:
        """A call of a builtin or cast: ``exp(x)`` / ``ph.exp(x)``."""
        return f"{self.lang(func)}({', '.join(args)})"

    def operator(self, op: str) -> str:
        """``&&``, ``||`` and ``!`` are ``and``, ``or`` and ``not`` in Python."""
        return PYTHON_OPERATORS.get(op, op) if self.is_python else op

    def typed_literal(self, value: int | float, dtype: str) -> str:
        """``7i64`` / ``ph.i64(7)``."""
        return self.call(dtype, str(value)) if self.is_python else f"{value}{dtype}"

    def let(self, name: str, value: str = "...") -> str:
        return self._binding("let", name, value)

    def var(self, name: str, value: str = "...") -> str:
        return self._binding("var", name, value)

    def _binding(self, kind: str, name: str, value: str) -> str:
        if self.is_python:
            return f"{name}: {self.lang(kind)} = {value}"
        return f"{kind} {name} = {value}"

    def binding_words(self) -> str:
        """The two declarations, as prose names them."""
        if self.is_python:
            return f"`x: {self.lang('let')} = ...` or `x: {self.lang('var')} = ...`"
        return "`let` or `var`"

    def window(self, start: str = "a", length: str = "L") -> str:
        """One window index item: ``a :+ L`` / ``a:+L``."""
        return f"{start}:+{length}" if self.is_python else f"{start} :+ {length}"

    def windows(self, tensor: str, rank: int = 1) -> str:
        """A window on every axis of a tensor: ``t[a :+ L, a :+ L]``."""
        return f"{tensor}[{', '.join([self.window()] * rank)}]"

    @property
    def newaxis(self) -> str:
        """The index item that adds an axis: ``newaxis`` / ``None``."""
        return "None" if self.is_python else "newaxis"

    def zeros(self, dtype: str, dims: str) -> str:
        """``zeros<f32>[M, N]`` / ``ph.zeros[ph.f32][M, N]``."""
        if self.is_python:
            return f"{self.lang('zeros')}[{self.lang(dtype)}][{dims}]"
        return f"zeros<{dtype}>[{dims}]"

    def loop(self, start: str, stop: str, step: str) -> str:
        """A loop's range: ``0 .. N step B`` / ``range(0, N, B)``."""
        return (
            f"range({start}, {stop}, {step})"
            if self.is_python
            else f"{start} .. {stop} step {step}"
        )

    def fn_header(self, name: str, result: str) -> str:
        """``fn g(...) -> f32`` / ``def g(...) -> ph.f32:``."""
        if self.is_python:
            return f"def {name}(...) -> {self.lang(result)}:"
        return f"fn {name}(...) -> {result}"

    def fn_word(self) -> str:
        """How prose names the declaration of a function."""
        return f"`@{self.lang('func')}`" if self.is_python else "`fn`"

    def param(self, name: str, dtype: str) -> str:
        """A scalar parameter: ``a: f32`` / ``a: ph.f32``."""
        return f"{name}: {self.lang(dtype)}"

    def assertion(self, cond: str, message: str) -> str:
        """A device assert: ``assert(c, "m")`` / ``assert c, "m"``."""
        return f'assert {cond}, "{message}"' if self.is_python else f'assert({cond}, "{message}")'

    def ctx(self, group: str = "block", axis: str = "x") -> str:
        return f"{self.lang('ctx')}.{group}.{axis}"
