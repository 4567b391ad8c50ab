"""The fuzzer in CI: mutated programs in both spellings end as accepted or as a located error.

A fixed budget of inputs (``BUDGET``, in ``CHUNKS`` tests that pytest-xdist spreads over
its workers) from ``tools.fuzz`` with a fixed seed: each input is read, printed and read
back, checked, lowered and run in the interpreter (tools/fuzz/harness.py), and must end
as ``accepted``, ``rejected`` (a ``PhobosError`` naming a file and a line) or an
interpreter ``timeout``; never as an internal error or a compile stage past its time.
docs/fuzzing.md has the longer run for releases.  A failure names the input; run it
again with ``python -m tools.fuzz --seed 15 --only <index>``.
"""

from __future__ import annotations

import warnings
from collections import Counter

import pytest

from tools.fuzz.harness import ACCEPTED, INTERNAL, REJECTED, SLOW, run_input
from tools.fuzz.mutate import make_input
from tools.fuzz.seeds import load_seeds

SEED = 15
BUDGET = 1600
CHUNKS = 8
PER_CHUNK = BUDGET // CHUNKS


@pytest.fixture(scope="module")
def seeds():
    return load_seeds()


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_every_input_is_accepted_or_a_located_error(chunk, seeds, tmp_path):
    outcomes = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the race check's warnings on mutated kernels
        for index in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK):
            outcomes[index] = run_input(make_input(seeds, SEED, index), tmp_path)
    bad = {i: o for i, o in outcomes.items() if o.status in (INTERNAL, SLOW)}
    report = "\n\n".join(
        f"input {i} ({o.status} at {o.stage}; python -m tools.fuzz --seed {SEED} --only {i}):\n"
        f"{o.detail}"
        for i, o in list(bad.items())[:3]
    )
    assert not bad, f"{len(bad)} of {len(outcomes)} inputs failed:\n{report}"
    counts = Counter(o.status for o in outcomes.values())
    # A fuzzer that only ever meets parse errors, or never one, tests little.
    assert counts[ACCEPTED] >= PER_CHUNK // 20, counts
    assert counts[REJECTED] >= PER_CHUNK // 2, counts
