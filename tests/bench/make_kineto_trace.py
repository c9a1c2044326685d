#!/usr/bin/env python3
"""Writes a large torch.profiler trace for `gpuwatch import`'s benchmark (scripts/bench.sh):
the events of a real trace (default: tests/data/kineto/ns_resolution_v100_rank0.json.gz)
repeated back to back until the file reaches SIZE_MB, each copy shifted past the previous
one in time, its correlation and External ids moved to a range of its own.
Usage: make_kineto_trace.py OUT.json SIZE_MB [SOURCE.json.gz]"""
import gzip, json, os, sys

out_path, size_mb = sys.argv[1], float(sys.argv[2])
src = sys.argv[3] if len(sys.argv) > 3 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "../data/kineto/ns_resolution_v100_rank0.json.gz")
with gzip.open(src, "rt") as f:
    doc = json.load(f)
events = [e for e in doc.pop("traceEvents") if isinstance(e.get("ts"), (int, float))]
span = max(e["ts"] + e.get("dur", 0) for e in events) - min(e["ts"] for e in events) + 1000.0
limit = size_mb * 1e6
with open(out_path, "w") as out:
    head = json.dumps(doc)[:-1]
    out.write(head + ', "traceEvents": [\n')
    written, k, first = len(head), 0, True
    while written < limit:
        shift = k * span
        for ev in events:
            c = dict(ev)
            c["ts"] = round(ev["ts"] + shift, 3)
            if "args" in ev:
                a = dict(ev["args"])
                for key in ("correlation", "External id"):
                    if isinstance(a.get(key), int):
                        a[key] += k * 10_000_000
                c["args"] = a
            if c.get("ph") in ("s", "f") and isinstance(c.get("id"), int):
                c["id"] += k * 10_000_000
            s = ("" if first else ",\n") + json.dumps(c)
            first = False
            out.write(s)
            written += len(s)
            if written >= limit:
                break
        k += 1
    out.write("\n]}\n")
print(f"{out_path}: {written / 1e6:.0f} MB, {k} copies of {len(events)} events", file=sys.stderr)
