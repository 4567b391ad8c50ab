"""Running one fuzz input through every stage, and what became of it.

A ``.ph`` input is written to a file and read with ``pipeline.parse_file``; a
Python input is written to a ``.py`` file and read with the front end's
``translate_file`` (the module is never imported).  Then: the canonical text
(``kernel.source``) must parse again to the same tree; every kernel is checked;
a few variants of each are lowered, printed as IR, race-checked, and run in the
CPU interpreter on small random arrays.

Each input ends as one ``Outcome``:

* ``accepted``: every stage succeeded;
* ``rejected``: a ``PhobosError`` whose diagnostics name a file and a line (the
  only way a program may be refused);
* ``timeout``: the interpreter ran past its time limit (a ``while`` that never
  ends is a valid program), or a compile stage did (a finding: reported apart);
* ``internal``: anything else — another exception, a ``PhobosError`` without a
  location, or ``kernel.source`` that does not parse back to the same program.
"""

from __future__ import annotations

import io
import linecache
import math
import random
import signal
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tools.fuzz.mutate import FuzzInput

ACCEPTED, REJECTED, TIMEOUT, SLOW, INTERNAL = (
    "accepted",
    "rejected",
    "timeout",
    "slow",
    "internal",
)
MAX_VARIANTS = 3  # the default variant and up to two others, per kernel
MAX_ARRAY_ELEMENTS = 1 << 16
MAX_EXTENT = 40


@dataclass(frozen=True)
class Outcome:
    status: str
    stage: str = ""
    detail: str = ""  # the error's first line, or the traceback for an internal error
    signature: str = ""  # internal: the exception type and the innermost Phobos frame


class _TimeUp(BaseException):
    """Raised by the alarm; a BaseException so that no ``except Exception`` swallows it."""


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def ring(signum, frame):
        raise _TimeUp

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def walk_ir(body):
    """Every node of a kernel body with its nesting level (``phobos.compile.ir.nesting.walk``)."""
    from phobos.compile.ir.nesting import walk

    return walk(body)


def run_input(
    inp: FuzzInput,
    workdir: Path,
    *,
    interpret: bool = True,
    compile_limit: float = 20.0,
    run_limit: float = 2.0,
    accepted: list | None = None,
) -> Outcome:
    """Every stage for one input; never raises (but for KeyboardInterrupt).

    With ``accepted``, the variants of an accepted input are appended to it
    (``tools.fuzz.nvrtc.Variant``), for the NVRTC stage.
    """
    path = workdir / f"fuzz_{inp.index}.{inp.kind}"
    path.write_bytes(inp.data)
    stage = ["read"]
    try:
        with _time_limit(compile_limit):
            modules = _read(inp, path, stage)
            runs = [r for module in modules for r in _check(module, stage)]
        if interpret:
            rng = random.Random(inp.index)
            for _, _, _, ir_kernel in runs:
                stage[0] = "interpret"
                try:
                    with _time_limit(run_limit), redirect_stdout(io.StringIO()):
                        _interpret(ir_kernel, rng)  # traces print: not to the run's output
                except _TimeUp:
                    return Outcome(TIMEOUT, "interpret")
        if accepted is not None:
            from tools.fuzz.nvrtc import Variant

            accepted += [Variant(*run) for run in runs]
        return Outcome(ACCEPTED)
    except _TimeUp:
        return Outcome(SLOW, stage[0])
    except Exception as exc:
        return _classify(exc, stage[0], path)
    finally:
        _forget(path)


def _read(inp: FuzzInput, path: Path, stage: list[str]) -> list:
    """The module(s) to check: the program, and its canonical text parsed again."""
    from phobos.compile.syntax import format_module, parse

    if inp.kind == "ph":
        from phobos.compile import pipeline

        module = pipeline.parse_file(path)
        stage[0] = "print"
        text = format_module(module)
        again = parse(text, str(path) + ".canonical")
        if again != module:
            raise _RoundTrip("the canonical text of a .ph program parses to another tree")
        return [module]
    from phobos.frontend import translate_file

    program = translate_file(path)
    stage[0] = "print"
    text = program.text
    again = parse(text, str(path) + ".source")
    if again != program.module:
        raise _RoundTrip("kernel.source parses to another tree than the front end's")
    return [program.module]


class _RoundTrip(Exception):
    """The printed program is not the program (an internal error)."""


