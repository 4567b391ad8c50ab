"""The race check: which block wrote, and which blocks read, each element.

Blocks of one launch run in no fixed order, so two blocks that write one element,
or one that writes an element another reads, make the result depend on timing.
For every written tensor the tracker keeps, per element, the last writing block
and up to two reading blocks (two are enough to know whether some reader other
than the current block exists), with the access site of each, as numpy arrays
updated a whole window at a time.  Accesses within one block never race.  An
atomic update would be recorded here as neither a plain read nor a plain write.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from phobos.compile.diagnostics import Note
from phobos.compile.interp.errors import race_error
from phobos.compile.interp.memory import Window
from phobos.compile.span import Span

_NONE = -1


@dataclass(frozen=True)
class Site:
    """A Load or Store in the kernel."""

    span: Span
    writes: bool


class _Accesses:
    """Per element of one tensor: the writer, two readers, and their sites."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.writer = np.full(shape, _NONE, np.int64)
        self.writer_site = np.zeros(shape, np.int32)
        self.reader = np.full(shape, _NONE, np.int64)
        self.reader_site = np.zeros(shape, np.int32)
        self.other_reader = np.full(shape, _NONE, np.int64)
        self.other_reader_site = np.zeros(shape, np.int32)


class RaceTracker:
    """Records a launch's accesses to the tensors it writes; raises ``RaceError`` on a race."""

    def __init__(self, written: dict[str, tuple[int, ...]], grid: tuple[int, int, int]) -> None:
        self._tensors = {name: _Accesses(shape) for name, shape in written.items()}
        self._grid = grid
        self._sites: list[Site] = []
        self.block = 0

    def site(self, span: Span, writes: bool) -> int:
        """Register an access site; the number names it in later calls."""
        self._sites.append(Site(span, writes))
        return len(self._sites) - 1

    def tracks(self, tensor: str) -> bool:
        return tensor in self._tensors

    def write(self, tensor: str, window: Window, valid: np.ndarray | None, site: int) -> None:
        """Block ``self.block`` writes the window's lanes where ``valid`` (None: all)."""
        acc = self._tensors[tensor]
        box, block = window.box, self.block
        mask = _mask(valid, acc.writer[box].shape)
        writer = acc.writer[box]
        self._check(
            tensor,
            window,
            mask & (writer != _NONE) & (writer != block),
            writer,
            acc.writer_site[box],
            site,
        )
        reader, other = acc.reader[box], acc.other_reader[box]
        first_clash = mask & (reader != _NONE) & (reader != block)
        self._check(tensor, window, first_clash, reader, acc.reader_site[box], site)
        other_clash = mask & (other != _NONE) & (other != block)
        self._check(tensor, window, other_clash, other, acc.other_reader_site[box], site)
        np.copyto(writer, block, where=mask)
        np.copyto(acc.writer_site[box], site, where=mask)

    def read(self, tensor: str, window: Window, valid: np.ndarray | None, site: int) -> None:
        """Block ``self.block`` reads the window's lanes where ``valid`` (None: all)."""
        acc = self._tensors[tensor]
        box, block = window.box, self.block
        mask = _mask(valid, acc.writer[box].shape)
        writer = acc.writer[box]
        self._check(
            tensor,
            window,
            mask & (writer != _NONE) & (writer != block),
            writer,
            acc.writer_site[box],
            site,
        )
        reader, other = acc.reader[box], acc.other_reader[box]
        first = mask & (reader == _NONE)
        np.copyto(reader, block, where=first)
        np.copyto(acc.reader_site[box], site, where=first)
        second = mask & (reader != block) & (other == _NONE)
        np.copyto(other, block, where=second)
        np.copyto(acc.other_reader_site[box], site, where=second)

    def _check(self, tensor, window, clash, blocks, sites, site) -> None:
        if not clash.any():
            return
        position = tuple(int(i) for i in np.argwhere(clash)[0])
        element = tuple(s + p for s, p in zip(window.box_start, position))
        this, other = self._sites[site], self._sites[int(sites[position])]
        this_block, other_block = self._coords(self.block), self._coords(int(blocks[position]))
        name = f"{tensor}[{', '.join(map(str, element))}]"
        verb = "writes" if this.writes else "reads"
        other_verb = "wrote" if other.writes else "read"
        raise race_error(
            this.span,
            f"data race on {name}: block {this_block} {verb} it, "
            f"and block {other_block} {other_verb} it",
            Note(other.span, f"block {other_block} {other_verb} {name} here"),
            help="blocks run in no fixed order; give each block elements of its own "
            "(index with ctx.block), or split the work into two launches",
        )

    def _coords(self, block: int) -> tuple[int, int, int]:
        gx, gy, _ = self._grid
        return (block % gx, block // gx % gy, block // (gx * gy))


def _mask(valid: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """The present lanes as a bool array of the box's shape (points as length-1 axes)."""
    if valid is None:
        return np.ones(shape, np.bool_)
    return valid.reshape(shape)
