"""A CPython loop that reads a value back from the GPU each step, as `loss.item()` does, with
the GIL released around every CUDA call (ctypes.CDLL, as torch releases it inside .item()).
Used by diagnosis_test.cpp: the sync_stall finding must name the line of `read_back` below
(argument `direct`), or, when the read goes through a fake `site-packages/torch` module
(argument `framework`), still the user's line in `read_back`, with the torch frame in the
stack."""
import ctypes
import sys

import sim_cuda
from torch import fake_item  # the fake one in site-packages/

N = 32 << 20
cuda, dev, pinned = sim_cuda.load(N)
value = ctypes.c_float()
through_framework = sys.argv[1:] == ["framework"]


def read_back():
    if through_framework:
        return fake_item.item(cuda, value, dev, ctypes)  # the user's line: the torch frame is skipped
    return cuda.cudaMemcpy(ctypes.byref(value), dev, ctypes.c_size_t(4), 2)  # D2H: waits for the GPU


def train():
    for step in range(20):
        cuda.cudaMemcpyAsync(dev, pinned, ctypes.c_size_t(N), 1, None)  # H2D, returns at once
        read_back()
        cuda.cudaMemcpyAsync(dev, pinned, ctypes.c_size_t(4096), 1, None)  # more work after the wait


train()
cuda.cudaDeviceSynchronize()
print("python_nogil: done")
