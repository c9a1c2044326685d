#!/usr/bin/env python3
"""HTA's own figures for each trace here, computed once with HolisticTraceAnalysis itself
and committed as hta_expected.json for tests/unit/collector/import/hta_check_test.cpp.
HTA's code stays out of this repository: point HTA_SRC at a checkout of
https://github.com/facebookresearch/HolisticTraceAnalysis (commit f4d0062 was used) and run
with Debian's python3-pandas, -numpy, -networkx, -plotly, -pydot, -yaml, -psutil:
    HTA_SRC=/path/to/HolisticTraceAnalysis /usr/bin/python3 tests/data/kineto/hta_expected.py \
        > tests/data/kineto/hta_expected.json
Defaults throughout: consecutive_kernel_delay 30, the last ProfilerStep left out."""
import json, logging, os, shutil, sys, tempfile, warnings

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
sys.path.insert(0, os.environ["HTA_SRC"])
from hta.trace_analysis import TraceAnalysis  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = ["alexnet_a100.json.gz", "nccl_data_a100_rank0.json.gz", "ns_resolution_v100_rank0.json.gz",
          "sampled_rank0.json.gz", "sampled_rank1.json.gz"]


def figures(trace):
    with tempfile.TemporaryDirectory() as d:  # HTA reads a folder of rank traces
        shutil.copy(os.path.join(HERE, trace), d)
        ta = TraceAnalysis(trace_dir=d)
        rank = next(iter(ta.t.traces))  # the file's rank, from its distributedInfo
        idle, _ = ta.get_idle_time_breakdown(ranks=[rank], visualize=False, visualize_pctg=False)
        by_stream = {}
        for row in idle.to_dict(orient="records"):
            by_stream.setdefault(str(int(row["stream"])), {})[row["idle_category"]] = float(row["idle_time"])
        t = ta.get_temporal_breakdown(visualize=False).iloc[0]
        overlap = float(ta.get_comm_comp_overlap(visualize=False).iloc[0]["comp_comm_overlap_pctg"])
        return {
            "idle_time_breakdown_us": by_stream,
            "temporal_breakdown_us": {"idle": float(t["idle_time(us)"]), "compute": float(t["compute_time(us)"]),
                                      "non_compute": float(t["non_compute_time(us)"]),
                                      "span": float(t["kernel_time(us)"])},
            "comm_comp_overlap_pctg": None if overlap != overlap else overlap,
        }


if __name__ == "__main__":
    json.dump({t: figures(t) for t in TRACES}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
