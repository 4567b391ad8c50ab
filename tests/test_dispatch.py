"""The one path from ``kernel[grid](...)`` to the driver, on phobos-launch's fake driver: the
variant compiled (NVRTC, no GPU), loaded and launched; each array read once on the way."""

from __future__ import annotations

import importlib.util
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import phobos.lang as ph
from phobos.lang import dispatch
from phobos.lang.variant import Variant
from phobos.launch import load_kernel
from phobos.launch.native import native_module
from tests.gpu.saxpy_kernel import saxpy

_spec = importlib.util.spec_from_file_location(
    "launch_fakes", Path(__file__).parents[1] / "packages/phobos-launch/tests/conftest.py"
)
fakes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fakes)

BASE = 0x7F0000000000


class CountingArray:
    """A GPU array seen through ``__cuda_array_interface__`` alone, counting how often it is read."""

    def __init__(self, n: int, ptr: int) -> None:
        self.reads = 0
        self._cai = {"shape": (n,), "typestr": "<f4", "data": (ptr, False), "version": 3}

    @property
    def __cuda_array_interface__(self):
        self.reads += 1
        return self._cai


@pytest.fixture
def driver(monkeypatch):
    """phobos.lang's driver and loader are phobos-launch's fake (an sm_90 GPU 0)."""
    fake = fakes.FakeDriver()
    monkeypatch.setattr(dispatch, "shared_driver", lambda: fake)
    monkeypatch.setattr(dispatch, "load_kernel", partial(load_kernel, driver=fake))
    return fake


def test_a_first_launch_reads_each_array_once_then_the_steady_state_takes_the_fast_path(driver):
    kernel = ph.kernel(saxpy.__wrapped__)
    arrays = [CountingArray(1000, BASE + i * 0x10000) for i in range(3)]
    kernel[(8,)](*arrays, 2.0, BLOCK=128)
    assert [a.reads for a in arrays] == [1, 1, 1]
    ((variant, spec, device),) = kernel.dispatcher.loaded
    assert device == 0
    assert variant == {"BLOCK": 128} and spec.index_width == 32
    assert spec.tensor("x").align == 16 and spec.tensor("out").unit_stride
    kernel[(8,)](*arrays, 3.0, BLOCK=128)
    kernel[(8,)](*arrays, 4.0, BLOCK=128)
    assert [a.reads for a in arrays] == [3, 3, 3]  # once per launch on the fast path
    callers = [launch["caller"] for launch in driver.launches]
    native = native_module() is not None
    assert callers == ["python", *(["native"] if native else ["python"]) * 2]
    assert kernel.dispatcher.steady.last_launch[0] == {"BLOCK": 128}
    assert type(kernel[(8,)]).__name__ == ("SteadyCall" if native else "function")


def test_each_gpu_gets_the_variant_compiled_for_its_architecture(driver):
    """GPU 0 is an H200 (sm_90a), GPU 1 an sm_86: the same variant launched on GPU 1 after GPU 0
    (the last launch's reference path tried first) runs a cubin built for sm_86, loaded there."""
    driver.compute_capability = lambda device: [(9, 0), (8, 6)][device]
    kernel = ph.kernel(saxpy.__wrapped__)
    on_0 = [CountingArray(1000, BASE + i * 0x10000) for i in range(3)]
    on_1 = [CountingArray(1000, BASE + (i + 4) * 0x10000) for i in range(3)]
    driver.pointer_devices.update({BASE + (i + 4) * 0x10000: 1 for i in range(3)})
    kernel[(8,)](*on_0, 2.0, BLOCK=128)
    kernel[(8,)](*on_1, 2.0, BLOCK=128)
    kernel[(8,)](*on_0, 3.0, BLOCK=128)
    loaded = kernel.dispatcher.loaded
    assert {device: k.contract.arch for (_, _, device), k in loaded.items()} == {
        0: "sm_90a",
        1: "sm_86",
    }
    assert [launch["context"] for launch in driver.launches] == [0xC0, 0xC1, 0xC0]
    functions = {device: driver.launches[device]["function"] for device in (0, 1)}
    assert functions[0] != functions[1] and driver.launches[2]["function"] == functions[0]


