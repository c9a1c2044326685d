"""Device-state check (issue 17), prepared for a lent GPU and NOT yet run on one.

Runs a matmul loop under the preloaded library (started by check_all.sh section G) while
`nvidia-smi --query-gpu` samples the same GPU every 200 ms, then prints gpuwatch's figures
(summary.json `device`, `memory`) next to nvidia-smi's and torch's:
  python3 device_state.py run DTYPE SECONDS TRUTH.json      (the job: fp32 or bf16)
  python3 device_state.py compare SUMMARY.json TRUTH.json SMI.csv
The `mixed_precision` finding is not implemented yet: the fp32/bf16 pair shows what its rule
would read (kernel names) for when it is."""
import csv
import json
import sys
import time


def run(dtype, seconds, truth_path):
    import torch
    dev = torch.device("cuda", 0)
    t = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(8192, 8192, device=dev, dtype=t)
    b = torch.randn(8192, 8192, device=dev, dtype=t)
    keep = [torch.empty(256 << 20, dtype=torch.uint8, device=dev) for _ in range(4)]  # 1 GiB held
    end = time.monotonic() + seconds
    steps = 0
    while time.monotonic() < end:
        torch.cuda.nvtx.range_push("train_step")
        for _ in range(8):
            c = a @ b
        c.sum().item()
        torch.cuda.nvtx.range_pop()
        steps += 1
    torch.cuda.synchronize()
    json.dump({"dtype": dtype, "steps": steps,
               "max_memory_reserved": torch.cuda.max_memory_reserved(),
               "max_memory_allocated": torch.cuda.max_memory_allocated(),
               "mem_get_info": list(torch.cuda.mem_get_info()), "kept": len(keep)},
              open(truth_path, "w"))


def number(v):
    try:
        return float(v.strip().split()[0])
    except (ValueError, IndexError):
        return None


def compare(summary_path, truth_path, smi_path):
    s = json.load(open(summary_path))
    t = json.load(open(truth_path))
    r = s["ranks"][0]
    d = r.get("device") or {}
    m = r.get("memory") or {}
    rows = list(csv.DictReader(open(smi_path), skipinitialspace=True))
    col = lambda name: [x for x in (number(row.get(name, "")) for row in rows) if x is not None]
    mean = lambda v: sum(v) / len(v) if v else float("nan")
    util, sm, power, temp = col("utilization.gpu [%]"), col("clocks.sm [MHz]"), col("power.draw [W]"), col("temperature.gpu")
    print("dtype", t["dtype"], "steps", t["steps"], "| nvidia-smi samples", len(rows), "| gpuwatch samples", d.get("samples"))
    print("utilization      gpuwatch %.3f  nvidia-smi %.3f" % (d.get("utilization", float("nan")), mean(util) / 100))
    print("SM clock busy    gpuwatch %.0f  nvidia-smi mean %.0f (max %s)" % (d.get("sm_clock_busy_mhz", 0), mean(sm), d.get("sm_clock_max_mhz")))
    print("power mean W     gpuwatch %.0f  nvidia-smi %.0f (limit %s)" % (d.get("power_mean_w", 0), mean(power), d.get("power_limit_w")))
    print("temperature max  gpuwatch %s  nvidia-smi %s" % (d.get("temperature_max_c"), max(temp) if temp else None))
    print("PCIe             gpuwatch %s  nvidia-smi gen %s/%s width %s/%s" % (
        json.dumps(d.get("pcie")), rows[-1].get("pcie.link.gen.current") if rows else "?", rows[-1].get("pcie.link.gen.max") if rows else "?",
        rows[-1].get("pcie.link.width.current") if rows else "?", rows[-1].get("pcie.link.width.max") if rows else "?"))
    print("memory total     gpuwatch %s  device %s  torch mem_get_info %s" % (m.get("total_bytes"), d.get("memory_total_bytes"), t["mem_get_info"][1]))
    print("memory peak      gpuwatch %s  torch max_memory_reserved %s (allocated %s)" % (
        m.get("peak_bytes"), t["max_memory_reserved"], t["max_memory_allocated"]))
    print("shape", (r.get("gpu") or {}).get("utilization_shape"), "| findings", [f["id"] for f in s["job"].get("findings", [])])
    print("top kernels", [k["name"][:60] for k in ((r.get("gpu") or {}).get("kernels") or {}).get("top", [])[:3]])


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], float(sys.argv[3]), sys.argv[4])
    else:
        compare(sys.argv[2], sys.argv[3], sys.argv[4])
