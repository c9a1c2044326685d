"""A launch-bound PyTorch loop: tiny in-place adds on one element, timed inside the process
(so interpreter and CUDA start-up stay out of the figure). Prints one JSON line."""
import json
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
x = torch.zeros(1, device="cuda")
for _ in range(5000):  # warm-up: allocator, kernel caches
    x.add_(1)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(n):
    x.add_(1)
torch.cuda.synchronize()
dt = time.perf_counter() - t0
print(json.dumps({"launches": n, "loop_s": dt, "launches_per_s": n / dt}))
