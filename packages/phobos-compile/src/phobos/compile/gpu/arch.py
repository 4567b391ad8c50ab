"""What a target architecture offers that the passes plan with: shared memory, by SM and by CTA.

An SM's shared memory (KiB) by compute capability; a CTA may take all of it but the 1 KiB
the system keeps.  An unknown card gets the smallest.
"""

from __future__ import annotations

_SHARED_KIB = {80: 164, 86: 100, 87: 164, 89: 100, 90: 228, 100: 228, 103: 228, 120: 100}
_SHARED_KIB_UNKNOWN = 100
_SYSTEM_BYTES = 1024


def capability(arch: str) -> int:
    """``sm_90a`` → 90 (0 for a name without digits)."""
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return int(digits) if digits else 0


def shared_bytes_per_sm(arch: str) -> int:
    return _SHARED_KIB.get(capability(arch), _SHARED_KIB_UNKNOWN) * 1024


def shared_bytes_per_cta(arch: str) -> int:
    """The most shared memory one CTA may have (the opt-in limit)."""
    return shared_bytes_per_sm(arch) - _SYSTEM_BYTES
