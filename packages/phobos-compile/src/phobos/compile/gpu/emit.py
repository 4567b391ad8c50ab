"""The C++ printer: final GPU IR → one ``extern "C" __global__`` CUDA C++ kernel.

It decides nothing: every op prints as its attributes and layouts say, through the
helpers of ``runtime/phobos_gpu.cuh``.  A tile is a register array ``T r12[R]``
walked by fully unrolled loops, so every index is a constant after unrolling and
the array lives in registers; a register's coordinate along an axis is its
thread's base (lane and warp bits, computed once at the top) plus the register's
offset (its bits, constant once unrolled).  A uniform is a C local.  Every op is
preceded by a ``#line`` naming the user's file and line when it changes, so NVRTC's
messages, ptxas' line info, compute-sanitizer and Nsight name the user's lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from phobos.compile.gpu import ir
from phobos.compile.gpu.cdtypes import ctype, literal
from phobos.compile.gpu.layouts import (
    WARP,
    Layout,
    SharedLayout,
    _axis_of,
    register_permutation,
    shared_bytes,
)
from phobos.compile.gpu.passes.cta import element_bytes
from phobos.compile.gpu.signature import Signature, build_signature
from phobos.compile.ir import reduction_ops
from phobos.compile.span import Span

RUNTIME_HEADER = "phobos_gpu.cuh"
SMEM = "phobos_smem"
STATIC_SMEM_LIMIT = 48 * 1024

_OPERATORS = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "and": "&", "or": "|",
    "xor": "^", "shl": "<<", "shr": ">>", "eq": "==", "ne": "!=", "lt": "<", "le": "<=",
    "gt": ">", "ge": ">=", "land": "&&", "lor": "||",
}  # fmt: skip
_BOOLEAN = ("eq", "ne", "lt", "le", "gt", "ge", "land", "lor")
# Integer operations that C leaves undefined somewhere and docs/language.md defines.
_INTEGER_HELPERS = {
    "div": "divide", "mod": "remainder", "shl": "shift_left", "shr": "shift_right",
}  # fmt: skip
_NARROW = ("i8", "i16", "u8", "u16", "bool")


@dataclass(frozen=True)
class Emitted:
    source: str
    entry: str
    signature: Signature


def entry_name(kernel: str) -> str:
    """The C name of the kernel: ``phobos_`` and its name, other than ASCII letters, digits
    and ``_`` spelled as ``_u<hex>_`` (a Python identifier may be any Unicode word)."""
    out = []
    for ch in kernel:
        out.append(ch if ch.isascii() and (ch.isalnum() or ch == "_") else f"_u{ord(ch):x}_")
    return "phobos_" + "".join(out)


def emit_kernel(kernel: ir.Kernel) -> Emitted:
    return _Printer(kernel).run()


class _Printer:
    def __init__(self, kernel: ir.Kernel) -> None:
        self.k = kernel
        self.signature = build_signature(kernel)
        self.lines: list[str] = []
        self.depth = 1
        self.names: dict[ir.Value, str] = {}
        self.bases: dict[tuple[Layout, int], tuple[str, str]] = {}
        self.helpers: dict[str, str] = {}
        self.line_at: tuple[str, int] | None = None
        self.counter = 0

    # ------------------------------------------------------------------ text

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def open(self, header: str) -> None:
        self.line(header + " {")
        self.depth += 1

    def close(self, tail: str = "") -> None:
        self.depth -= 1
        self.line("}" + tail)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def name(self, v: ir.Value) -> str:
        if v not in self.names:
            prefix = (
                "u"
                if isinstance(v.type, ir.Uniform)
                else "b"
                if isinstance(v.type, ir.Shared)
                else "r"
            )
            self.names[v] = f"{prefix}{v.id}"
        return self.names[v]

    def span(self, span: Span) -> None:
        if span.line > 0 and (span.file, span.line) != self.line_at:
            file = span.file.replace("\\", "\\\\").replace('"', '\\"')
            self.lines.append(f'#line {span.line} "{file}"')
            self.line_at = (span.file, span.line)

    def unroll(self, count: int, var: str = "r") -> None:
        self.lines.append("#pragma unroll")
        self.open(f"for (int {var} = 0; {var} < {count}; ++{var})")

    # ------------------------------------------------------------------ layouts

    def base(self, layout: Layout, axis: int) -> str:
        """The thread's coordinate of register 0 along ``axis`` (a kernel-wide constant)."""
        key = (layout, axis)
        if key not in self.bases:
            terms = [
                f"((lane >> {i}) & 1) * {b[axis]}"
                for i, b in enumerate(layout.lanes)
                if _axis_of(b) == axis
            ]
            terms += [
                f"((warp >> {i}) & 1) * {b[axis]}"
                for i, b in enumerate(layout.warps)
                if _axis_of(b) == axis
            ]
            self.bases[key] = (f"base{len(self.bases)}", " + ".join(terms) or "0")
        name, text = self.bases[key]
        return name if text != "0" else "0"

    @staticmethod
    def offset(layout: Layout, axis: int, r: str) -> str:
        """Register ``r``'s offset along ``axis`` (constant once ``r`` is)."""
        terms = [
            f"(({r} >> {i}) & 1) * {b[axis]}"
            for i, b in enumerate(layout.registers)
            if _axis_of(b) == axis
        ]
        if layout.repeat_axis == axis:
            terms.append(f"({r} >> {layout.register_bits}) * {layout.span(axis)}")
        return "(" + " + ".join(terms) + ")" if terms else "0"

    def coord(self, layout: Layout, axis: int, r: str) -> str:
        base, off = self.base(layout, axis), self.offset(layout, axis, r)
        if base == "0":
            return off
        return base if off == "0" else f"({base} + {off})"

    def padding_test(self, layout: Layout, r: str) -> str | None:
        """A test that register ``r`` holds an element, where padding makes one needed."""
        terms = [
            f"{self.coord(layout, a, r)} < {n}"
            for a, n in enumerate(layout.shape)
            if layout.padded(a)
        ]
        return " && ".join(terms) or None

    def first_holder(self, layout: Layout) -> str | None:
        """This thread holds its elements' first copy (replicated layouts store once)."""
        lanes = sum(1 << i for i, b in enumerate(layout.lanes) if not any(b))
        warps = sum(1 << i for i, b in enumerate(layout.warps) if not any(b))
        terms = []
        if lanes:
            terms.append(f"(lane & {lanes}) == 0")
        if warps:
            terms.append(f"(warp & {warps}) == 0")
        return " && ".join(terms) or None

    # ------------------------------------------------------------------ the kernel

    def run(self) -> Emitted:
        self.block(self.k.body)
        entry = entry_name(self.k.name)
        values = ", ".join(f"{n}={v}" for n, v in self.k.values) or "none"
        bounds = f"{self.k.threads}" + (f", {self.k.min_ctas}" if self.k.min_ctas else "")
        smem = self.k.shared_bytes
        pinned = self.k.thread_values_pinned
        head = [
            f"// Generated by phobos-compile from kernel '{self.k.name}' ({values}).",
            f'#include "{RUNTIME_HEADER}"',
            "",
            *(text + "\n" for text in self.helpers.values()),
            f'extern "C" __global__ void __launch_bounds__({bounds})',
            f"{entry}({', '.join(self.signature.declarations)}) {{",
            f"    const int tid = {'phobos::thread_index()' if pinned else 'threadIdx.x'};",
            f"    [[maybe_unused]] const int lane = phobos::cta_thread<{self.k.threads}>(tid) % {WARP};",
            f"    [[maybe_unused]] const int warp = phobos::cta_thread<{self.k.threads}>(tid) / {WARP};",
            *(
                f"    const int {name} = phobos::pinned({text});"
                if pinned
                else f"    const int {name} = {text};"
                for name, text in self.bases.values()
                if text != "0"
            ),
        ]
        if smem > STATIC_SMEM_LIMIT:
            head.append(f"    extern __shared__ __align__(16) unsigned char {SMEM}_raw[];")
        elif smem:
            head.append(f"    __shared__ __align__(16) unsigned char {SMEM}_raw[{smem}];")
        if smem:
            align = self.k.shared_align
            head.append(
                f"    unsigned char* const {SMEM} = phobos::align_shared<{align}>({SMEM}_raw);"
            )
        source = "\n".join(head + self.lines + ["}", ""])
        return Emitted(source, entry, self.signature)

    def block(self, block: ir.Block) -> None:
        for op in block.ops:
            self.span(op.span)
            getattr(self, "_" + type(op).__name__)(op)

    # ------------------------------------------------------------------ declarations

    def declare(self, v: ir.Value, init: str | None = None) -> str:
        name = self.name(v)
        t = v.type
        if isinstance(t, ir.Uniform):
            self.line(f"[[maybe_unused]] const {ctype(t.dtype)} {name} = {init};")
        elif _bits(v):
            self.line(f"[[maybe_unused]] unsigned {name}[{_words(v)}] = {{}};")
        else:
            assert isinstance(t, ir.Tile) and t.layout is not None
            zero = " = {}" if init == "zero" else ""
            self.line(f"[[maybe_unused]] {ctype(t.dtype)} {name}[{t.layout.num_registers}]{zero};")
        return name

    def alias(self, result: ir.Value, source: ir.Value) -> None:
        self.names[result] = self.name(source)

    def registers(self, v: ir.Value) -> int:
        layout = v.tile.layout
        assert layout is not None
        return layout.num_registers

    def lane(self, v: ir.Value, r: str = "r") -> str:
        """``v`` in one register (a tile) or as itself (a uniform).  A bool tile is one bit a
        register, in 32-bit words: a 64-lane mask takes two registers, not 64."""
        if _bits(v):
            return f"phobos::bit({self.name(v)}, {r})"
        return f"{self.name(v)}[{r}]" if isinstance(v.type, ir.Tile) else self.name(v)

    def put(self, v: ir.Value, r: str, expr: str) -> str:
        """The statement that sets register ``r`` of tile ``v`` (declared zero) to ``expr``."""
        if _bits(v):
            return f"phobos::set_bit({self.name(v)}, {r}, {expr});"
        return f"{self.name(v)}[{r}] = {expr};"

    def run_in(self, v: ir.Value, count: int) -> str:
        """Where a run of ``count`` registers from ``r0`` is loaded: the registers, or for a
        bool tile a small array that ``run_done`` packs into its bits."""
        if not _bits(v):
            return f"&{self.name(v)}[r0]"
        self.line(f"bool run[{count}];")
        return "run"

    def run_done(self, v: ir.Value, count: int) -> None:
        if _bits(v):
            self.line(
                f"for (int i = 0; i < {count}; ++i) phobos::set_bit({self.name(v)}, r0 + i, run[i]);"
            )

    def run_out(self, v: ir.Value, count: int) -> str:
        """The run of ``count`` registers from ``r0`` to store (a bool tile's bits unpacked)."""
        if not _bits(v):
            return f"&{self.name(v)}[r0]"
        self.line(f"bool run[{count}];")
        self.line(
            f"for (int i = 0; i < {count}; ++i) run[i] = phobos::bit({self.name(v)}, r0 + i);"
        )
        return "run"

    def run_bits(self, v: ir.Value, r0: str, count: int) -> str:
        """Bits ``r0 .. r0 + count - 1`` of a bool tile, as an unsigned (bit i: lane i)."""
        return f"phobos::bits<{count}>({self.name(v)}, {r0})"

    # ------------------------------------------------------------------ uniforms

    def _Constant(self, op: ir.Constant) -> None:
        self.declare(op.result, literal(op.value, op.result.dtype))

    def _Param(self, op: ir.Param) -> None:
        self.declare(op.result, self.signature.scalar(op.param))

    def _Extent(self, op: ir.Extent) -> None:
        self.declare(op.result, self.signature.extent(op.extent))

    def _Stride(self, op: ir.Stride) -> None:
        self.declare(op.result, self.signature.stride(op.tensor, op.axis))

    def _BlockIndex(self, op: ir.BlockIndex) -> None:
        source = "blockIdx" if op.group == "block" else "gridDim"
        self.declare(op.result, f"{ctype(op.result.dtype)}({source}.{op.axis})")

    # ------------------------------------------------------------------ elementwise

    def elementwise(self, op: ir.Op, text) -> None:
        if op.result.is_uniform:
            self.declare(op.result, text([self.name(v) for v in op.operands]))
            return
        self.declare(op.result)
        self.unroll(self.registers(op.result))
        self.line(self.put(op.result, "r", text([self.lane(v) for v in op.operands])))
        self.close()

    def _Unary(self, op: ir.Unary) -> None:
        dtype = op.result.dtype
        sign = {"neg": "-", "not": "!", "bitnot": "~"}[op.op]
        if op.op == "not":
            self.elementwise(op, lambda a: f"(!({a[0]}))")
        else:
            self.elementwise(op, lambda a: _wrap(f"({sign}({a[0]}))", dtype))

    def _Binary(self, op: ir.Binary) -> None:
        dtype = op.result.dtype
        operand = op.operands[0].dtype
        if op.op in ("max", "min"):
            self.elementwise(op, lambda a: f"phobos::{op.op}({a[0]}, {a[1]})")
        elif op.op == "mod" and operand in ("f16", "bf16", "f32", "f64"):
            self.elementwise(op, lambda a: f"phobos::fmod({a[0]}, {a[1]})")
        elif op.op in _INTEGER_HELPERS and operand[0] in "iu":
            helper = _INTEGER_HELPERS[op.op]
            self.elementwise(op, lambda a: f"phobos::{helper}({a[0]}, {a[1]})")
        else:
            symbol = _OPERATORS[op.op]
            if op.op in _BOOLEAN:
                self.elementwise(op, lambda a: f"({a[0]} {symbol} {a[1]})")
            else:
                self.elementwise(op, lambda a: _wrap(f"({a[0]} {symbol} {a[1]})", dtype))

    def _MathFn(self, op: ir.MathFn) -> None:
        self.elementwise(op, lambda a: f"phobos::{op.fn}({', '.join(a)})")

    def _Cast(self, op: ir.Cast) -> None:
        c = ctype(op.result.dtype)
        self.elementwise(op, lambda a: f"phobos::cast<{c}>({a[0]})")

    def _Select(self, op: ir.Select) -> None:
        self.elementwise(op, lambda a: f"({a[0]} ? {a[1]} : {a[2]})")

    # ------------------------------------------------------------------ tile sources and shapes

    def _Splat(self, op: ir.Splat) -> None:
        self.declare(op.result)
        self.unroll(self.registers(op.result))
        self.line(self.put(op.result, "r", self.name(op.operands[0])))
        self.close()

    def _Coord(self, op: ir.Coord) -> None:
        layout = op.result.tile.layout
        assert layout is not None
        name = self.declare(op.result)
        self.unroll(layout.num_registers)
        self.line(f"{name}[r] = {ctype(op.result.dtype)}({self.coord(layout, op.axis, 'r')});")
        self.close()

    def _ExpandDims(self, op: ir.ExpandDims) -> None:
        self.alias(op.result, op.operands[0])

    def _Squeeze(self, op: ir.Squeeze) -> None:
        self.alias(op.result, op.operands[0])

    def _Transpose(self, op: ir.Transpose) -> None:
        self.alias(op.result, op.operands[0])

    def _ToUniform(self, op: ir.ToUniform) -> None:
        self.declare(op.result, f"{self.name(op.operands[0])}[0]")

    def _Broadcast(self, op: ir.Broadcast) -> None:
        layout = op.result.tile.layout
        assert layout is not None
        source = op.operands[0].tile.shape
        axes = [a for a, n in enumerate(source) if n == 1 and layout.shape[a] != 1]
        self.declare(op.result)
        self.unroll(layout.num_registers)
        self.line(
            self.put(op.result, "r", self.lane(op.operands[0], _source_register(layout, axes, "r")))
        )
        self.close()

    def _Permute(self, op: ir.Permute) -> None:
        source, target = op.operands[0].tile.layout, op.result.tile.layout
        assert source is not None and target is not None
        renaming = register_permutation(source, target)
        assert renaming is not None
        self.declare(op.result)
        for r, source_register in enumerate(renaming.tolist()):
            self.line(self.put(op.result, str(r), self.lane(op.operands[0], str(source_register))))

    # ------------------------------------------------------------------ reductions

    def _ReduceRegisters(self, op: ir.ReduceRegisters) -> None:
        """Each result register combines the source registers that differ from it only in the
        axis's bits: ``CHAINS`` running partials over contiguous runs of them (each term is
        combined as soon as it is made, in the order the registers were loaded), then those
        pairwise.  Padding and masked-out registers count as the identity."""
        source, target = op.operands[0].tile.layout, op.result.tile.layout
        assert source is not None and target is not None
        identity = _identity(op.op, op.result.dtype, self.k.index_width)
        outputs = target.num_registers
        count = source.num_registers // outputs
        chains = max(c for c in range(1, min(CHAINS, count) + 1) if count % c == 0)
        size = count // chains
        self.declare(op.result)
        self.unroll(outputs, "o")
        self.line(f"{ctype(op.result.dtype)} part[{chains}];")
        self.unroll(chains, "c")
        self.line(
            f"part[c] = {self.term(op, source, _compose(source, op.axis, 'o', f'c * {size}'), identity)};"
        )
        self.unroll(size - 1, "j")
        term = self.term(
            op, source, _compose(source, op.axis, "o", f"c * {size} + 1 + j"), identity
        )
        self.line(f"part[c] = {_combine(op.op, 'part[c]', term)};")
        self.close()
        self.close()
        partials = [f"part[{c}]" for c in range(chains)]
        self.line(self.put(op.result, "o", _tree(op.op, partials, identity)))
        self.close()

    def term(self, op: ir.ReduceRegisters, source: Layout, r: str, identity: str) -> str:
        """Source register ``r`` of a reduction, or the identity where it holds no lane."""
        tests = []
        for axis in range(source.rank):
            if source.padded(axis):
                tests.append(self.coord(source, axis, f"({r})") + f" < {source.shape[axis]}")
        if op.masked:
            tests.append(self.lane(op.operands[1], f"({r})"))
        value = self.lane(op.operands[0], f"({r})")
        return f"(({' && '.join(tests)}) ? {value} : {identity})" if tests else value

    def _ShuffleReduce(self, op: ir.ShuffleReduce) -> None:
        source = op.operands[0].tile.layout
        assert source is not None
        _, lanes, _ = source.axis_bits(op.axis)
        self.declare(op.result)
        self.unroll(self.registers(op.result))
        c = ctype(op.result.dtype)
        self.line(f"{c} value = {self.lane(op.operands[0])};")
        for bit in lanes:
            # The shuffle is a statement of its own: every lane must run it, and in a combine
            # such as ``value && partner`` it would be skipped where ``value`` is false.
            self.line(f"{c} partner{bit} = phobos::shuffle_xor(value, {1 << bit});")
            self.line(f"value = {_combine(op.op, 'value', f'partner{bit}')};")
        self.line(self.put(op.result, "r", "value"))
        self.close()

    # ------------------------------------------------------------------ global memory

    def access(self, op, coords: list[str]) -> tuple[list[str], str, list[str]]:
        """Tensor indices of a run's first register (declared as constants), its pointer, and
        the in-bounds tests of the axes other than the last."""
        tensor = self.k.tensors[op.tensor]
        starts = op.starts if hasattr(op, "starts") else op.operands[1 : 1 + len(op.lengths)]
        index = ctype(f"i{self.k.index_width}")
        indices: list[str] = []
        tile_axis = 0
        for start, length in zip(starts, op.lengths):
            if length is None:
                indices.append(self.name(start))
            else:
                name = self.fresh("i")
                self.line(
                    f"const {index} {name} = {self.name(start)} + {index}({coords[tile_axis]});"
                )
                indices.append(name)
                tile_axis += 1
        offset = " + ".join(
            f"{i} * {self.signature.stride(op.tensor, a)}"
            if self.signature.stride(op.tensor, a) != "1"
            else i
            for a, i in enumerate(indices)
        )
        pointer = f"{self.signature.pointer(op.tensor)} + ({offset})"
        inside = [
            f"phobos::below<{index}>({i}, {self.signature.extent_of(tensor, a)})"
            for a, i in enumerate(indices[:-1])
        ]
        return indices, pointer, inside

    def _Load(self, op: ir.Load) -> None:
        t = op.result.tile
        layout = t.layout
        assert layout is not None
        self.declare(op.result, "zero")
        vector = op.vector
        runs = layout.num_registers // vector
        c = ctype(t.dtype)
        size = element_bytes(t.dtype)
        self.unroll(runs, "g")
        self.line(f"const int r0 = g * {vector};")
        coords = [self.coord(layout, a, "r0") for a in range(layout.rank)]
        indices, pointer, inside = self.access(op, coords)
        valid = self.padding_test(layout, "r0")
        last = len(op.lengths) - 1
        extent = self.signature.extent_of(self.k.tensors[op.tensor], last)
        test = " && ".join([*(inside if op.checked else []), *([valid] if valid else [])]) or "true"
        unit = self.signature.stride(op.tensor, last) == "1"
        bytes_ = vector * size if vector > 1 else 0
        check = "false" if op.aligned else "true"
        mask = self.run_bits(op.mask, "r0", vector) if op.mask is not None else None
        if unit and op.lengths[last] is not None:
            target = self.run_in(op.result, vector)
            if op.checked or mask is not None:
                if mask is not None:
                    call = f"phobos::load_run_masked<{vector}, {bytes_}, {check}>({pointer}, {indices[last]}, {extent}, {test}, {mask}, {target})"
                else:
                    call = f"phobos::load_run<{vector}, {bytes_}, {check}>({pointer}, {indices[last]}, {extent}, {test}, {target})"
                self.line(call + ";")
            else:
                call = (
                    f"phobos::load_run_unchecked<{vector}, {bytes_}, {check}>({pointer}, {target})"
                )
                self.line(f"if ({test}) {call};" if test != "true" else call + ";")
            self.run_done(op.result, vector)
        else:
            ok = test
            if op.checked:
                ok = f"{test} && phobos::below<{ctype(f'i{self.k.index_width}')}>({indices[last]}, {extent})"
            if op.mask is not None:
                ok = f"{ok} && {self.lane(op.mask, 'r0')}"
            self.line(self.put(op.result, "r0", f"({ok}) ? {c}(*({pointer})) : {c}(0)"))
        self.close()

    def _Store(self, op: ir.Store) -> None:
        value = op.value
        layout = value.tile.layout
        assert layout is not None
        vector = op.vector
        runs = layout.num_registers // vector
        size = element_bytes(value.dtype)
        if op.predicate is not None:
            self.open(f"if ({self.name(op.predicate)})")
        holder = self.first_holder(layout)
        if holder:
            self.open(f"if ({holder})")
        self.unroll(runs, "g")
        self.line(f"const int r0 = g * {vector};")
        coords = [self.coord(layout, a, "r0") for a in range(layout.rank)]
        indices, pointer, inside = self.access(op, coords)
        valid = self.padding_test(layout, "r0")
        last = len(op.lengths) - 1
        extent = self.signature.extent_of(self.k.tensors[op.tensor], last)
        test = " && ".join([*(inside if op.checked else []), *([valid] if valid else [])]) or "true"
        unit = self.signature.stride(op.tensor, last) == "1"
        bytes_ = vector * size if vector > 1 else 0
        check = "false" if op.aligned else "true"
        mask = self.run_bits(op.mask, "r0", vector) if op.mask is not None else "~0u"
        src = self.run_out(value, vector)
        if unit and op.lengths[last] is not None:
            if op.checked:
                self.line(
                    f"phobos::store_run<{vector}, {bytes_}, {check}>({pointer}, {indices[last]}, {extent}, {test}, {src}, {mask});"
                )
            else:
                index = ctype(f"i{self.k.index_width}")
                self.line(
                    f"phobos::store_run<{vector}, {bytes_}, {check}>({pointer}, {index}(0), {index}({vector}), {test}, {src}, {mask});"
                )
        else:
            ok = test
            if op.checked:
                ok = f"{test} && phobos::below<{ctype(f'i{self.k.index_width}')}>({indices[last]}, {extent})"
            if op.mask is not None:
                ok = f"{ok} && {self.lane(op.mask, 'r0')}"
            self.line(f"if ({ok}) *({pointer}) = {self.lane(value, 'r0')};")
        self.close()
        if holder:
            self.close()
        if op.predicate is not None:
            self.close()

    def point(self, tensor: str, indices: list[ir.Value]) -> tuple[str, str]:
        """A pointer to one element and its in-bounds test."""
        param = self.k.tensors[tensor]
        index = ctype(f"i{self.k.index_width}")
        names = [self.name(i) for i in indices]
        offset = " + ".join(
            f"{n} * {self.signature.stride(tensor, a)}"
            if self.signature.stride(tensor, a) != "1"
            else n
            for a, n in enumerate(names)
        )
        inside = " && ".join(
            f"phobos::below<{index}>({n}, {self.signature.extent_of(param, a)})"
            for a, n in enumerate(names)
        )
        return f"{self.signature.pointer(tensor)} + ({offset})", inside or "true"

    def _LoadUniform(self, op: ir.LoadUniform) -> None:
        pointer, inside = self.point(op.tensor, op.operands)
        c = ctype(op.result.dtype)
        self.declare(op.result, f"({inside}) ? {c}(*({pointer})) : {c}(0)")

    def _StoreUniform(self, op: ir.StoreUniform) -> None:
        *indices, value = op.operands
        pointer, inside = self.point(op.tensor, indices)
        self.line(f"if (tid == 0 && {inside}) *({pointer}) = {self.name(value)};")

    def _Atomic(self, op: ir.Atomic) -> None:
        n = len(op.lengths)
        rest = list(op.operands[n:])
        compare = rest.pop(0) if op.kind == "cas" else None
        value = rest.pop(0)
        mask = rest.pop(0) if op.masked else None
        function = f"phobos::atomic_{op.kind}"
        if all(length is None for length in op.lengths):
            pointer, inside = self.point(op.tensor, op.operands[:n])
            arguments = ([self.name(compare)] if compare is not None else []) + [self.name(value)]
            call = f"{function}({pointer}, {', '.join(arguments)})"
            if not op.results:
                self.line(f"if (tid == 0 && {inside}) {call};")
                return
            c = ctype(op.result.dtype)
            slot = f"reinterpret_cast<{c}*>({self.name(op.operands[-1])})"
            self.open("if (tid == 0)")
            self.line(f"{c} old = {c}(0);")
            self.line(f"if ({inside}) old = {call};")
            self.line(f"*{slot} = old;")
            self.close()
            self.line("__syncthreads();")
            self.declare(op.result, f"*{slot}")
            self.line("__syncthreads();")
            return
        layout = value.tile.layout
        assert layout is not None
        holder = self.first_holder(layout)
        if holder:
            self.open(f"if ({holder})")
        self.unroll(layout.num_registers)
        coords = [self.coord(layout, a, "r") for a in range(layout.rank)]
        op_starts = op.operands[:n]
        fake = type("A", (), {"tensor": op.tensor, "starts": op_starts, "lengths": op.lengths})
        indices, pointer, inside = self.access(fake, coords)
        last = len(op.lengths) - 1
        index = ctype(f"i{self.k.index_width}")
        tests = [
            *inside,
            f"phobos::below<{index}>({indices[last]}, {self.signature.extent_of(self.k.tensors[op.tensor], last)})",
        ]
        valid = self.padding_test(layout, "r")
        if valid:
            tests.append(valid)
        if mask is not None:
            tests.append(self.lane(mask))
        self.line(f"if ({' && '.join(tests)}) {function}({pointer}, {self.lane(value)});")
        self.close()
        if holder:
            self.close()

    # ------------------------------------------------------------------ shared memory

    def _SharedAlloc(self, op: ir.SharedAlloc) -> None:
        self.line(
            f"[[maybe_unused]] unsigned char* const {self.name(op.result)} = {SMEM} + {op.offset};"
        )

    def smem_offset(self, t: ir.Shared, row: str, col: str, stage: str | None) -> str:
        layout = t.layout
        if layout.kind == "rows":
            offset = f"({row}) * {layout.cols + layout.pad} + ({col})"
        else:
            offset = f"phobos::swizzled_offset<{layout.width}, {layout.rows}>({row}, {col})"
        if stage is not None:
            step = (
                -(-layout.size_bytes // layout.alignment) * layout.alignment // layout.element_bytes
            )
            offset = f"{offset} + ({stage}) * {step}"
        return offset

    def rows_cols(
        self, layout: Layout, shape: tuple[int, ...], r: str, transposed: bool = False
    ) -> tuple[str, str]:
        coords = [self.coord(layout, a, r) for a in range(layout.rank)]
        if transposed:
            coords = coords[::-1]
            shape = shape[::-1]
        if len(shape) == 1:
            return "0", coords[0]
        row = coords[0]
        for a in range(1, len(shape) - 1):
            row = f"({row}) * {shape[a]} + {coords[a]}"
        return row, coords[-1]

    def _SharedStore(self, op: ir.SharedStore) -> None:
        buffer, value = op.operands[0], op.operands[1]
        stage = self.name(op.operands[2]) if len(op.operands) > 2 else None
        t = buffer.type
        assert isinstance(t, ir.Shared)
        layout = value.tile.layout
        assert layout is not None
        c = ctype(t.dtype)
        holder = self.first_holder(layout)
        if holder:
            self.open(f"if ({holder})")
        self.unroll(layout.num_registers)
        row, col = self.rows_cols(layout, value.tile.shape, "r")
        store = f"reinterpret_cast<{c}*>({self.name(buffer)})[{self.smem_offset(t, row, col, stage)}] = {self.lane(value)};"
        valid = self.padding_test(layout, "r")
        self.line(f"if ({valid}) {store}" if valid else store)
        self.close()
        if holder:
            self.close()

    def _SharedLoad(self, op: ir.SharedLoad) -> None:
        if op.via == "ldmatrix":
            self.ldmatrix(op)
            return
        buffer = op.operands[0]
        stage = self.name(op.operands[1]) if len(op.operands) > 1 else None
        t = buffer.type
        assert isinstance(t, ir.Shared)
        layout = op.result.tile.layout
        assert layout is not None
        c = ctype(t.dtype)
        self.declare(op.result, "zero" if layout.has_padding else None)
        self.unroll(layout.num_registers)
        row, col = self.rows_cols(layout, op.result.tile.shape, "r", op.transposed)
        element = f"reinterpret_cast<const {c}*>({self.name(buffer)})[{self.smem_offset(t, row, col, stage)}]"
        load = self.put(op.result, "r", element)
        valid = self.padding_test(layout, "r")
        self.line(f"if ({valid}) {load}" if valid else load)
        self.close()

    def ldmatrix(self, op: ir.SharedLoad) -> None:
        """Fragments of ``mma.sync`` operands, four 8x8 matrices a warp at a time.

        ``a`` (``[M, K]``): matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15) of one 16x16 step;
        ``b`` (``[K, N]``): (k 0-7 | 8-15) of one 8-column tile (x2).  A buffer holding
        the operand as it lies in the tensor row-major needs the transposing form where
        its rows are the fragment's k (b) and the plain form where they are m (a);
        ``transposed`` buffers swap that.
        """
        buffer = op.operands[0]
        t = buffer.type
        assert isinstance(t, ir.Shared) and op.warps is not None
        layout = op.result.tile.layout
        assert layout is not None
        down, across = op.warps
        stage = self.name(op.operands[1]) if len(op.operands) > 1 else None
        name = self.declare(op.result)
        c = ctype(t.dtype)
        rows, cols = op.result.tile.shape
        pointer = f"reinterpret_cast<const {c}*>({self.name(buffer)})"
        if op.fragment == "a":
            m, k = rows, cols
            tiles, steps = m // (16 * down), k // 16
            kbits = int(math.log2(steps)) if steps > 1 else 0
            for i in range(tiles):
                for s in range(steps):
                    m0 = f"(warp % {down}) * 16 + {i * 16 * down}"
                    k0 = s * 16
                    if not op.transposed:  # rows are m: plain
                        row, col, trans = (
                            f"{m0} + (lane % 8) + ((lane / 8) % 2) * 8",
                            f"{k0} + (lane / 16) * 8",
                            False,
                        )
                    else:  # the buffer is [K, M]: rows are k
                        row, col, trans = (
                            f"{k0} + (lane / 16) * 8 + (lane % 8)",
                            f"{m0} + ((lane / 8) % 2) * 8",
                            True,
                        )
                    base = (s << 3) | (i << (3 + kbits))
                    bases = [base + 2 * j for j in range(4)]
                    self.matrices(name, pointer, t, row, col, trans, bases, stage)
        else:
            k, n = rows, cols
            per_warp = n // across
            ntiles, steps = per_warp // 8, k // 16
            nbits = int(math.log2(ntiles)) if ntiles > 1 else 0
            for s in range(steps):
                for q in range(ntiles):
                    n0 = f"(warp / {down}) * {per_warp} + {q * 8}"
                    k0 = s * 16
                    if not op.transposed:  # rows are k: transposing
                        row, col, trans = f"{k0} + ((lane / 8) % 2) * 8 + (lane % 8)", n0, True
                    else:  # the buffer is [N, K]: rows are n
                        row, col, trans = (
                            f"{n0} + (lane % 8)",
                            f"{k0} + ((lane / 8) % 2) * 8",
                            False,
                        )
                    base = (q << 2) | (s << (2 + nbits))
                    bases = [base, base + 2]
                    self.matrices(name, pointer, t, row, col, trans, bases, stage, count=2)

    def matrices(self, name, pointer, t, row, col, trans, bases, stage, count=4) -> None:
        fragment = self.fresh("m")
        form = f"load_matrix_x{count}" + ("_trans" if trans else "")
        address = f"{pointer} + {self.smem_offset(t, row, col, stage)}"
        self.line(f"unsigned {fragment}[{count}];")
        self.line(f"phobos::{form}({fragment}, {address});")
        for j, base in enumerate(bases):
            self.line(f"phobos::unpack2({fragment}[{j}], {name}[{base}], {name}[{base + 1}]);")

    def _CopyAsync(self, op: ir.CopyAsync) -> None:
        buffer = op.operands[0]
        n = len(op.lengths)
        stage = self.name(op.operands[1 + n]) if len(op.operands) > 1 + n else None
        t = buffer.type
        assert isinstance(t, ir.Shared)
        layout = op.layout
        vector = layout.contiguous_registers(layout.rank - 1)
        c = ctype(t.dtype)
        holder = self.first_holder(layout)
        if holder:
            self.open(f"if ({holder})")
        self.unroll(layout.num_registers // vector, "g")
        self.line(f"const int r0 = g * {vector};")
        coords = [self.coord(layout, a, "r0") for a in range(layout.rank)]
        fake = type(
            "A", (), {"tensor": op.tensor, "starts": op.operands[1 : 1 + n], "lengths": op.lengths}
        )
        indices, pointer, inside = self.access(fake, coords)
        valid = self.padding_test(layout, "r0")
        test = " && ".join([*(inside if op.checked else []), *([valid] if valid else [])]) or "true"
        last = n - 1
        extent = self.signature.extent_of(self.k.tensors[op.tensor], last)
        row, col = self.rows_cols(layout, layout.shape, "r0")
        target = (
            f"reinterpret_cast<{c}*>({self.name(buffer)}) + {self.smem_offset(t, row, col, stage)}"
        )
        if op.checked or not op.aligned:
            check = "false" if op.aligned else "true"
            self.line(
                f"phobos::copy_run_async<{vector}, {check}>({target}, {pointer}, {indices[last]}, {extent}, {test});"
            )
        elif valid:
            self.line(f"if ({valid}) phobos::copy_async_16({target}, {pointer});")
        else:
            self.line(f"phobos::copy_async_16({target}, {pointer});")
        self.close()
        if holder:
            self.close()

    def _MbarrierAlloc(self, op: ir.MbarrierAlloc) -> None:
        self.line(
            f"[[maybe_unused]] unsigned long long* const {self.name(op.result)} = "
            f"reinterpret_cast<unsigned long long*>({SMEM} + {op.offset});"
        )

    def _MbarrierInit(self, op: ir.MbarrierInit) -> None:
        bars = op.operands[0]
        assert isinstance(bars.type, ir.Mbarriers)
        count = bars.type.count
        self.line(
            f"if (tid == 0) phobos::mbarrier_init({self.name(bars)}, {count}, {op.arrivals});"
        )

    def _CopyTma(self, op: ir.CopyTma) -> None:
        buffer, bars, *starts, stage = (self.name(v) for v in op.operands)
        t = op.operands[0].type
        assert isinstance(t, ir.Shared)
        layout = t.layout
        step = -(-layout.size_bytes // layout.alignment) * layout.alignment
        rows, columns = op.box[-2:]
        tensor_map = self.signature.tensor_map(op.tensor, op.box)
        rank = len(op.box)
        if op.single:
            self.open("if (tid == 0)")
        self.line(f"phobos::mbarrier_arrive_expect({bars} + ({stage}), {layout.size_bytes});")
        for atom in range(layout.cols // columns):
            target = f"{buffer} + ({stage}) * {step} + {atom * rows * layout.width}"
            coords = [f"{starts[-1]} + {atom * columns}", *reversed(starts[:-1])]
            self.line(
                f"phobos::tma_load<{rank}>({target}, &{tensor_map}, {bars} + ({stage}), "
                f"{', '.join(coords)});"
            )
        if op.single:
            self.close()

    def _MbarrierWait(self, op: ir.MbarrierWait) -> None:
        bars, stage, phase = (self.name(v) for v in op.operands)
        wait = f"phobos::mbarrier_wait({bars} + ({stage}), {phase});"
        self.line(f"if (tid == 0) {wait}" if op.single else wait)

    def _MbarrierArrive(self, op: ir.MbarrierArrive) -> None:
        bars, stage = (self.name(v) for v in op.operands)
        self.line(f"phobos::mbarrier_arrive({bars} + ({stage}));")

    def _AsyncCommit(self, op) -> None:
        self.line("phobos::copy_async_commit();")

    def _AsyncWait(self, op: ir.AsyncWait) -> None:
        self.line(f"phobos::copy_async_wait_pending<{op.pending}>();")

    def _Barrier(self, op) -> None:
        self.line("__syncthreads();")

    def _FenceAsync(self, op) -> None:
        self.line("phobos::fence_async_shared();")

    # ------------------------------------------------------------------ products

    def _MmaSync(self, op: ir.MmaSync) -> None:
        a, b, acc = op.operands
        layout = op.result.tile.layout
        assert layout is not None
        (m, k), n = a.tile.shape, op.result.tile.shape[1]
        down = 1 << sum(1 for w in layout.warps if _axis_of(w) == 0)
        across = 1 << sum(1 for w in layout.warps if _axis_of(w) == 1)
        name = self.declare(op.result)
        self.unroll(self.registers(op.result))
        self.line(f"{name}[r] = {self.name(acc)}[r];")
        self.close()
        mtiles, ntiles, steps = m // (16 * down), n // (8 * across), k // 16
        nbits = int(math.log2(ntiles)) if ntiles > 1 else 0
        kbits = int(math.log2(steps)) if steps > 1 else 0
        an, bn = self.name(a), self.name(b)
        dtype = ctype(a.dtype)
        for s in range(steps):
            for i in range(mtiles):
                abase = (s << 3) | (i << (3 + kbits))
                a_regs = ", ".join(
                    f"phobos::pack2({an}[{abase + 2 * j}], {an}[{abase + 2 * j + 1}])"
                    for j in range(4)
                )
                for j in range(ntiles):
                    bbase = (j << 2) | (s << (2 + nbits))
                    b_regs = ", ".join(
                        f"phobos::pack2({bn}[{bbase + 2 * h}], {bn}[{bbase + 2 * h + 1}])"
                        for h in range(2)
                    )
                    dbase = (j << 2) | (i << (2 + nbits))
                    self.line(
                        f"phobos::mma_16816<{dtype}>(&{name}[{dbase}], {{{a_regs}}}, {{{b_regs}}});"
                    )

    def _Wgmma(self, op: ir.Wgmma) -> None:
        a, b, acc = op.operands[:3]
        layout = op.result.tile.layout
        assert layout is not None
        (m, k), n = (
            a.tile.shape if isinstance(a.type, ir.Tile) else a.type.shape,
            op.result.tile.shape[1],
        )
        if isinstance(a.type, ir.Shared) and op.a_major == "mn":
            m, k = a.type.shape[1], a.type.shape[0]
        down, across = op.warpgroups
        cols = n // across
        slabs = m // (64 * down)
        steps = k // 16
        kbits = int(math.log2(steps)) if steps > 1 else 0
        total = self.registers(op.result)
        if op.chained:  # onto the accumulator in flight, in its registers
            self.alias(op.result, acc)
            name = self.name(acc)
        else:
            name = self.declare(op.result)
            self.unroll(total)
            self.line(f"{name}[r] = {self.name(acc)}[r];")
            self.close()
        dtype = a.dtype
        register_a = isinstance(a.type, ir.Tile)
        helper = self.wgmma_helper(cols, dtype, register_a, op.a_major == "mn", op.b_major == "mn")
        self.line(f"phobos::fence_registers<{total}>({name});")
        if register_a:
            self.line(f"phobos::fence_registers_16<{self.registers(a)}>({self.name(a)});")
        self.line("phobos::wgmma_fence();")
        self.open("")
        self.line("const int warpgroup = warp / 4;")
        self.line(f"[[maybe_unused]] const int group_row = (warpgroup % {down}) * 64;")
        self.line(f"const int group_col = (warpgroup / {down}) * {cols};")
        b_type = b.type
        assert isinstance(b_type, ir.Shared)
        stages = list(op.operands[3:])
        a_stage = stages.pop(0) if op.a_stage else None
        b_stage = stages.pop(0) if op.b_stage else None
        for s in range(steps):
            b_desc = self.descriptor(b, b_type, op.b_major, s, "group_col", b_stage)
            for i in range(slabs):
                row = f"group_row + {i * 64 * down}"
                first = i * (cols // 2)
                d = f"*reinterpret_cast<float (*)[{cols // 2}]>(&{name}[{first}])"
                if register_a:
                    base = (s << 3) | (i << (3 + kbits))
                    an = self.name(a)
                    regs = ", ".join(
                        f"phobos::pack2({an}[{base + 2 * j}], {an}[{base + 2 * j + 1}])"
                        for j in range(4)
                    )
                    self.line(f"{helper}({d}, {regs}, {b_desc});")
                else:
                    a_type = a.type
                    assert isinstance(a_type, ir.Shared)
                    a_desc = self.descriptor(a, a_type, op.a_major, s, row, a_stage)
                    self.line(f"{helper}({d}, {a_desc}, {b_desc});")
        self.close()
        self.line("phobos::wgmma_commit();")

    def descriptor(
        self,
        buffer: ir.Value,
        t: ir.Shared,
        major: str,
        step: int,
        offset: str,
        stage: ir.Value | None = None,
    ) -> str:
        """The matrix descriptor of k-step ``step`` of an operand staged in ``t``'s swizzled
        layout (at ``stage`` of a ring), starting at row (K-major) or column (MN-major)
        ``offset`` of the product."""
        layout: SharedLayout = t.layout
        width, rows = layout.width, layout.rows
        mode = {128: 1, 64: 2, 32: 3}[width]
        base = self.name(buffer)
        if stage is not None:
            base = f"({base} + ({self.name(stage)}) * {shared_bytes(layout)})"
        column = step * 16 * 2  # bytes into a K-major row
        if major == "k":
            start = f"{base} + {column // width * rows * width} + ({offset}) * {width} + {column % width}"
            return f"phobos::wgmma_descriptor({start}, 16, {8 * width}, {mode})"
        start = f"{base} + {step * 16 * width} + (({offset}) * 2 / {width}) * {rows * width}"
        return f"phobos::wgmma_descriptor({start}, {rows * width}, {8 * width}, {mode})"

    def wgmma_helper(
        self, n: int, dtype: str, register_a: bool, trans_a: bool, trans_b: bool
    ) -> str:
        kind = "rs" if register_a else "ss"
        name = f"phobos_wgmma_{kind}_m64n{n}k16_{dtype}_t{int(trans_a)}{int(trans_b)}"
        if name in self.helpers:
            return name
        count = n // 2
        registers = ", ".join(f"%{i}" for i in range(count))
        outputs = ", ".join(f'"+f"(d[{i}])' for i in range(count))
        if register_a:
            a_text = f"{{%{count}, %{count + 1}, %{count + 2}, %{count + 3}}}"
            b_slot = count + 4
            immediates = f"p, 1, 1, {int(trans_b)}"
            params = "unsigned a0, unsigned a1, unsigned a2, unsigned a3, phobos::u64 b"
            inputs = '"r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(b), "r"(1)'
        else:
            a_text = f"%{count}"
            b_slot = count + 1
            immediates = f"p, 1, 1, {int(trans_a)}, {int(trans_b)}"
            params = "phobos::u64 a, phobos::u64 b"
            inputs = '"l"(a), "l"(b), "r"(1)'
        ptx = (
            f"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{b_slot + 1}, 0;\\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dtype}.{dtype} "
            f"{{{registers}}}, {a_text}, %{b_slot}, {immediates};\\n}}\\n"
        )
        guard = name.upper()  # one definition where several kernels share a source
        self.helpers[name] = "\n".join(
            [
                f"#ifndef {guard}",
                f"#define {guard}",
                f"__device__ __forceinline__ void {name}(float (&d)[{count}], {params}) {{",
                f'    asm volatile("{ptx}"',
                f"                 : {outputs}",
                f"                 : {inputs});",
                "}",
                "#endif",
            ]
        )
        return name

    def _WgmmaWait(self, op: ir.WgmmaWait) -> None:
        if not op.drained:
            self.line(f"phobos::wgmma_wait<{op.pending}>();")
        if op.results:
            self.alias(op.result, op.operands[0])
            self.line(
                f"phobos::fence_registers<{self.registers(op.result)}>({self.name(op.result)});"
            )

    def _DotShared(self, op: ir.DotShared) -> None:
        a_buf, b_buf, acc = op.operands
        layout = op.result.tile.layout
        assert layout is not None
        a_t, b_t = a_buf.type, b_buf.type
        assert isinstance(a_t, ir.Shared) and isinstance(b_t, ir.Shared)
        k = a_t.shape[1]
        name = self.declare(op.result)
        wide = "phobos::f32" if op.result.dtype in ("f16", "bf16") else ctype(op.result.dtype)
        self.unroll(layout.num_registers)
        row, col = self.coord(layout, 0, "r"), self.coord(layout, 1, "r")
        self.line(f"{wide} sum = phobos::cast<{wide}>({self.name(acc)}[r]);")
        valid = self.padding_test(layout, "r")
        if valid:
            self.open(f"if ({valid})")
        self.lines.append("#pragma unroll 4")
        self.open(f"for (int kk = 0; kk < {k}; ++kk)")
        a_elem = f"reinterpret_cast<const {ctype(a_t.dtype)}*>({self.name(a_buf)})[{self.smem_offset(a_t, row, 'kk', None)}]"
        b_elem = f"reinterpret_cast<const {ctype(b_t.dtype)}*>({self.name(b_buf)})[{self.smem_offset(b_t, 'kk', col, None)}]"
        self.line(f"sum += phobos::cast<{wide}>({a_elem}) * phobos::cast<{wide}>({b_elem});")
        self.close()
        if valid:
            self.close()
        self.line(f"{name}[r] = phobos::cast<{ctype(op.result.dtype)}>(sum);")
        self.close()

    # ------------------------------------------------------------------ control flow

    def carried(self, values: list[ir.Value]) -> None:
        """Declare the C variables a loop or branch carries its values in."""
        for v in values:
            name = self.name(v)
            t = v.type
            if isinstance(t, ir.Uniform):
                self.line(f"[[maybe_unused]] {ctype(t.dtype)} {name};")
            elif _bits(v):
                self.line(f"[[maybe_unused]] unsigned {name}[{_words(v)}];")
            else:
                assert isinstance(t, ir.Tile) and t.layout is not None
                self.line(f"[[maybe_unused]] {ctype(t.dtype)} {name}[{t.layout.num_registers}];")

    def assign(self, targets: list[ir.Value], sources: list[ir.Value]) -> None:
        """``targets = sources`` all at once (a source may be another target)."""
        temps = []
        for target, source in zip(targets, sources):
            if isinstance(target.type, ir.Uniform):
                temp = self.fresh("y")
                self.line(f"const {ctype(target.dtype)} {temp} = {self.name(source)};")
                temps.append((target, temp, None))
            else:
                count = _words(target) if _bits(target) else self.registers(target)
                temps.append((target, self.name(source), count))
        copies = [(t, s, n) for t, s, n in temps if n is not None and self.name(t) != s]
        staged = []
        for target, source, count in copies:
            temp = self.fresh("y")
            element = "unsigned" if _bits(target) else ctype(target.dtype)
            self.line(f"{element} {temp}[{count}];")
            self.unroll(count)
            self.line(f"{temp}[r] = {source}[r];")
            self.close()
            staged.append((target, temp, count))
        for target, temp, _ in [(t, s, n) for t, s, n in temps if n is None]:
            self.line(f"{self.name(target)} = {temp};")
        for target, temp, count in staged:
            self.unroll(count)
            self.line(f"{self.name(target)}[r] = {temp}[r];")
            self.close()

    def _For(self, op: ir.For) -> None:
        start, stop, step = op.operands[:3]
        carried = op.body.args[1:]
        self.carried(carried)
        self.assign(carried, op.inits)
        iv = op.body.args[0]
        c = ctype(iv.dtype)
        outer = getattr(self, "_yield_targets", [])
        self._yield_targets = carried
        self.open(
            f"for ({c} {self.name(iv)} = {self.name(start)}; {self.name(iv)} < {self.name(stop)}; {self.name(iv)} += {self.name(step)})"
        )
        self.block(op.body)
        self.close()
        self._yield_targets = outer
        for result, arg in zip(op.results, carried):
            self.alias(result, arg)

    def _Yield(self, op: ir.Yield) -> None:
        self.assign(self._yield_targets, op.operands)

    def _If(self, op: ir.If) -> None:
        self.carried(op.results)
        outer = getattr(self, "_yield_targets", [])
        self.open(f"if ({self.name(op.operands[0])})")
        self._yield_targets = op.results
        self.block(op.regions[0])
        self.close()
        self.open("else")
        self._yield_targets = op.results
        self.block(op.regions[1])
        self.close()
        self._yield_targets = outer

    def _While(self, op: ir.While) -> None:
        cond_args, body_args = op.regions[0].args, op.regions[1].args
        self.carried(body_args)
        self.assign(body_args, op.operands)
        for a, b in zip(cond_args, body_args):
            self.alias(a, b)
        outer = getattr(self, "_yield_targets", [])
        self.open("while (true)")
        self.block(op.regions[0])
        self._yield_targets = body_args
        self.block(op.regions[1])
        self.close()
        self._yield_targets = outer
        for result, arg in zip(op.results, body_args):
            self.alias(result, arg)

    def _Condition(self, op: ir.Condition) -> None:
        self.line(f"if (!({self.name(op.operands[0])})) break;")

    def _Return(self, op: ir.Return) -> None:
        self.line("return;")

    # ------------------------------------------------------------------ debugging

    def _Trace(self, op: ir.Trace) -> None:
        rest = list(op.operands[1:])
        mask = rest.pop(0) if op.masked else None
        when = rest.pop(0) if op.conditional else None
        value = op.operands[0]
        where = f"{_c_string(op.span.file)}, {op.span.line}"
        block = "(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z"
        if when is not None:
            self.open(f"if ({self.name(when)})")
        if value.is_uniform:
            conversion, argument = _printf(value.dtype, self.name(value))
            text = f'"%s:%d: block (%d, %d, %d): %s = {conversion}\\n"'
            self.line(
                f"if (tid == 0) printf({text}, {where}, {block}, {_c_string(op.label)}, {argument});"
            )
        else:
            layout = value.tile.layout
            assert layout is not None
            shape = value.tile.shape
            holder = self.first_holder(layout)
            if holder:
                self.open(f"if ({holder})")
            self.unroll(layout.num_registers)
            conversion, argument = _printf(value.dtype, self.lane(value))
            index = ", ".join("%d" for _ in shape)
            coords = ", ".join(f"(int)({self.coord(layout, a, 'r')})" for a in range(len(shape)))
            text = f'"%s:%d: block (%d, %d, %d): %s[{index}] = {conversion}\\n"'
            call = f"printf({text}, {where}, {block}, {_c_string(op.label)}, {coords}, {argument});"
            tests = [
                t
                for t in (
                    self.padding_test(layout, "r"),
                    self.lane(mask) if mask is not None else None,
                )
                if t
            ]
            self.line(f"if ({' && '.join(tests)}) {call}" if tests else call)
            self.close()
            if holder:
                self.close()
        if when is not None:
            self.close()

    def _Assert(self, op: ir.Assert) -> None:
        cond = op.operands[0]
        fail = f"__assertfail({_c_string(op.message)}, {_c_string(op.span.file)}, {op.span.line}, __func__, 1);"
        if cond.is_uniform:
            self.line(f"if (tid == 0 && !{self.name(cond)}) {fail}")
            return
        layout = cond.tile.layout
        assert layout is not None
        self.unroll(layout.num_registers)
        tests = [f"!{self.lane(cond)}"]
        if op.masked:
            tests.insert(0, self.lane(op.operands[1]))
        valid = self.padding_test(layout, "r")
        if valid:
            tests.insert(0, valid)
        self.line(f"if ({' && '.join(tests)}) {fail}")
        self.close()


def _bits(v: ir.Value) -> bool:
    return isinstance(v.type, ir.Tile) and v.dtype == "bool"


def _words(v: ir.Value) -> int:
    layout = v.tile.layout
    assert layout is not None
    return -(-layout.num_registers // 32)


def _wrap(text: str, dtype: str) -> str:
    """Narrow integers promote to int in C: cast the result back so it wraps."""
    return f"{ctype(dtype)}{text}" if dtype in _NARROW else text


def _identity(op: str, dtype: str, index_width: int) -> str:
    return literal(reduction_ops.identity(op, dtype, index_width), dtype)


def _combine(op: str, a: str, b: str) -> str:
    return reduction_ops.combine_c(op, a, b)


def _tree(op: str, terms: list[str], identity: str) -> str:
    """``terms`` combined pairwise (a balanced tree: short dependency chains)."""
    if not terms:
        return identity
    while len(terms) > 1:
        terms = [
            _combine(op, terms[i], terms[i + 1]) if i + 1 < len(terms) else terms[i]
            for i in range(0, len(terms), 2)
        ]
    return terms[0]


# Running partials of a thread's reduction, each over a contiguous run of its registers
# (the order they are loaded in, so each dies soon after it is made): few values live at
# once, and dependency chains a quarter as long.
CHAINS = 4


def _chains(op: str, terms: list[str], identity: str) -> str:
    """``terms`` combined in ``CHAINS`` running partials over contiguous runs, then those
    pairwise."""
    if not terms:
        return identity
    size = -(-len(terms) // CHAINS)
    partials = []
    for first in range(0, len(terms), size):
        value = terms[first]
        for term in terms[first + 1 : first + size]:
            value = _combine(op, value, term)
        partials.append(value)
    return _tree(op, partials, identity)


def _source_register(layout: Layout, axes: list[int], r: str) -> str:
    """The operand register a broadcast's register ``r`` repeats: ``r``'s bits less those of
    the broadcast axes (a C expression, constant once ``r`` is)."""
    terms, bit = [], 0
    for i, basis in enumerate(layout.registers):
        if _axis_of(basis) not in axes:
            terms.append(f"((({r}) >> {i}) & 1) << {bit}")
            bit += 1
    if layout.repeat > 1 and layout.repeat_axis not in axes:
        terms.append(f"(({r}) >> {layout.register_bits}) << {bit}")
    return "(" + " | ".join(terms) + ")" if terms else "0"


def _compose(layout: Layout, axis: int, out: str, k: str) -> str:
    """The register whose bits along ``axis`` (and repeat there) are ``k``'s and whose other
    bits are ``out``'s: the ``k``-th register a reduction's ``out``-th result combines."""
    terms, along, other = [], 0, 0
    for i, basis in enumerate(layout.registers):
        if _axis_of(basis) == axis:
            terms.append(f"(((({k}) >> {along}) & 1) << {i})")
            along += 1
        else:
            terms.append(f"(((({out}) >> {other}) & 1) << {i})")
            other += 1
    if layout.repeat > 1:
        high = f"({k}) >> {along}" if layout.repeat_axis == axis else f"({out}) >> {other}"
        terms.append(f"(({high}) << {layout.register_bits})")
    return " | ".join(terms) or "0"


def _without_axis_bits(layout: Layout, axis: int, r: int) -> int:
    """Register ``r`` of ``layout`` with ``axis``'s register bits (and repeat) removed."""
    out, bit = 0, 0
    for i, basis in enumerate(layout.registers):
        if _axis_of(basis) != axis:
            out |= (r >> i & 1) << bit
            bit += 1
    if layout.repeat_axis != axis:
        out |= (r >> layout.register_bits) << bit
    return out


def _c_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    out = []
    for ch in escaped:
        out.append(ch if ch.isascii() else "".join(f"\\x{b:02x}" for b in ch.encode()) + '""')
    return '"' + "".join(out) + '"'


def _printf(dtype: str, value: str) -> tuple[str, str]:
    if dtype in ("f16", "bf16", "f32"):
        return "%g", f"(double)(float)({value})"
    if dtype == "f64":
        return "%g", f"({value})"
    if dtype == "i64":
        return "%lld", f"(long long)({value})"
    if dtype == "u64":
        return "%llu", f"(unsigned long long)({value})"
    if dtype == "u32":
        return "%u", f"(unsigned)({value})"
    return "%d", f"(int)({value})"
