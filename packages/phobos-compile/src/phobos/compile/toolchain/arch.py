"""Target names: ``sm_90`` is the card, ``compute_90`` the virtual architecture NVRTC targets."""

from __future__ import annotations

import re

_ARCH = re.compile(r"sm_(\d{2,3}[a-z]?)")


def virtual_arch(arch: str) -> str:
    """``sm_90`` → ``compute_90``, ``sm_90a`` → ``compute_90a``; a ValueError for anything else."""
    return "compute_" + _suffix(arch)


def real_arch(arch: str) -> str:
    """``sm_90a`` itself, checked: the card NVRTC compiles a cubin for."""
    return "sm_" + _suffix(arch)


def arch_number(arch: str) -> int:
    """``sm_90a`` → 90: the number NVRTC lists among its supported architectures."""
    return int(re.match(r"\d+", _suffix(arch)).group())


def _suffix(arch: str) -> str:
    match = _ARCH.fullmatch(arch)
    if match is None:
        raise ValueError(
            f"{arch!r} is not a GPU architecture; expected a name like sm_80 or sm_90a"
        )
    return match.group(1)
