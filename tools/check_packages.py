"""Install each built wheel alone into a fresh venv (pip --no-index) and smoke-test it there.

    python tools/check_packages.py DIST

DIST holds the sdists and wheels that `python -m build` made for every package.  Their
third-party dependencies are downloaded once into DIST/wheelhouse (the only step that reads an
index); then each wheel is installed with `--no-index --find-links` that folder into a venv of
its own, which proves that it needs nothing else, and its CLI or import is run there.  The wheels
are checked two at a time (each venv's pip install is mostly waiting on the disk and on pip's own
start-up), their reports printed in the wheels' order.  Run by `nox -s packages`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SAXPY_PH = """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""

SAXPY_PY = """\
from __future__ import annotations

import numpy as np

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[16, 8192])
def saxpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]


x, y = np.arange(100, dtype=np.float32), np.ones(100, dtype=np.float32)
out = np.zeros(100, dtype=np.float32)
saxpy[lambda meta: (-(-meta["N"] // meta["BLOCK"]),)](x, y, out, 2.0)
assert (out == 2 * x + y).all()
print("saxpy ran in the CPU interpreter")
"""

NO_NUMPY = "import importlib.util, sys; sys.exit(importlib.util.find_spec('numpy') is not None)"

# distribution -> (the import package, commands to run in its venv: argv lists, run from a
# folder holding saxpy.ph and saxpy_kernel.py; "python" and scripts are the venv's)
SMOKE: dict[str, tuple[str, list[list[str]]]] = {
    "phobos_compile": (
        "phobos/compile",
        [
            ["phobos-compile", "--version"],
            ["phobos-compile", "saxpy.ph", "--emit", "phobos"],
            ["python", "-m", "phobos.compile", "saxpy.ph", "--emit", "phobos"],
            ["python", "-c", NO_NUMPY],  # the front half alone needs no numpy
        ],
    ),
    "phobos_frontend": (
        "phobos/frontend",
        [
            [
                "python",
                "-c",
                "from phobos.frontend import translate_file; import sys; "
                "print(translate_file('saxpy_kernel.py').text); "
                "assert 'numpy' not in sys.modules",
            ],
            ["python", "-c", NO_NUMPY],
        ],
    ),
    "phobos_launch": (
        "phobos/launch",
        [
            ["python", "-m", "phobos.launch", "--version"],
            ["python", "-m", "phobos.launch"],
            [
                "python",
                "-c",
                "import json; from importlib import resources; json.loads(resources.files("
                "'phobos.launch').joinpath('contract.schema.json').read_text())",
            ],
        ],
    ),
    "phobos_cache": (
        "phobos/cache",
        [
            ["phobos-cache", "--version"],
            ["phobos-cache", "--root", "cache", "list"],
            ["python", "-m", "phobos.cache", "--root", "cache", "verify"],
        ],
    ),
    "phobos_autotune": (
        "phobos/autotune",
        [["python", "-c", "import phobos.autotune as t; print(t.tune.__name__)"]],
    ),
    "ph2py": (
        "ph2py",
        [
            ["ph2py", "--version"],
            ["ph2py", "--stdout", "saxpy.ph"],
            ["python", "-m", "ph2py", "--check", "saxpy.ph", "-o", "saxpy.ph.py"],
            ["python", "-c", NO_NUMPY],
        ],
    ),
    "phobos_lang": ("phobos/lang", [["python", "saxpy_kernel.py"]]),
}

# Commands whose exit status is not 0: argv -> the statuses it may have
EXIT_STATUS = {
    ("python", "-m", "ph2py", "--check", "saxpy.ph", "-o", "saxpy.ph.py"): {1},  # missing
    ("python", "-m", "phobos.launch"): {0, 1},  # 1 where no driver or GPU is usable
}


