"""Module-level definitions: kernels, functions, constants, autotune spaces, host code."""

from __future__ import annotations

import pytest

from phobos.compile.syntax import ast as ph
from phobos.frontend import find_kernel

F32 = ph.ScalarType("f32")


def test_const_func_and_kernel_in_module_order(translate) -> None:
    program = translate(
        """
        import math

        SCALE: ph.const = 4
        HOST_ONLY = 3


        @ph.func
        def scaled(a: ph.f32) -> ph.f32:
            return a * SCALE


        def host_helper(n):
            return math.ceil(n / 4)


        @ph.kernel
        def k(x: ph.tensor[ph.f32][N, 16], n: ph.i32):
            x[0, 0:+16] = scaled(x[0, 0:+16])


        if __name__ == "__main__":
            print(k.source)
        """
    )
    const, func, kernel = program.module.items
    assert const == ph.Const("SCALE", ph.IntLit(4))
    assert func == ph.Function(
        "scaled",
        (ph.Param("a", F32),),
        F32,
        ph.Block((ph.Return(ph.Binary("*", ph.Name("a"), ph.Name("SCALE"))),)),
    )
    assert kernel.params == (
        ph.Param("x", ph.TensorType(F32, (ph.Name("N"), ph.IntLit(16)))),
        ph.Param("n", ph.ScalarType("i32")),
    )
    assert find_kernel(program, "k") is kernel


def test_a_func_without_result(translate) -> None:
    program = translate(
        """
        @ph.func
        def store(t: ph.tensor[ph.f32][N], v: ph.f32):
            t[0] = v
        """
    )
    (func,) = program.module.items
    assert isinstance(func, ph.Function) and func.result is None


@pytest.mark.parametrize("order", ["kernel first", "autotune first"])
def test_autotune_spaces_in_either_decorator_order(translate, order: str) -> None:
    decorators = ["@ph.kernel", "@ph.autotune(BLOCK=[16, 8192], BN={128, 64, 256})"]
    if order == "autotune first":
        decorators.reverse()
    program = translate("\n".join(decorators) + "\ndef k(x: ph.tensor[ph.f32][N]):\n    pass\n")
    kernel = program.module.kernel("k")
    assert kernel.autotune == (
        ph.TuneParam("BLOCK", ph.PowerRange(ph.IntLit(16), ph.IntLit(8192))),
        ph.TuneParam("BN", ph.ValueSet((ph.IntLit(128), ph.IntLit(64), ph.IntLit(256)))),
    )
    assert kernel.body == ph.Block(())


def test_only_top_level_phobos_definitions_are_read(translate) -> None:
    program = translate(
        """
        def host():
            @ph.kernel
            def inner(x: ph.f32):
                print(x)

            return inner


        class Host:
            value: ph.const = 3
        """
    )
    assert program.module.items == ()


def test_a_docstring_leads_the_item(translate) -> None:
    program = translate(
        '''
        @ph.kernel
        def k(x: ph.tensor[ph.f32][N]):
            """Zero the first element.

            Nothing else.
            """
            x[0] = 0.0
        '''
    )
    kernel = program.module.kernel("k")
    assert kernel.leading == ("Zero the first element.", "", "Nothing else.")
    assert len(kernel.body.body) == 1


def test_find_kernel_names_the_kernels_there_are(translate) -> None:
    program = translate("@ph.kernel\ndef k(x: ph.f32):\n    pass\n")
    with pytest.raises(
        LookupError, match=r"no top-level @ph.kernel named 'other' \(its kernels: k\)"
    ):
        find_kernel(program, "other")
