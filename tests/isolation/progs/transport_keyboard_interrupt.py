"""A Python job stopped by Ctrl-C: a few copies through the simulated CUDA runtime (ctypes,
on the process scope where gpuwatch's wrappers come first), then an uncaught
KeyboardInterrupt. CPython then restores SIGINT's default action and kills itself with it
(past any handler gpuwatch installed at the first CUDA call)."""
import ctypes
import os

ctypes.PyDLL("libcudart.so.13", mode=os.RTLD_GLOBAL)  # the simulator's, via LD_LIBRARY_PATH
cuda = ctypes.PyDLL(None)
dev = ctypes.c_void_p()
host = ctypes.create_string_buffer(4096)
assert cuda.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(4096)) == 0
for _ in range(5):
    assert cuda.cudaMemcpy(dev, host, ctypes.c_size_t(4096), 1) == 0  # host to device
print("5 copies", flush=True)
raise KeyboardInterrupt
