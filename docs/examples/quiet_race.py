from __future__ import annotations

import warnings

import numpy as np

import phobos.lang as ph
from phobos.compile.diagnostics import PhobosWarning

warnings.filterwarnings("ignore", category=PhobosWarning)


@ph.kernel
def gather(x: ph.tensor[ph.f32][N], idx: ph.tensor[ph.i32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 4
    for i in range(0, 4):
        out[idx[base + i]] = x[base + i]  # a permutation: no two blocks write one element


x = np.arange(8, dtype=np.float32)
out = np.zeros(8, np.float32)
gather[(2,)](x, np.array([7, 6, 5, 4, 3, 2, 1, 0], np.int32), out, race_check=True)
print(out)
