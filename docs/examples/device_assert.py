from __future__ import annotations

import sys

import numpy as np

import phobos.lang as ph


@ph.kernel
def root(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 4
    t: ph.let = x[base:+4]
    assert t >= 0.0, "x must not be negative"
    out[base:+4] = ph.sqrt(t)


x = np.arange(10, dtype=np.float32)
x[6] = -1.0
out = np.zeros(10, np.float32)
if "--gpu" in sys.argv:  # the same launch on the GPU (tests/gpu/test_debugging_gpu.py)
    import torch

    x, out = torch.from_numpy(x).cuda(), torch.from_numpy(out).cuda()
root[(3,)](x, out)
if "--gpu" in sys.argv:
    torch.cuda.synchronize()
