"""The state of emitting one kernel: the code being written, fresh names, layouts, facts.

Emission is a single pass over the IR.  Statements and expressions append C++
lines to ``lines`` at the current indentation; every temporary gets a fresh
name; ``layout`` gives the default layout of a tile shape (what loads produce),
and each tile variable keeps the layout it was defined in; ``scratch_bytes``
grows to the largest shared-memory staging buffer any conversion, reduction or
``dot`` needs, and becomes the kernel's shared memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from phobos.compile.codegen.facts import Facts
from phobos.compile.codegen.layout import AnyLayout, Layout, lanes_per_group
from phobos.compile.codegen.signature import TensorAccess
from phobos.compile.codegen.values import TileValue
from phobos.compile.ir import nodes as ir
from phobos.compile.span import Span

SCRATCH = "phobos_scratch"
PARTIALS = "phobos_partials"  # two slots for row reductions' partials
PARTIALS_SLOT = "phobos_partials_slot"  # the bytes of one slot (a constant of the kernel)


class EmitContext:
    def __init__(
        self,
        threads: int,
        kernel_vec: int,
        index_width: int,
        access: dict[str, TensorAccess],
        read_and_written: frozenset[str] = frozenset(),
        arch: str = "",
    ) -> None:
        self.threads = threads
        self.arch = arch  # the card compiled for ("sm_90"), "" when unknown
        self.ctas_per_sm = 1  # blocks per SM the emitted code asks registers for (dot_loop.py)
        self.dot_tally: Any = None  # the kernel's tensor-core dots so far (dot_pairing.py)
        self.helpers: dict[str, str] = {}  # device functions defined before the kernel (wgmma.py)
        self.kernel_vec = kernel_vec
        self.index_width = index_width
        self.access = access
        self.read_and_written = read_and_written
        self.facts = Facts()
        self.reloads: dict[str, ir.Expr] = {}  # tile lets each read emits again (reload.py)
        # Windows a block loaded before its first reduction (early_loads.py).
        self.preloaded: dict[ir.Load, TileValue] = {}
        self.lines: list[str] = []
        self.scratch_bytes = 0
        self.partials_bytes = 0  # of one slot
        self._free_slots = {0, 1}
        self.partials_staged = 0  # stagings so far: whether a loop body staged any
        self._variables: dict[str, AnyLayout] = {}
        self._preferred: dict[str, AnyLayout] = {}
        # where the tile being emitted goes next (a dot's accumulator), if anywhere
        self.target_layout: AnyLayout | None = None
        self._scope = 0  # the C block being written: conversions are reused within it
        self._scopes = 0
        self._conversions: dict[tuple[str, AnyLayout], tuple[int, TileValue]] = {}
        self._indent = 1
        self._counter = 0

    def layout(self, shape: tuple[int, ...]) -> Layout:
        """The default layout of a tile shape (what loads, splats and iota produce)."""
        return Layout(shape, lanes_per_group(shape, self.kernel_vec), self.threads)

    def bind_variable(self, name: str, layout: AnyLayout) -> None:
        """A tile variable keeps the layout of its first value; later values convert to it."""
        self._variables[name] = layout

    def prefer_layout(self, name: str, layout: AnyLayout) -> None:
        """Hold variable ``name`` in ``layout`` from its definition on (a dot accumulator)."""
        self._preferred[name] = layout

    def preferred_layout(self, name: str) -> AnyLayout | None:
        return self._preferred.get(name)

    def variable_layout(self, name: str) -> AnyLayout:
        return self._variables[name]

    def fresh(self, prefix: str = "t") -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def indented(self, text: str) -> str:
        return "    " * self._indent + text

    def line(self, text: str) -> None:
        self.lines.append(self.indented(text))

    def line_info(self, span: Span) -> None:
        """``#line`` naming the user's file and line: what follows compiles as that line."""
        if span.line > 0:
            file = span.file.replace("\\", "\\\\").replace('"', '\\"')
            self.directive(f'#line {span.line} "{file}"')

    def directive(self, text: str) -> None:
        """A preprocessor line (``#line``, ``#pragma``), unindented for readability."""
        self.lines.append(text)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """``header {`` ... ``}`` with the body indented (a bare scope if no header)."""
        self.line(f"{header} {{" if header else "{")
        self._indent += 1
        outer = self._scope
        self._scopes += 1
        self._scope = self._scopes
        try:
            yield
        finally:
            self._scope = outer
            self._indent -= 1
            self.line("}")

    def converted(self, variable: str, layout: AnyLayout) -> TileValue | None:
        """Variable ``variable``'s lanes already moved to ``layout`` in this block, if so."""
        scope, value = self._conversions.get((variable, layout), (-1, None))
        return value if scope == self._scope else None

    def remember_conversion(self, variable: str, layout: AnyLayout, value: TileValue) -> None:
        self._conversions[(variable, layout)] = (self._scope, value)

    def forget_conversions(self, variable: str) -> None:
        """``variable`` is written: its converted copies are stale."""
        for key in [key for key in self._conversions if key[0] == variable]:
            del self._conversions[key]

    def partials_slot(self, nbytes: int) -> str:
        """A slot of ``nbytes`` for a row reduction's partials, as a pointer expression.

        A reduction writes its slot, synchronises and reads it.  Its barrier orders
        every earlier read of the other slot before any later write, so the next
        reduction takes the other slot with no barrier of its own: a reduction
        costs one barrier, not two.  Where the history is unknown (the start of a
        loop body, after a loop or an ``if``) a barrier frees both slots first.
        A loop body that ends with slot 0 free may take it at its top without a
        barrier when slot 0 is free on entry too (``statements._for``).
        """
        self.partials_bytes = max(self.partials_bytes, -(-nbytes // 16) * 16)
        if not self._free_slots:
            self.line("__syncthreads();")
            self._free_slots = {0, 1}
        slot = min(self._free_slots)
        self._free_slots = {1 - slot}
        self.partials_staged += 1
        return f"({PARTIALS} + {slot} * {PARTIALS_SLOT})"

    def partials_state(self) -> frozenset[int]:
        """The slots free now (to resume from at the start of an ``else``)."""
        return frozenset(self._free_slots)

    def resume_partials(self, free: frozenset[int]) -> None:
        self._free_slots = set(free)

    def forget_partials(self) -> None:
        """Control flow joins or repeats here: no slot is known free."""
        self._free_slots = set()

    def need_scratch(self, nbytes: int) -> str:
        """Reserve ``nbytes`` of the shared staging buffer and return its name."""
        self.scratch_bytes = max(self.scratch_bytes, nbytes)
        return SCRATCH