def test_a_numpy_scalar_is_a_scalar_not_a_host_array(driver):
    kernel = ph.kernel(saxpy.__wrapped__)
    arrays = [CountingArray(1000, BASE + i * 0x10000) for i in range(3)]
    kernel[(8,)](*arrays, np.float32(2.0), BLOCK=128)
    assert len(driver.launches) == 1


def test_arguments_that_allow_less_get_a_less_specialised_variant(driver):
    kernel = ph.kernel(saxpy.__wrapped__)
    arrays = [CountingArray(1000, BASE + i * 0x10000 + 4) for i in range(3)]  # 4-byte aligned
    kernel[(8,)](*arrays, 2.0, BLOCK=128)
    ((_, spec, _),) = kernel.dispatcher.loaded
    assert spec.tensor("x").align == 4
    assert len(driver.launches) == 1


def test_a_wrong_dtype_is_reported_before_anything_is_compiled(driver, monkeypatch):
    kernel = ph.kernel(saxpy.__wrapped__)
    monkeypatch.setattr(kernel.dispatcher, "compile", None)  # never called
    x, y, out = (CountingArray(1000, BASE + i * 0x10000) for i in range(3))
    y._cai = {**y._cai, "typestr": "<f2"}
    with pytest.raises(ph.PhobosError, match="y: expected a f32 tensor, got f16"):
        kernel[(8,)](x, y, out, 2.0, BLOCK=128)
    assert driver.pointer_queries == 0 and driver.launches == []


def test_a_variant_is_a_hashable_printable_mapping():
    variant = Variant.of({"NUM_THREADS": 64, "BLOCK": 128})
    assert str(variant) == "BLOCK=128 NUM_THREADS=64" and dict(variant) == {
        "BLOCK": 128,
        "NUM_THREADS": 64,
    }
    assert variant == {"NUM_THREADS": 64, "BLOCK": 128} and variant != {"BLOCK": 128}
    assert {variant: 1}[Variant.of({"BLOCK": 128, "NUM_THREADS": 64})] == 1
    assert Variant.of(variant) is variant and str(Variant.of({})) == "the only variant"
    assert repr(variant) == "Variant(BLOCK=128, NUM_THREADS=64)"


def test_a_launch_that_leaves_names_to_the_tuner_takes_the_tuned_fast_path(driver):
    """The variant tuned for these shapes and types (set here as the tuner leaves it) is
    launched through its fast path; the arrays are not read through the adapter for it."""
    from phobos.lang import tuning

    kernel = ph.kernel(saxpy.__wrapped__)
    arrays = [CountingArray(1000, BASE + i * 0x10000) for i in range(3)]
    kernel[(8,)](*arrays, 2.0, BLOCK=128)
    dispatcher = kernel.dispatcher
    ((loaded),) = dispatcher.loaded.values()
    dispatcher.steady.last_launch = None
    dispatcher.tuned = ({}, tuning.quick_signature([*arrays, 2.0], {}), loaded)
    before = [a.reads for a in arrays]
    kernel[(8,)](*arrays, 3.0)
    assert len(driver.launches) == 2 and len(dispatcher.loaded) == 1
    assert [a.reads - b for a, b in zip(arrays, before)] == [2, 2, 2]  # the key, the fast path


def test_the_quick_signature_tells_shapes_and_types_apart():
    from phobos.lang.tuning import quick_signature

    a, b = CountingArray(1000, BASE), CountingArray(1000, BASE + 0x10000)
    c = CountingArray(999, BASE)
    assert quick_signature([a, 2.0], {}) == quick_signature([b, 3.0], {})
    assert quick_signature([a, 2.0], {}) != quick_signature([c, 2.0], {})
    assert quick_signature([a, 2.0], {}) != quick_signature([a, 2], {})
    assert quick_signature([a], {}) != quick_signature([a], {"BLOCK": 128})
    torch = pytest.importorskip("torch")
    x, y = torch.zeros(4, 5), torch.zeros(4, 5, dtype=torch.float16)
    assert quick_signature([x], {}) != quick_signature([y], {})
    assert quick_signature([x], {}) == quick_signature([torch.ones(4, 5)], {})
