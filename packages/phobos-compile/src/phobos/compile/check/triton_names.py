"""Triton's names for what Phobos spells otherwise, for the unknown-function error.

A kernel ported from Triton keeps its habits: ``tl.program_id(0)`` becomes
``ph.program_id(0)``, which no Phobos name is close to, so a did-you-mean would point
nowhere useful.  For the names here the error says how Phobos spells the thing (in
the module's own spelling, Python or Phobos text), or that it is not in the language
yet.
"""

from __future__ import annotations

from collections.abc import Callable

from phobos.compile.check.spelling import Spelling
from phobos.compile.syntax import ast

_AXES = "xyz"

Hint = Callable[[ast.Call, Spelling], str]


def _axis(call: ast.Call) -> str:
    """``x``, ``y`` or ``z`` for a literal axis argument (``x`` where there is none)."""
    if call.args and isinstance(call.args[0], ast.IntLit) and 0 <= call.args[0].value < 3:
        return _AXES[call.args[0].value]
    return "x"


def _program_id(call: ast.Call, sp: Spelling) -> str:
    return (
        f"a block's index is `{sp.ctx('block', _axis(call))}` (axes 0, 1, 2 are `.x`, `.y`, `.z`)"
    )


def _num_programs(call: ast.Call, sp: Spelling) -> str:
    return f"the grid's size is `{sp.ctx('grid', _axis(call))}` (axes 0, 1, 2 are `.x`, `.y`, `.z`)"


def _load(call: ast.Call, sp: Spelling) -> str:
    return (
        f"read a window of the tensor itself: `{sp.windows('x')}`; lanes past its end are "
        f"absent, so no mask is needed (`{sp.call('fill', 't', '0.0')}` gives them a value)"
    )


def _store(call: ast.Call, sp: Spelling) -> str:
    return f"assign to a window of the tensor: `{sp.windows('y')} = value`; absent lanes are not stored"


def _cdiv(call: ast.Call, sp: Spelling) -> str:
    return "write `(a + b - 1) / b` (`/` of integers rounds toward zero)"


def _cast(call: ast.Call, sp: Spelling) -> str:
    return f"cast with the type's name: `{sp.call('f16', 'x')}`"


def _full(call: ast.Call, sp: Spelling) -> str:
    return f"start from `{sp.zeros('f32', 'M, N')}` and add the value"


def _expand_dims(call: ast.Call, sp: Spelling) -> str:
    return f"index with a new axis: `t[:, {sp.newaxis}]`"


def _block_pointer(call: ast.Call, sp: Spelling) -> str:
    return (
        f"a window `{sp.windows('t', 2)}` is Phobos's block pointer: move it by changing its starts"
    )


def _remove(what: str) -> Hint:
    return lambda call, sp: f"{what}; remove the call"


def _four(call: ast.Call, sp: Spelling) -> str:
    one = call.func.removesuffix("4x")
    return (
        f"Phobos draws one value a call: `{sp.call(one, 'seed', 'offsets')}`; for four streams "
        f"give each its own offsets, such as `4 * offsets + k` for k in 0 to 3"
    )


def _not_yet(call: ast.Call, sp: Spelling) -> str:
    return f"'{sp.lang(call.func)}' is not in the language yet (docs/language.md lists what is)"


TRITON_HINTS: dict[str, Hint] = {
    "program_id": _program_id,
    "num_programs": _num_programs,
    "load": _load,
    "store": _store,
    "cdiv": _cdiv,
    "cast": _cast,
    "full": _full,
    "expand_dims": _expand_dims,
    "make_block_ptr": _block_pointer,
    "advance": _block_pointer,
    "debug_barrier": _remove("Phobos places the barriers a kernel needs itself"),
    "multiple_of": _remove("each launch is specialised on its tensors' alignment"),
    "max_contiguous": _remove("each launch is specialised on its tensors' unit strides"),
    "assume": _remove("Phobos derives what it needs from the launch's arguments"),
    **dict.fromkeys(("randint4x", "rand4x", "randn4x"), _four),
    **dict.fromkeys(
        (
            "cumsum",
            "cumprod",
            "associative_scan",
            "reduce",
            "sort",
            "topk",
            "histogram",
            "reshape",
            "permute",
            "broadcast_to",
            "cat",
            "join",
            "split",
            "interleave",
            "flip",
            "zeros_like",
            "inline_asm_elementwise",
        ),
        _not_yet,
    ),
}


def triton_hint(call: ast.Call, spelling: Spelling) -> str | None:
    """How Phobos spells what ``call``'s unknown function means in Triton, or None."""
    hint = TRITON_HINTS.get(call.func)
    return hint(call, spelling) if hint is not None else None
