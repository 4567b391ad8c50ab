"""Progress while tuning: a bar on a terminal (tqdm, else rich), else one summary line."""

from __future__ import annotations

import sys
from typing import Any


class Progress:
    """Counts the tuner's steps (compile, check and time each variant)."""

    def __init__(self, title: str, total: int, enabled: bool | None) -> None:
        self._quiet = enabled is False
        self._bar: Any = None
        self._rich: Any = None
        if enabled is not False and sys.stderr.isatty():
            self._open(title, total)

    def _open(self, title: str, total: int) -> None:
        try:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=title, unit="step", leave=False, file=sys.stderr)
            return
        except ImportError:
            pass
        try:
            from rich.progress import Progress as RichProgress

            self._rich = RichProgress(transient=True)
            self._rich.start()
            self._task = self._rich.add_task(title, total=total)
        except ImportError:
            pass

    def add(self, steps: int) -> None:
        """More steps than first counted (the variants that pass are timed)."""
        if self._bar is not None:
            self._bar.total += steps
            self._bar.refresh()
        elif self._rich is not None:
            self._rich.update(self._task, total=self._rich.tasks[0].total + steps)

    def step(self, what: str = "") -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(what, refresh=False)
            self._bar.update()
        elif self._rich is not None:
            self._rich.update(self._task, advance=1, description=what or None)

    def close(self, summary: str) -> None:
        """Remove the bar; without one, print the summary line on stderr."""
        if self._bar is not None:
            self._bar.close()
        elif self._rich is not None:
            self._rich.stop()
        if not self._quiet:
            print(summary, file=sys.stderr)
