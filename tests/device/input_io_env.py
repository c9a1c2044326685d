"""Device check for issue 6's `input_io` and `environment`: one rank of torch.distributed over
NCCL (world size 1) fed by a DataLoader with 2 forked workers whose items cost CPU time
("cpu": a busy loop) or none ("sleep"). Under gpuwatch the job's first finding should be
data_loading, followed by input_io cpu_bound (the workers' CPU, found as the rank's
children) or other; each rank's `environment` should hold the real CUDA and NCCL versions.
Usage: input_io_env.py cpu|sleep"""
import os
import sys
import time

import torch
import torch.distributed as dist

mode = sys.argv[1]
ITEM_S = 0.0005  # per item: 64 items a batch, 2 workers -> ~16 ms of loading per step


class Items(torch.utils.data.Dataset):
    def __len__(self):
        return 64 * 80

    def __getitem__(self, i):
        end = time.perf_counter() + ITEM_S
        if mode == "cpu":
            while time.perf_counter() < end:
                pass
        else:
            time.sleep(ITEM_S)
        return torch.full((256,), float(i % 7))


os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
loader = torch.utils.data.DataLoader(Items(), batch_size=64, num_workers=2, pin_memory=True)
model = torch.nn.Linear(256, 256).cuda()
for x in loader:
    torch.cuda.nvtx.range_push("train_step")
    y = model(x.cuda(non_blocking=True)).sum()
    y.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    model.zero_grad(set_to_none=True)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
dist.destroy_process_group()
