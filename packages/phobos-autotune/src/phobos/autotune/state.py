"""The arguments' state between runs: snapshots of what variants write, restored before each.

Outputs (written, never read) are poisoned before a checked run, so an element a
run leaves unwritten still holds the poison afterwards.  Poison is a bit pattern
(``phobos.autotune.arrays.poison_patterns``), and finding unwritten elements is
exact: after a run from poison 0, the elements still holding it are *suspects*; a
run from poison 1 confirms them (an element that holds poison 1 then was never
written, since a run writes the same value whatever the poison).  The second run
happens only when a first finds suspects, so a variant that writes every element
costs one run.  An in-place argument (read and written, or written and sharing memory
with an argument that is read: ``phobos.autotune.memory``) is restored instead of
poisoned, and is checked by its values alone.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from phobos.autotune.arrays import ArrayOps, ops_for
from phobos.autotune.memory import read_through_others

Masks = dict[int, Any]  # argument position → a mask of elements (of the array's library)


class ArgumentState:
    """Snapshots of the written arguments, taken once, before any variant runs.

    ``reset`` puts every written argument back as the caller gave it and poisons
    the outputs (written, never read), so each run starts from the same state and a
    variant that skips an element leaves the poison there.
    """

    def __init__(self, args: Sequence[Any], written: Collection[int], read: Collection[int]):
        self.args = args
        self.ops: dict[int, ArrayOps] = {}
        for position in sorted(written):
            ops = ops_for(args[position])
            if ops is not None:
                self.ops[position] = ops
        read = frozenset(read) | read_through_others(args, self.ops, read)
        self.outputs = [p for p in self.ops if p not in read]
        self.in_place = [p for p in self.ops if p in read]
        self._saved = {p: ops.snapshot(args[p]) for p, ops in self.ops.items()}

    def reset(self, poison: int = 0) -> None:
        """Before a checked run: written arguments restored, outputs poisoned with pattern
        ``poison`` (0, or 1 to confirm suspects)."""
        for position in self.in_place:
            self.ops[position].restore(self.args[position], self._saved[position])
        for position in self.outputs:
            self.ops[position].poison(self.args[position], poison)

    def restore_in_place(self) -> None:
        """Before a timed run: only what the kernel reads back needs its first contents."""
        for position in self.in_place:
            self.ops[position].restore(self.args[position], self._saved[position])

    def restore_all(self) -> None:
        """After tuning: every argument as the caller gave it."""
        for position, ops in self.ops.items():
            ops.restore(self.args[position], self._saved[position])

    def copies(self, poison: int = 0) -> list[Any]:
        """The arguments in their reset state, arrays copied (what a reference function gets)."""
        self.reset(poison)
        copies = []
        for arg in self.args:
            ops = ops_for(arg)
            copies.append(arg if ops is None else ops.clone(arg))
        return copies

    def outputs_of(self, args: Sequence[Any]) -> dict[int, Any]:
        """Private copies of the written arguments of ``args``: the expected outputs."""
        return {p: ops.snapshot(args[p]) for p, ops in self.ops.items()}

    def suspects(self, args: Sequence[Any]) -> Masks:
        """After a run from poison 0: the outputs' elements that still hold it (only outputs
        with some)."""
        found: Masks = {}
        for position in self.outputs:
            ops = self.ops[position]
            mask = ops.holds_poison(args[position], 0)
            if mask is not None and ops.count(mask):
                found[position] = mask
        return found

    def unwritten(self, args: Sequence[Any], suspects: Masks) -> Masks:
        """After a run from poison 1: the suspects that hold it too, which no run wrote (only
        outputs with some)."""
        found: Masks = {}
        for position, suspect in suspects.items():
            ops = self.ops[position]
            mask = suspect & ops.holds_poison(args[position], 1)
            if ops.count(mask):
                found[position] = mask
        return found

    def beyond(self, unwritten: Masks, allowed: Masks) -> Masks:
        """The elements of ``unwritten`` not in ``allowed`` (what the reference also left)."""
        found: Masks = {}
        for position, mask in unwritten.items():
            if position in allowed:
                mask = mask & ~allowed[position]
            if self.ops[position].count(mask):
                found[position] = mask
        return found

    def describe_unwritten(self, unwritten: Masks, names: Sequence[str]) -> str:
        """``left 976 elements unwritten in out (of 128000; the first at out[0, 1024])``."""
        parts = []
        for position, mask in unwritten.items():
            ops = self.ops[position]
            shape = tuple(self.args[position].shape)
            count = ops.count(mask)
            size = 1
            for extent in shape:
                size *= extent
            name = names[position]
            where = ", ".join(map(str, ops.first_index(mask, shape)))
            elements = "element" if count == 1 else "elements"
            parts.append(
                f"left {count} {elements} unwritten in {name} (of {size}; the first at "
                f"{name}[{where}])"
            )
        return "; ".join(parts)
