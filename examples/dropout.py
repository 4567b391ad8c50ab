"""Dropout, the Python spelling of examples/dropout.ph (``ph2py`` writes this kernel from it).

On a machine with an NVIDIA GPU and torch it runs on the GPU; otherwise the same launch runs
in the CPU interpreter on numpy arrays.  Either way the mask is the one numpy computes from
the definition of ``ph.rand`` (docs/language.md, section 5): the draws do not depend on where
they are made.
"""

from __future__ import annotations

import numpy as np

import phobos.lang as ph


# Dropout: each element of x is kept with probability 1 - p, scaled by 1 / (1 - p), or
# dropped (0). rand(seed, offsets) is counter-based: element k's draw is a function of the
# seed and k alone, so every launch with this seed drops the same elements, in the
# interpreter and on the GPU alike, whatever BLOCK is; the backward pass draws the same mask
# again instead of storing it. The last window's absent lanes are neither read nor written.
@ph.kernel
@ph.autotune(BLOCK=[256, 4096])
def dropout(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], p: ph.f32, seed: ph.i64):
    base: ph.let = ph.ctx.block.x * BLOCK
    keep: ph.let = ph.rand(seed, base + ph.arange(BLOCK)) > p
    out[base:+BLOCK] = ph.where(keep, x[base:+BLOCK] / (1.0 - p), 0.0)


def on_device(host: np.ndarray):
    """The array on the GPU (torch) if one is there, else itself."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch.from_numpy(host).cuda()
    except ImportError:
        pass
    return host


def main() -> None:
    from phobos.compile.interp.philox import rand

    n, p, seed = 10_000, 0.25, 1234
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    out = on_device(np.full(n, np.nan, dtype=np.float32))
    dropout[(-(-n // 1024),)](on_device(x), out, p, seed, BLOCK=1024)
    got = out.cpu().numpy() if hasattr(out, "cpu") else out
    keep = rand(np.uint64(seed), np.arange(n)) > np.float32(p)
    want = np.where(keep, x / (np.float32(1) - np.float32(p)), np.float32(0))
    assert np.array_equal(got, want), "dropout gave another mask or value"
    where = "the GPU" if out is not got else "the CPU interpreter"
    print(f"dropout on {n} elements on {where}: kept {keep.mean():.3f} of them (1 - p = {1 - p})")


if __name__ == "__main__":
    main()
