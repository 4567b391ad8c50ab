"""``python -m tools.fuzz``: run N fuzz inputs and print what became of them.

    python -m tools.fuzz --inputs 100000 --jobs 8          # the release run (docs/fuzzing.md)
    python -m tools.fuzz --inputs 2000 --seed 7            # another seed
    python -m tools.fuzz --only 1234 --seed 7              # one input again: its bytes and traceback

The exit status is 1 when any input ended in an internal error.
"""

from __future__ import annotations

import os

# One BLAS thread a process: the interpreter's dots are small, and idle threads spin.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from concurrent.futures.process import BrokenProcessPool  # noqa: E402
from pathlib import Path  # noqa: E402

from tools.fuzz.harness import INTERNAL, Outcome, run_input  # noqa: E402
from tools.fuzz.mutate import make_input  # noqa: E402
from tools.fuzz.seeds import load_seeds, seeds_digest  # noqa: E402

_SEEDS = None
_WORKDIR: Path | None = None
_OPTIONS: dict = {}


def _setup(options: dict, parent: str, memory_gb: float = 0) -> None:
    """A process's state: the seeds, the options, a folder of its own for the input files.

    With ``memory_gb``, the process's address space is capped, so that an input that makes
    the compiler or the interpreter allocate without bound fails with ``MemoryError`` (an
    internal error, named) instead of waking the machine's out-of-memory killer.
    """
    global _SEEDS, _WORKDIR, _OPTIONS
    import warnings

    if memory_gb:
        import resource

        cap = int(memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    warnings.simplefilter("ignore")
    _SEEDS = load_seeds()
    _WORKDIR = Path(tempfile.mkdtemp(dir=parent))
    _OPTIONS = options


def _run_chunk(args: tuple[int, int, int]) -> list[tuple[int, str, str, Outcome]]:
    seed, start, stop = args
    options = dict(_OPTIONS)
    nvrtc_every = options.pop("nvrtc_every", 0)
    out = []
    for index in range(start, stop):
        inp = make_input(_SEEDS, seed, index)
        accepted: list = []
        outcome = run_input(inp, _WORKDIR, accepted=accepted, **options)
        if nvrtc_every and index % nvrtc_every == 0 and accepted:
            outcome = _nvrtc(accepted[0], outcome)
        out.append((index, inp.kind, "+".join(inp.mutations), outcome))
    return out


def _nvrtc(variant, outcome: Outcome) -> Outcome:
    """The outcome with the NVRTC result of one accepted variant in ``stage``."""
    from dataclasses import replace

    from tools.fuzz.nvrtc import compile_variant, known_issue

    reason = known_issue(variant.ir)
    try:
        compile_variant(variant)
        stage = "nvrtc ok" if reason is None else f"nvrtc ok, though {reason}"
        return replace(outcome, stage=stage)
    except Exception as exc:
        if reason is not None:
            return replace(outcome, stage=f"nvrtc failed: {reason}")
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return replace(outcome, stage="nvrtc failed: new", detail=f"{type(exc).__name__}: {first}")


def fuzz(
    inputs: int, seed: int = 0, jobs: int = 1, start: int = 0, **options
) -> list[tuple[int, str, str, Outcome]]:
    """Run inputs ``start .. start + inputs`` of ``seed``; every (index, kind, mutations, outcome)."""
    chunk = 200
    tasks = [(seed, i, min(i + chunk, start + inputs)) for i in range(start, start + inputs, chunk)]
    memory_gb = options.pop("memory_gb", 0)
    with tempfile.TemporaryDirectory(prefix="phobos-fuzz-") as parent:
        if jobs <= 1:
            _setup(options, parent)  # this process: no cap on its memory
            return [r for task in tasks for r in _run_chunk(task)]
        results: list = []
        strikes = dict.fromkeys(tasks, 0)
        todo = list(tasks)
        while todo:
            # A chunk unfinished when two pools broke runs alone: if its pool breaks too, it
            # is the one that kills its process (killed for memory, or crashed in native code).
            alone = [t for t in todo if strikes[t] >= 2]
            shared = [t for t in todo if strikes[t] < 2]
            for task in alone:
                done = _in_pool([task], 1, (options, parent, memory_gb))
                results += done[task] if task in done else _crashed(task)
            done = _in_pool(shared, jobs, (options, parent, memory_gb))
            for task in done:
                results += done[task]
            todo = [t for t in shared if t not in done]
            for task in todo:
                strikes[task] += 1
        return sorted(results, key=lambda r: r[0])


def _in_pool(tasks: list, jobs: int, initargs: tuple) -> dict:
    """The results of the chunks a pool of ``jobs`` processes finished before it broke, if it did."""
    done: dict = {}
    if not tasks:
        return done
    pool = ProcessPoolExecutor(jobs, initializer=_setup, initargs=initargs)
    futures = {pool.submit(_run_chunk, task): task for task in tasks}
    for future, task in futures.items():
        with contextlib.suppress(BrokenProcessPool):  # unfinished: the caller runs it again
            done[task] = future.result()
    pool.shutdown(wait=True, cancel_futures=True)
    return done


def _crashed(task: tuple[int, int, int]) -> list[tuple[int, str, str, Outcome]]:
    seed, start, stop = task
    detail = f"a worker process died running inputs {start} .. {stop - 1} of seed {seed}"
    return [
        (i, "?", "", Outcome(INTERNAL, "crash", detail, "the process died"))
        for i in range(start, stop)
    ]


def summary(results, seconds: float) -> dict:
    statuses = Counter(o.status for _, _, _, o in results)
    by_kind = Counter((k, o.status) for _, k, _, o in results)
    internal = Counter(o.signature for _, _, _, o in results if o.status == INTERNAL)
    first = {}
    for index, _, _, o in results:
        if o.status == INTERNAL and o.signature not in first:
            first[o.signature] = index
    return {
        "inputs": len(results),
        "seconds": round(seconds, 1),
        "statuses": dict(sorted(statuses.items())),
        "by_kind": {f"{k}/{s}": n for (k, s), n in sorted(by_kind.items())},
        "internal": {sig: {"count": n, "first": first[sig]} for sig, n in internal.most_common()},
        "slow_stages": dict(Counter(o.stage for _, _, _, o in results if o.status == "slow")),
        "nvrtc": dict(
            sorted(
                Counter(o.stage for _, _, _, o in results if o.stage.startswith("nvrtc")).items()
            )
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.fuzz", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--inputs", type=int, default=1000, help="how many inputs (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
    parser.add_argument("--start", type=int, default=0, help="the first input's index")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    parser.add_argument("--only", type=int, help="run one input and show it")
    parser.add_argument("--no-interpret", action="store_true", help="skip the interpreter runs")
    parser.add_argument(
        "--nvrtc-every",
        type=int,
        default=0,
        metavar="K",
        help="also compile one variant of every K-th accepted input with NVRTC (0: none)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--show", type=int, default=3, help="tracebacks to print (default 3)")
    parser.add_argument(
        "--memory-gb",
        type=float,
        default=6.0,
        help="cap each worker's address space (default 6 GiB; 0: no cap)",
    )
    args = parser.parse_args(argv)
    options = {"interpret": not args.no_interpret, "nvrtc_every": args.nvrtc_every}
    run_options = {**options, "memory_gb": args.memory_gb}
    seeds = load_seeds()
    if args.only is not None:
        inp = make_input(seeds, args.seed, args.only)
        print(f"input {inp.index} ({inp.kind}) from {inp.seed}: {', '.join(inp.mutations)}")
        sys.stdout.write(inp.data.decode("utf-8", "backslashreplace") + "\n")
        accepted: list = []
        with tempfile.TemporaryDirectory(prefix="phobos-fuzz-") as parent:
            _setup(options, parent)
            outcome = run_input(inp, _WORKDIR, interpret=options["interpret"], accepted=accepted)
            if args.nvrtc_every and accepted:
                outcome = _nvrtc(accepted[0], outcome)
        print(f"--> {outcome.status} ({outcome.stage})\n{outcome.detail}")
        return int(outcome.status == INTERNAL)
    print(f"seeds: {len(seeds)} (digest {seeds_digest(seeds)}); seed {args.seed}; ", end="")
    print(f"inputs {args.start} .. {args.start + args.inputs - 1}; {args.jobs} job(s)")
    started = time.perf_counter()
    results = fuzz(args.inputs, args.seed, args.jobs, args.start, **run_options)
    figures = summary(results, time.perf_counter() - started)
    print(json.dumps(figures, indent=2, ensure_ascii=False))
    shown = 0
    seen = set()
    for index, _, mutations, outcome in results:
        if outcome.status == INTERNAL and outcome.signature not in seen and shown < args.show:
            seen.add(outcome.signature)
            shown += 1
            print(f"\n=== input {index} ({mutations}): {outcome.signature}\n{outcome.detail}")
    for index, _, _, outcome in results:
        if outcome.stage == "nvrtc failed: new" and shown < args.show:
            shown += 1
            print(f"\n=== input {index}: NVRTC rejected an accepted variant\n{outcome.detail}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
    return int(figures["statuses"].get(INTERNAL, 0) > 0)


if __name__ == "__main__":
    sys.exit(main())
