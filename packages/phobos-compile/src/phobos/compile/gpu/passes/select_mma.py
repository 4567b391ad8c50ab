"""Instruction selection for ``dot``: wgmma, mma.sync or the CUDA cores, and operand placement.

Every ``Dot`` is rewritten, whatever loop or expression it sits in:

* **wgmma** (sm_90a; f16/bf16 operands, f32 accumulator; the CTA whole warpgroups;
  ``M`` in 64-row slabs): ``b`` goes to shared memory in the canonical swizzled
  layout (``trans(t)`` staged as ``t`` lies: a K-major operand), ``a`` too when it
  comes from memory, else it stays in registers (``f16(p)``: the accumulator
  packed to 16 bits *is* the register A operand); the result is a ``Wgmma`` and
  its ``WgmmaWait``.  Warpgroups take 64-row slabs of the product first, and split
  its columns only when the rows run out.
* **mma.sync.m16n8k16** (other cards, or shapes wgmma does not take): operands from
  shared memory (rows padded by 16 bytes) by ``ldmatrix`` into fragments, or ``a``
  in registers in the fragment layout; the warps form a grid over the product,
  stacked down the rows when the result is reduced along its rows (a softmax over
  the scores keeps each row in one warp's registers).
* **the CUDA cores** (other dtypes and shapes): both operands in shared memory, each
  thread its own result lanes (``DotShared``).

An operand is staged once, right after its definition: ``q``, loaded before the
loop of attention, is copied to shared memory before the loop, not in every
iteration.  A window load that ``cp.async`` can move (unit stride, 16-byte
aligned, rows of whole 16-byte groups) is copied straight to shared memory; any
other value is stored there from registers.  Two products that read one value in
the same shared layout share its buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.gpu import ir, layouts
from phobos.compile.gpu.passes.cta import element_bytes

TENSOR_CORE_DTYPES = ("f16", "bf16")
WARPGROUP = 128
MAX_WGMMA_N = 256


@dataclass(frozen=True)
class Wgmma:
    """wgmma's arrangement: warpgroups ``down`` the rows by ``across`` the columns."""

    down: int
    across: int


@dataclass(frozen=True)
class MmaSync:
    warps_down: int
    warps_across: int


def select_mma(kernel: ir.Kernel) -> None:
    _Selector(kernel).run()


