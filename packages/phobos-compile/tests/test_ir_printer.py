"""The IR's text form: a golden dump covering every statement and most expressions."""

from __future__ import annotations

from phobos.compile.check import lower
from phobos.compile.ir import format_kernel
from phobos.compile.syntax.parser import parse

PROGRAM = """\
@autotune(B in {4})
kernel k(x: tensor<f16>[M, K], o: tensor<f32>[M], a: f32, flag: bool) {
    let r = ctx.block.x * B
    let t = x[r :+ B, 0 :+ 8]
    var acc = zeros<f32>[B, B]
    for k in 0 .. K step 8 {
        acc = dot(t, trans(t), acc)
    }
    let m = max(acc, axis=1)
    let h = f16(m)
    atomic_add(o[0], sum(fill(f32(h), 0.0)))
    let e = exp(acc - m[:, newaxis])
    let s = where(arange(B) < M - r, sum(e, axis=1), -inf)
    if flag && !(a > 0.5) {
        return
    } else {
        o[r :+ B] = fill(f32(s), 0.0) * a
    }
    var i = 0
    while i < 3 {
        i += -1
    }
}
"""

EXPECTED = """\
kernel k(x: tensor<f16>[M, K], o: tensor<f32>[M], a: f32, flag: bool) [B=4] {
    %r: index = mul(ctx.block.x, 4)
    %t: tile<f16>[4, 8]? = load x[%r :+ 4, 0 :+ 8]
    var %acc: tile<f32>[4, 4]? = full<f32>[4, 4](0.0)
    for %k: index in 0 .. K step 8 {
        %acc = dot(%t, trans(%t), %acc)
    }
    %m: tile<f32>[4]? = reduce_max<1>(%acc)
    %h: tile<f16>[4]? = cast<f16>(%m)
    atomic_add o[0] += reduce_sum<0>(fill(cast<f32>(%h), 0.0))
    %e: tile<f32>[4, 4]? = exp(sub(%acc, broadcast<[4, 4]>(expand_dims<1>(%m))))
    %s: tile<f32>[4]? = select(lt(iota<index>[4], splat<[4]>(sub(M, %r))), reduce_sum<1>(%e), splat<[4]>(-inf))
    if land(flag, not(gt(a, 0.5))) {
        return
    } else {
        store o[%r :+ 4] = mul(fill(%s, 0.0), splat<[4]>(a))
    }
    var %i: i32 = 0
    while lt(%i, 3) {
        %i = add(%i, -1)
    }
}
"""


def test_format_kernel_golden():
    kernel = lower(parse(PROGRAM, "golden.ph"), "k", {"B": 4})
    assert format_kernel(kernel) == EXPECTED


def test_format_is_stable_across_lowerings():
    module = parse(PROGRAM, "golden.ph")
    assert format_kernel(lower(module, "k", {"B": 4})) == format_kernel(
        lower(module, "k", {"B": 4})
    )
