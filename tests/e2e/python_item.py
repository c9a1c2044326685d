"""A CPython loop that reads a value back from the GPU each step, as `loss.item()` does:
a large async H2D copy, then a 4-byte D2H copy that waits for it. Calls go through ctypes'
PyDLL (the GIL stays held, as in torch's .item()) on the process scope, where gpuwatch's
wrappers come first. Used by diagnosis_test.cpp: the sync_stall finding must name the line
of `read_back` below."""
import ctypes
import os

N = 32 << 20
ctypes.PyDLL("libcudart.so.13", mode=os.RTLD_GLOBAL)  # the simulator's, via LD_LIBRARY_PATH
cuda = ctypes.PyDLL(None)
dev, pinned = ctypes.c_void_p(), ctypes.c_void_p()
assert cuda.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(N)) == 0
assert cuda.cudaMallocHost(ctypes.byref(pinned), ctypes.c_size_t(N)) == 0
value = ctypes.c_float()


def read_back():
    return cuda.cudaMemcpy(ctypes.byref(value), dev, ctypes.c_size_t(4), 2)  # D2H: waits for the GPU


for step in range(20):
    cuda.cudaMemcpyAsync(dev, pinned, ctypes.c_size_t(N), 1, None)  # H2D, returns at once
    read_back()
    cuda.cudaMemcpyAsync(dev, pinned, ctypes.c_size_t(4096), 1, None)  # more work after the wait
cuda.cudaDeviceSynchronize()
print("python_item: done")
