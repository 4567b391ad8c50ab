"""``kernel[grid]`` after a GPU launch: the steady state (in C where the native launch path is
built) goes straight to the last kernel's ``try_launch``; every other call takes the Python path."""

from __future__ import annotations

import pytest

import phobos.lang as ph
from phobos.lang.dispatch import Dispatcher
from phobos.lang.variant import Variant
from phobos.launch import LaunchError
from phobos.launch.native import native_module
from tests.gpu.saxpy_kernel import saxpy
from tests.test_launch_errors_located import DeviceArray


class FakeLoaded:
    """A LoadedKernel as phobos.lang sees it: ``try_launch`` answers ``answer``."""

    def __init__(self) -> None:
        self.tries: list[tuple] = []
        self.launches: list[tuple] = []
        self.answer: int | None = 0
        self.refusal: LaunchError | None = None

    def try_launch(self, grid, args, stream):
        self.tries.append((grid, args, stream))
        return self.answer

    def launch(self, grid, args, *, stream=None, arrays=None):
        if self.refusal is not None:
            raise self.refusal
        self.launches.append((grid, tuple(args), stream))


@pytest.fixture
def gpu_launches(monkeypatch):
    """Every variant phobos.lang loads, a fresh FakeLoaded (on GPU 0, no driver asked)."""
    dispatcher = Dispatcher(saxpy.definition)
    made: list[FakeLoaded] = []

    def load(variant, spec, device, compiled=None):
        made.append(FakeLoaded())
        return made[-1]

    monkeypatch.setattr(dispatcher, "load", load)
    monkeypatch.setattr(dispatcher, "_device", lambda arrays, caller, strict: 0)
    monkeypatch.setattr(saxpy, "dispatcher", dispatcher)
    monkeypatch.setattr(saxpy, "_last_indexed", None)
    return made


@pytest.fixture(params=[True, False], ids=["native", "python"])
def native(request, monkeypatch):
    """Each steady-state test with the native launch path, and with it switched off."""
    if request.param and native_module() is None:
        pytest.skip("no native launch path on this machine")
    if not request.param:
        monkeypatch.setenv("PHOBOS_NATIVE_LAUNCH", "0")
    return request.param


def test_the_steady_state_calls_try_launch_and_nothing_else(gpu_launches, native):
    x, y, out = DeviceArray(100), DeviceArray(100), DeviceArray(100)
    saxpy[(1,)](x, y, out, 2.0, BLOCK=128)
    (loaded,) = gpu_launches
    launch = saxpy[(1,)]
    assert (type(launch).__name__ == "SteadyCall") == native
    assert launch.grid == (1,)
    launch(x, y, out, 3.0, BLOCK=128)
    launch(x, y, out, 4.0, BLOCK=128, stream=7, race_check=False)
    assert loaded.tries == [((1,), (x, y, out, 3.0), None), ((1,), (x, y, out, 4.0), 7)]
    assert len(gpu_launches) == 1 and len(loaded.launches) == 1


def test_other_calls_take_the_python_path(gpu_launches, monkeypatch, native):
    x, y, out = DeviceArray(100), DeviceArray(100), DeviceArray(100)
    saxpy[(1,)](x, y, out, 2.0, BLOCK=128)
    (first,) = gpu_launches
    launch = saxpy[(1,)]

    first.answer = None  # the fast path cannot take it: the kernel's reference path launches
    launch(x, y, out, 2.0, BLOCK=128)
    assert len(first.tries) == 1 and len(first.launches) == 2

    launch(x, y, out, 2.0, BLOCK=256)  # another variant: chosen and launched afresh
    assert len(gpu_launches) == 2 and len(first.tries) == 1

    checked = []
    monkeypatch.setattr(saxpy.dispatcher, "race_check", lambda *args: checked.append(args))
    second = gpu_launches[1]
    launch(x, y, out, 2.0, BLOCK=256, race_check=True)  # checks races, then launches
    assert len(checked) == 1 and len(gpu_launches) == 3 and second.tries == []


def test_a_refusal_after_the_steady_state_is_reported_at_the_call(gpu_launches, monkeypatch):
    x, y, out = DeviceArray(100), DeviceArray(100), DeviceArray(100)
    saxpy[(1,)](x, y, out, 2.0, BLOCK=128)
    (loaded,) = gpu_launches
    loaded.answer = None
    loaded.refusal = LaunchError("saxpy: y: not aligned as the variant assumed", "y")
    monkeypatch.setattr(saxpy.dispatcher, "load", lambda *args: loaded)
    with pytest.raises(ph.PhobosError) as info:
        saxpy[(1,)](x, y, out, 2.0, BLOCK=128)  # the refused line
    rendered = str(info.value)
    assert rendered.splitlines()[0].startswith(f"{__file__}:")
    assert "saxpy[(1,)](x, y, out, 2.0, BLOCK=128)  # the refused line" in rendered


def test_an_interrupt_in_try_launch_goes_up(gpu_launches):
    if native_module() is None:
        pytest.skip("no native launch path on this machine")
    x, y, out = DeviceArray(100), DeviceArray(100), DeviceArray(100)
    saxpy[(1,)](x, y, out, 2.0, BLOCK=128)
    (loaded,) = gpu_launches

    def interrupted(grid, args, stream):
        raise KeyboardInterrupt

    loaded.try_launch = interrupted
    with pytest.raises(KeyboardInterrupt):
        saxpy[(1,)](x, y, out, 2.0, BLOCK=128)


def test_a_tuned_launch_of_the_same_signature_takes_the_tuned_variants_fast_path(
    gpu_launches, monkeypatch
):
    """Names left to the tuner: the variant chosen for these shapes, dtypes and GPU is
    launched on its fast path until the signature or the keywords change."""
    chosen = []

    def choose(grid, args, arrays, fixed, where, device=0):
        chosen.append(args[0].shape)
        return Variant.of({"BLOCK": 128, **fixed})

    monkeypatch.setattr(saxpy.dispatcher, "choose", choose)
    x, y, out = (DeviceArray(100) for _ in range(3))
    saxpy[(1,)](x, y, out, 2.0)
    (loaded,) = gpu_launches
    saxpy[(1,)](x, y, out, 3.0)
    saxpy[(1,)](x, y, out, 4.0, stream=5)
    assert chosen == [(100,)] and len(gpu_launches) == 1
    assert loaded.tries == [((1,), (x, y, out, 3.0), None), ((1,), (x, y, out, 4.0), 5)]

    longer = [DeviceArray(200) for _ in range(3)]
    saxpy[(1,)](*longer, 2.0)  # another signature: chosen again, launched afresh
    assert chosen == [(100,), (200,)] and len(gpu_launches) == 2

    gpu_launches[1].answer = None  # the fast path declines: the reference path decides
    saxpy[(1,)](*longer, 2.0)
    assert chosen == [(100,), (200,), (200,)] and len(gpu_launches) == 3

    saxpy[(1,)](*longer, 2.0, BLOCK=256)  # every name fixed: the tuned state is dropped
    assert saxpy.dispatcher.tuned is None and saxpy.dispatcher.steady.last_launch is not None
