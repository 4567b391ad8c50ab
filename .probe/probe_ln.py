"""Probe: layer norm backward's dx kernel by CTA size and rows per block (M=4096)."""
import sys, tempfile, json
from pathlib import Path
sys.path.insert(0, ".")
import torch
from benchmarks.common import ROOT, median_ms
from phobos.compile.pipeline import compile_file
from phobos.lang.dispatch import device_arch
from phobos.launch import load_kernel

text = (ROOT / "examples" / "layer_norm.ph").read_text()
old = "@autotune(ROWS in {16, 1, 2, 4, 8, 32, 64}, BLOCK_N in"
assert old in text
src = Path(tempfile.mkdtemp()) / "ln.ph"
src.write_text(text.replace(old, "@autotune(NUM_THREADS in {64, 128, 256, 512}, ROWS in {16, 1, 2, 4, 8, 32, 64}, BLOCK_N in"))
arch = device_arch(0)
M = 4096
out = []
for n in (1024, 4096):
    x = torch.randn(M, n, device="cuda", dtype=torch.float16)
    dy = torch.randn(M, n, device="cuda", dtype=torch.float16)
    w = torch.randn(n, device="cuda", dtype=torch.float16)
    mean = x.float().mean(1); rstd = 1 / (x.float().var(1, unbiased=False) + 1e-5).sqrt()
    dx = torch.empty_like(x)
    for rows in (2, 4, 8):
        g = M // rows
        dwp = torch.empty(g, n, device="cuda"); dbp = torch.empty(g, n, device="cuda")
        for threads in (64, 128, 256, 512):
            try:
                k = compile_file(src, "layer_norm_backward_dx", {"NUM_THREADS": threads, "ROWS": rows, "BLOCK_N": n}, arch=arch, verbose=True)["layer_norm_backward_dx"]
            except Exception as e:
                print(n, rows, threads, "ERR", str(e)[:100]); continue
            loaded = load_kernel(k.contract.to_json(), cubin=k.cubin)
            args = (dy, x, w, mean, rstd, dx, dwp, dbp)
            loaded.launch((g,), args)
            ms = median_ms(lambda: loaded.launch((g,), args))
            gbps = (3 * M * n * 2 + 2 * g * n * 4) / ms / 1e6
            r = dict(n=n, rows=rows, threads=threads, us=ms * 1e3, gbps=gbps, regs=getattr(k, "resources", None) and k.resources.summary())
            print(r, flush=True); out.append(r)
json.dump(out, open(Path(sys.argv[1]) / "probe_ln.json", "w"), indent=1)
