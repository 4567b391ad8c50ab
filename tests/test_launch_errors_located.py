"""A launch the launcher refuses is reported at the launch's line, with the parameter's declaration."""

from __future__ import annotations

import pytest

import phobos.lang as ph
from tests.gpu.saxpy_kernel import saxpy


class DeviceArray:
    """Stands in for a GPU array: ``__cuda_array_interface__`` only, no memory behind it."""

    def __init__(self, n: int, typestr: str = "<f4") -> None:
        self.shape = (n,)
        self.__cuda_array_interface__ = {
            "shape": (n,), "typestr": typestr, "data": (0x1000, False), "version": 3,
        }  # fmt: skip


def test_a_refused_argument_names_the_call_line_and_the_declaration():
    """The checks every variant makes need no driver: on a machine without one (or a GPU), a
    wrong dtype is reported as one, at the caller's line."""
    x, y, out = DeviceArray(100), DeviceArray(100, "<f2"), DeviceArray(100)
    with pytest.raises(ph.PhobosError) as info:
        saxpy[(1,)](x, y, out, 2.0, BLOCK=128)  # the launch line
    rendered = str(info.value)
    first = rendered.splitlines()[0]
    assert first.startswith(f"{__file__}:")
    assert "error: saxpy: y: expected a f32 tensor, got f16" in first
    assert "saxpy[(1,)](x, y, out, 2.0, BLOCK=128)  # the launch line" in rendered
    assert "saxpy_kernel.py:" in rendered and "note: 'y' is declared here" in rendered


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((DeviceArray(100), DeviceArray(100), 2.0), "saxpy takes 4 arguments"),
        ((DeviceArray(100), DeviceArray(99), DeviceArray(100), 2.0), "extent N disagrees"),
        ((DeviceArray(100), [1.0], DeviceArray(100), 2.0), "y: expected a GPU array"),
    ],
)
def test_other_refusals_before_any_driver_call(args, message):
    with pytest.raises(ph.PhobosError, match=message):
        saxpy[(1,)](*args, BLOCK=128)
