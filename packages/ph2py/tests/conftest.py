"""The .ph programs the tests convert, handed to tests as parameters and fixtures.

``exact_program`` runs a test on every ``examples/*.ph`` and every file of the
corpus in ``data/`` (each comment has an exact place in Python);
``any_program`` adds ``data/moved/`` (comments after a closing ``}``, which move).
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = sorted((REPO / "examples").glob("*.ph"))
CORPUS = sorted(DATA.glob("*.ph"))
MOVED = sorted((DATA / "moved").glob("*.ph"))


def _name(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "exact_program" in metafunc.fixturenames:
        metafunc.parametrize("exact_program", EXAMPLES + CORPUS, ids=_name)
    if "any_program" in metafunc.fixturenames:
        metafunc.parametrize("any_program", EXAMPLES + CORPUS + MOVED, ids=_name)


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def data() -> Path:
    return DATA


@pytest.fixture
def program_sets() -> dict[str, list[Path]]:
    return {"examples": EXAMPLES, "corpus": CORPUS, "moved": MOVED}
