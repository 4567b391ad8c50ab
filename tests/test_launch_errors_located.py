"""A launch the launcher refuses is reported at the launch's line, with the parameter's declaration."""

from __future__ import annotations

import pytest

import phobos.lang as ph
from phobos.launch import LaunchError
from tests.gpu.saxpy_kernel import saxpy


class DeviceArray:
    """Stands in for a GPU array: only the launch's placement looks at it before the launcher."""

    def __init__(self, n: int) -> None:
        self.shape = (n,)
        self.__cuda_array_interface__ = {
            "shape": (n,), "typestr": "<f2", "data": (0x1000, False), "version": 3,
        }  # fmt: skip


def test_a_refused_argument_names_the_call_line_and_the_declaration(monkeypatch):
    from phobos.lang import gpu

    def refuse(kernel, grid, args, values, *, stream):
        raise LaunchError("saxpy: y: expected a f32 tensor, got f16 (shape (100,))", "y")

    monkeypatch.setattr(gpu, "launch", refuse)
    x, y, out = DeviceArray(100), DeviceArray(100), DeviceArray(100)
    with pytest.raises(ph.PhobosError) as info:
        saxpy[(1,)](x, y, out, 2.0, BLOCK=128)  # the launch line
    rendered = str(info.value)
    first = rendered.splitlines()[0]
    assert first.startswith(f"{__file__}:")
    assert "error: saxpy: y: expected a f32 tensor, got f16" in first
    assert "saxpy[(1,)](x, y, out, 2.0, BLOCK=128)  # the launch line" in rendered
    assert "saxpy_kernel.py:" in rendered and "note: 'y' is declared here" in rendered
