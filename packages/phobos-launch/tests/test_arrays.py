"""Reading arrays (CAI and torch), dtypes, and the specialisation facts of arguments."""

from __future__ import annotations

import pytest

from phobos.launch import (
    CudaDriver,
    DriverNotFound,
    LaunchError,
    alignment_of,
    needs_index64,
    row_alignment_of,
    specialization_of,
)
from phobos.launch.arrays import contiguous_strides, read_cai, read_torch
from phobos.launch.dtypes import from_torch, from_typestr


@pytest.mark.parametrize(
    ("typestr", "name"),
    [
        ("<f4", "f32"),
        ("<f2", "f16"),
        ("<f8", "f64"),
        ("|i1", "i8"),
        ("<i8", "i64"),
        ("|u1", "u8"),
        ("<u4", "u32"),
        ("|b1", "bool"),
        (">f4", ">f4"),
        ("|u1", "u8"),
        ("<c8", "<c8"),
        ("<V2", "<V2"),
    ],
)
def test_typestr(typestr, name):
    assert from_typestr(typestr) == name


def test_torch_dtype_names(fakes):
    assert from_torch(fakes.tensor((1,), dtype="bfloat16").dtype) == "bf16"
    assert from_torch(fakes.tensor((1,), dtype="int32").dtype) == "i32"


def test_cai_v2_contiguous(fakes):
    array = fakes.cuda_array((2, 3, 4), typestr="<f2", ptr=0x1000, version=2)
    assert read_cai(array) == (0x1000, (2, 3, 4), (12, 4, 1), "f16", None, False, None)


def test_cai_v3_strided_readonly_with_stream(fakes):
    array = fakes.cuda_array((3, 4), ptr=0x2000, strides=(64, 8), readonly=True, stream=7)
    assert read_cai(array) == (0x2000, (3, 4), (16, 2), "f32", None, True, 7)


def test_cai_mask_is_refused(fakes):
    array = fakes.cuda_array((3,))
    array.__cuda_array_interface__["mask"] = object()
    with pytest.raises(ValueError, match="mask"):
        read_cai(array)


def test_torch_reader(fakes):
    t = fakes.tensor((4, 5), dtype="float16", ptr=0x3000, strides=(1, 4), device=2)
    assert read_torch(t) == (0x3000, (4, 5), (1, 4), "f16", 2, False, None)


def test_contiguous_strides_with_an_empty_axis():
    assert contiguous_strides((3, 0, 2)) == (2, 2, 1)
    assert contiguous_strides(()) == ()


def test_specialization_of(fakes):
    args = [
        fakes.cuda_array((8, 4), ptr=0x1000),
        2.0,
        fakes.cuda_array((8, 4), ptr=0x1008, strides=(32, 8)),
        fakes.tensor((5,), dtype="float16", ptr=0x1002),
        fakes.cuda_array((8, 5), ptr=0x2000),
    ]
    facts = {"align": 16, "unit_stride": True, "row_align": 16, "dtype": "f32", "rank": 2}
    assert specialization_of(args) == {
        0: facts,
        2: {**facts, "align": 8, "unit_stride": False},
        3: {**facts, "align": 2, "dtype": "f16", "rank": 1},
        4: {**facts, "row_align": 4},  # rows of 5 floats: 20 bytes apart
    }


def test_row_alignment_of():
    f16 = [(0, (4, 6), (6, 1), "f16"), (0, (4, 8), (8, 1), "f16"), (0, (1, 6), (6, 1), "f16")]
    assert [row_alignment_of((*f, None, False, None)) for f in f16] == [4, 16, 16]
    assert row_alignment_of((0, (3, 2, 8), (24, 8, 1), "f32", None, False, None)) == 16
    assert row_alignment_of((0, (3, 2, 8), (24, 9, 1), "f32", None, False, None)) == 4
    assert row_alignment_of((0, (7,), (3,), "f32", None, False, None)) == 16  # no rows


def test_specialization_of_a_cpu_tensor_is_an_error(fakes):
    with pytest.raises(LaunchError, match="argument 0: got a torch tensor on cpu"):
        specialization_of([fakes.tensor((4,), device=-1)])


def test_alignment_of():
    assert [alignment_of(p) for p in (0, 1, 6, 8, 48, 0x1000)] == [16, 1, 2, 8, 16, 16]


def test_needs_index64(fakes):
    assert not needs_index64([fakes.cuda_array((2**30,)), 1.0])
    assert needs_index64([fakes.cuda_array((2**31,))])
    assert needs_index64([fakes.cuda_array((2, 2**30), strides=(2**33, 4))])
    assert not needs_index64([fakes.cuda_array((1, 4), strides=(2**40, 4))])
    assert needs_index64([fakes.tensor((3,), strides=(2**30,))])


def test_no_driver_library():
    with pytest.raises(DriverNotFound, match="no NVIDIA driver"):
        CudaDriver("libcuda-that-is-not-here.so.1")
