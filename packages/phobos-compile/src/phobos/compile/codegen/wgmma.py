"""``dot`` on Hopper's warpgroup MMA (``wgmma.mma_async``, sm_90a) in the pipelined k-loop.

A warpgroup (four warps, 128 threads) multiplies a 64-row slab of ``a`` by all of
``b``, both read straight from shared memory through matrix descriptors, into
accumulators that are exactly ``MmaLayout``'s with the warps stacked down the
rows (``MmaLayout.warpgroups``): warp ``w`` holds tile rows ``w``, ``w + warps``,
..., all tile columns.  So the k-loop's copies, presence and everything after the
loop are the ``mma.sync`` path's; only the staging layout and the multiply differ.

Staging: ``a`` (``[m, k]``, k contiguous: "K-major") and ``b`` (``[k, n]``, n
contiguous: "MN-major", read transposed) are copied by ``cp.async`` into the
canonical layouts the descriptors name: rows of ``W`` bytes (the swizzle width:
the row's bytes, at most 128), atoms of rows side by side along the contiguous
axis, each row's 16-byte chunks permuted by the swizzle
(``phobos::swizzled_offset``); every stage starts on 1024 bytes.

``fits`` says when: sm_90a, f16/bf16 operands and an f32 accumulator, whole
warpgroups, 64-row slabs shared evenly among them, and ``n`` and ``k`` that fill
whole swizzle atoms.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.dtypes import ctype
from phobos.compile.codegen.layout import MmaLayout

WARPGROUP = 128
SLAB = 64  # rows of one wgmma
K_STEP = 16
STAGE_ALIGN = 1024  # a 128-byte swizzle pattern repeats every 1024 bytes
_MODES = {128: 1, 64: 2, 32: 3}  # swizzle width (bytes) → the descriptor's layout type


def fits(arch: str, threads: int, m: int, n: int, k: int) -> bool:
    """Whether a pipelined ``[m, k] x [k, n]`` product of 16-bit values runs on wgmma."""
    groups = threads // WARPGROUP
    return (
        arch == "sm_90a"
        and threads % WARPGROUP == 0
        and m % (SLAB * groups) == 0
        and n <= 256
        and _width(n) in _MODES
        and (2 * n) % _width(n) == 0
        and k % K_STEP == 0
        and _width(k) in _MODES
        and (2 * k) % _width(k) == 0
    )


def _width(extent: int) -> int:
    """The swizzle width of rows of ``extent`` 16-bit values: the row, at most 128 bytes."""
    return min(2 * extent, 128)


@dataclass(frozen=True)
class Operand:
    """One operand as staged: ``rows`` rows of ``width``-byte atoms along its contiguous axis."""

    rows: int
    width: int

    def offset(self, row: str, col: str) -> str:
        """The element offset of (``row``, ``col``) (tile coordinates) in the stage."""
        return f"phobos::swizzled_offset<{self.width}, {self.rows}>({row}, {col})"

    @property
    def mode(self) -> int:
        return _MODES[self.width]


@dataclass(frozen=True)
class Stage:
    """Where one k-step's operands lie for ``multiply``: two 1024-aligned buffers."""

    a: str  # pointer to the a buffer (16-bit elements)
    b: str
    a_layout: Operand
    b_layout: Operand


def operands(m: int, n: int, k: int) -> tuple[Operand, Operand]:
    """How ``a`` (``m`` rows of ``k``) and ``b`` (``k`` rows of ``n``) are staged."""
    return Operand(m, _width(k)), Operand(k, _width(n))


def stage_bytes(m: int, n: int, k: int) -> tuple[int, int]:
    """Bytes of the staged ``a`` and ``b``, each rounded up to keep the next on 1024 bytes."""
    return _round(2 * m * k), _round(2 * k * n)


