"""Probe: tutorial 03 at 1024³, tuned launch (names left out) against the fixed variant: device
and host time per launch (why run 20 measured 38.6 TFLOP/s where run 18 measured 155.7)."""

import time

import torch

from benchmarks.common import load_tutorial, median_ms

t = load_tutorial("03_matmul")
a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
b = torch.randn_like(a)
c = torch.empty_like(a)
t.run_matmul(a, b, c)
choice = t.matmul.tuning_report().choice
print("choice", choice)
print("unfixed do_bench ms", median_ms(lambda: t.run_matmul(a, b, c)))
fixed = {k: v for k, v in choice.items()}
t.matmul[t.grid](a, b, c, **fixed)
print("fixed do_bench ms", median_ms(lambda: t.matmul[t.grid](a, b, c, **fixed)))
for label, fn in [
    ("unfixed", lambda: t.run_matmul(a, b, c)),
    ("fixed", lambda: t.matmul[t.grid](a, b, c, **fixed)),
]:
    torch.cuda.synchronize()
    s = time.perf_counter()
    for _ in range(200):
        fn()
    h = (time.perf_counter() - s) / 200 * 1e6
    torch.cuda.synchronize()
    print(label, "host us per launch", round(h, 1))
