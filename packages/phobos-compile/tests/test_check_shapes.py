"""Shapes: tensor accesses, reshapes, broadcasting, reductions, dot, tiles; absent lanes."""

from __future__ import annotations

import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax.parser import parse

HEADER = (
    "@autotune(B in {8})\n"
    "kernel k(x: tensor<f32>[M, N], v: tensor<f32>[N], h: tensor<f16>[M, N], "
    "o: tensor<f32>[M, N], a: f32, n: i32) {\n"
)


def body(text: str) -> ir.Kernel:
    return lower(parse(HEADER + text + "\n}\n", "t.ph"), "k", {"B": 8})


def defined(text: str) -> dict[str, ir.IRType]:
    return {s.var.name: s.var.type for s in body(text).body if isinstance(s, ir.Define)}


def failure(text: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        body(text)
    return caught.value


def at(err: PhobosError) -> tuple[int, int]:
    return err.span.line - 2, err.span.col


def test_windows_make_partial_tiles_and_points_make_scalars():
    kernel = body("let t = x[0 :+ B, n :+ 4]\nlet s = x[1, n]\nlet r = x[1, 0 :+ B]")
    t, s, r = kernel.body
    assert t.var.type == ir.TileT("f32", (8, 4), partial=True)
    assert s.var.type == ir.ScalarT("f32")
    assert r.var.type == ir.TileT("f32", (8,), partial=True)
    assert isinstance(t.value, ir.Load)
    assert t.value.indices[1].start.type == ir.ScalarT("index")  # an i32 start becomes index
    assert [i.length for i in t.value.indices] == [8, 4]


def test_tensor_access_errors():
    err = failure("let t = x[0 :+ 8]")
    assert at(err) == (1, 9)
    assert "has 2 axes but 1 index items" in err.message
    err = failure("let t = v[0 :+ n]")
    assert at(err) == (1, 16)
    assert "window length must be a compile-time integer" in err.message
    assert "const" in err.diagnostics[0].help
    err = failure("let t = v[0 :+ 0]")
    assert "must be positive" in err.message
    err = failure("let t = v[a :+ 8]")
    assert "must be an integer" in err.message and "index(a)" in err.diagnostics[0].help
    err = failure("let t = v[v[0 :+ 4]]")
    assert "block-uniform scalar" in err.message
    err = failure("let t = v[:]")
    assert "a tensor takes points and windows" in err.message


def test_newaxis_reshapes_a_tile():
    kernel = body("let t = v[0 :+ 4]\nlet r = t[:, newaxis]\nlet c = t[newaxis, :]")
    _, r, c = kernel.body
    assert r.var.type == ir.TileT("f32", (4, 1), partial=True)
    assert isinstance(r.value, ir.ExpandDims) and r.value.axis == 1
    assert c.var.type == ir.TileT("f32", (1, 4), partial=True)
    err = failure("let t = v[0 :+ 4]\nlet r = t[0]")
    assert at(err) == (2, 11)
    assert "only be reshaped" in err.message
    err = failure("let t = v[0 :+ 4]\nlet r = t[:, :]")
    assert "needs 1 `:` items, got 2" in err.message
    err = failure("let r = a[:]")
    assert "cannot be indexed" in err.message


def test_broadcasting_is_explicit():
    kernel = body("let t = v[0 :+ 4][:, newaxis] + v[0 :+ 8]")
    add = kernel.body[0].value
    assert add.type == ir.TileT("f32", (4, 8), partial=True)
    assert isinstance(add.left, ir.Broadcast) and add.left.type.shape == (4, 8)
    assert isinstance(add.right, ir.Broadcast)
    assert isinstance(add.right.operand, ir.ExpandDims) and add.right.operand.axis == 0
    kernel = body("let t = a * v[0 :+ 4]")
    assert isinstance(kernel.body[0].value.left, ir.Splat)
    err = failure("let t = v[0 :+ 4] + v[0 :+ 8]")
    assert at(err) == (1, 9)
    assert "do not broadcast" in err.message and "newaxis" in err.diagnostics[0].help


def test_reductions():
    types = defined(
        "let t = x[0 :+ 4, 0 :+ 8]\nlet r = sum(t, axis=1)\nlet c = max(t, axis=0)\n"
        "let s = min(v[0 :+ 8])\nlet q = sum(t, axis=-1)"
    )
    assert types["r"] == ir.TileT("f32", (4,), partial=True)
    assert types["c"] == ir.TileT("f32", (8,), partial=True)
    assert types["s"] == ir.ScalarT("f32")
    assert types["q"] == types["r"]
    err = failure("let t = x[0 :+ 4, 0 :+ 8]\nlet r = sum(t)")
    assert at(err) == (2, 9)
    assert err.diagnostics[0].help == "write `sum(t, axis=0)`"
    err = failure("let t = x[0 :+ 4, 0 :+ 8]\nlet r = sum(t, axis=2)")
    assert "out of range" in err.message
    err = failure("let r = max(v[0 :+ 4], v[0 :+ 4])")
    assert "maximum(a, b)" in err.diagnostics[0].help
    err = failure("let r = sum(a)")
    assert "needs a tile" in err.message
    err = failure("let r = sum(v[0 :+ 4], axes=0)")
    assert "no keyword 'axes'" in err.message


def test_dot_and_matmul_operator():
    kernel = body(
        "let p = h[0 :+ 16, 0 :+ 32]\nlet q = h[0 :+ 32, 0 :+ 8]\n"
        "let d = dot(p, q)\nlet e = p @ q\nlet f = dot(p, q, zeros<f32>[16, 8])"
    )
    d, e, f = kernel.body[2:]
    for stmt in (d, e, f):
        assert isinstance(stmt.value, ir.Dot)
        assert stmt.var.type == ir.TileT("f32", (16, 8), partial=True)
    assert isinstance(d.value.acc, ir.Full) and d.value.acc.type == ir.TileT("f32", (16, 8))
    err = failure("let p = h[0 :+ 16, 0 :+ 32]\nlet d = dot(p, p)")
    assert at(err) == (2, 9)
    assert "inner extents 32 and 16 differ" in err.message
    err = failure("let p = h[0 :+ 16, 0 :+ 16]\nlet q = x[0 :+ 16, 0 :+ 16]\nlet d = p @ q")
    assert "share a type" in err.message and "f16(q)" in err.diagnostics[0].help
    err = failure("let p = h[0 :+ 4, 0 :+ 4]\nlet d = dot(p, p, zeros<f32>[4, 8])")
    assert at(err) == (2, 19)
    assert "[4, 4] tile" in err.message
    err = failure("let d = dot(v[0 :+ 4], v[0 :+ 4])")
    assert "2-D tiles" in err.message


def test_trans_arange_zeros_fill():
    kernel = body(
        "let t = trans(x[0 :+ 4, 0 :+ 8])\nlet i = arange(B)\nlet z = zeros<f16>[2, B]\n"
        "let f = fill(v[0 :+ 8], 0.0)"
    )
    t, i, z, f = kernel.body
    assert t.var.type == ir.TileT("f32", (8, 4), partial=True)
    assert i.value == ir.Iota(ir.TileT("index", (8,)))
    assert z.value == ir.Full(0.0, ir.TileT("f16", (2, 8)))
    assert isinstance(f.value, ir.Fill) and f.var.type == ir.TileT("f32", (8,))
    err = failure("let t = ones<f32>[4]")
    assert at(err) == (1, 9)
    assert "unknown tile constructor 'ones'" in err.message
    assert err.diagnostics[0].help == "start from zeros and add: `zeros<f32>[...] + v`"
    err = failure("let t = zeros<f32>[n]")
    assert "tile extent must be a compile-time integer" in err.message
    err = failure("let t = trans(v[0 :+ 4])")
    assert "2-D tile" in err.message
    err = failure("let t = arange(n)")
    assert "compile-time" in err.message
    err = failure("let t = fill(v[0 :+ 4], n)")
    assert "needs a f32 value, got i32" in err.message and "f32(n)" in err.diagnostics[0].help


def test_partial_propagates_and_full_iota_splat_fill_are_not():
    types = defined(
        "let t = v[0 :+ 8]\nlet e = exp(t) * 2.0\nlet c = f16(t)\nlet r = t[newaxis, :]\n"
        "let s = sum(r, axis=0)\nlet w = fill(t, 0.0) + a\nlet y = arange(8)[:, newaxis] * 2"
    )
    assert all(types[n].partial for n in "tecrs")
    assert not types["w"].partial and not types["y"].partial


def test_stores_broadcast_to_the_window():
    kernel = body(
        "o[0 :+ 4, 0 :+ 8] = v[0 :+ 8]\no[0 :+ 4, 0 :+ 8] = a\no[0, 0] = 1.0\n"
        "o[0 :+ 4, 0 :+ 8] += 1.0"
    )
    first, second, third, fourth = kernel.body
    assert first.value.type == ir.TileT("f32", (4, 8), partial=True)
    assert isinstance(second.value, ir.Splat) and second.value.type.shape == (4, 8)
    assert third.value == ir.Const(1.0, ir.ScalarT("f32"))
    assert isinstance(fourth.value.left, ir.Load)
    err = failure("o[0 :+ 4, 0 :+ 8] = v[0 :+ 4]")
    assert at(err) == (1, 1)
    assert "do not broadcast" in err.message
    err = failure("o[0, 0] = v[0 :+ 4]")
    assert "one element" in err.message
    err = failure("o[0, 0 :+ 4] = h[0, 0 :+ 4]")
    assert (
        "holds f32" in err.message and err.diagnostics[0].help == "convert it: `f32(h[0, 0 :+ 4])`"
    )
    err = failure("let t = v[0 :+ 4]\nt[0] = 1.0")
    assert at(err) == (2, 1)
    assert "tensor parameter" in err.message and "where" in err.diagnostics[0].help


def test_atomic_add_is_a_statement_into_a_tensor_window():
    kernel = body("atomic_add(o[0 :+ 4, 1], v[0 :+ 4])\natomic_add(o[0, 0], 1.0)")
    first, second = kernel.body
    assert isinstance(first, ir.AtomicAdd) and first.tensor.name == "o"
    assert first.value.type == ir.TileT("f32", (4,), partial=True)
    assert second.value == ir.Const(1.0, ir.ScalarT("f32"))
    err = failure("let t = atomic_add(o[0, 0], 1.0)")
    assert at(err) == (1, 9)
    assert "is a statement" in err.message
    err = failure("atomic_add(o[0, 0], n)")
    assert "holds f32, but the value is i32" in err.message
    err = failure("let t = v[0 :+ 4]\natomic_add(t, 1.0)")
    assert at(err) == (2, 12)
    assert err.diagnostics[0].help == "index the tensor: `atomic_add(t[a :+ L], 1.0)`"