def _round(nbytes: int) -> int:
    return -(-nbytes // STAGE_ALIGN) * STAGE_ALIGN


def multiply(
    ctx: EmitContext, layout: MmaLayout, name: str, stage: Stage, dtype: str, k: int
) -> None:
    """``name += a @ b`` for this thread's warpgroup: each of its slabs, each k-step of 16.

    The warpgroup's slabs are ``g``, ``g + groups``, ... (``g = tid / 128``), whose
    accumulators are the thread's repeats in blocks of ``n / 8``.  All of them are one
    commit group, waited for before the loop body goes on (the next copies may then
    overwrite the stage).
    """
    n = layout.shape[1]
    groups = ctx.threads // WARPGROUP
    slabs = layout.shape[0] // (SLAB * groups)
    tiles = n // 8  # repeats (16x8 tiles) in one slab's row of tiles
    function = _function(ctx, n, dtype)
    a, b = stage.a_layout, stage.b_layout
    with ctx.block(""):
        ctx.line(f"const int warpgroup = tid / {WARPGROUP};")
        ctx.line("phobos::wgmma_fence();")
        for step in range(k // K_STEP):
            column = step * K_STEP * 2  # bytes into a's rows
            b_start = f"{stage.b} + {step * K_STEP * b.width // 2}"
            b_desc = (
                f"phobos::wgmma_descriptor({b_start}, {b.rows * b.width}, {8 * b.width}, {b.mode})"
            )
            ctx.line(f"const phobos::u64 db{step} = {b_desc};")
            for slab in range(slabs):
                row = f"({slab * groups} + warpgroup) * {SLAB}"
                a_start = (
                    f"{stage.a} + ({column // a.width * a.rows * a.width} + {row} * {a.width}"
                    f" + {column % a.width}) / 2"
                )
                a_desc = f"phobos::wgmma_descriptor({a_start}, 16, {8 * a.width}, {a.mode})"
                tile = f"*reinterpret_cast<float (*)[{tiles}][4]>(&{name}[{slab * tiles}])"
                ctx.line(f"{function}({tile}, {a_desc}, db{step});")
        ctx.line("phobos::wgmma_commit();")
        ctx.line("phobos::wgmma_wait<0>();")


def _function(ctx: EmitContext, n: int, dtype: str) -> str:
    """The kernel's helper for ``wgmma...m64n{n}k16`` on ``dtype`` (defined once per kernel)."""
    name = f"phobos_wgmma_m64n{n}k16_{dtype}"
    if name not in ctx.helpers:
        ctx.helpers[name] = wgmma_function(name, n, dtype)
    return name


def wgmma_function(name: str, n: int, dtype: str) -> str:
    """The C++ of one wgmma shape: inline PTX with the thread's ``n / 2`` accumulators.

    The accumulate flag is a predicate set from a register; both operands come from
    shared memory, ``b`` transposed (its rows are k).  A host emulation of the
    kernels defines ``PHOBOS_HOST_EMULATION`` and supplies ``phobos::wgmma_emulated``.
    """
    count = n // 2
    registers = ", ".join(f"%{i}" for i in range(count))
    outputs = ", ".join(f'"+f"(d[{i // 4}][{i % 4}])' for i in range(count))
    ptx = (
        f"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{count + 2}, 0;\\n"
        f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dtype}.{dtype} "
        f"{{{registers}}}, %{count}, %{count + 1}, p, 1, 1, 0, 1;\\n}}\\n"
    )
    guard = name.upper()  # one definition where several kernels share a source (tests)
    return "\n".join(
        [
            f"#ifndef {guard}",
            f"#define {guard}",
            f"__device__ __forceinline__ void {name}(float (&d)[{n // 8}][4], phobos::u64 a, "
            "phobos::u64 b) {",
            "#ifdef PHOBOS_HOST_EMULATION",
            f"    phobos::wgmma_emulated<{n}, {ctype(dtype)}>(d, a, b);",
            "#else",
            f'    asm volatile("{ptx}"',
            f"                 : {outputs}",
            '                 : "l"(a), "l"(b), "r"(1));',
            "#endif",
            "}",
            "#endif",
        ]
    )
