"""TMA descriptors: a ``tensormap`` slot is made by the driver once per array layout and packed
into the launch block, on the reference path and the generated-Python fast path alike."""

from __future__ import annotations

import copy
import struct

import pytest

from phobos.launch import LaunchError, load_kernel, read_contract
from phobos.launch.errors import ContractError

from .conftest import FakeDriver, fast_launch

BASE = 0x7F0000000000

MATMUL = {
    "format_version": 1,
    "kernel": "matmul",
    "entry": "phobos_matmul",
    "arch": "sm_90a",
    "index_width": 32,
    "block": [256, 1, 1],
    "dynamic_smem": 0,
    "static_smem": 0,
    "values": {},
    "tensors": [
        {"name": "a", "dtype": "f16", "dims": ["M", "K"], "read": True, "written": False,
         "align": 16, "unit_stride": True, "row_align": 16},
        {"name": "c", "dtype": "f16", "dims": ["M", "K"], "read": False, "written": True,
         "align": 16, "unit_stride": True, "row_align": 16},
    ],
    "scalars": [],
    "slots": [
        {"kind": "pointer", "type": "u64", "param": "a"},
        {"kind": "stride", "type": "i32", "param": "a", "axis": 0},
        {"kind": "pointer", "type": "u64", "param": "c"},
        {"kind": "stride", "type": "i32", "param": "c", "axis": 0},
        {"kind": "extent", "type": "i32", "param": "M"},
        {"kind": "extent", "type": "i32", "param": "K"},
        {"kind": "tensormap", "type": "tmap", "param": "a", "box": [128, 64]},
    ],
    "params": ["a", "c"],
}  # fmt: skip


def arrays(fakes, m=300, k=200, row=None):
    row = row or k
    a = fakes.cuda_array((m, k), typestr="<f2", ptr=BASE, strides=(2 * row, 2))
    c = fakes.cuda_array((m, k), typestr="<f2", ptr=BASE + 0x100000)
    return [a, c]


def packed_map(kernel) -> bytes:
    """The descriptor the last launch packed: the block's last 128 bytes."""
    return bytes(kernel.parameter_block())[-128:]


@pytest.mark.parametrize("path", ["reference", "fast"])
def test_a_descriptor_is_made_once_per_array_layout_and_packed(fakes, path):
    driver = FakeDriver(native=False)
    kernel = load_kernel(copy.deepcopy(MATMUL), cubin=b"C", driver=driver)
    args = arrays(fakes)

    def launch(args):
        if path == "reference":
            kernel.launch((1,), args)
        else:
            assert fast((1,), args, None) == 0

    fast = fast_launch(kernel, args) if path == "fast" else None
    for _ in range(3):
        launch(args)
    made = [c for c in driver.calls if c[0] == "encode_tensor_map"]
    assert made == [("encode_tensor_map", 6, BASE, (200, 300), (400,), (64, 128), 3)]
    assert packed_map(kernel) == struct.pack(
        "<iQ2Q1Q2Ii", 6, BASE, 200, 300, 400, 64, 128, 3
    ).ljust(128, b"\0")
    wider = arrays(fakes, row=208)  # another layout: another descriptor
    launch(wider)
    assert [c[4] for c in driver.calls if c[0] == "encode_tensor_map"][-1] == (416,)
    assert len(driver.launches) == 4


def test_an_empty_tensor_has_no_descriptor(fakes):
    kernel = load_kernel(copy.deepcopy(MATMUL), cubin=b"C", driver=FakeDriver(native=False))
    with pytest.raises(LaunchError, match=r"matmul: a: an empty tensor \(shape \(0, 200\)\)"):
        kernel.launch((1,), arrays(fakes, m=0))


def test_the_native_path_keeps_descriptors_in_c(fakes):
    """The C fast path packs the descriptor the reference binder does, asking the slot's
    reader (and so the driver) once per array layout."""
    driver = FakeDriver()
    kernel = load_kernel(copy.deepcopy(MATMUL), cubin=b"C", driver=driver)
    fast = fast_launch(kernel, arrays(fakes), native=True)
    if fast is None:
        pytest.skip("no native launch path on this machine")
    for _ in range(3):
        assert fast((1,), arrays(fakes), None) == 0
    assert packed_map(kernel) == struct.pack(
        "<iQ2Q1Q2Ii", 6, BASE, 200, 300, 400, 64, 128, 3
    ).ljust(128, b"\0")
    assert fast((1,), arrays(fakes, row=208), None) == 0
    assert fast((1,), arrays(fakes), None) == 0  # back to the first: still known
    made = [c[4] for c in driver.calls if c[0] == "encode_tensor_map"]
    assert made == [(400,), (416,)]
    assert [launch["caller"] for launch in driver.launches] == ["native"] * 5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"box": [128, 96]}, r"box \(128, 96\) is no TMA box of a"),
        ({"box": [512, 64]}, "is no TMA box"),
        ({"type": "u64"}, "a tensormap slot, and only one, has type tmap"),
        ({"param": "z"}, "no tensor parameter named z"),
    ],
)
def test_a_malformed_tensormap_slot_is_refused(change, message):
    contract = copy.deepcopy(MATMUL)
    contract["slots"][-1].update(change)
    with pytest.raises(ContractError, match=message):
        read_contract(contract)
