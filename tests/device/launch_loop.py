"""A launch-bound PyTorch loop: tiny in-place adds on one element, timed inside the process
(so interpreter and CUDA start-up stay out of the figure). Prints one JSON line.
GW_PIN_CPU=N pins the loop's thread (only it: threads started before, gpuwatch's sender and
CUDA's, keep their CPUs) to CPU N after the warm-up. On the H200 VM two plain runs of this loop
read 8.01 and 9.49 s while one process's phases agree within 0.2% (docs/PERFORMANCE.md,
"On the H200"): the process's placement moves it by more than the 2% to be measured."""
import json
import os
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
x = torch.zeros(1, device="cuda")
for _ in range(5000):  # warm-up: allocator, kernel caches
    x.add_(1)
torch.cuda.synchronize()
pin = os.environ.get("GW_PIN_CPU", "")
if pin:
    os.sched_setaffinity(0, {int(pin)})  # 0: the calling thread only (Linux's sched_setaffinity)
t0 = time.perf_counter()
for _ in range(n):
    x.add_(1)
torch.cuda.synchronize()
dt = time.perf_counter() - t0
print(json.dumps({"launches": n, "loop_s": dt, "launches_per_s": n / dt, "pinned_cpu": pin or None}))
