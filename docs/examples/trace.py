from __future__ import annotations

import sys

import numpy as np

import phobos.lang as ph


@ph.kernel
def scale(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 4
    t: ph.let = x[base:+4] * 2.0
    ph.trace(base, t, when=ph.ctx.block.x >= 1)
    out[base:+4] = t


x = np.arange(10, dtype=np.float32)
out = np.zeros(10, np.float32)
if "--gpu" in sys.argv:  # the same launch on the GPU (tests/gpu/test_debugging_gpu.py)
    import torch

    x, out = torch.from_numpy(x).cuda(), torch.from_numpy(out).cuda()
scale[(3,)](x, out)
if "--gpu" in sys.argv:
    torch.cuda.synchronize()
