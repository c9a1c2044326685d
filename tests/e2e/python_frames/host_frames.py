"""A CPython training loop whose GPU waits for the host (issue 16): each step copies to the
GPU (device work, through ctypes.CDLL, the GIL released) and then runs host code while the
GPU sits idle. Argument `functions`: two host functions, log_metrics three times as long as
compute_stats, and host_frames must name log_metrics first (host_overhead). Argument
`dataloader`: the host time is a DataLoader's (the fake torch.utils.data beside this file),
which is data_loading."""
import ctypes
import sys
import time

import sim_cuda
from torch.utils.data.dataloader import DataLoader  # the fake one in site-packages/

STEPS = 200  # ~120 samples at 100 Hz: the shares within a few % (diagnosis_test.cpp)
N = 8 << 20
cuda, dev, pinned = sim_cuda.load(N)


def log_metrics():
    end = time.perf_counter() + 0.006  # the larger share of the host's time
    while time.perf_counter() < end: pass  # noqa: E701  (one line: every sample names it)


def compute_stats():
    end = time.perf_counter() + 0.002
    while time.perf_counter() < end: pass  # noqa: E701  (one line: every sample names it)


def gpu_work():
    cuda.cudaMemcpyAsync(dev, pinned, ctypes.c_size_t(N), 1, None)  # H2D: the GPU busy ~1 ms


def train_functions():
    for _ in range(STEPS):
        gpu_work()
        log_metrics()
        compute_stats()


def train_dataloader():
    for _ in DataLoader(STEPS, 0.008):
        gpu_work()


if sys.argv[1:] == ["dataloader"]:
    train_dataloader()
else:
    train_functions()
cuda.cudaDeviceSynchronize()
print("host_frames: done")
