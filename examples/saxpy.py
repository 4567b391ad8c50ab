"""The overview page's saxpy, as written there, run and checked.

On a machine with an NVIDIA GPU and torch or CuPy it runs on the GPU; otherwise
the same launch runs in the CPU interpreter on numpy arrays.
"""

from __future__ import annotations

import numpy as np

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[16, 8192])
def saxpy(
    x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32
):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]


def arrays(n: int):
    """x, y and a NaN-poisoned out on the GPU (torch or CuPy) if one is there, else numpy."""
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(n, dtype=np.float32) for _ in range(2)]
    host.append(np.full(n, np.nan, dtype=np.float32))
    try:
        import torch

        if torch.cuda.is_available():
            return "torch (GPU)", [torch.from_numpy(a).cuda() for a in host], host
    except ImportError:
        pass
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "CuPy (GPU)", [cupy.asarray(a) for a in host], host
    except Exception:
        pass
    return "numpy (CPU interpreter)", host, host


def main() -> None:
    print(saxpy.source)
    n = 1000
    where, (x, y, out), (hx, hy, _) = arrays(n)
    saxpy[lambda meta: (-(-meta["N"] // meta["BLOCK"]),)](x, y, out, 2.0)
    got = (
        out.get() if hasattr(out, "get") else np.asarray(out.cpu() if hasattr(out, "cpu") else out)
    )
    expected = 2.0 * hx + hy
    assert np.allclose(got, expected, rtol=1e-6, atol=1e-6), "saxpy gave a wrong result"
    print(f"saxpy on {n} elements with {where}: every element equals 2*x + y")


if __name__ == "__main__":
    main()
