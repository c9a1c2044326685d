"""Issue 16 on real torch (device check P, untested until a device session runs it): three
loops, each should be named at its line by gpuwatch.
  item:    loss.item() inside read_loss (torch releases the GIL there): sync_stall's
           call_site.python must be this file's read_loss line.
  loader:  a DataLoader whose transform is slow (num_workers=0): data_loading, host_frames
           naming the loop's `for` line.
  logging: a logging call each step that formats a GPU value (.item() inside log_step) and
           Python work: host_overhead or sync_stall naming log_step.
Usage: python3 python_frames_torch.py item|loader|logging"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

dev = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, 2048, device=dev)


def step(batch):
    loss = model(batch).square().mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss


def read_loss(loss):
    return loss.item()  # the sync: expected in sync_stall's call_site


class SlowSet(Dataset):
    def __len__(self):
        return 200

    def __getitem__(self, i):
        end = time.perf_counter() + 0.004  # a slow transform
        while time.perf_counter() < end: pass  # noqa: E701
        return torch.randn(2048)


def log_step(i, loss):
    end = time.perf_counter() + 0.003  # formatting, metrics
    while time.perf_counter() < end: pass  # noqa: E701
    value = loss.item()  # the logging call's sync, every step
    if i % 50 == 0:
        print(f"step {i} loss {value:.4f}", file=sys.stderr)


mode = sys.argv[1]
if mode == "item":
    for i in range(300):
        read_loss(step(x))
elif mode == "loader":
    for batch in DataLoader(SlowSet(), batch_size=8, num_workers=0):
        step(x + batch.to(dev, non_blocking=True).mean())
elif mode == "logging":
    for i in range(300):
        log_step(i, step(x))
torch.cuda.synchronize()
print("python_frames_torch", mode, "done")
