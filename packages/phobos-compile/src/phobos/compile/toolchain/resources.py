"""What ptxas says a kernel uses: registers, spills, stack and shared memory.

ptxas prints this when asked (``--ptxas-options=-v`` through NVRTC), per function::

    ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
    ptxas info    : Function properties for saxpy
    ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]

Spills are the figure that matters most for speed; registers bound occupancy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Resources:
    """Per-thread registers and local memory, and the kernel's static shared memory."""

    registers: int
    spill_stores: int  # bytes per thread
    spill_loads: int  # bytes per thread
    stack_bytes: int  # the stack frame, bytes per thread
    shared_bytes: int  # static shared memory, bytes per block
    # Why ptxas made every wgmma wait for the one before (its C751x reason), or None.
    wgmma_serialized: str | None = None
    # Waits ptxas added where it could not prove an accumulator complete (C7517): each
    # one stops the products in flight there, silently.
    wgmma_waits_injected: int = 0
    # ptxas dropped the kernel's setmaxnreg (C7508): its warpgroups keep the launch's share.
    registers_not_rebalanced: bool = False

    def summary(self) -> str:
        text = (
            f"{self.registers} registers, {self.spill_stores} bytes spill stores, "
            f"{self.spill_loads} bytes spill loads, {self.stack_bytes} bytes stack, "
            f"{self.shared_bytes} bytes shared"
        )
        if self.wgmma_serialized:
            text += f"; wgmma serialized by ptxas: {self.wgmma_serialized}"
        if self.wgmma_waits_injected:
            text += f"; {self.wgmma_waits_injected} wgmma waits injected by ptxas"
        if self.registers_not_rebalanced:
            text += "; setmaxnreg ignored by ptxas"
        return text


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGISTERS = re.compile(r"Used (\d+) registers")
_SHARED = re.compile(r"(\d+) bytes smem")
_SERIALIZED = re.compile(
    r"wgmma\.mma_async instructions are serialized (due to .*?) in the function '([^']+)'"
)
_INJECTED = re.compile(r"\(C7517\) .* is injected .* in function '([^']+)'")
# Printed before the entry it concerns, without its name.
_SETMAXNREG_IGNORED = re.compile(r"\(C7508\) .*'setmaxnreg' ignored")


def parse_ptxas_info(log: str) -> dict[str, Resources]:
    """The resources of every entry function in a ptxas info log, by symbol name."""
    frames: dict[str, tuple[int, int, int]] = {}
    usage: dict[str, tuple[int, int]] = {}
    entry: str | None = None
    described: str | None = None
    serialized: dict[str, str] = {}
    injected: dict[str, int] = {}
    not_rebalanced: set[str] = set()
    pending_ignored = False
    for line in log.splitlines():
        if _SETMAXNREG_IGNORED.search(line):
            pending_ignored = True
        elif match := _SERIALIZED.search(line):
            serialized[match.group(2)] = " ".join(match.group(1).split())
        elif match := _INJECTED.search(line):
            injected[match.group(1)] = injected.get(match.group(1), 0) + 1
        elif match := _ENTRY.search(line):
            entry = match.group(1)
            if pending_ignored:
                not_rebalanced.add(entry)
                pending_ignored = False
        elif match := _PROPERTIES.search(line):
            described = match.group(1)
        elif (match := _FRAME.search(line)) and described is not None:
            stack, stores, loads = (int(g) for g in match.groups())
            frames[described] = (stack, stores, loads)
        elif (match := _REGISTERS.search(line)) and entry is not None:
            shared = _SHARED.search(line)
            usage[entry] = (int(match.group(1)), int(shared.group(1)) if shared else 0)
    found = {}
    for name, (registers, shared) in usage.items():
        stack, stores, loads = frames.get(name, (0, 0, 0))
        found[name] = Resources(
            registers,
            stores,
            loads,
            stack,
            shared,
            serialized.get(name),
            injected.get(name, 0),
            name in not_rebalanced,
        )
    return found
