"""The race check: which block wrote, and which blocks read, each element.

Blocks of one launch run in no fixed order, so two blocks that write one element,
or one that writes an element another reads, make the result depend on timing.
For every written tensor the tracker keeps, per element, the last block that
wrote it and the first block that read it, with the access site of each, as
numpy arrays updated a whole window at a time.  Blocks run one after another, so
when a block writes an element whose first reader is that block itself, no other
block has read it yet.  Accesses within one block never race.

Atomic updates of one element by several blocks never race with each other, but
an atomic update races with another block's plain read or write of the element
(what that block sees or leaves depends on timing), so the first block that
updated each element atomically is recorded too.  The check knows nothing of
locks: plain accesses that a lock built from atomics keeps apart are reported.
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
    atomic: bool = False

    def does(self, what: str, past: bool) -> str:
        """What the site does to ``what``: "writes x[3]", "updated x[3] atomically"."""
        if self.atomic:
            return f"{'updated' if past else 'updates'} {what} atomically"
        if self.writes:
            return f"{'wrote' if past else 'writes'} {what}"
        return f"{'read' if past else 'reads'} {what}"


class _Accesses:
    """Per element of one tensor: the last writer, the first reader, and their sites."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.writer = np.full(shape, _NONE, np.int64)
        self.writer_site = np.zeros(shape, np.int32)
        self.reader = np.full(shape, _NONE, np.int64)
        self.reader_site = np.zeros(shape, np.int32)
        self.updater = np.full(shape, _NONE, np.int64)
        self.updater_site = np.zeros(shape, np.int32)


class RaceTracker:
    """Records a launch's accesses to the tensors it writes; raises ``RaceError`` on a race."""

    def __init__(self, written: dict[str, tuple[int, ...]], grid: tuple[int, int, int]) -> None:
        self._tensors = {name: _Accesses(shape) for name, shape in written.items()}
        self._grid = grid
        self._sites: list[Site] = []
        self.block = 0

    def site(self, span: Span, writes: bool, atomic: bool = False) -> int:
        """Register an access site; the number names it in later calls."""
        self._sites.append(Site(span, writes, atomic))
        return len(self._sites) - 1

    def tracks(self, tensor: str) -> bool:
        return tensor in self._tensors

    def write(self, tensor: str, window: Window, valid: np.ndarray | None, site: int) -> None:
        """Block ``self.block`` writes the window's lanes where ``valid`` (None: all)."""
        acc, box = self._tensors[tensor], window.box
        writer = acc.writer[box]
        mask = None if valid is None else valid.reshape(writer.shape)
        self._check(tensor, window, mask, writer, acc.writer_site[box], site)
        self._check(tensor, window, mask, acc.reader[box], acc.reader_site[box], site)
        self._check(tensor, window, mask, acc.updater[box], acc.updater_site[box], site)
        everywhere = True if mask is None else mask
        np.copyto(writer, self.block, where=everywhere)
        np.copyto(acc.writer_site[box], site, where=everywhere)

    def update(self, tensor: str, window: Window, valid: np.ndarray | None, site: int) -> None:
        """Block ``self.block`` updates the window's lanes atomically where ``valid`` (None: all)."""
        acc, box = self._tensors[tensor], window.box
        updater = acc.updater[box]
        mask = None if valid is None else valid.reshape(updater.shape)
        self._check(tensor, window, mask, acc.writer[box], acc.writer_site[box], site)
        self._check(tensor, window, mask, acc.reader[box], acc.reader_site[box], site)
        first = updater == _NONE
        if mask is not None:
            first &= mask
        np.copyto(updater, self.block, where=first)
        np.copyto(acc.updater_site[box], site, where=first)

    def read(self, tensor: str, window: Window, site: int) -> None:
        """Block ``self.block`` reads every lane of the window inside the tensor."""
        acc, box = self._tensors[tensor], window.box
        writer, reader = acc.writer[box], acc.reader[box]
        self._check(tensor, window, None, writer, acc.writer_site[box], site)
        self._check(tensor, window, None, acc.updater[box], acc.updater_site[box], site)
        first = reader == _NONE
        np.copyto(reader, self.block, where=first)
        np.copyto(acc.reader_site[box], site, where=first)

    def _check(
        self,
        tensor: str,
        window: Window,
        mask: np.ndarray | None,
        blocks: np.ndarray,
        sites: np.ndarray,
        site: int,
    ) -> None:
        """Raise if another block is recorded in ``blocks`` where ``mask`` (None: anywhere)."""
        clash = (blocks != _NONE) & (blocks != self.block)
        if mask is not None:
            clash &= mask
        if not clash.any():
            return
        position = tuple(int(i) for i in np.argwhere(clash)[0])
        element = tuple(s + p for s, p in zip(window.box_start, position))
        this, other = self._sites[site], self._sites[int(sites[position])]
        this_block, other_block = self._coords(self.block), self._coords(int(blocks[position]))
        name = f"{tensor}[{', '.join(map(str, element))}]"
        raise race_error(
            this.span,
            f"data race on {name}: block {this_block} {this.does('it', past=False)}, "
            f"and block {other_block} {other.does('it', past=True)}",
            Note(other.span, f"block {other_block} {other.does(name, past=True)} here"),
            help="blocks run in no fixed order; give each block elements of its own "
            "(index with ctx.block), or split the work into two launches",
        )

    def _coords(self, block: int) -> tuple[int, int, int]:
        gx, gy, _ = self._grid
        return (block % gx, block // gx % gy, block // (gx * gy))
