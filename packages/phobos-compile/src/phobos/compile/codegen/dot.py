"""``dot``: ``acc + a @ b`` on the tensor cores (``mma.sync``), or on the CUDA cores.

Both operands are staged in shared memory first, ``a`` row-major and ``b``
transposed (so both are read along k), each row padded by 16 bytes so that the
fragment loads of a warp spread over the banks.  With f16 or bf16 operands, an
f32 accumulator and extents that ``m16n8k16`` tiles, each warp then loads its
fragments from shared memory as 32-bit words and issues one ``mma.sync`` per
16x8 tile and k-step; the result stays in the accumulator fragments
(``MmaLayout``), so a ``for`` loop that carries ``acc = dot(a, b, acc)`` keeps
it in registers from one iteration to the next.  Other dtypes and shapes take a
plain loop over k per result lane.

Absent lanes of ``a`` and ``b`` are staged as zeros.  A result lane is absent
only when no k has both ``a[m, k]`` and ``b[k, n]`` present (and where ``acc``
is absent): the present k of each row of ``a`` and column of ``b`` are bit sets
in shared memory, and a lane tests whether its two sets meet.
"""

from __future__ import annotations

from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.conversions import to_layout
from phobos.compile.codegen.dtypes import byte_size, ctype
from phobos.compile.codegen.lanes import all_lanes, declare_tile, group_loop
from phobos.compile.codegen.layout import AnyLayout, MmaLayout, mma_shape_ok
from phobos.compile.codegen.values import TileValue, and_masks
from phobos.compile.ir import nodes as ir

_TENSOR_CORE_DTYPES = ("f16", "bf16")
_PAD = 8  # elements of row padding (16 bytes of f16/bf16)


def result_layout(ctx: EmitContext, dot: ir.Dot) -> AnyLayout:
    """Where ``dot``'s result lives: accumulator fragments when the tensor cores do it."""
    (m, k), n = dot.a.type.shape, dot.type.shape[1]
    tensor_cores = dot.a.type.dtype in _TENSOR_CORE_DTYPES and dot.type.dtype == "f32"
    if tensor_cores and mma_shape_ok(m, n, k):
        return MmaLayout(dot.type.shape, ctx.threads)
    return ctx.layout(dot.type.shape)


def emit_dot(
    ctx: EmitContext, node: ir.Dot, a: TileValue, b: TileValue, acc: TileValue
) -> TileValue:
    k = a.layout.shape[1]
    layout = result_layout(ctx, node)
    staged = _stage_operands(ctx, a, b)
    acc = to_layout(ctx, acc, layout)
    c = ctype(node.type.dtype)
    name = ctx.fresh()
    present = a.mask is not None or b.mask is not None
    declare_tile(ctx, c, name, layout, present or acc.mask is not None)
    if isinstance(layout, MmaLayout):
        all_lanes(ctx, layout, [f"{name}[r][i] = {acc.lane};"])
        _mma(ctx, layout, name, staged, a.dtype, k)
        lines = []
    else:
        wide = "f32" if node.type.dtype in _TENSOR_CORE_DTYPES else node.type.dtype
        w = ctype(wide)
        lines = [
            f"{w} total = phobos::cast<{w}>({acc.lane});",
            "#pragma unroll 4",
            f"for (int k = 0; k < {k}; ++k) total += "
            f"phobos::cast<{w}>({staged.a}[c0 * {staged.row} + k]) * "
            f"phobos::cast<{w}>({staged.b}[c1 * {staged.row} + k]);",
            f"{name}[r][i] = phobos::cast<{c}>(total);",
        ]
    mask = and_masks(acc.mask, _meet(staged) if present else None)
    if mask is not None:
        lines.append(f"{name}_m[r][i] = {mask};")
    if lines:
        all_lanes(ctx, layout, lines, skip_padding=True)
    return TileValue(node.type.dtype, layout, f"{name}[r][i]", f"{name}_m[r][i]" if mask else None)


class _Staged:
    """Names of the staged operands: ``a[m * row + k]``, ``b[n * row + k]``, and k bit sets."""

    def __init__(self, a: str, b: str, row: int, a_bits: str, b_bits: str, words: int) -> None:
        self.a, self.b, self.row = a, b, row
        self.a_bits, self.b_bits, self.words = a_bits, b_bits, words