def _check(module, stage: list[str]) -> list:
    """Check the module, then lower a few variants of each kernel: (module, kernel, values, IR)."""
    from phobos.compile.check import check_module, lower, tune_space
    from phobos.compile.ir import format_kernel
    from phobos.compile.races import check_races

    stage[0] = "check"
    check_module(module)
    lowered = []
    for kernel in module.kernels:
        space = tune_space(module, kernel.name)
        for values in _some_variants(space, kernel.name):
            stage[0] = "lower"
            ir_kernel = lower(module, kernel.name, values)
            stage[0] = "ir-print"
            format_kernel(ir_kernel)
            stage[0] = "races"
            for warning in check_races(ir_kernel):
                warning.render()
            lowered.append((module, kernel.name, values, ir_kernel))
    return lowered


def _some_variants(space, name: str) -> list[dict[str, int]]:
    """The default variant and up to two others, picked without listing the whole space."""
    rng = random.Random(name)
    out = [space.default()]
    for _ in range(MAX_VARIANTS - 1):
        pick = {n: rng.choice(space.choices[n]) for n in space.names}
        if pick not in out:
            out.append(pick)
    return out


def _interpret(ir_kernel, rng: random.Random) -> None:
    from phobos.compile.interp import run
    from phobos.compile.interp.dtypes import array_dtype

    extents = {name: rng.randrange(MAX_EXTENT + 1) for name in ir_kernel.extents}
    args: list[object] = []
    for param in ir_kernel.params:
        if hasattr(param, "dims"):
            shape = tuple(extents[d] if isinstance(d, str) else d for d in param.dims)
            if math.prod(shape) > MAX_ARRAY_ELEMENTS:
                return  # a fixed extent too large to allocate here: not run
            args.append(_array(array_dtype(param.dtype), shape, rng))
        else:
            args.append(_scalar(param.dtype, rng))
    grid = tuple(rng.randrange(1, 4) for _ in range(rng.randrange(1, 4)))
    run(ir_kernel, grid, args, race_check=rng.random() < 0.2)


def _array(dtype: np.dtype, shape: tuple[int, ...], rng: random.Random) -> np.ndarray:
    gen = np.random.default_rng(rng.randrange(1 << 30))
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return (gen.standard_normal(shape) * 4).astype(dtype)
    if dtype.kind == "b":
        return gen.random(shape) < 0.5
    return gen.integers(0, 8, shape).astype(dtype)


def _scalar(dtype: str, rng: random.Random) -> object:
    if dtype == "bool":
        return rng.random() < 0.5
    if dtype.startswith(("f", "bf")):
        return rng.choice((0.0, 1.5, -2.0, 1e30, float("nan"), float("inf")))
    return rng.choice((0, 1, 3, 7))


def _classify(exc: Exception, stage: str, path: Path) -> Outcome:
    from phobos.compile.diagnostics import PhobosError

    if isinstance(exc, PhobosError):
        problem = _unlocated(exc)
        try:
            text = exc.render()
        except Exception as render_failure:
            problem = f"rendering the error failed: {render_failure!r}"
            text = ""
        if problem is None:
            return Outcome(REJECTED, stage, text.splitlines()[0] if text else "")
        return Outcome(INTERNAL, stage, f"{problem}\n{text}", f"PhobosError: {problem[:60]}")
    detail = "".join(traceback.format_exception(exc))
    return Outcome(INTERNAL, stage, detail, _signature(exc))


def _unlocated(exc) -> str | None:
    """Why ``exc`` does not name a place in a file, or None when it does."""
    for diagnostic in exc.diagnostics:
        span = diagnostic.span
        if not span.file or span.file.startswith("<") or span.line < 1 or span.col < 1:
            return f"an error without a file and line ({span}): {diagnostic.message}"
    return None


def _signature(exc: BaseException) -> str:
    """The exception's type and the innermost frame in Phobos's code (groups the findings)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/phobos/" in f.filename and "/tools/fuzz/" not in f.filename]
    where = ours[-1] if ours else (frames[-1] if frames else None)
    place = f"{Path(where.filename).name}:{where.lineno}" if where else "?"
    return f"{type(exc).__name__} at {place}"


def _forget(path: Path) -> None:
    """Drop what the compiler remembers of the file (so a long run does not grow)."""
    from phobos.compile import diagnostics

    for name in (str(path), str(path) + ".canonical", str(path) + ".source", str(path.resolve())):
        diagnostics._SOURCES.pop(name, None)
        linecache.cache.pop(name, None)
    try:
        from phobos.frontend import translate

        translate._FILE_CACHE.pop(str(path.resolve()), None)
    except ImportError:
        pass
    path.unlink(missing_ok=True)
