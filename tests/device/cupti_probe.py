"""Which CUPTI does PyTorch use, and how does it call it? (Diagnostic for the CUPTI hand-over.)
Prints the libcupti files mapped before and after torch.profiler starts, and how
libtorch_cuda.so refers to CUPTI's activity API (imported symbol or not)."""
import os
import subprocess

import torch


def mapped(tag):
    libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "cupti" in l.lower() or "kineto" in l.lower()})
    print(tag, libs)


mapped("after import:")
torch.zeros(1, device="cuda")
mapped("after CUDA init:")
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
    torch.zeros(1, device="cuda").add_(1)
    torch.cuda.synchronize()
mapped("after profiler:")
print("profiler events:", len([e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]))
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
for name in sorted(os.listdir(lib)):
    if not name.endswith(".so"):
        continue
    out = subprocess.run(["sh", "-c", f"nm -D --defined-only {lib}/{name} 2>/dev/null | grep -c cuptiActivity; "
                          f"nm -D --undefined-only {lib}/{name} 2>/dev/null | grep -c cuptiActivity; "
                          f"strings {lib}/{name} | grep -m3 -i 'libcupti'"], capture_output=True, text=True).stdout.split("\n")
    if out[0] != "0" or out[1] != "0" or any(out[2:]):
        print(name, "defines", out[0], "imports", out[1], "mentions", [s for s in out[2:] if s])
