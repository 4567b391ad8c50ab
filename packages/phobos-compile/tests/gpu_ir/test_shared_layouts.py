"""Shared-memory layouts and the wgmma matrix descriptors that read them.

The swizzled layouts are the canonical layouts of the PTX ISA (9.7.15.5.1.2 "Shared
Memory Matrix Layout", its "Canonical Layouts" table, and 9.7.15.5.1.2.2 "Matrix
Descriptor Format"), written out here independently of ``layouts.py`` and ``emit.py``.
In bytes, for 16-bit elements (T = 8 elements = 16 bytes) and swizzle width W (128,
64 or 32 bytes; S = W / 16 chunks, the CuTe ``Swizzle<log2 S, 4, 3>``):

* K-major ``((8,m),(T,2k)):((S*T,SBO),(1,T))``: element (mn, k) of an instruction's
  operand at ``start + (mn%8)*W + (mn//8)*SBO + (k//8)*16 + (k%8)*2``;
* MN-major ``((T,S,m),(8,k)):((1,T,LBO),(S*T,SBO))``: at ``start + (mn%8)*2 +
  ((mn//8)%S)*16 + (mn//(8S))*LBO + (k%8)*W + (k//8)*SBO``;
* then the swizzle, on the address: bits [7, 7 + log2 S) XORed into bits [4, ...);
  the pattern starts on 1024 bytes (the descriptor's base offset is 0);
* the descriptor: bits 13-0 ``(start & 0x3FFFF) >> 4``, 29-16 LBO >> 4, 45-32 SBO >> 4,
  51-49 base offset, 63-62 the mode (1: 128 B, 2: 64 B, 3: 32 B).

A k-step inside a swizzle atom moves the start address by its bytes (the swizzle
applies to the address the instruction forms, which is how CUTLASS and DeepGEMM advance
their descriptors).  ``emit.py``'s ``descriptor()`` (its C++ arithmetic evaluated here)
with the runtime's ``wgmma_descriptor`` encoding, decoded as the PTX ISA says, must
address exactly the bytes ``SharedLayout.offsets`` puts each element at, for every
warpgroup, slab and k-step of every wgmma that the examples' sm_90a variants select,
and for K-major and MN-major operands of every swizzle width.
"""

from __future__ import annotations

import functools
import itertools
import re
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phobos.compile.gpu import RUNTIME_DIR, emit, ir, layouts
from phobos.compile.gpu.layouts import SharedLayout, padded_rows, plain_rows, swizzled

from .conftest import build_until, ops

# The runtime header and the inline PTX it includes (``wgmma_descriptor`` is in the latter).
RUNTIME = "\n".join(
    (RUNTIME_DIR / name).read_text() for name in ("phobos_gpu.cuh", "phobos_ptx.cuh")
)
MODES = {128: 1, 64: 2, 32: 3}  # the PTX ISA's swizzle-mode field
BASE = 8 * 1024  # where the buffer lies in shared memory (a multiple of 1024)


# ---------------------------------------------------------------------------- the PTX ISA's


def swizzle(address: np.ndarray, width: int) -> np.ndarray:
    chunks = width // 16
    return address ^ (((address >> 7) & (chunks - 1)) << 4)