def main(dist: Path) -> int:
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    names = {w.name.split("-")[0] for w in wheels}
    if names != set(SMOKE) or {s.name.rsplit("-", 1)[0] for s in sdists} != set(SMOKE):
        sys.exit(f"check_packages: error: expected a wheel and an sdist of each of {sorted(SMOKE)}")
    for sdist in sdists:
        _check_sdist(sdist)
    for wheel in wheels:
        _check_wheel_files(wheel, SMOKE[wheel.name.split("-")[0]][0])
    house = dist / "wheelhouse"
    house.mkdir(exist_ok=True)
    started = time.monotonic()
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(house),
          "--find-links", str(dist), *map(str, wheels)])  # fmt: skip
    print(f"wheelhouse: {len(list(house.iterdir()))} wheels in {time.monotonic() - started:.0f} s")
    with ThreadPoolExecutor(SMOKE_AT_ONCE) as pool:
        reports = list(pool.map(lambda wheel: _smoke(wheel, house), wheels))
    failures = [report for ok, report in reports if not ok]
    for ok, report in reports:
        if ok:
            print(report)
    if failures:
        sys.exit("\n".join(failures))
    print(f"check_packages: {len(wheels)} wheels and {len(sdists)} sdists passed")
    return 0


def _check_sdist(sdist: Path) -> None:
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    for needed in ("LICENSE", "PKG-INFO", "pyproject.toml", "README.md"):
        if needed not in members:
            sys.exit(f"check_packages: error: {sdist.name} has no {needed}")


def _check_wheel_files(wheel: Path, package: str) -> None:
    with zipfile.ZipFile(wheel) as zf:
        files = set(zf.namelist())
    if not any(f.endswith(".dist-info/licenses/LICENSE") for f in files):
        sys.exit(f"check_packages: error: {wheel.name} has no LICENSE")
    if f"{package}/py.typed" not in files:
        sys.exit(f"check_packages: error: {wheel.name} has no {package}/py.typed")
    if "phobos/__init__.py" in files:
        sys.exit(f"check_packages: error: {wheel.name} ships phobos/__init__.py")


SMOKE_AT_ONCE = 2


def _smoke(wheel: Path, house: Path) -> tuple[bool, str]:
    """(passed, its report): the wheel alone in a fresh venv, each of its commands run there."""
    name = wheel.name.split("-")[0]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"{name}-") as tmp:
        work = Path(tmp)
        env_dir = work / "venv"
        bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
        pip = [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--no-index"]
        for argv in (
            [sys.executable, "-m", "virtualenv", "--quiet", str(env_dir)],
            [*pip, "--find-links", str(house), str(wheel)],
        ):
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode:
                return False, (
                    f"check_packages: error: {name}: {' '.join(argv)} exited {done.returncode}\n"
                    f"{textwrap.indent(done.stdout + done.stderr, '  ')}"
                )
        (work / "saxpy.ph").write_text(SAXPY_PH, encoding="utf-8")
        (work / "saxpy_kernel.py").write_text(SAXPY_PY, encoding="utf-8")
        (work / "cache").mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = str(bin_dir) + os.pathsep + env.get("PATH", "")
        env["PHOBOS_CACHE_DIR"] = str(work / "cache")
        for argv in SMOKE[name][1]:
            expected = EXIT_STATUS.get(tuple(argv), {0})
            done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
            if done.returncode not in expected or "Traceback" in done.stderr:
                return False, (
                    f"check_packages: error: {name}: {' '.join(argv)} exited {done.returncode} "
                    f"(expected {expected})\n{textwrap.indent(done.stdout + done.stderr, '  ')}"
                )
    return True, (
        f"{wheel.name}: installed alone, {len(SMOKE[name][1])} checks passed "
        f"({time.monotonic() - started:.0f} s)"
    )


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv)
    if done.returncode:
        sys.exit(f"check_packages: error: {' '.join(argv)} exited {done.returncode}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tools/check_packages.py DIST")
    sys.exit(main(Path(sys.argv[1])))
