"""The specialisation record: what a compiled variant assumes about its arguments.

Generated code is specialised on facts the launcher can check cheaply on every
launch: the index width, and per tensor the alignment of its base address, the
alignment of its rows (every stride but the last axis's, in bytes) and whether its
last axis has stride 1.  Each fact buys speed (32-bit index arithmetic, 16-byte
vector accesses, no stride parameter for the last axis, TMA copies, which need
rows on 16 bytes); the launcher must refuse arguments that break them, so they go
into the contract.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TensorSpecialization:
    """``align``: bytes the base address is a multiple of; ``unit_stride``: last axis stride 1;
    ``row_align``: bytes every other axis's stride is a multiple of."""

    align: int = 1
    unit_stride: bool = False
    row_align: int = 1


UNSPECIALISED = TensorSpecialization()


@dataclass(frozen=True)
class Specialization:
    """``index_width`` (32 or 64) and the per-tensor facts, keyed by parameter name.

    A tensor missing from ``tensors`` is assumed nothing about (align 1, any stride).
    The record is hashable so it can be part of a cache key.
    """

    index_width: int = 32
    tensors: tuple[tuple[str, TensorSpecialization], ...] = ()

    def __post_init__(self) -> None:
        if self.index_width not in (32, 64):
            raise ValueError(f"index width must be 32 or 64, not {self.index_width}")
        for name, facts in self.tensors:
            for what, value in (("alignment", facts.align), ("row alignment", facts.row_align)):
                if value < 1 or value & (value - 1):
                    raise ValueError(f"{what} of {name!r} must be a power of two, not {value}")

    @classmethod
    def of(cls, index_width: int = 32, **tensors: TensorSpecialization) -> Specialization:
        """``Specialization.of(32, x=TensorSpecialization(16, True), ...)``."""
        return cls(index_width, tuple(sorted(tensors.items())))

    def tensor(self, name: str) -> TensorSpecialization:
        for known, facts in self.tensors:
            if known == name:
                return facts
        return UNSPECIALISED
