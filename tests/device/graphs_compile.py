"""CUDA graphs on a real GPU (issue 18's device check; UNTESTED: written without a GPU).

One small MLP step, run MODE = "eager" or "graphs" (torch.compile(mode="reduce-overhead"),
which captures the step in a CUDA graph after its warm-up), 60 steps in NVTX `train_step`
ranges under the preloaded library; then 10 more steps under torch.profiler in the same
process (gpuwatch hands CUPTI over). Also launches one Triton kernel (a driver-API launch
that runtime hooks never see) so the summary's GPU timeline must show it. Prints one JSON
line: the profiler's counts of kernels, graph launches and the Triton kernel over its steps.

    LD_PRELOAD=libgpuwatch.so GPUWATCH_OUT=out python3 graphs_compile.py eager|graphs OUT.json
"""
import json
import sys

import torch

mode, out_path = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(12)]).cuda()
x = torch.randn(64, 256, device="cuda")


def step(inp):
    with torch.no_grad():
        return model(inp).relu_().sum()


fn = torch.compile(step, mode="reduce-overhead") if mode == "graphs" else step
for _ in range(5):  # warm-up (compile, capture)
    fn(x)
torch.cuda.synchronize()


def triton_once():
    # A Triton kernel via torch.compile's default mode: launched through the driver API.
    @torch.compile
    def add_one(t):
        return t + 1

    add_one(torch.ones(1024, device="cuda"))


for _ in range(60):
    torch.cuda.nvtx.range_push("train_step")
    fn(x)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
triton_once()
torch.cuda.synchronize()

from torch.profiler import ProfilerActivity, profile  # noqa: E402

with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
    for _ in range(10):
        fn(x)
    torch.cuda.synchronize()
kernels = graph_launches = triton = 0
for e in prof.events():
    if e.device_type == torch.autograd.DeviceType.CUDA:
        kernels += 1
    if e.name in ("cudaGraphLaunch", "cudaGraphLaunch_v10000"):
        graph_launches += 1
json.dump({"mode": mode, "profiled_steps": 10, "profiler_kernels": kernels,
           "profiler_graph_launches": graph_launches, "gpuwatch_steps": 60}, open(out_path, "w"))
print(json.dumps({"mode": mode, "kernels": kernels, "graph_launches": graph_launches}))
