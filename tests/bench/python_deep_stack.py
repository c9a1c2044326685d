"""The host sampler's cost on a Python stack (scripts/bench_overhead.sh): a loop recursing
DEPTH calls deep (argv[1], default 14: 17 frames with the module's and the loop's) into a
5 ms busy function, a simulated copy at the bottom of each (so the thread has a ring and is
sampled), for 3 s. With `sync` (argv[2]) the bottom queues ~40 ms of device work (ten
copies of 96 MiB at the simulator's 24 GB/s) and waits for it in cudaDeviceSynchronize (the
GIL released), then runs 1 ms: a GPU-bound job, whose Python thread spends most of its time
waiting in a sync longer than the sampler's period (a training step's `loss.item()`).
Needs LD_LIBRARY_PATH with the simulator's libcudart."""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "python_frames"))
import sim_cuda  # noqa: E402

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 14
SYNC = len(sys.argv) > 2 and sys.argv[2] == "sync"
N = (96 << 20) if SYNC else (1 << 20)
cuda, dev, pinned = sim_cuda.load(N)
H2D = 1


def level(d):
    if d == 0:
        if SYNC:
            for _ in range(10):
                cuda.cudaMemcpyAsync(dev, pinned, ctypes.c_size_t(N), H2D, None)
            cuda.cudaDeviceSynchronize()
            busy_s = 0.001
        else:
            cuda.cudaMemcpyAsync(dev, pinned, ctypes.c_size_t(N), H2D, None)
            busy_s = 0.005
        end = time.perf_counter() + busy_s
        while time.perf_counter() < end:
            pass
        return
    level(d - 1)


end = time.perf_counter() + 3.0
while time.perf_counter() < end:
    level(DEPTH)
cuda.cudaDeviceSynchronize()
