#!/usr/bin/env python3
"""Counts of each trace here, computed straight from its JSON (independently of gpuwatch),
for tests/unit/collector/import/kineto_traces_test.cpp. Regenerate with:
    python3 tests/data/kineto/expected_counts.py > tests/data/kineto/expected_counts.json
Times are parsed as decimals (exact to the ns) and summed as integer ns."""
import gzip, json, os, re, sys
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = ["alexnet_a100.json.gz", "nccl_data_a100_rank0.json.gz", "ns_resolution_v100_rank0.json.gz",
          "sampled_rank0.json.gz", "sampled_rank1.json.gz"]
WORK = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
RUNTIME = {"cuda_runtime", "Runtime", "cuda_driver"}


def ns(v):
    return int(Decimal(v) * 1000)


def is_nccl(name):
    return name.startswith("nccl") or name.startswith("void nccl")


def union_ns(spans):
    total, end = 0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def direction(name):
    return "h2d" if "HtoD" in name else "d2h" if "DtoH" in name else "d2d" if "DtoD" in name else "other"


def count(path):
    with gzip.open(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    work = [e for e in ev if e.get("cat") in WORK]
    dev_by_corr = {}
    for e in work:
        dev_by_corr.setdefault(e["args"].get("correlation"), e)
    kernels = [e for e in work if e["cat"] in ("kernel", "Kernel")]
    compute = [e for e in kernels if not is_nccl(e["name"])]
    nccl = [e for e in kernels if is_nccl(e["name"])]
    runtime = [e for e in ev if e.get("cat") in RUNTIME]
    launch_names = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel"}
    launches = [e for e in runtime if e["name"] in launch_names
                and dev_by_corr.get(e["args"].get("correlation"), {}).get("cat") in ("kernel", "Kernel")]
    copies = {"h2d": [0, 0, 0], "d2h": [0, 0, 0], "d2d": [0, 0, 0]}  # calls, bytes, pageable calls
    for e in runtime:
        if not e["name"].startswith("cudaMemcpy"):
            continue
        d = dev_by_corr.get(e["args"].get("correlation"))
        if d is None or d["cat"] not in ("gpu_memcpy", "Memcpy"):
            continue
        k = direction(d["name"])
        if k in copies:
            copies[k][0] += 1
            copies[k][1] += int(d["args"].get("bytes", 0))
            copies[k][2] += "Pageable" in d["name"]
    memset_calls = [e for e in runtime if e["name"].startswith("cudaMemset")
                    and dev_by_corr.get(e["args"].get("correlation"), {}).get("cat") in ("gpu_memset", "Memset")]
    syncs = {}
    for e in runtime:
        if e["name"] in ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"):
            syncs[e["name"]] = syncs.get(e["name"], 0) + 1
    # Waits the trace pairs with their record (recent Kineto's cuda_sync "Stream Wait Event"
    # names the record's correlation id and stream), on an event recorded on another stream.
    records = {e["args"].get("correlation") for e in runtime if e["name"] == "cudaEventRecord"}
    wait_syncs = {e["args"].get("correlation"): e for e in ev if e.get("cat") == "cuda_sync"
                  and e["name"] == "Stream Wait Event" and "wait_on_cuda_event_record_corr_id" in e["args"]}
    cross_waits = 0
    for e in runtime:
        y = wait_syncs.get(e["args"].get("correlation")) if e["name"] == "cudaStreamWaitEvent" else None
        if y and y["args"]["wait_on_cuda_event_record_corr_id"] in records and \
                y["args"]["wait_on_stream"] != y["args"]["stream"]:
            cross_waits += 1
    steps = [e for e in ev if re.match(r"ProfilerStep#\d+$", e.get("name", ""))]
    spans = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in work]
    return {
        "kernels": len(kernels),
        "compute_kernels": len(compute),
        "nccl_kernels": len(nccl),
        "compute_kernel_ns": sum(ns(e["dur"]) for e in compute),
        "nccl_kernel_ns": sum(ns(e["dur"]) for e in nccl),
        "launches": len(launches),
        "memcpys": sum(1 for e in work if e["cat"] in ("gpu_memcpy", "Memcpy")),
        "memcpy_bytes": sum(int(e["args"].get("bytes", 0)) for e in work if e["cat"] in ("gpu_memcpy", "Memcpy")),
        "memsets": sum(1 for e in work if e["cat"] in ("gpu_memset", "Memset")),
        "memset_calls": len(memset_calls),
        "h2d_calls": copies["h2d"][0], "h2d_bytes": copies["h2d"][1], "h2d_pageable": copies["h2d"][2],
        "d2h_calls": copies["d2h"][0], "d2h_bytes": copies["d2h"][1], "d2h_pageable": copies["d2h"][2],
        "d2d_calls": copies["d2d"][0], "d2d_bytes": copies["d2d"][1],
        "memset_api_calls": sum(1 for e in runtime if e["name"].startswith("cudaMemset")),
        "syncs": syncs,
        "steps": len(steps),
        "cross_stream_waits": cross_waits,
        "busy_ns": union_ns(spans),
        "active_ns": max(b for _, b in spans) - min(a for a, _ in spans),
    }


if __name__ == "__main__":
    out = {t: count(os.path.join(HERE, t)) for t in TRACES}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
