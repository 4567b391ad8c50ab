"""The key recipe is a published format: these tests pin its exact bytes."""

from __future__ import annotations

import hashlib

import pytest

from phobos.cache import cache_key, canonical_json, kernel_record


def test_canonical_json_exact_bytes() -> None:
    record = {"b": 1, "a": [True, None, 'é\n"\\'], "c": {"z": -2, "Z": "x"}, "t": (1, 2)}
    expected = '{"a":[true,null,"é\\n\\"\\\\"],"b":1,"c":{"Z":"x","z":-2},"t":[1,2]}'
    assert canonical_json(record) == expected.encode("utf-8")
    assert cache_key(record) == hashlib.sha256(expected.encode("utf-8")).hexdigest()


def test_control_characters_are_escaped_as_lowercase_u_escapes() -> None:
    assert canonical_json({"s": "\x01\t\x1f\x7f"}) == b'{"s":"\\u0001\\t\\u001f\x7f"}'


def test_key_ignores_insertion_order_and_sees_every_value() -> None:
    one = {"kernel": "saxpy", "arch": "sm_90", "values": {"BLOCK": 64, "WARPS": 4}}
    same = {"values": {"WARPS": 4, "BLOCK": 64}, "arch": "sm_90", "kernel": "saxpy"}
    other_arch = {**one, "arch": "sm_80"}
    assert cache_key(one) == cache_key(same)
    assert cache_key(one) != cache_key(other_arch)
    assert len(cache_key(one)) == 64 and set(cache_key(one)) <= set("0123456789abcdef")


def test_keys_sort_by_code_point() -> None:
    assert canonical_json({"é": 1, "z": 2, "Z": 3}) == '{"Z":3,"z":2,"é":1}'.encode()


@pytest.mark.parametrize(
    ("record", "complaint"),
    [
        ({"scale": 0.5}, "float"),
        ({1: "x"}, "non-string key"),
        ({"s": {1, 2}}, "set"),
        ({"s": "\ud800"}, "not valid Unicode"),
        (["not", "a", "mapping"], "mapping"),
    ],
)
def test_records_whose_spelling_is_not_pinned_are_refused(record: object, complaint: str) -> None:
    with pytest.raises(TypeError, match=complaint):
        cache_key(record)  # type: ignore[arg-type]


def test_the_worked_example_in_docs_cache_md() -> None:
    record = kernel_record(
        program="kernel add(x: tensor<f32>[N]) {}",
        kernel="add",
        arch="sm_90",
        compiler="phobos-compile 0.1.0",
        values={"BLOCK": 256},
        toolchain={"nvrtc": "13.5"},
    )
    assert canonical_json(record) == (
        b'{"arch":"sm_90","compiler":"phobos-compile 0.1.0","kernel":"add","options":[],'
        b'"program":"kernel add(x: tensor<f32>[N]) {}","specialisation":{},'
        b'"toolchain":{"nvrtc":"13.5"},"values":{"BLOCK":256}}'
    )
    assert cache_key(record) == "aabc44c7c353ca49816b72cdc6ad85574738e855ef30ed432ff8d7b6e40270c2"