def canonical(start: int, lbo: int, sbo: int, width: int, major: str, mn: int) -> np.ndarray:
    """Byte addresses ``[mn, 16]`` of the elements one m64nNk16 operand reads."""
    s = width // 16
    row = np.arange(mn)[:, None]
    k = np.arange(16)[None, :]
    if major == "k":
        offset = (row % 8) * width + (row // 8) * sbo + (k // 8) * 16 + (k % 8) * 2
    else:
        offset = (row % 8) * 2 + ((row // 8) % s) * 16 + (row // (8 * s)) * lbo
        offset = offset + (k % 8) * width + (k // 8) * sbo
    return swizzle(start + offset, width)


def ptx_encode(start: int, lbo: int, sbo: int, mode: int) -> int:
    field = lambda x: (x & 0x3FFFF) >> 4  # noqa: E731  (matrix-descriptor-encode)
    return field(start) | field(lbo) << 16 | field(sbo) << 32 | mode << 62


def ptx_decode(descriptor: int) -> tuple[int, int, int, int, int]:
    """(start, LBO, SBO, base offset, mode) in bytes."""
    start = (descriptor & 0x3FFF) << 4
    lbo = (descriptor >> 16 & 0x3FFF) << 4
    sbo = (descriptor >> 32 & 0x3FFF) << 4
    return start, lbo, sbo, descriptor >> 49 & 0x7, descriptor >> 62


# ---------------------------------------------------------------------------- the runtime's C++


def cpp_function(name: str) -> tuple[list[str], str]:
    """A small ``PHOBOS_INLINE`` function of the runtime header: its parameter names and
    its body (the text between the braces)."""
    match = re.search(rf"{name}\(([^)]*)\)\s*\{{(.*?)\n\}}", RUNTIME, re.S)
    assert match, f"{name} is not in the runtime header"
    params = [p.split()[-1].lstrip("*") for p in match.group(1).split(",")]
    return params, match.group(2)


def cpp_to_python(expression: str) -> str:
    """C++ integer arithmetic as Python's (``/`` on ints is floor division for these)."""
    return "(" + re.sub(r"(?<![/])/(?![/])", "//", " ".join(expression.split())) + ")"


@functools.cache
def runtime_descriptor():
    """``phobos::wgmma_descriptor`` as a Python function of (address, lbo, sbo, mode)."""
    params, body = cpp_function("wgmma_descriptor")
    (expression,) = re.findall(r"return (.*?);", body, re.S)
    code = cpp_to_python(expression)
    scope = {"u64": int, "shared_address": lambda p: p}
    return lambda *args: eval(code, scope, dict(zip(params, args)))


@functools.cache
def runtime_swizzled_offset():
    """``phobos::swizzled_offset<W, ROWS>(row, col)`` as Python (on numpy arrays too)."""
    match = re.search(r"template <int W, int ROWS> PHOBOS_INLINE int swizzled_offset\(", RUNTIME)
    assert match
    _, body = cpp_function("swizzled_offset")
    linear = re.search(r"const int linear = (.*?);", body, re.S).group(1)
    result = re.search(r"return (.*?);", body, re.S).group(1)
    linear, result = cpp_to_python(linear), cpp_to_python(result)

    def offset(width, rows, row, col):
        scope = {"W": width, "ROWS": rows, "row": row, "col": col}
        scope["linear"] = eval(linear, {}, scope)
        return eval(result, {}, scope)

    return offset


def test_the_runtime_encodes_descriptors_as_the_ptx_isa_says():
    encode = runtime_descriptor()
    rng = np.random.default_rng(0)
    for _ in range(200):
        start = int(rng.integers(0, 1 << 18)) & ~15
        lbo, sbo = (int(rng.integers(0, 1 << 14)) << 4 for _ in range(2))
        mode = int(rng.integers(0, 4))
        word = encode(start, lbo, sbo, mode)
        assert word == ptx_encode(start, lbo, sbo, mode)
        assert ptx_decode(word) == (start, lbo, sbo, 0, mode)


@pytest.mark.parametrize("width", [32, 64, 128])
@pytest.mark.parametrize("rows", [8, 64, 128])
def test_the_runtime_swizzled_offset_is_shared_layout_offsets(width, rows):
    """What the GPU's stores use (``swizzled_offset``) is what the executor models."""
    cols = width // 2 * 2  # two atoms along the columns
    layout = SharedLayout("swizzled", rows, cols, 2, width=width)
    r, c = np.indices((rows, cols))
    expected = layout.offsets(r, c)
    got = runtime_swizzled_offset()(width, rows, r, c)  # numpy arrays through the C++ text
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------------------- SharedLayout


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    st.sampled_from([32, 64, 128]),
    st.integers(1, 16).map(lambda n: 8 * n),
    st.integers(1, 4),
)
def test_swizzled_rows_are_a_bijection_within_each_8_row_group(width, rows, atoms):
    cols = atoms * width // 2
    layout = SharedLayout("swizzled", rows, cols, 2, width=width)
    assert layout.alignment == 1024 and layout.size_bytes == rows * cols * 2
    r, c = np.indices((rows, cols))
    byte = layout.offsets(r, c) * 2
    assert sorted(byte.ravel().tolist()) == list(range(0, 2 * rows * cols, 2))
    # Atoms of W-byte rows, `rows` of them per atom, atoms side by side along the columns;
    # an 8-row group of one atom (8 W bytes: 1024 for 128 B) is permuted within itself.
    atom = (c * 2) // width
    group = atom * (rows // 8) + r // 8
    np.testing.assert_array_equal(byte // (8 * width), group)
    # Within a row the 16-byte chunks are permuted, the bytes of a chunk kept in order.
    np.testing.assert_array_equal(byte // width, atom * rows + r)
    np.testing.assert_array_equal(byte % 16, (c * 2) % 16)
    # The permutation of row r is the address XOR of the swizzle mode.
    linear = atom * rows * width + r * width + (c * 2) % width
    np.testing.assert_array_equal(byte, swizzle(linear, width))


def test_swizzled_64_and_32_byte_modes_permute_by_address_bits_not_by_row():
    """64 B: chunk ^= (row / 2) % 4 (address bits 7-8 of rows of 64 bytes); 32 B:
    chunk ^= (row / 4) % 2.  (The class docstring's ``chunk ^ (row % (W/16))`` holds for
    128 B only; the hardware XORs address bits, which is what ``offsets`` does.)"""
    for width, rows_per_step in ((128, 1), (64, 2), (32, 4)):
        layout = swizzled(16, width // 2, 2)
        r, c = np.indices((16, width // 2))
        chunk = (layout.offsets(r, c) * 2 % width) // 16
        expected = ((c * 2) // 16) ^ ((r // rows_per_step) % (width // 16))
        np.testing.assert_array_equal(chunk, expected)


def test_canonical_k_major_over_whole_tiles_is_shared_layout_offsets():
    """The whole buffer as the canonical K-major layout: SBO = 8 W between 8-row groups,
    atoms of K (W bytes) `rows * W` apart."""
    for width, rows in itertools.product((32, 64, 128), (64, 128)):
        cols = 4 * width // 2
        layout = SharedLayout("swizzled", rows, cols, 2, width=width)
        r, c = np.indices((rows, cols))
        atom, inner = (c * 2) // width, (c * 2) % width
        offset = (r % 8) * width + (r // 8) * 8 * width + atom * rows * width + inner
        np.testing.assert_array_equal(layout.offsets(r, c) * 2, swizzle(offset, width))


def test_row_layouts():
    layout = padded_rows(8, 64, 2)
    assert (layout.pad, layout.size_bytes, layout.alignment) == (8, 8 * 72 * 2, 16)
    r, c = np.indices((8, 64))
    np.testing.assert_array_equal(layout.offsets(r, c), r * 72 + c)
    assert plain_rows(4, 32, 4).size_bytes == 4 * 32 * 4
    assert padded_rows(8, 64, 4).pad == 4
    # Rows padded by 16 bytes start 16 bytes further along the banks each row.
    starts = (layout.offsets(np.arange(8), np.zeros(8, int)) * 2) % 128
    assert len(set(starts.tolist())) == 8


def test_swizzled_takes_the_rows_bytes_up_to_128():
    assert [swizzled(8, cols, 2).width for cols in (16, 32, 64, 128, 256)] == [
        32,
        64,
        128,
        128,
        128,
    ]


def test_swizzled_refuses_what_no_mode_fits():
    assert swizzled(8, 8, 2) is None  # 16-byte rows
    assert swizzled(12, 64, 2) is None  # not whole 8-row groups
    assert swizzled(8, 24, 2) is None  # 48-byte rows
    assert swizzled(8, 256, 2).width == 128
    assert layouts.swizzle_width(16, 2) == 32


def test_shared_bytes_rounds_stages_to_the_alignment():
    layout = swizzled(8, 16, 2)  # 256 bytes, 1024-aligned
    assert layouts.shared_bytes(layout) == 1024
    assert layouts.shared_bytes(layout, stages=3) == 3072
    assert layouts.shared_bytes(plain_rows(1, 3, 4)) == 16


# ---------------------------------------------------------------------------- descriptors


def emitted_descriptor(t: ir.Shared, major: str, step: int, offset: int) -> tuple[int, ...]:
    """``emit.py``'s descriptor for ``t`` at ``BASE``: (start, LBO, SBO, mode) as the PTX
    ISA decodes the runtime's encoding of what the C++ computes."""
    stub = types.SimpleNamespace(name=lambda value: "buffer")
    text = emit._Printer.descriptor(stub, None, t, major, step, "offset")
    match = re.fullmatch(r"phobos::wgmma_descriptor\((.*), (\d+), (\d+), (\d+)\)", text)
    assert match, text
    start = eval(cpp_to_python(match.group(1)), {}, {"buffer": BASE, "offset": offset})
    lbo, sbo, mode = (int(match.group(i)) for i in (2, 3, 4))
    word = runtime_descriptor()(start, lbo, sbo, mode)
    start, lbo, sbo, base_offset, mode = ptx_decode(word)
    assert base_offset == 0
    return start, lbo, sbo, mode


def expected_addresses(t: ir.Shared, major: str, step: int, offset: int, mn: int) -> np.ndarray:
    """Where ``SharedLayout.offsets`` put the elements the instruction should read: rows
    ``offset..`` of the M or N axis, columns ``16 step..`` of K."""
    layout: SharedLayout = t.layout
    m = offset + np.arange(mn)[:, None]
    k = 16 * step + np.arange(16)[None, :]
    rows, cols = (m, k) if major == "k" else (k, m)
    return BASE + layout.offsets(rows, cols) * layout.element_bytes


def assert_descriptor_reads_the_operand(t: ir.Shared, major: str, step: int, offset: int, mn: int):
    start, lbo, sbo, mode = emitted_descriptor(t, major, step, offset)
    width = t.layout.width
    assert mode == MODES[width]
    np.testing.assert_array_equal(
        canonical(start, lbo, sbo, width, major, mn),
        expected_addresses(t, major, step, offset, mn),
        err_msg=f"{t} {major}-major step {step} offset {offset}",
    )


SYNTHETIC = [
    # (major, rows, cols, instruction MN extent, MN offsets): every width, both majors
    ("k", 64, 16, 64, (0,)),
    ("k", 64, 32, 64, (0,)),
    ("k", 128, 64, 64, (0, 64)),
    ("k", 128, 128, 64, (0, 64)),
    ("k", 256, 64, 128, (0, 128)),
    ("mn", 16, 16, 16, (0,)),
    ("mn", 32, 32, 32, (0,)),
    ("mn", 64, 64, 64, (0,)),
    ("mn", 64, 128, 64, (0, 64)),
    ("mn", 32, 256, 128, (0, 128)),
    ("mn", 64, 256, 256, (0,)),
]


@pytest.mark.parametrize(("major", "rows", "cols", "mn", "offsets"), SYNTHETIC)
def test_descriptors_address_the_canonical_layout(major, rows, cols, mn, offsets):
    layout = swizzled(rows, cols, 2)
    t = ir.Shared("f16", (rows, cols), layout)
    k_extent = cols if major == "k" else rows
    for step, offset in itertools.product(range(k_extent // 16), offsets):
        assert_descriptor_reads_the_operand(t, major, step, offset, mn)


def test_the_descriptor_check_can_fail():
    """A descriptor for the wrong k-step (or the other major) reads other bytes."""
    t = ir.Shared("f16", (64, 64), swizzled(64, 64, 2))
    start, lbo, sbo, _ = emitted_descriptor(t, "k", 1, 0)
    assert not np.array_equal(
        canonical(start, lbo, sbo, 128, "k", 64), expected_addresses(t, "k", 0, 0, 64)
    )
    assert not np.array_equal(
        canonical(start, lbo, sbo, 128, "mn", 64), expected_addresses(t, "k", 1, 0, 64)
    )


# The examples' wgmma variants: matmul's tiles and both attention directions, so that
# every swizzle width and both majors of A and B that select_mma chooses are here.
WGMMA_VARIANTS = [
    ("matmul", {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8, "NUM_THREADS": t, "ACTIVATION": 0})
    for bm, bn, bk, t in itertools.product((64, 128), (64, 128), (32, 64), (128, 256))
] + [
    (name, {"D": d, **tiles, "NUM_THREADS": 256, "CAUSAL": 0})
    for d in (16, 32, 64, 128)
    for name, tiles in (
        ("attention_forward", {"BLOCK_M": 128, "BLOCK_N": 64}),
        ("attention_forward", {"BLOCK_M": 64, "BLOCK_N": 32}),
        ("attention_backward_dkdv", {"BLOCK_M": 32, "BLOCK_N": 64}),
        ("attention_backward_dq", {"BLOCK_M": 64, "BLOCK_N": 32}),
    )
]


@functools.cache
def example_wgmmas() -> list[tuple[str, ir.Wgmma]]:
    from phobos.compile.check import lower
    from phobos.compile.pipeline import parse_file

    from .test_executor_matches_interpreter import KERNELS, MODULES

    out = []
    for name, values in WGMMA_VARIANTS:
        tile = lower(MODULES[KERNELS[name]], name, values)
        gpu = build_until(tile, "all", arch="sm_90a")
        out += [(f"{name}{values}", op) for op in ops(gpu, ir.Wgmma)]
    del parse_file
    return out


def test_the_examples_select_every_swizzle_width_and_both_majors():
    seen = set()
    for _, op in example_wgmmas():
        a, b = op.operands[:2]
        if isinstance(a.type, ir.Shared):
            seen.add(("a", op.a_major, a.type.layout.width))
        seen.add(("b", op.b_major, b.type.layout.width))
    widths = {w for _, _, w in seen}
    assert widths == {32, 64, 128}, seen
    assert {("b", "k"), ("b", "mn"), ("a", "k")} <= {(x, m) for x, m, _ in seen}, seen


def test_example_descriptors_read_their_operands():
    """Every warpgroup's, slab's and k-step's descriptor, as ``emit._Wgmma`` forms them."""
    checked = 0
    for _, op in example_wgmmas():
        a, b = op.operands[:2]
        down, across = op.warpgroups
        m = a.type.shape[0] if op.a_major == "k" or isinstance(a.type, ir.Tile) else a.type.shape[1]
        k = a.type.shape[1] if op.a_major == "k" or isinstance(a.type, ir.Tile) else a.type.shape[0]
        n = op.result.tile.shape[1]
        cols = n // across
        for group in range(down * across):
            group_row, group_col = (group % down) * 64, (group // down) * cols
            for step in range(k // 16):
                assert_descriptor_reads_the_operand(b.type, op.b_major, step, group_col, cols)
                checked += 1
                if isinstance(a.type, ir.Shared):
                    for slab in range(m // (64 * down)):
                        row = group_row + slab * 64 * down
                        assert_descriptor_reads_the_operand(a.type, op.a_major, step, row, 64)
                        checked += 1
    assert checked > 100
