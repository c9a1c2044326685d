#!/usr/bin/python3
"""docs/summary.schema.json accepts what gpuwatch writes and refuses anything else.

    schema_test.py SCHEMA GPUWATCH KINETO_DIR WORK

Writes real documents (`gpuwatch import` of two bundled torch.profiler traces, `gpuwatch
diff --json` of them) and checks that each validates; then that each object in them,
given a key the schema does not list, no longer does (every object is closed, so a key
added to the output without its schema entry fails the e2e schema check), and that a few
wrong types are refused, among them `ranks[].device` as an object (issue 51).
"""
import copy
import json
import os
import shutil
import subprocess
import sys

import jsonschema

EXTRA = "Not In Schema"  # matches no property name pattern of the schema's maps either


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if r.returncode not in (0, 3):  # diff exits 3 when a rule trips; no rule is given here
        raise SystemExit(f"{' '.join(argv)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def objects(doc, path=()):
    """(path, object) for every object in doc, one per shape path (array indices as '*')."""
    seen = set()

    def walk(x, p, shape):
        if isinstance(x, dict):
            if shape not in seen:
                seen.add(shape)
                yield p, x
            for k, v in x.items():
                yield from walk(v, p + (k,), shape + (k,))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                yield from walk(v, p + (i,), shape + ("*",))

    yield from walk(doc, path, path)


def at(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def main(schema_path, gpuwatch, kineto, work):
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    docs = {}
    for name in ("alexnet_a100", "nccl_data_a100_rank0"):
        out = os.path.join(work, name)
        run([gpuwatch, "import", os.path.join(kineto, name + ".json.gz"), "-o", out, "-q"])
        with open(os.path.join(out, "summary.json")) as f:
            docs[name] = json.load(f)
    # The critical path and the what-ifs as the collector writes them once known (the
    # imported traces may leave them null): the rank's, the job's and a finding's.
    filled = copy.deepcopy(docs["nccl_data_a100_rank0"])
    parts = {k + "_ms": 1.0 for k in ("host_compute", "launch_overhead", "sync", "gpu_compute", "copies",
                                      "communication", "peer_wait")}
    critical = {"steps": 3, "step_ms": 7.0, "path_ms": 7.0, "alone_ms": 6.5, "parts": parts,
            "gpu_streams": [{"stream": 7, "ms": 1.0}]}
    what_if = {"step_ms": 3.5, "speedup": 2.0, "assumes": "the fix", "then_paced_by": "gpu_compute"}
    for o in (filled["job"], filled["ranks"][0]):
        o["critical_path"] = copy.deepcopy(critical)
        o["what_if_all"] = dict(what_if, then_paced_by=None)
        for f in o["findings"]:
            f["what_if"] = copy.deepcopy(what_if)
    docs["summary with a critical path"] = filled
    a, b = (os.path.join(work, n) for n in ("alexnet_a100", "nccl_data_a100_rank0"))
    docs["diff same"] = json.loads(run([gpuwatch, "diff", a, a, "--json", "--fail-if", "step_time>+5%"]))
    docs["diff other"] = json.loads(run([gpuwatch, "diff", a, b, "--json"]))

    failures = []
    for name, doc in docs.items():
        errs = [e.message for e in v.iter_errors(doc)]
        if errs:
            failures.append(f"{name}: the document gpuwatch wrote does not validate: {errs[:3]}")
            continue
        closed = 0
        for path, obj in objects(doc):
            bad = copy.deepcopy(doc)
            at(bad, path)[EXTRA] = 1
            if v.is_valid(bad):
                failures.append(f"{name}: an extra key in /{'/'.join(map(str, path))} passes")
            closed += 1
        print(f"{name}: valid; {closed} object shapes, each refuses an extra key")

    summary = docs["nccl_data_a100_rank0"]
    wrong = {
        "ranks[0].device as NVML's object": lambda s: s["ranks"][0].__setitem__("device", {"samples": 1}),
        "ranks[0].device missing": lambda s: s["ranks"][0].pop("device"),
        "ranks[0].rank as a string": lambda s: s["ranks"][0].__setitem__("rank", "0"),
        "another schema name": lambda s: s.__setitem__("schema", "gpuwatch.summary.v2"),
        "a finding id the tool does not have": lambda s: s["job"]["findings"].append(
            dict(s["job"]["findings"][0], id="made_up") if s["job"]["findings"] else {"id": "made_up"}),
        "gpu.busy_s null on a CUPTI timeline": lambda s: s["job"]["gpu"].__setitem__("busy_s", None),
        "critical_path without its parts": lambda s: s["job"].__setitem__(
            "critical_path", {k: v for k, v in critical.items() if k != "parts"}),
        "a what_if paced by a part the path does not have": lambda s: s["job"].__setitem__(
            "what_if_all", dict(what_if, then_paced_by="made_up")),
    }
    for what, edit in wrong.items():
        bad = copy.deepcopy(summary)
        edit(bad)
        if v.is_valid(bad):
            failures.append(f"summary with {what} passes")
    diff = copy.deepcopy(docs["diff other"])
    diff["headline"]["kind"] = "made_up"
    if v.is_valid(diff):
        failures.append("diff with an unknown headline kind passes")

    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
