"""Converting into an existing .py replaces the Phobos definitions and keeps the hand edits."""

from __future__ import annotations

import textwrap

import pytest

from ph2py import convert_source
from phobos.compile.diagnostics import PhobosError
from phobos.compile.syntax import format_module, parse
from phobos.frontend import translate_source

PH = textwrap.dedent(
    """\
    // The scale.
    const SCALE = 2.0

    fn twice(v: f32) -> f32 {
        return SCALE * v
    }

    @autotune(BLOCK in [64, 1024])
    kernel scale(x: tensor<f32>[N], out: tensor<f32>[N]) {
        let base = ctx.block.x * BLOCK
        out[base :+ BLOCK] = twice(x[base :+ BLOCK])
    }
    """
)

HAND_WRITTEN = textwrap.dedent(
    '''\
    """Scaling kernels, and a small driver."""

    from __future__ import annotations

    import numpy as np

    import phobos.lang as ph


    # A host helper: kept.
    def blocks(n: int, block: int) -> int:
        return -(-n // block)


    @ph.kernel
    @ph.autotune(BLOCK=[64, 1024])
    def scale(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
        out[0:+BLOCK] = x[0:+BLOCK]  # an old body: replaced


    @ph.kernel
    def removed_from_the_ph(x: ph.tensor[ph.f32][N]):
        x[0] = 0.0


    if __name__ == "__main__":
        x = np.ones(1000, dtype=np.float32)  # kept, with its comment
        print(scale.source)
    '''
)


def assert_spells_the_ph(python: str, ph: str = PH) -> None:
    assert translate_source(python, "scale.py").text == format_module(parse(ph, "scale.ph"))


def test_hand_edits_outside_the_definitions_are_kept() -> None:
    merged = convert_source(PH, "scale.ph", HAND_WRITTEN, "scale.py").python
    assert merged.startswith(
        '"""Scaling kernels, and a small driver."""\n\nfrom __future__ import annotations\n\n'
        "import numpy as np\n\nimport phobos.lang as ph\n\n\n"
        "# A host helper: kept.\ndef blocks(n: int, block: int) -> int:\n"
        "    return -(-n // block)\n"
    )
    assert merged.endswith(
        '\n\nif __name__ == "__main__":\n'
        "    x = np.ones(1000, dtype=np.float32)  # kept, with its comment\n"
        "    print(scale.source)\n"
    )
    assert "an old body" not in merged
    assert "removed_from_the_ph" not in merged
    assert_spells_the_ph(merged)


def test_new_definitions_go_beside_their_neighbours_in_the_ph_order() -> None:
    merged = convert_source(PH, "scale.ph", HAND_WRITTEN, "scale.py").python
    helper = merged.index("def blocks")
    const, fn, kernel = (merged.index(s) for s in ("SCALE: ph.const", "def twice", "def scale"))
    main = merged.index('if __name__ == "__main__"')
    assert helper < const < fn < kernel < main
    assert "# The scale.\nSCALE: ph.const = 2.0\n" in merged


def test_converting_into_the_merged_file_again_changes_nothing() -> None:
    merged = convert_source(PH, "scale.ph", HAND_WRITTEN, "scale.py").python
    assert convert_source(PH, "scale.ph", merged, "scale.py").python == merged


def test_a_file_without_the_imports_gets_them() -> None:
    existing = '"""Docs."""\n\nimport os\n\n\ndef host():\n    return os.sep\n'
    merged = convert_source(PH, "scale.ph", existing, "scale.py").python
    assert merged.startswith(
        '"""Docs."""\nfrom __future__ import annotations\n\nimport os\n\nimport phobos.lang as ph\n'
    )
    assert merged.index("import phobos.lang as ph") < merged.index("SCALE: ph.const")
    assert merged.index("SCALE: ph.const") < merged.index("def host")
    assert_spells_the_ph(merged)


def test_definitions_under_another_alias_are_recognised_and_replaced() -> None:
    existing = (
        "from __future__ import annotations\n\nimport phobos.lang as pl\n\n\n"
        "@pl.kernel\ndef scale(x: pl.tensor[pl.f32][N]):\n    x[0] = 1.0\n"
    )
    merged = convert_source(PH, "scale.ph", existing, "scale.py").python
    assert "@pl.kernel" not in merged
    assert "import phobos.lang as pl\n\nimport phobos.lang as ph\n" in merged
    assert_spells_the_ph(merged)


def test_definitions_in_another_order_move_together_into_the_ph_order() -> None:
    existing = convert_source(PH, "scale.ph").python
    reordered = existing.replace("SCALE: ph.const = 2.0\n", "") + "\n\nSCALE: ph.const = 2.0\n"
    merged = convert_source(PH, "scale.ph", reordered, "scale.py").python
    assert merged == existing


def test_closing_comments_are_kept_only_when_a_definition_ends_the_file() -> None:
    ph = PH + "// the end\n"
    fresh = convert_source(ph, "scale.ph")
    assert fresh.python.endswith("\n\n\n# the end\n") and not fresh.warnings
    merged = convert_source(ph, "scale.ph", HAND_WRITTEN, "scale.py")
    assert "# the end" not in merged.python
    (warning,) = merged.warnings
    assert warning.span.line == 13
    assert "host code follows the last definition" in warning.message


def test_an_existing_file_that_is_not_python_is_an_error_at_its_line() -> None:
    with pytest.raises(PhobosError) as raised:
        convert_source(PH, "scale.ph", "def broken(:\n    pass\n", "scale.py")
    assert raised.value.span.file == "scale.py"
    assert raised.value.span.line == 1
    assert "is not valid Python" in raised.value.message
