"""What CUPTI's activity records cost a launch-bound PyTorch loop once they are disabled again,
and whether cuptiFinalize takes that away (issue 15; a diagnostic, gpuwatch not loaded).

The overhead budget (libinject/enrich/cupti_budget.h) enables CUPTI's kinds for a window and
disables them after; on the H200 (2026-12-04, section O) the default cost ~40% of `full`
with windows over 4-6% of the run, as if the instrumentation stayed after cuptiActivityDisable.
Phases of N in-place adds each, timed in the process, CUPTI driven through ctypes with the
kinds gpuwatch enables: none loaded, enabled, disabled, finalized, enabled again, disabled and
finalized again, none. argv: libcupti path, N (default 200000). Prints one line a phase."""
import ctypes
import sys
import time

import torch

CUPTI = ctypes.CDLL(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
KINDS = [10, 1, 2, 38, 5, 4]  # CONCURRENT_KERNEL, MEMCPY, MEMSET, SYNCHRONIZATION, RUNTIME, DRIVER
SIZE = 4 << 20
buffers = {}
records = [0]

REQUEST = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                           ctypes.POINTER(ctypes.c_size_t))
COMPLETE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)


@REQUEST
def request(buf, size, max_records):
    b = (ctypes.c_uint8 * SIZE)()
    buffers[ctypes.addressof(b)] = b
    buf[0] = ctypes.addressof(b)
    size[0] = SIZE
    max_records[0] = 0


@COMPLETE
def complete(ctx, stream, buf, size, valid):
    records[0] += valid
    buffers.pop(buf, None)


def call(name, *args):
    rc = getattr(CUPTI, name)(*args)
    if rc != 0:
        print(f"  {name}{args} -> CUPTI error {rc}")
    return rc


x = torch.zeros(1, device="cuda")


def phase(name):
    for _ in range(2000):
        x.add_(1)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(N):
        x.add_(1)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"{name:34s} {dt * 1e6 / N:7.3f} us a launch  ({N / dt:8.0f}/s, record bytes so far {records[0]})")


def enable():
    call("cuptiActivityRegisterCallbacks", request, complete)
    for k in KINDS:
        call("cuptiActivityEnable", k)


def disable():
    call("cuptiActivityFlushAll", 1)
    for k in KINDS:
        call("cuptiActivityDisable", k)
    call("cuptiActivityFlushAll", 1)


phase("no CUPTI")
phase("no CUPTI again")
enable()
phase("enabled")
disable()
phase("disabled")
phase("disabled, later")
torch.cuda.synchronize()
call("cuptiFinalize")
phase("finalized")
enable()
phase("enabled again after finalize")
disable()
torch.cuda.synchronize()
call("cuptiFinalize")
phase("disabled and finalized again")
phase("finalized, later")
