"""The arguments' state between runs: snapshots of what variants write, restored before each."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from phobos.autotune.arrays import ArrayOps, ops_for


class ArgumentState:
    """Snapshots of the written arguments, taken once, before any variant runs.

    ``reset`` puts every written argument back as the caller gave it and poisons
    the outputs (written, never read), so each run starts from the same state and a
    variant that skips an element leaves NaN (or a byte pattern) there.
    """

    def __init__(self, args: Sequence[Any], written: Collection[int], read: Collection[int]):
        self.args = args
        self.ops: dict[int, ArrayOps] = {}
        for position in sorted(written):
            ops = ops_for(args[position])
            if ops is not None:
                self.ops[position] = ops
        self.outputs = [p for p in self.ops if p not in read]
        self.in_place = [p for p in self.ops if p in read]
        self._saved = {p: ops.snapshot(args[p]) for p, ops in self.ops.items()}

    def reset(self) -> None:
        """Before a checked run: written arguments restored, outputs poisoned."""
        for position in self.in_place:
            self.ops[position].restore(self.args[position], self._saved[position])
        for position in self.outputs:
            self.ops[position].poison(self.args[position])

    def restore_in_place(self) -> None:
        """Before a timed run: only what the kernel reads back needs its first contents."""
        for position in self.in_place:
            self.ops[position].restore(self.args[position], self._saved[position])

    def restore_all(self) -> None:
        """After tuning: every argument as the caller gave it."""
        for position, ops in self.ops.items():
            ops.restore(self.args[position], self._saved[position])

    def copies(self) -> list[Any]:
        """The arguments in their reset state, arrays copied (what a reference function gets)."""
        self.reset()
        copies = []
        for arg in self.args:
            ops = ops_for(arg)
            copies.append(arg if ops is None else ops.clone(arg))
        return copies

    def outputs_of(self, args: Sequence[Any]) -> dict[int, Any]:
        """Private copies of the written arguments of ``args``: the expected outputs."""
        return {p: ops.snapshot(args[p]) for p, ops in self.ops.items()}
