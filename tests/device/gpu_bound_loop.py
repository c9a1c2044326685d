"""A GPU-bound PyTorch loop: steps of bf16 matmuls that keep the device's queue deep, with a
.item() at each step's end ("sync") or only at the end ("nosync": PyTorch runs ahead until
CUDA's queue is full). Under gpuwatch's default budget the run is sampled; each window's last
launches run up to the queue's length after it closes, and the detach must wait for them
(enrich/cupti_reader.cpp). Prints one JSON line: steps, matmuls, loop_s.
    python3 gpu_bound_loop.py SECONDS sync|nosync"""
import json
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
mode = sys.argv[2] if len(sys.argv) > 2 else "sync"
per_step = 200
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
c = torch.empty_like(a)
for _ in range(50):  # warm-up: cuBLAS heuristics, allocator
    torch.matmul(a, b, out=c)
torch.cuda.synchronize()
# Size the run from the warm-up's rate, so that it lasts about `seconds` on any GPU.
t0 = time.perf_counter()
for _ in range(per_step):
    torch.matmul(a, b, out=c)
torch.cuda.synchronize()
steps = max(2, int(seconds / (time.perf_counter() - t0)))
t0 = time.perf_counter()
for _ in range(steps):
    for _ in range(per_step):
        torch.matmul(a, b, out=c)
    if mode == "sync":
        c[0, 0].item()
torch.cuda.synchronize()
dt = time.perf_counter() - t0
print(json.dumps({"mode": mode, "steps": steps, "matmuls": steps * per_step, "loop_s": dt}))
