#!/usr/bin/env python3
"""HTA's critical path on the traces HTA's own critical-path tests use, computed once with
HolisticTraceAnalysis itself and committed as hta_critical_path.json (the reference for
issue 52's check against HTA). HTA's code stays out of this repository: point HTA_SRC at a
checkout of https://github.com/facebookresearch/HolisticTraceAnalysis (commit
f4d0062c382f42bd8a74838bcdad1916c7d5d2da was used) and run with Debian's python3-pandas,
-numpy, -networkx, -plotly, -pydot, -yaml, -psutil:

    HTA_SRC=/path/to/HolisticTraceAnalysis /usr/bin/python3 \
        tests/data/kineto/critical_path/hta_critical_path.py \
        > tests/data/kineto/critical_path/hta_critical_path.json

Each trace is analysed with exactly the arguments of HTA's tests/test_critical_path_analysis.py
(rank, annotation, instance_id) and HTA's defaults (no zero-weight launch edges, negative
weights of -1 us zeroed). All times are the trace's microseconds (these traces have integer
us timestamps, so HTA rounds nothing); *_ns fields are the same figures times 1000.

Per trace: the window HTA derives from the annotation, as HTA holds it (window_hta_us: its
timestamps less the trace's earliest, hta_min_ts_us) and in the trace's own clock
(window_trace_us / _ns; with annotation "" HTA takes the whole trace, and its end is already
in the trace's clock); the critical path's length (the sum of its edge weights, what
networkx.dag_longest_path maximises: zero-weight edges, such as those between consecutive
top-level operators on a thread and the sync edges, add nothing, so the length is less than
the path's span from its first node to its last); HTA's summary() (per bound_by category, %
of the length) and the microseconds behind it; the path split by edge type. cpu_bound_pct is
HTA's cpu_bound; gpu_bound_pct is gpu_compute_bound + gpu_communication_bound (HTA reports
the two apart, copies and memsets inside gpu_compute_bound, and its launch and kernel-kernel
overheads and data loading as categories of their own). path_us_by_category_and_stream
splits HTA's categories by the attributed event's category and stream: not an HTA figure.
None of these traces has two ProfilerSteps, so HTA's load-time filter (drop the last step)
leaves them whole.
"""
import contextlib, hashlib, io, json, logging, os, shutil, sys, tempfile, warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.environ["HTA_SRC"])
import networkx as nx  # noqa: E402
import pandas as pd  # noqa: E402
from hta.analyzers.critical_path_analysis import CPEdgeType  # noqa: E402
from hta.configs.config import logger as hta_logger  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MEASURE = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
# file here -> (HTA's file under tests/data/, rank, annotation, instance_id, HTA's test)
TRACES = {
    "simple_add_a100.json.gz": (
        "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
        0, MEASURE, 1, "_critical_path_on_simple_add_trace"),
    "alexnet_a100.json.gz": (
        "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
        0, MEASURE, 1, "test_critical_path_inter_stream_sync"),
    "cuda_event_sync.json.gz": (
        "critical_path/cuda_event_sync/event_sync_trace.json.gz",
        0, "ProfilerStep", 0, "test_critical_path_analysis_event_sync"),
    "cuda_event_sync_multi_stream.json.gz": (
        "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
        0, "", None, "test_critical_path_analysis_event_sync_multistream"),
}
BOUND_TYPES = ["cpu_bound", "data_loading", "gpu_compute_bound", "gpu_communication_bound",
               "gpu_kernel_launch_overhead", "gpu_kernel_kernel_overhead"]


class WindowLog(logging.Handler):
    """Catches HTA's own 'Looking up events within the window (start, end)' line."""
    def __init__(self):
        super().__init__(logging.INFO)
        self.window = None

    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith("Looking up events within the window ("):
            a, b = msg[msg.index("(") + 1:msg.rindex(")")].split(",")
            self.window = (int(float(a)), int(float(b)))


def num(x):
    return int(x) if float(x).is_integer() else float(x)


