"""``tune``: a key's result from the cache, else a search whose result goes into the cache.

Results are stored as ``phobos.cache`` records in the namespace ``autotune``, under
the problem's key: the choice and the whole report.  Another process with the same
key reads the choice and runs no variant.  A result whose variants disagreed (no
reference function, several groups) and that ``Options(on_disagreement="default")``
decided serves only searches that ask for the same; any other searches again (and
raises ``VariantsDisagree``).
"""

from __future__ import annotations

from typing import Any

from phobos.autotune.problem import Options, Problem
from phobos.autotune.report import Report
from phobos.autotune.search import search

NAMESPACE = "autotune"


def cached_report(key: str, cache: Any = None) -> Report | None:
    """The stored report for ``key``, or None (also when the record cannot be read: one that
    is not JSON, or not a report, written by another version or a damaged writer; the cache
    removes an unreadable record and ``tune`` stores a new one)."""
    store = _cache(cache)
    record = store.get_record(NAMESPACE, key)
    if record is None:
        return None
    try:
        return Report.from_json(record["report"])
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        _forget(store, key)  # so that the next result can take its place
        return None


def usable(report: Report, options: Options) -> bool:
    """Whether a stored report may answer a search with ``options``: one decided by
    ``on_disagreement="default"`` over disagreeing variants only if it asks for the same."""
    return report.groups <= 1 or options.on_disagreement == "default"


def tune(problem: Problem, options: Options | None = None, cache: Any = None) -> Report:
    """The report for ``problem.key``: from the cache unless ``options.retune``, else searched
    now and stored.  ``cache`` is a ``phobos.cache.Cache`` (default: the user's cache)."""
    options = options or Options()
    store = _cache(cache)
    if not options.retune:
        found = cached_report(problem.key, store)
        if found is not None and usable(found, options):
            problem.timer.close()
            return found
    report = search(problem, options)
    if options.retune:
        _forget(store, problem.key)  # a put keeps an entry that is there: replace it
    store.put_record(NAMESPACE, problem.key, {"choice": report.choice, "report": report.to_json()})
    return report


def _forget(store: Any, key: str) -> None:
    from phobos.cache import record_key

    store.remove(record_key(NAMESPACE, key))


def _cache(cache: Any) -> Any:
    if cache is not None:
        return cache
    from phobos.cache import Cache

    return Cache()
