"""Would running ruff's formatter do ph2py's line breaking?  A measurement (docs/ph2py.md).

    python tools/measure_ph2py_ruff.py

For every example and every corpus program, at 88 and 100 columns: ph2py's own output (A), and
ph2py's output without wrapping (line length 10**6) put through `ruff format` at the same line
length (B).  It reports whether B equals A and whether B still spells the same Phobos program
(comments included) -- the round trip ph2py promises.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ph2py import convert_source
from phobos.compile.syntax import format_module, parse
from phobos.frontend import translate_source

ROOT = Path(__file__).resolve().parents[1]

# The case docs/ph2py.md names: a value too long only because of its end comment.
END_COMMENT = """\
kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let a_rather_long_name_for_the_value = N  // and a comment long enough to push the line past its length
    out[0 :+ 16] = x[0 :+ 16]
}
"""


def ruff_format(text: str, line_length: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.py"
        path.write_text(text, encoding="utf-8")
        ruff = shutil.which("ruff") or "ruff"
        subprocess.run(
            [ruff, "format", "--isolated", f"--line-length={line_length}", str(path)],
            check=True,
            capture_output=True,
        )
        return path.read_text(encoding="utf-8")


def main() -> int:
    programs = sorted(ROOT.glob("examples/*.ph")) + sorted(
        (ROOT / "packages/ph2py/tests/data").rglob("*.ph")
    )
    same = exact = total = 0
    end_comment = Path(tempfile.mkdtemp()) / "end_comment.ph"
    end_comment.write_text(END_COMMENT, encoding="utf-8")
    for program in [*programs, end_comment]:
        text = program.read_text(encoding="utf-8")
        expected = parse(text, str(program))
        for length in (88, 100):
            total += 1
            ours = convert_source(text, str(program), line_length=length).python
            flat = convert_source(text, str(program), line_length=10**6).python
            theirs = ruff_format(flat, length)
            try:
                back = translate_source(theirs, str(program.with_suffix(".py")))
                kept = back.module == expected and back.text == format_module(expected)
            except Exception as exc:  # the formatter made something the front end refuses
                kept = False
                print(f"{program.name} @{length}: {type(exc).__name__}: {exc}".splitlines()[0])
            same += theirs == ours
            exact += kept
            print(
                f"{program.name:24} @{length}: same as ph2py: {theirs == ours}, round trip: {kept}"
            )
    print(f"{total} conversions: ruff's equals ph2py's in {same}, keeps the round trip in {exact}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
