"""The Errors and debugging page's static race check, trace and assert sections show real output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "errors.md").read_text()


def run(*command: str, status: int = 0) -> tuple[str, str]:
    """stdout and stderr of ``command`` run from the repository root, paths made relative."""
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == status, proc.stderr
    prefix = f"{ROOT}/"
    return proc.stdout.replace(prefix, ""), proc.stderr.replace(prefix, "")


def shown_on_the_page(text: str) -> None:
    for line in text.splitlines():
        assert line in PAGE, f"the page does not show: {line}"


def python(example: str, status: int = 0) -> tuple[str, str]:
    return run(sys.executable, f"docs/examples/{example}", status=status)


def test_the_static_warning_of_the_race_example():
    _, err = python("race.py", status=1)
    warning = err[: err.index("  out[base:+8]")]
    assert warning.startswith(
        "docs/examples/race.py:11: PhobosWarning: docs/examples/race.py:11:5:"
    )
    shown_on_the_page(warning)


def test_phobos_compile_prints_the_warning_and_succeeds():
    out, err = run(
        sys.executable, "-m", "phobos.compile.cli", "docs/examples/smear.ph", "--emit", "ir"
    )
    assert err.startswith("docs/examples/smear.ph:3:5: warning: blocks next to each other")
    assert "store out[" in out
    shown_on_the_page(err)


def test_a_silenced_kernel_still_passes_the_dynamic_check():
    out, err = python("quiet_race.py")
    assert out == "[7. 6. 5. 4. 3. 2. 1. 0.]\n"
    assert err == ""
    assert 'warnings.filterwarnings("ignore", category=PhobosWarning)' in PAGE


def test_the_trace_example_prints_what_the_page_shows():
    out, _ = python("trace.py")
    assert out.splitlines()[0] == "docs/examples/trace.py:14: block (1, 0, 0): base = 4"
    assert len(out.splitlines()) == 4
    shown_on_the_page(out)


def test_the_assert_example_fails_as_the_page_shows():
    _, err = python("device_assert.py", status=1)
    error = err[err.index("phobos.compile.interp.debugging.DeviceAssertError") :]
    assert (
        "docs/examples/device_assert.py:14:5: error: assertion failed in block (1, 0, 0)" in error
    )
    assert err.count('  File "') == 1, "only the user's own frame is shown"
    shown_on_the_page(error)
