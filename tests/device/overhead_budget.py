"""Issue 15's device check, read back: the launch loop's time plain / default / full / off /
plain again (launch_loop.py's JSON line in W/ob-<variant><round>.loop; a variant a round did
not run is skipped) and each preloaded run's own account of its cost
(W/ob-<variant><round>/summary.json). Each preloaded run is set against its round's plain
runs (their mean where both ran: they bracket it in time); the two plain runs against each
other (A/A) say what the machine resolves.
    python3 tests/device/overhead_budget.py W ROUNDS"""
import json
import os
import statistics
import sys

w, rounds = sys.argv[1], int(sys.argv[2])
variants = ["plain", "default", "full", "off", "plain2"]


def line(v, i):  # None: the run printed nothing (it failed)
    try:
        return next(json.loads(l) for l in open(os.path.join(w, f"ob-{v}{i}.loop")) if l.startswith("{"))
    except (OSError, ValueError, StopIteration):
        return None


def loops(v):
    return [(line(v, i) or {}).get("loop_s") for i in range(1, rounds + 1)]


def overhead(v, i):
    try:
        r = json.load(open(os.path.join(w, f"ob-{v}{i}", "summary.json")))["ranks"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None, None
    return r.get("overhead") or {}, r


loop = {v: loops(v) for v in variants}
# The plain time a preloaded run of round i is set against.
base = [(a + b) / 2 if a and b else (a or b) for a, b in zip(loop["plain"], loop["plain2"])]
aa = [100 * (b - a) / a for a, b in zip(loop["plain"], loop["plain2"]) if a and b]
if aa:
    print(f"A/A (plain again vs plain): median {statistics.median(aa):+.2f}%, rounds "
          f"{', '.join(f'{p:+.2f}%' for p in aa)}  [what this machine resolves]")
print("loop_s per round:", {v: [round(x, 3) if x else x for x in loop[v]] for v in variants})
print("launches/s per round:", {v: [round(l["launches_per_s"]) if l else None for l in
                                     (line(v, i) for i in range(1, rounds + 1))] for v in variants})
for v in ["default", "full", "off"]:
    d = [b - a for a, b in zip(base, loop[v]) if a and b]
    pct = [100 * (b - a) / a for a, b in zip(base, loop[v]) if a and b]
    if not d:
        print(f"{v}: no paired rounds")
        continue
    text = (f"{v} vs plain: median {1e3 * statistics.median(d):+.0f} ms ({statistics.median(pct):+.2f}%), "
            f"rounds {', '.join(f'{p:+.2f}%' for p in pct)}")
    if v == "default":
        text += "  [issue 15: within 2%]"
    print(text)
    for i in range(1, rounds + 1):
        if not loop[v][i - 1]:
            continue  # not run in this round
        o, r = overhead(v, i)
        if o is None:
            print(f"   round {i}: no summary")
            continue
        g = (r.get("gpu") or {})
        cov = g.get("coverage") or {}
        a, b = base[i - 1], loop[v][i - 1]
        measured = (b - a) if a and b else None
        added = o.get("added_s")
        ratio = f"{added / measured:.2f}" if measured and measured > 0 and added else "-"
        print(f"   round {i}: self-reported added_s {added} (share {o.get('share_of_wall')}, budget {o.get('budget')}, "
              f"mode {o.get('cupti_mode')}) vs measured {measured if measured is None else round(measured, 3)} s: ratio {ratio} | "
              f"hooks_s {o.get('hooks_s')} ({o.get('hook_ns_per_call')} ns/call, in place {o.get('hook_ns_timed_in_place')}), "
              f"cupti_s {o.get('cupti_s')} ({o.get('cupti_us_per_call')} us/call, measured {o.get('cupti_cost_measured')}), "
              f"startup_s {o.get('startup_s')}, sampler_s {o.get('sampler_s')}, sender_cpu_s {o.get('sender_cpu_s')} | "
              f"windows {o.get('windows')} coverage {cov.get('share')} detaches {o.get('cupti_detaches')} "
              f"({o.get('cupti_detach_s')} s) lingering {o.get('cupti_linger_calls')} calls x "
              f"{o.get('cupti_linger_us_per_call')} us (measured {o.get('cupti_linger_cost_measured')}) | gpu busy_s {g.get('busy_s')} "
              f"kernels {(g.get('kernels') or {}).get('count')} (tied to launches {(g.get('launch_delay') or {}).get('count')}) | "
              f"dropped {r.get('dropped')} | {g.get('source_detail')}")
