"""Probe: how Phobos's rand, randn and randint relate to Triton's tl.rand, tl.randn, tl.randint.

Runs Triton's functions on the GPU for a few seeds and offsets and compares them with the CPU
interpreter's (``phobos.compile.interp.philox``), printing one JSON line per comparison: how
many lanes give the same bits, and the largest difference (randn).  It needs a GPU with
Triton; docs/language.md (section 5, Random numbers) states what it found.  No test depends on
it: the tests check Phobos against the algorithm's definition, never against Triton.

    PYTHONPATH=src:packages/phobos-compile/src python3 benchmarks/probe_triton_rand.py

Seen on an H200, 2026-12-02, Triton 3.6.0, torch 2.11 (the kernel below, its outputs compared
with the interpreter's on the CPU; not this file as committed, which the device machine could
not yet see): on 2^16 lanes each of i32 offsets 0 to 65535, i32 offsets of either sign and i64
offsets up to 2^62, with the seeds 0, 42, 2^33 + 5 and -3, ``tl.randint`` and ``tl.rand`` gave
Phobos's bits on every lane whose offset is not negative; a negative i32 offset differs
(Triton's counter takes 0 as its high word, Phobos the offset's sign-extended high word, 2^32 - 1),
and ``tl.randn`` differs on every lane (another Box-Muller, on the GPU's log and cos; largest
difference about 9), though it draws from the same distribution.
"""

from __future__ import annotations

import json

import numpy as np
import torch
import triton
import triton.language as tl

from phobos.compile.interp import philox


@triton.jit
def _triton_draws(offsets_ptr, bits_ptr, uniform_ptr, normal_ptr, seed, n, BLOCK: tl.constexpr):
    k = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = k < n
    offsets = tl.load(offsets_ptr + k, mask=inside)
    tl.store(bits_ptr + k, tl.randint(seed, offsets), mask=inside)
    tl.store(uniform_ptr + k, tl.rand(seed, offsets), mask=inside)
    tl.store(normal_ptr + k, tl.randn(seed, offsets), mask=inside)


def compare(seed: int, offsets: np.ndarray, what: str) -> dict:
    n = len(offsets)
    device = torch.from_numpy(offsets).cuda()
    bits = torch.zeros(n, dtype=torch.int32, device="cuda")
    uniform = torch.zeros(n, dtype=torch.float32, device="cuda")
    normal = torch.zeros(n, dtype=torch.float32, device="cuda")
    _triton_draws[(triton.cdiv(n, 1024),)](device, bits, uniform, normal, seed, n, BLOCK=1024)
    seed64 = np.asarray(seed).astype(np.int64).astype(np.uint64)
    ours_bits = philox.randint(seed64, offsets)
    ours_uniform = philox.rand(seed64, offsets)
    ours_normal = philox.randn(seed64, offsets)
    theirs_bits = bits.cpu().numpy().view(np.uint32)
    theirs_uniform = uniform.cpu().numpy()
    theirs_normal = normal.cpu().numpy()
    return {
        "offsets": what,
        "seed": seed,
        "lanes": n,
        "randint_same_bits": int((ours_bits == theirs_bits).sum()),
        "rand_same_bits": int(
            (ours_uniform.view(np.uint32) == theirs_uniform.view(np.uint32)).sum()
        ),
        "randn_same_bits": int(
            (ours_normal.view(np.uint32) == theirs_normal.view(np.uint32)).sum()
        ),
        "randn_largest_difference": float(np.abs(ours_normal - theirs_normal).max()),
    }


def main() -> None:
    print(json.dumps({"triton": triton.__version__, "torch": torch.__version__}))
    rng = np.random.default_rng(0)
    small = np.arange(100_000, dtype=np.int32)
    signed = rng.integers(-(2**31), 2**31, 100_000).astype(np.int32)
    wide = rng.integers(0, 2**62, 100_000, dtype=np.int64)
    for seed in (0, 42, 2**33 + 5):
        print(json.dumps(compare(seed, small, "i32 0 to 99999")))
        print(json.dumps(compare(seed, signed, "i32 of either sign")))
        print(json.dumps(compare(seed, wide, "i64 to 2^62")))
    print(json.dumps(compare(-3, small, "i32 0 to 99999")))


if __name__ == "__main__":
    main()