def _stage_operands(ctx: EmitContext, a: TileValue, b: TileValue) -> _Staged:
    (m, k), n = a.layout.shape, b.layout.shape[1]
    row = k + _PAD
    size = byte_size(a.dtype, ctx.index_width)
    words = -(-k // 64)
    a_bytes = _round16(m * row * size)
    b_bytes = _round16(n * row * size)
    bits_bytes = (m + n) * words * 8 if a.mask is not None or b.mask is not None else 0
    scratch = ctx.need_scratch(a_bytes + b_bytes + bits_bytes)
    c = ctype(a.dtype)
    sa, sb = ctx.fresh("dot_a"), ctx.fresh("dot_b")
    ma, mb = f"{sa}_bits", f"{sb}_bits"
    ctx.line("__syncthreads();")
    ctx.line(f"{c}* {sa} = reinterpret_cast<{c}*>({scratch});")
    ctx.line(f"{c}* {sb} = reinterpret_cast<{c}*>({scratch} + {a_bytes});")
    if bits_bytes:
        ctx.line(
            f"phobos::u64* {ma} = reinterpret_cast<phobos::u64*>({scratch} + {a_bytes + b_bytes});"
        )
        ctx.line(f"phobos::u64* {mb} = {ma} + {m * words};")
        with ctx.block(f"for (int j = tid; j < {(m + n) * words}; j += {ctx.threads})"):
            ctx.line(f"{ma}[j] = 0;")
        ctx.line("__syncthreads();")
    for value, buffer, bits, outer, inner in ((a, sa, ma, "c0", "c1"), (b, sb, mb, "c1", "c0")):
        zero = f"{c}()"
        lane = value.lane if value.mask is None else f"({value.mask} ? {value.lane} : {zero})"
        body = [f"{buffer}[{outer} * {row} + {inner}] = {lane};"]
        if value.mask is not None:
            body.append(
                f"if ({value.mask}) phobos::set_bit(&{bits}[{outer} * {words} + {inner} / 64], "
                f"{inner} % 64);"
            )
        elif bits_bytes:
            body.append(
                f"phobos::set_bit(&{bits}[{outer} * {words} + {inner} / 64], {inner} % 64);"
            )
        all_lanes(ctx, value.layout, body, skip_padding=True)
    ctx.line("__syncthreads();")
    return _Staged(sa, sb, row, ma, mb, words)


def _meet(staged: _Staged) -> str:
    """Some k is present in both the lane's row of ``a`` and its column of ``b``."""
    terms = [
        f"({staged.a_bits}[c0 * {staged.words} + {w}] & {staged.b_bits}[c1 * {staged.words} + {w}])"
        for w in range(staged.words)
    ]
    return "((" + " | ".join(terms) + ") != 0)"


def _mma(
    ctx: EmitContext, layout: MmaLayout, name: str, staged: _Staged, dtype: str, k: int
) -> None:
    """Each warp's tiles: fragments from shared memory, one mma.sync per k-step of 16."""
    words_a, words_b = ctx.fresh("frag_a"), ctx.fresh("frag_b")
    row = staged.row
    ctx.line(f"const unsigned* {words_a} = reinterpret_cast<const unsigned*>({staged.a});")
    ctx.line(f"const unsigned* {words_b} = reinterpret_cast<const unsigned*>({staged.b});")
    with group_loop(ctx, layout, skip_padding=True):
        per_row = layout.tiles_per_row
        ctx.line(f"const int am = ((g / 32) / {per_row}) * 16 + (g % 32) / 4;")
        ctx.line(f"const int bn = ((g / 32) % {per_row}) * 8 + (g % 32) / 4;")
        ctx.line("const int k0 = (g % 4) * 2;")
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int kk = 0; kk < {k}; kk += 16)"):
            a0 = f"(am * {row} + kk + k0) / 2"
            a1 = f"((am + 8) * {row} + kk + k0) / 2"
            ctx.line(
                f"const unsigned fa[4] = {{{words_a}[{a0}], {words_a}[{a1}], "
                f"{words_a}[{a0} + 4], {words_a}[{a1} + 4]}};"
            )
            b0 = f"(bn * {row} + kk + k0) / 2"
            ctx.line(f"const unsigned fb[2] = {{{words_b}[{b0}], {words_b}[{b0} + 4]}};")
            ctx.line(f"phobos::mma_16816<{ctype(dtype)}>({name}[r], fa, fb);")


def _round16(n: int) -> int:
    return -(-n // 16) * 16
