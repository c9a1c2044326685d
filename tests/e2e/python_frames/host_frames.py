"""A CPython training loop whose GPU waits for the host (issue 16): each step copies to the
GPU (device work, through ctypes.CDLL, the GIL released) and then runs host code while the
GPU sits idle. Argument `functions`: two host functions, log_metrics three times as long as
compute_stats, and host_frames must name log_metrics first (host_overhead). Argument
`dataloader`: the host time is a DataLoader's (the fake torch.utils.data beside this file),
which is data_loading. Argument `gpu_bound`: below."""
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


# `gpu_bound`: each step queues ~40 ms of device work and waits for it in
# cudaDeviceSynchronize, longer than the sampler's period (its samples there take the
# previous one's stack: `held_samples`), then runs 2 ms of host code.
def wait_for_gpu():
    for _ in range(40):
        gpu_work()
    cuda.cudaDeviceSynchronize()  # ~40 ms, the GIL released


def train_gpu_bound():
    for _ in range(STEPS // 4):
        wait_for_gpu()
        compute_stats()


if sys.argv[1:] == ["dataloader"]:
    train_dataloader()
elif sys.argv[1:] == ["gpu_bound"]:
    train_gpu_bound()
else:
    train_functions()
cuda.cudaDeviceSynchronize()
print("host_frames: done")
