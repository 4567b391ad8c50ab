"""Every tutorial runs in the CPU interpreter and spells the same program as its .ph file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from phobos.compile.pipeline import parse_file
from phobos.compile.syntax import format_module

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = {
    "01_vector_add.py": "vector_add.ph",
    "02_fused_softmax.py": "softmax.ph",
    "03_matmul.py": "matmul.ph",
    "05_layer_norm.py": "layer_norm.ph",
    "06_fused_attention.py": "attention.ph",
    "07_rms_norm.py": "rms_norm.ph",
    "08_cross_entropy.py": "cross_entropy.ph",
}


def load(script: str):
    path = ROOT / "docs" / "tutorials" / script
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script, ph", sorted(TUTORIALS.items()))
def test_python_and_ph_spell_the_same_program(script, ph):
    module = load(script)
    from phobos.frontend import translate_file

    program = translate_file(ROOT / "docs" / "tutorials" / script)
    assert program.text == format_module(parse_file(ROOT / "examples" / ph))
    assert module is not None


def test_vector_add_in_the_interpreter():
    load("01_vector_add.py").check_on_cpu(n=1000)
