"""The benchmark tables and plots of docs/benchmarks.md, both from the committed results JSON.

    python tools/bench_figures.py            # rewrite the tables in docs/benchmarks.md and the PNGs
    python tools/bench_figures.py --check    # exit 1 if a table differs from its JSON

Each figure names one run (``benchmarks/results/<run>/results.json``); its table and its plot are
made from that file alone, so they cannot disagree.  A table lies in benchmarks.md between
``<!-- table: NAME -->`` and ``<!-- end table -->``; the plots go to ``docs/img/NAME.png`` (they
need matplotlib).  The docs build draws the plots again into the site, and a test checks the
tables against the JSON.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks.md"
SYSTEMS = ("phobos", "triton", "torch")
NAMES = {"phobos": "Phobos", "triton": "Triton", "torch": "torch"}


@dataclass(frozen=True)
class Figure:
    name: str  # docs/img/NAME.png and the table's marker
    run: str
    benchmark: str
    title: str
    x: str  # the row field along the plot's x axis
    xlabel: str
    metric: str  # each system's field is f"{system}_{metric}"
    ylabel: str
    table_x: tuple  # the x values the table lists
    x_text: str  # the table's first column heading
    digits: int = 0
    where: tuple = ()  # (field, value) a row must have
    logx: bool = True
    split: str | None = None  # a field whose values the table lists too (the plot keeps `where`)

    def rows(self, split: bool = False) -> list[dict]:
        data = json.loads((ROOT / "benchmarks" / "results" / self.run / "results.json").read_text())
        rows = data["benchmarks"][self.benchmark]["rows"]
        where = [(k, v) for k, v in self.where if not (split and k == self.split)]
        return [r for r in rows if all(r.get(k) == v for k, v in where)]


FIGURES = [
    Figure(
        "01_vector_add", "2026-12-02-run34", "bench_01_vector_add", "01 vector add, fp32 (H200)",
        "n", "elements", "gbps", "GB/s", (1 << 20, 1 << 24, 1 << 27), "elements",
    ),
    Figure(
        "02_softmax", "2026-12-02-run34", "bench_02_softmax", "02 fused softmax, fp32, M=4096",
        "n", "N (columns)", "gbps", "GB/s", (1024, 3000, 4096, 8192, 12288), "N",
    ),
    Figure(
        "05_layer_norm_forward", "2026-12-02-run34", "bench_05_layer_norm",
        "05 layer norm forward, fp16, M=4096", "n", "N (columns)", "forward_gbps", "GB/s",
        (4096, 8192, 12288, 15872), "N",
    ),
    Figure(
        "05_layer_norm_backward", "2026-12-02-run34", "bench_05_layer_norm",
        "05 layer norm backward, fp16, M=4096", "n", "N (columns)", "backward_gbps", "GB/s",
        (4096, 8192, 12288, 15872), "N",
    ),
    Figure(
        "03_matmul", "2026-12-02-run34", "bench_03_matmul", "03 matmul, fp16 (M=N=K)",
        "size", "M = N = K", "tflops", "TFLOP/s", (1024, 4096, 8192), "size",
        where=(("activation", False),),
    ),
    Figure(
        "06_attention_forward", "2026-12-02-run34", "bench_06_attention",
        "06 attention forward, fp16, B=4 H=32 S=4096", "d", "head dim D (non-causal)",
        "forward_tflops", "TFLOP/s", (64, 128), "D", digits=1, where=(("causal", False),),
        logx=False, split="causal",
    ),
    Figure(
        "06_attention_backward", "2026-12-02-run34", "bench_06_attention",
        "06 attention backward, fp16, B=4 H=32 S=4096", "d", "head dim D (non-causal)",
        "backward_tflops", "TFLOP/s", (64, 128), "D", digits=1, where=(("causal", False),),
        logx=False, split="causal",
    ),
    Figure(
        "07_rms_norm_forward", "2026-12-03-run38", "bench_07_rms_norm",
        "07 RMS norm forward, bf16, M=4096", "n", "N (columns)", "forward_gbps", "GB/s",
        (256, 1024, 3000, 4096, 8192, 16384, 32768), "N", where=(("kind", "bf16"), ("m", 4096)),
    ),
    Figure(
        "07_rms_norm_backward", "2026-12-03-run38", "bench_07_rms_norm",
        "07 RMS norm backward, bf16, M=4096", "n", "N (columns)", "backward_gbps", "GB/s",
        (256, 1024, 3000, 4096, 8192, 16384, 32768), "N", where=(("kind", "bf16"), ("m", 4096)),
    ),
    Figure(
        "08_cross_entropy_forward", "2026-12-03-run38", "bench_08_cross_entropy",
        "08 cross-entropy forward, fp32, T=8192", "v", "V (vocabulary)", "forward_gbps", "GB/s",
        (32000, 50257, 65536, 131072), "V",
    ),
    Figure(
        "08_cross_entropy_backward", "2026-12-03-run38", "bench_08_cross_entropy",
        "08 cross-entropy backward, fp32, T=8192", "v", "V (vocabulary)", "backward_gbps", "GB/s",
        (32000, 50257, 65536, 131072), "V",
    ),
    Figure(
        "08_cross_entropy_fused", "2026-12-03-run38", "bench_08_cross_entropy",
        "08 cross-entropy fused, fp32, T=8192", "v", "V (vocabulary)", "fused_gbps", "GB/s",
        (32000, 50257, 65536, 131072), "V",
    ),
]  # fmt: skip


def _x_text(figure: Figure, x) -> str:
    if figure.x == "n" and figure.name == "01_vector_add":
        return f"2^{x.bit_length() - 1}"
    if figure.x == "size":
        return f"{x}³"
    return str(x)


def _number(value: float, digits: int) -> str:
    return f"{value:,.{digits}f}"


def table(figure: Figure) -> str:
    head = [figure.x_text, *([figure.split] if figure.split else []), *(NAMES[s] for s in SYSTEMS)]
    lines = [
        f"*{figure.title}, {figure.ylabel}: `benchmarks/results/{figure.run}/results.json` "
        f"(`{figure.benchmark}`), as is the plot.*",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    rows = figure.rows(split=True)
    for x in figure.table_x:
        for row in [r for r in rows if r[figure.x] == x]:
            cells = [_number(row[f"{s}_{figure.metric}"], figure.digits) for s in SYSTEMS]
            split = [("yes" if row[figure.split] else "no")] if figure.split else []
            lines.append(f"| {_x_text(figure, x)} | " + " | ".join([*split, *cells]) + " |")
    return "\n".join(lines)


def plot(figure: Figure, folder: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = sorted(figure.rows(), key=lambda r: r[figure.x])
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for system in SYSTEMS:
        xs = [r[figure.x] for r in rows]
        ax.plot(xs, [r[f"{system}_{figure.metric}"] for r in rows], marker="o", label=NAMES[system])
    if figure.logx:
        ax.set_xscale("log", base=2)
    ax.set_xticks([r[figure.x] for r in rows] if not figure.logx else ax.get_xticks())
    ax.set_title(f"{figure.title} ({figure.run[-5:]})")
    ax.set_xlabel(figure.xlabel)
    ax.set_ylabel(figure.ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = folder / f"{figure.name}.png"
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def render_page(text: str) -> str:
    for figure in FIGURES:
        pattern = re.compile(
            rf"(<!-- table: {re.escape(figure.name)} -->\n)(?:(?!<!--).)*?(<!-- end table -->)",
            re.S,
        )
        if not pattern.search(text):
            raise SystemExit(f"bench_figures: {PAGE.name} has no table marker for {figure.name}")
        text = pattern.sub(lambda m, f=figure: m.group(1) + table(f) + "\n" + m.group(2), text)
    return text


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    rendered = render_page(text)
    if "--check" in argv:
        if rendered != text:
            print(f"bench_figures: {PAGE} differs from the results JSON", file=sys.stderr)
            return 1
        return 0
    if rendered != text:
        PAGE.write_text(rendered, encoding="utf-8")
        print(f"bench_figures: wrote the tables of {PAGE.relative_to(ROOT)}")
    for figure in FIGURES:
        made = plot(figure, ROOT / "docs" / "img")
        if made is None:
            print("bench_figures: no matplotlib: plots left as they are")
            break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
