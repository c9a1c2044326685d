"""A launch-bound loop of torch.compile'd steps: each call runs one fused Triton kernel, which
Triton's launcher starts with cuLaunchKernelEx (never cudaLaunchKernel). Compiled and warmed
before the timed loop. Prints one JSON line.
    python3 tests/device/compile_loop.py [CALLS]"""
import json
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000


@torch.compile
def step(x):
    return x * 1.0001 + 1.0


x = torch.zeros(1024, device="cuda")
for _ in range(500):  # compile, then warm the guards and the launcher
    x = step(x)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(n):
    x = step(x)
torch.cuda.synchronize()
dt = time.perf_counter() - t0
print(json.dumps({"calls": n, "loop_s": dt, "calls_per_s": n / dt}))
