"""Section OG of check_all.sh, read back: graph replays plain / default / full (graph_loop.py's
JSON line in W/og-<variant><round>.loop), what a replay call costs the host with CUPTI
recording every node (full minus plain), and what the default's budget measured for it
(W/og-default<round>/summary.json: overhead.cupti_us_per_graph_launch).
    python3 tests/device/graph_budget.py W ROUNDS"""
import json
import os
import statistics
import sys

w, rounds = sys.argv[1], int(sys.argv[2])


def line(v, i):
    try:
        return next(json.loads(l) for l in open(os.path.join(w, f"og-{v}{i}.loop")) if l.startswith("{"))
    except (OSError, ValueError, StopIteration):
        return None


def med(v, key):
    xs = [l[key] for l in (line(v, i) for i in range(1, rounds + 1)) if l]
    return statistics.median(xs) if xs else None


for v in ("plain", "default", "full"):
    print(f"{v}: loop_s {med(v, 'loop_s')}, replay call us mean {med(v, 'replay_call_us_mean')}, "
          f"median {med(v, 'replay_call_us_median')}")
p, f = med("plain", "replay_call_us_mean"), med("full", "replay_call_us_mean")
pl, fl, dl = med("plain", "loop_s"), med("full", "loop_s"), med("default", "loop_s")
if p and f:
    print(f"CUPTI per replay on the host (full - plain, mean call): {f - p:.1f} us")
if pl and fl:
    print(f"wall: full {100 * (fl / pl - 1):+.2f}%, default {100 * (dl / pl - 1):+.2f}% vs plain" if dl else "")
for i in range(1, rounds + 1):
    try:
        r = json.load(open(os.path.join(w, f"og-default{i}", "summary.json")))["ranks"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"   round {i}: no summary ({e})")
        continue
    o = r.get("overhead") or {}
    cov = (r.get("gpu") or {}).get("coverage") or {}
    print(f"   round {i}: budget measured {o.get('cupti_us_per_graph_launch')} us a replay "
          f"(measured {o.get('cupti_graph_cost_measured')}, {o.get('cupti_graph_launches')} in windows), "
          f"coverage {cov.get('share')} over {cov.get('windows')} windows, added_s {o.get('added_s')} "
          f"(share {o.get('share_of_wall')}), graphs {(r.get('graphs') or {}).get('launches')}, dropped {r.get('dropped')}")
