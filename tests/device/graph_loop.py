"""Graph replays in PyTorch (torch.cuda.graphs): a graph of NODES tiny in-place adds,
replayed N times with a sync after each, so that each replay call's host time is its own
(no full launch queue inside it). Prints one JSON line: the loop's time and the replay
call's host time, mean and median, in microseconds.
    python3 tests/device/graph_loop.py N NODES"""
import json
import statistics
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 200
x = torch.zeros(1, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):  # warm-up off the capture, as torch.cuda.graphs asks
    for _ in range(3):
        for _ in range(nodes):
            x.add_(1)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    for _ in range(nodes):
        x.add_(1)
for _ in range(50):
    g.replay()
torch.cuda.synchronize()
calls = []
t0 = time.perf_counter()
for _ in range(n):
    a = time.perf_counter()
    g.replay()
    calls.append(time.perf_counter() - a)
    torch.cuda.synchronize()
dt = time.perf_counter() - t0
print(json.dumps({"replays": n, "nodes": nodes, "loop_s": dt, "replay_call_us_mean": 1e6 * statistics.fmean(calls),
                  "replay_call_us_median": 1e6 * statistics.median(calls)}))
