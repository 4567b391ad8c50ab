from __future__ import annotations

import numpy as np

import phobos.lang as ph


@ph.kernel
def smear(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 4
    out[base:+8] = x[base:+8] * 2.0


x = np.ones(16, np.float32)
out = np.zeros(16, np.float32)
smear[(4,)](x, out, race_check=True)
