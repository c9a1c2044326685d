"""Compares gpuwatch's summary with the profiler's per-step figures and prints a table.

gpuwatch hands CUPTI over when torch.profiler starts (libinject/hooks/hooks_cupti.cpp), so its
device figures cover the steps before the profiler's window; its host figures cover all."""
import json
import sys

summary = json.load(open(sys.argv[1]))
prof = json.load(open(sys.argv[2]))
rank = summary["ranks"][0]
steps = prof["steps"]
gpu = rank.get("gpu") or {}
detail = gpu.get("source_detail") or ""
device_steps = steps - prof["profiled_steps"] if "took CUPTI" in detail else steps
kernels = gpu.get("kernels") or {}
rows = [
    ("kernels per step", kernels.get("count", 0) / device_steps, prof["kernels_per_step"]),
    ("kernel us per step", kernels.get("total_s", 0) * 1e6 / device_steps, prof["kernel_us_per_step"]),
    ("H2D bytes per step", rank["memcpy"]["h2d"]["bytes"] / steps, prof["h2d_bytes_per_step"]),
]
print(f"gpu.source = {gpu.get('source')} ({detail}); device figures over {device_steps} steps")
print(f"steps: {(rank.get('steps') or {}).get('count')} ({(rank.get('steps') or {}).get('source')}), script ran {steps}")
print(f"{'figure':<22}{'gpuwatch':>14}{'torch.profiler':>16}{'ratio':>8}")
for name, a, b in rows:
    print(f"{name:<22}{a:>14.1f}{b:>16.1f}{(a / b if b else float('nan')):>8.3f}")
top = [k.get("name", "")[:60] for k in (kernels.get("top") or [])[:5]]
print("top kernels:", top)
