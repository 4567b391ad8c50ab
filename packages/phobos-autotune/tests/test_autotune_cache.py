"""Results persist in the kernel cache: a second tune of the same key runs no variant."""

from __future__ import annotations

import io
import sys

import pytest

from phobos.autotune import NAMESPACE, Options, VariantsDisagree, cached_report, tune
from phobos.cache import Cache


def twice(x, out):
    out[:] = 2 * x


def test_a_tuned_key_is_read_back_without_running_a_variant(fake, tmp_path):
    cache = Cache(tmp_path / "c")
    ran: list[int] = []
    first = tune(fake.scale_problem({16: twice, 32: fake.slow}, ran=ran), fake.FAST, cache)
    assert ran and not first.from_cache
    ran.clear()
    again = tune(fake.scale_problem({16: twice, 32: fake.slow}, ran=ran), fake.FAST, cache)
    assert ran == [] and again.from_cache and again.ran == 0
    assert again.choice == first.choice == {"B": 16}
    assert str(again).splitlines()[3:] == str(first).splitlines()[3:]
    record = cache.get_record(NAMESPACE, first.key)
    assert record["choice"] == {"B": 16}
    assert cached_report(first.key, cache).variants[1].status == "passed"


def test_retune_searches_again(fake, tmp_path):
    cache = Cache(tmp_path / "c")
    ran: list[int] = []
    tune(fake.scale_problem({16: twice}, ran=ran), fake.FAST, cache)
    ran.clear()
    options = Options(**{**fake.FAST.__dict__, "retune": True})
    assert not tune(fake.scale_problem({16: twice}, ran=ran), options, cache).from_cache
    assert ran


def test_a_choice_over_disagreeing_variants_serves_only_on_disagreement_default(fake, tmp_path):
    cache = Cache(tmp_path / "c")

    def off_by_one(x, out):
        out[:] = 2 * x + 1

    def problem():
        return fake.scale_problem({16: twice, 32: off_by_one})

    trusting = Options(**{**fake.FAST.__dict__, "on_disagreement": "default"})
    first = tune(problem(), trusting, cache)
    assert first.choice == {"B": 16} and first.groups == 2
    assert tune(problem(), trusting, cache).from_cache
    with pytest.raises(VariantsDisagree):
        tune(problem(), fake.FAST, cache)  # searches again rather than read it silently


def test_retune_replaces_the_stored_result(fake, tmp_path):
    cache = Cache(tmp_path / "c")
    first = tune(fake.scale_problem({16: twice, 32: fake.slow}), fake.FAST, cache)
    assert first.choice == {"B": 16}
    options = Options(**{**fake.FAST.__dict__, "retune": True})
    second = tune(fake.scale_problem({16: fake.slow, 32: twice}), options, cache)
    assert second.choice == {"B": 32}
    assert cached_report(first.key, cache).choice == {"B": 32}


def test_one_summary_line_when_stderr_is_not_a_terminal(fake, capsys):
    options = Options(**{**fake.FAST.__dict__, "progress": None})
    tune(fake.scale_problem({16: twice, 32: twice}), options)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("phobos autotune scale [") and "2 passed; chose B=" in err[0]


def test_a_progress_bar_on_a_terminal(fake, monkeypatch):
    pytest.importorskip("tqdm")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    options = Options(**{**fake.FAST.__dict__, "progress": None})
    tune(fake.scale_problem({16: twice, 32: twice}), options)
    shown = terminal.getvalue()
    assert "tuning scale" in shown and "\r" in shown
    assert shown.rstrip().splitlines()[-1].startswith("phobos autotune scale [")


def _rewrite_record(cache, key: str, data: bytes) -> None:
    """What a foreign or damaged writer leaves: new bytes, and a manifest that agrees."""
    import hashlib
    import json

    from phobos.cache import record_key

    folder = cache.info(record_key(NAMESPACE, key)).path
    (folder / "record.json").write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"] = [
        {"name": "record.json", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    ]
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "data",
    [b"not json", b"[" * 100_000 + b"]" * 100_000, b'{"report": [1]}', b'{"report": {"x": 1}}'],
    ids=["not JSON", "too deep", "report not an object", "not a report"],
)
def test_an_unreadable_record_is_tuned_again(fake, tmp_path, data):
    import warnings

    cache = Cache(tmp_path / "c")
    first = tune(fake.scale_problem({16: twice}), fake.FAST, cache)
    _rewrite_record(cache, first.key, data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cache says it removed a corrupt entry
        assert cached_report(first.key, cache) is None
        ran: list[int] = []
        again = tune(fake.scale_problem({16: twice}, ran=ran), fake.FAST, cache)
    assert ran and not again.from_cache
    assert cached_report(first.key, cache).choice == {"B": 16}
