"""The simulated CUDA runtime for the Python e2e scripts, called through ctypes.CDLL (the GIL
released around each call, as torch releases it around its syncs): the simulator's
libcudart (on LD_LIBRARY_PATH) made global, then the process scope, where gpuwatch's
wrappers come first. Also puts the fake framework (site-packages/ beside this file) on the
path."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))


def load(nbytes):
    """The runtime, a device buffer and a pinned host buffer of `nbytes` each."""
    ctypes.CDLL("libcudart.so.13", mode=os.RTLD_GLOBAL)
    cuda = ctypes.CDLL(None)
    dev, pinned = ctypes.c_void_p(), ctypes.c_void_p()
    assert cuda.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(nbytes)) == 0
    assert cuda.cudaMallocHost(ctypes.byref(pinned), ctypes.c_size_t(nbytes)) == 0
    return cuda, dev, pinned
