"""One rank of torch.distributed over NCCL (world size 1) with a DataLoader whose workers
fork: checks gpuwatch's NCCL hooks and CUPTI-timed collectives on real NCCL, and that the
forked workers (which never touch CUDA) neither hang nor send a stream of their own.
Writes the number of all_reduce calls it made to argv[1]."""
import json
import os
import sys

import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29531")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
data = torch.utils.data.TensorDataset(torch.randn(4096, 256))
loader = torch.utils.data.DataLoader(data, batch_size=64, num_workers=2, pin_memory=True)
model = torch.nn.Linear(256, 256).cuda()
calls = 0
for epoch in range(2):
    for (x,) in loader:
        y = model(x.cuda(non_blocking=True)).sum()
        y.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            calls += 1
        model.zero_grad(set_to_none=True)
torch.cuda.synchronize()
dist.destroy_process_group()
json.dump({"all_reduce_calls": calls, "steps": 2 * len(loader)}, open(sys.argv[1], "w"))
