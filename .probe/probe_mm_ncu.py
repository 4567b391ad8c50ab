"""One launch each of Phobos's tuned matmul tile and Triton's tutorial kernel, for ncu."""
import sys
sys.path.insert(0, ".")
import torch
from benchmarks.common import load_tutorial
from phobos.compile.pipeline import compile_file
from phobos.lang.dispatch import device_arch
from phobos.launch import load_kernel
from benchmarks.common import ROOT

size = 4096
a = torch.randn(size, size, device="cuda", dtype=torch.float16)
b = torch.randn(size, size, device="cuda", dtype=torch.float16)
c = torch.empty(size, size, device="cuda", dtype=torch.float16)
values = {"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "NUM_THREADS": 256, "ACTIVATION": 0}
k = compile_file(ROOT / "examples" / "matmul.ph", "matmul", values, arch=device_arch(0), verbose=True)["matmul"]
print(k.resources.summary() if k.resources else None)
loaded = load_kernel(k.contract.to_json(), cubin=k.cubin)
grid = lambda meta: (-(-meta["M"] // 128) * -(-meta["N"] // 256),)
for _ in range(1):
    loaded.launch(grid, (a, b, c))
torch.cuda.synchronize()
tut = load_tutorial("03_matmul")
run = tut.triton_matmul(space=[(128, 256, 64, 3, 8)])
for _ in range(1):
    run(a, b, False)
torch.cuda.synchronize()
print("ok")
