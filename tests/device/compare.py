"""Compares gpuwatch's summary with the profiler's per-step figures and prints a table."""
import json
import sys

summary = json.load(open(sys.argv[1]))
prof = json.load(open(sys.argv[2]))
rank = summary["ranks"][0]
steps = prof["steps"]
gpu = rank.get("gpu", {})
rows = [
    ("kernels per step", gpu.get("kernels", {}).get("count", 0) / steps, prof["kernels_per_step"]),
    ("kernel us per step", gpu.get("kernels", {}).get("total_s", 0) * 1e6 / steps, prof["kernel_us_per_step"]),
    ("H2D bytes per step", rank["memcpy"]["h2d"]["bytes"] / steps, prof["h2d_bytes_per_step"]),
]
print(f"gpu.source = {gpu.get('source')} ({gpu.get('source_detail')})")
print(f"{'figure':<22}{'gpuwatch':>14}{'torch.profiler':>16}{'ratio':>8}")
for name, a, b in rows:
    print(f"{name:<22}{a:>14.1f}{b:>16.1f}{(a / b if b else float('nan')):>8.3f}")