class _Selector:
    def __init__(self, kernel: ir.Kernel) -> None:
        self.kernel = kernel
        self.defs: dict[ir.Value, tuple[ir.Block, ir.Op]] = {}
        self.staged: dict[tuple[ir.Value, layouts.SharedLayout], ir.Value] = {}
        self.arrangements: dict[ir.Value, MmaSync | Wgmma] = {}  # each product's result
        self.reduced_rows = _reduced_along_rows(kernel)

    def run(self) -> None:
        self._index(self.kernel.body)
        for block, op in list(_dots(self.kernel.body)):
            self.rewrite(block, op)

    def _index(self, block: ir.Block) -> None:
        for op in block.ops:
            for v in op.results:
                self.defs[v] = (block, op)
            for region in op.regions:
                for arg in region.args:
                    self.defs[arg] = (region, op)
                self._index(region)

    # ------------------------------------------------------------------ choosing

    def rewrite(self, block: ir.Block, dot: ir.Dot) -> None:
        a, b, _acc = dot.operands
        (m, k), n = a.tile.shape, dot.result.tile.shape[1]
        tensor_cores = (
            a.dtype in TENSOR_CORE_DTYPES
            and b.dtype == a.dtype
            and dot.result.dtype == "f32"
            and m % 16 == 0
            and n % 8 == 0
            and k % 16 == 0
        )
        if tensor_cores and self.kernel.arch == "sm_90a":
            arrangement = self.wgmma_arrangement(m, n, k, b)
            if arrangement is not None:
                self.wgmma(block, dot, arrangement)
                return
        if tensor_cores:
            grid = self.warp_grid(dot, m, n)
            if grid is not None:
                self.mma_sync(block, dot, grid)
                return
        self.cuda_cores(block, dot)

    def wgmma_arrangement(self, m: int, n: int, k: int, b: ir.Value) -> Wgmma | None:
        threads = self.kernel.threads
        if threads % WARPGROUP:
            return None
        groups = threads // WARPGROUP
        down = groups
        while down > 1 and m % (64 * down):
            down //= 2
        across = groups // down
        if m % (64 * down) or n % (8 * across) or n // across > MAX_WGMMA_N:
            return None
        size = element_bytes(b.dtype)
        b_source = _transposed(self, b)
        layout = self.b_layout(b_source, (k, n), across, size)
        if layout is None or (
            layouts.swizzled(m, k, size) is None and layouts.swizzled(k, m, size) is None
        ):
            return None
        return Wgmma(down, across)

    @staticmethod
    def b_layout(
        b_source: ir.Value | None, kn: tuple[int, int], across: int, size: int
    ) -> layouts.SharedLayout | None:
        """How ``b`` is staged for wgmma.  Warpgroups that split the columns each start their
        descriptors on an atom: an MN-major ``b`` takes atoms no wider than a warpgroup's
        columns."""
        k, n = kn
        if b_source is not None:  # K-major: staged as [n, k]; a split moves by whole rows
            return layouts.swizzled(n, k, size)
        width = min(layouts.swizzle_width(n, size), n // across * size)
        return layouts.swizzled(k, n, size, width)

    def warp_grid(self, dot: ir.Dot, m: int, n: int) -> MmaSync | None:
        warps = self.kernel.threads // layouts.WARP
        rows, cols = m // 16, n // 8
        grids = [
            (down, warps // down)
            for down in (1 << i for i in range(warps.bit_length()))
            if warps % down == 0 and rows % down == 0 and cols % (warps // down) == 0
        ]
        if not grids:
            return None
        producer = self.producer(dot.operands[0])
        if isinstance(producer, MmaSync) and (producer.warps_down, producer.warps_across) in grids:
            return producer  # the producer's accumulator is this product's a, in registers
        if dot.result in self.reduced_rows:
            down, across = max(grids)
        else:
            down, across = min(grids, key=lambda g: (2 * rows // g[0] + cols // g[1], g[0]))
        return MmaSync(down, across)

    def producer(self, a: ir.Value) -> MmaSync | Wgmma | None:
        """The arrangement of the product whose accumulator ``a`` is made from, through
        elementwise ops (``f16(p)`` of attention's scores), if any."""
        seen: set[ir.Value] = set()
        frontier = [a]
        while frontier:
            v = frontier.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in self.arrangements:
                return self.arrangements[v]
            definition = self.defs.get(v)
            if definition is None:
                continue
            op = definition[1]
            if isinstance(op, (*ir.ELEMENTWISE, ir.Convert, ir.Broadcast, ir.ExpandDims)):
                frontier += [o for o in op.operands if isinstance(o.type, ir.Tile)]
        return None

    # ------------------------------------------------------------------ rewriting

    def wgmma(self, block: ir.Block, dot: ir.Dot, arrangement: Wgmma) -> None:
        a, b, acc = dot.operands
        (m, k), n = a.tile.shape, dot.result.tile.shape[1]
        groups = arrangement.down * arrangement.across
        accumulator = layouts.wgmma_accumulator((m, n), groups, arrangement.across)
        size = element_bytes(a.dtype)
        b_source = _transposed(self, b)
        b_major = "k" if b_source is not None else "mn"
        b_stored = b_source if b_source is not None else b
        b_layout = self.b_layout(b_source, (k, n), arrangement.across, size)
        assert b_layout is not None
        b_buffer = self.stage(b_stored, b_layout, async_proxy=True)
        a_source = _transposed(self, a)
        a_from_memory = self.from_memory(a_source if a_source is not None else a)
        a_operand = a
        a_major = "k"
        if a_from_memory:
            a_stored = a_source if a_source is not None else a
            a_major = "mn" if a_source is not None else "k"
            a_layout = layouts.swizzled(*a_stored.tile.shape, size)
            if a_layout is not None:
                a_operand = self.stage(a_stored, a_layout, async_proxy=True)
            else:
                a_major = "k"
        if a_operand is a:  # registers: the fragment layout the A operand needs
            a_operand = self.required(
                block, dot, a, layouts.wgmma_a((m, k), groups, arrangement.across)
            )
        acc_in = self.required(block, dot, acc, accumulator)
        index = block.ops.index(dot)
        start = ir.Wgmma(
            warpgroups=(arrangement.down, arrangement.across),
            a_major=a_major,
            b_major=b_major,
            operands=[a_operand, b_buffer, acc_in],
            span=dot.span,
        )
        start.results = [ir.Value(ir.Tile("f32", (m, n), accumulator), "flight")]
        wait = ir.WgmmaWait(operands=[start.result], span=dot.span)
        wait.results = [ir.Value(ir.Tile("f32", (m, n), accumulator), dot.result.name)]
        block.ops[index : index + 1] = [start, wait]
        ir.replace_uses(self.kernel.body, dot.result, wait.result)
        self.arrangements[wait.result] = arrangement
        self.defs[wait.result] = (block, wait)

    def mma_sync(self, block: ir.Block, dot: ir.Dot, grid: MmaSync) -> None:
        a, b, acc = dot.operands
        (m, k), n = a.tile.shape, dot.result.tile.shape[1]
        down, across = grid.warps_down, grid.warps_across
        accumulator = layouts.mma_sync_accumulator((m, n), down, across)
        a_fragments = layouts.mma_sync_a((m, k), down, across)
        b_fragments = layouts.mma_sync_b((k, n), down, across)
        size = element_bytes(a.dtype)
        index = block.ops.index(dot)
        loads: list[ir.Op] = []
        a_source = _transposed(self, a)
        if self.from_memory(a_source if a_source is not None else a):
            stored = a_source if a_source is not None else a
            buffer = self.stage(stored, layouts.padded_rows(*stored.tile.shape, size))
            a_in = self.fragments(
                loads, buffer, (m, k), a_fragments, a_source is not None, a.dtype, "a", grid
            )
        else:
            a_in = self.required(block, dot, a, a_fragments)
        b_source = _transposed(self, b)
        stored = b_source if b_source is not None else b
        buffer = self.stage(stored, layouts.padded_rows(*stored.tile.shape, size))
        b_in = self.fragments(
            loads, buffer, (k, n), b_fragments, b_source is not None, b.dtype, "b", grid
        )
        acc_in = self.required(block, dot, acc, accumulator)
        index = block.ops.index(dot)
        op = ir.MmaSync(operands=[a_in, b_in, acc_in], span=dot.span)
        op.results = [ir.Value(ir.Tile("f32", (m, n), accumulator), dot.result.name)]
        block.ops[index : index + 1] = [*loads, op]
        ir.replace_uses(self.kernel.body, dot.result, op.result)
        self.arrangements[op.result] = grid
        self.defs[op.result] = (block, op)

    def fragments(
        self,
        loads: list[ir.Op],
        buffer: ir.Value,
        shape: tuple[int, int],
        layout: layouts.Layout,
        transposed: bool,
        dtype: str,
        fragment: str,
        grid: MmaSync,
    ) -> ir.Value:
        op = ir.SharedLoad(
            via="ldmatrix",
            transposed=transposed,
            fragment=fragment,
            warps=(grid.warps_down, grid.warps_across),
            operands=[buffer],
        )
        op.results = [ir.Value(ir.Tile(dtype, shape, layout), "fragments")]
        loads.append(op)
        return op.result

    def cuda_cores(self, block: ir.Block, dot: ir.Dot) -> None:
        a, b, acc = dot.operands
        size = element_bytes(a.dtype)
        a_buffer = self.stage(a, layouts.plain_rows(*a.tile.shape, size))
        b_buffer = self.stage(b, layouts.plain_rows(*b.tile.shape, size))
        op = ir.DotShared(operands=[a_buffer, b_buffer, acc], span=dot.span)
        op.results = [ir.Value(dot.result.type, dot.result.name)]
        index = block.ops.index(dot)
        block.ops[index] = op
        ir.replace_uses(self.kernel.body, dot.result, op.result)

    def required(
        self, block: ir.Block, dot: ir.Op, value: ir.Value, layout: layouts.Layout
    ) -> ir.Value:
        """``value`` in ``layout`` for ``dot``: a conversion the layout pass removes where the
        value is made in that layout already."""
        op = ir.Convert(operands=[value], span=dot.span)
        op.results = [ir.Value(value.tile.with_layout(layout), value.name)]
        block.ops.insert(block.ops.index(dot), op)
        return op.result

    # ------------------------------------------------------------------ staging

    def from_memory(self, value: ir.Value) -> bool:
        """``value`` is a window load (what ``cp.async`` or a register load gives)."""
        definition = self.defs.get(value)
        return definition is not None and isinstance(definition[1], ir.Load)

    def stage(
        self, value: ir.Value, layout: layouts.SharedLayout, async_proxy: bool = False
    ) -> ir.Value:
        """A buffer holding ``value`` in ``layout``, filled right after ``value`` is made."""
        key = (value, layout)
        if key in self.staged:
            return self.staged[key]
        block, definer = self.defs[value]
        if definer in block.ops:
            at = block.ops.index(definer) + 1
        else:  # a region argument: fill at the top of the region
            at = 0
        alloc = ir.SharedAlloc(span=definer.span)
        alloc.results = [
            ir.Value(
                ir.Shared(value.dtype, value.tile.shape, layout), f"{value.name or 'smem'}_smem"
            )
        ]
        fill: list[ir.Op] = [alloc]
        if isinstance(definer, ir.Load) and self.copyable(definer, layout):
            threads = self.kernel.threads
            group = 16 // element_bytes(value.dtype)
            copy_layout = layouts.blocked(value.tile.shape, threads, group)
            fill.append(
                ir.CopyAsync(
                    tensor=definer.tensor,
                    lengths=definer.lengths,
                    layout=copy_layout,
                    checked=definer.checked,
                    operands=[alloc.result, *definer.starts],
                    span=definer.span,
                )
            )
            fill.append(ir.AsyncCommit(span=definer.span))
            fill.append(ir.AsyncWait(pending=0, span=definer.span))
        else:
            fill.append(ir.SharedStore(operands=[alloc.result, value], span=definer.span))
        if async_proxy:
            fill.append(ir.FenceAsync(span=definer.span))
        block.ops[at:at] = fill
        self.staged[key] = alloc.result
        for op in fill:
            self.defs.update({v: (block, op) for v in op.results})
        return alloc.result

    def copyable(self, load: ir.Load, layout: layouts.SharedLayout) -> bool:
        tensor = self.kernel.tensors[load.tensor]
        size = element_bytes(tensor.dtype)
        last = len(load.lengths) - 1
        return (
            not load.masked
            and load.lengths[last] is not None
            and self.kernel.unit_stride.get(load.tensor, False)
            and self.kernel.align.get(load.tensor, 1) >= 16
            and (load.lengths[last] * size) % 16 == 0
            and layout.cols == load.lengths[last]
            and sum(length is not None for length in load.lengths) == 2
        )


def _transposed(selector: _Selector, value: ir.Value) -> ir.Value | None:
    """The tile under a ``Transpose`` (staged as it lies), if ``value`` is one."""
    definition = selector.defs.get(value)
    if definition is not None and isinstance(definition[1], ir.Transpose):
        return definition[1].operands[0]
    return None


def _dots(block: ir.Block):
    for op in list(block.ops):
        if isinstance(op, ir.Dot):
            yield block, op
        for region in op.regions:
            yield from _dots(region)


def _reduced_along_rows(kernel: ir.Kernel) -> set[ir.Value]:
    """The dot results that reach a reduction along their rows through elementwise ops."""
    users = ir.users(kernel)
    out: set[ir.Value] = set()
    for op in kernel.walk():
        if not isinstance(op, ir.Dot):
            continue
        frontier, seen = [op.result], set()
        while frontier:
            v = frontier.pop()
            if v in seen:
                continue
            seen.add(v)
            for user in users.get(v, []):
                if isinstance(user, ir.Reduce) and user.axis == 1:
                    out.add(op.result)
                elif isinstance(user, (*ir.ELEMENTWISE, ir.Broadcast)):
                    frontier.extend(user.results)
    return out
