"""A small training loop of identical steps; torch.profiler records a window of them.

Writes the profiler's per-step figures to the JSON path given as argv[1].
"""
import json
import sys

import torch

STEPS, PROFILED = 40, 10
torch.manual_seed(0)
# Parameters made on the GPU: the only host-to-device copies are the steps' batches.
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096, device="cuda"), torch.nn.ReLU(),
                            torch.nn.Linear(4096, 1024, device="cuda"))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
host_batch = torch.randn(256, 1024).pin_memory()


def step():
    torch.cuda.nvtx.range_push("train_step")  # gpuwatch's steps come from this range
    x = host_batch.to("cuda", non_blocking=True)
    loss = model(x).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


for _ in range(STEPS - PROFILED):
    step()
acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
with torch.profiler.profile(activities=acts) as prof:
    for _ in range(PROFILED):
        step()

kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "Memcpy" not in e.name]
copies = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "Memcpy HtoD" in e.name]
with open(sys.argv[1], "w") as f:
    json.dump({"steps": STEPS, "profiled_steps": PROFILED,
               "kernels_per_step": len(kernels) / PROFILED,
               "kernel_us_per_step": sum(e.device_time for e in kernels) / PROFILED,
               "h2d_bytes_per_step": host_batch.numel() * host_batch.element_size()}, f)