def figures(name):
    hta_path, rank, annotation, instance_id, test = TRACES[name]
    path = os.path.join(HERE, name)
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    catcher = WindowLog()
    hta_logger.addHandler(catcher)
    level = hta_logger.level
    hta_logger.setLevel(logging.INFO)
    quiet = io.StringIO()
    try:
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(quiet), \
                contextlib.redirect_stderr(quiet):
            shutil.copy(path, d)  # HTA reads a folder of rank traces
            ta = TraceAnalysis(trace_dir=d)
            cp, ok = ta.critical_path_analysis(rank=rank, annotation=annotation,
                                               instance_id=instance_id)
            summary = cp.summary()  # HTA's own figures, % of the path's length
            edf = cp.get_critical_path_breakdown()
    finally:
        hta_logger.removeHandler(catcher)
        hta_logger.setLevel(level)
    assert ok, f"HTA's critical path failed on {name}"
    start, end = catcher.window
    min_ts = int(ta.t.min_ts)  # HTA shifts every ts by the trace's earliest one
    if annotation == "":
        # HTA's window is then trace_df.ts.min() .. trace_df.end.max(), and its 'end' column
        # was computed before the shift: the end is in the trace's own clock already.
        trace_window = {"start": start + min_ts, "end": end}
    else:
        trace_window = {"start": start + min_ts, "end": end + min_ts}

    # The path: its nodes in order, its edges (CPEdge objects, HTA's weights).
    nodes = [cp.node_list[n] for n in cp.critical_path_nodes]
    edges = [cp.edges[u, v]["object"] for u, v in zip(cp.critical_path_nodes,
                                                       cp.critical_path_nodes[1:])]
    length = int(sum(e.weight for e in edges))  # what summary() divides by
    assert length == int(edf.duration.sum())
    graph_length = int(sum(cp.edges[e.begin, e.end]["weight"] for e in edges))  # -1s zeroed
    assert graph_length == nx.dag_longest_path_length(cp, weight="weight")

    by_bound = edf.groupby("bound_by").duration.sum()
    bound_us = {k: num(by_bound.get(k, 0)) for k in BOUND_TYPES}
    hta_summary = {(k if k else "(zero-weight dependency/sync)"): round(float(v), 6)
                   for k, v in summary.items()}
    pct = {k: 100.0 * bound_us[k] / length for k in BOUND_TYPES}

    by_type_us, by_type_n = {}, {}
    for e in edges:
        by_type_us[e.type.value] = by_type_us.get(e.type.value, 0) + int(e.weight)
        by_type_n[e.type.value] = by_type_n.get(e.type.value, 0) + 1
    graph_edges = {}
    for u, v in cp.edges:
        t = cp.edges[u, v]["object"].type.value
        graph_edges[t] = graph_edges.get(t, 0) + 1

    # A finer split of HTA's categories by the attributed event's category and stream
    # (not an HTA figure: for matching gpuwatch's own split).
    sym = cp.symbol_table.get_sym_table()
    split = {}
    for r in edf.itertuples(index=False):
        if r.bound_by in ("cpu_bound", "data_loading"):
            key = f"{r.bound_by}:{sym[int(r.cat)]}"
        elif r.bound_by in ("gpu_compute_bound", "gpu_communication_bound"):
            key = f"{r.bound_by}:{sym[int(r.cat)]}:stream {int(r.stream)}"
        elif r.bound_by == "":
            key = "zero-weight:" + r.type
        else:
            key = r.bound_by
        split[key] = split.get(key, 0) + int(r.duration)

    return {
        "hta_trace": "tests/data/" + hta_path,
        "sha256": sha,
        "hta_test": "tests/test_critical_path_analysis.py: " + test,
        "args": {"rank": rank, "annotation": annotation, "instance_id": instance_id},
        "hta_min_ts_us": min_ts,
        "window_hta_us": {"start": start, "end": end},
        "window_trace_us": dict(trace_window, dur=trace_window["end"] - trace_window["start"]),
        "window_trace_ns": {k: v * 1000 for k, v in trace_window.items()},
        "critical_path": {
            "length_us": length,
            "length_ns": length * 1000,
            "graph_length_us": graph_length,
            "nodes": len(nodes),
            "edges": len(edges),
            "first_node_trace_us": int(nodes[0].ts) + min_ts,
            "last_node_trace_us": int(nodes[-1].ts) + min_ts,
            "span_us": int(nodes[-1].ts - nodes[0].ts),
        },
        "hta_summary_pct": hta_summary,
        "bound_by_us": bound_us,
        "cpu_bound_pct": round(pct["cpu_bound"], 4),
        "gpu_bound_pct": round(pct["gpu_compute_bound"] + pct["gpu_communication_bound"], 4),
        "launch_overhead_pct": round(pct["gpu_kernel_launch_overhead"], 4),
        "kernel_kernel_overhead_pct": round(pct["gpu_kernel_kernel_overhead"], 4),
        "path_by_edge_type_us": by_type_us,
        "path_edges_by_type": by_type_n,
        "graph": {"nodes": cp.number_of_nodes(), "edges_by_type": graph_edges,
                  "clipped_events": len(cp.trace_df)},
        "path_us_by_category_and_stream": split,
    }


if __name__ == "__main__":
    out = {
        "hta_commit": "f4d0062c382f42bd8a74838bcdad1916c7d5d2da",
        "versions": {"python": sys.version.split()[0], "pandas": pd.__version__,
                     "networkx": nx.__version__},
        "traces": {name: figures(name) for name in TRACES},
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
