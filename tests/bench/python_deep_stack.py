"""The host sampler's cost on a Python stack (scripts/bench_overhead.sh): a loop recursing
DEPTH calls deep (argv[1], default 14: 17 frames with the module's and the loop's) into a
5 ms busy function, a simulated copy at the bottom of each (so the thread has a ring and is
sampled), for 3 s. Needs LD_LIBRARY_PATH with the simulator's libcudart."""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "python_frames"))
import sim_cuda  # noqa: E402

N = 1 << 20
cuda, dev, pinned = sim_cuda.load(N)
DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 14


def level(d):
    if d == 0:
        cuda.cudaMemcpyAsync(dev, pinned, ctypes.c_size_t(N), 1, None)
        end = time.perf_counter() + 0.005
        while time.perf_counter() < end:
            pass
        return
    level(d - 1)


end = time.perf_counter() + 3.0
while time.perf_counter() < end:
    level(DEPTH)
cuda.cudaDeviceSynchronize()
