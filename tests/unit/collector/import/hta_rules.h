// HTA's definitions (HolisticTraceAnalysis, hta/analyzers/breakdown_analysis.py and
// communication_analysis.py), applied to what gpuwatch's interpret stage made of a trace,
// so that a test compares HTA's quantities with HTA's own output. gpuwatch's summary keeps
// its own definitions (launch_wait is not HTA's kernel_wait); these exist for the check.
//
// HTA's reading of a trace, reproduced: (1) on a trace whose times are not all whole µs it
// parses them as doubles and rounds each event inwards (ceil of ts, floor of ts + dur, in
// double arithmetic); (2) with two or more ProfilerSteps it keeps only device work whose
// launching call started before the last step began; (3) its temporal span also covers the
// GPU-side sync records.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "interpreted_rank.h"

namespace gwtest {

// A time in µs as HTA holds it.
struct HtaSpan {
  double ts, end;
  double runtime_ts;  // launching call's start; NAN when unknown
  uint32_t stream;
  bool kernel, comm;
};

// ns -> the double Python's float() gives for the trace's decimal µs text (correctly rounded).
inline double MicrosAsParsed(uint64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                static_cast<unsigned long long>(ns % 1000));
  return std::strtod(buf, nullptr);
}

inline HtaSpan HtaTimes(uint64_t start_ns, uint64_t end_ns, uint64_t api_ns, bool round) {
  HtaSpan s{};
  const double ts = MicrosAsParsed(start_ns);
  const double end = ts + MicrosAsParsed(end_ns - start_ns);
  s.ts = round ? std::ceil(ts) : ts;
  s.end = round ? std::floor(end) : end;
  s.runtime_ts = api_ns == 0 ? NAN : round ? std::ceil(MicrosAsParsed(api_ns)) : MicrosAsParsed(api_ns);
  return s;
}

// The rank's device work (and sync records) as HTA keeps them.
struct HtaView {
  std::vector<HtaSpan> work;   // kernels, copies, memsets in HTA's window
  std::vector<HtaSpan> syncs;  // GPU-side sync records in it
};

inline HtaView HtaViewOf(const InterpretedRank& r) {
  bool ns = false;
  for (const SeenWork& w : r.work) ns = ns || w.start_ns % 1000 || w.end_ns % 1000 || w.api_start_ns % 1000;
  // Launching calls before the last ProfilerStep's start (steps inferred without them do not count).
  uint64_t window_end = UINT64_MAX;
  if (r.hello().step_range() == "ProfilerStep" && r.steps.size() >= 2) window_end = r.steps.back().start_ns;
  HtaView v;
  for (const SeenWork& w : r.work) {
    if (w.api_start_ns >= window_end || (window_end != UINT64_MAX && w.api_start_ns == 0)) continue;
    HtaSpan s = HtaTimes(w.start_ns, w.end_ns, w.api_start_ns, ns);
    s.stream = w.stream;
    s.kernel = w.kernel;
    s.comm = w.comm;
    v.work.push_back(s);
  }
  // Sync records carry no launching call here: the window is applied to their own start.
  for (const SeenSync& y : r.syncs) {
    if (y.start_ns >= window_end) continue;
    HtaSpan s = HtaTimes(y.start_ns, y.end_ns, 0, ns);
    s.stream = y.stream;
    v.syncs.push_back(s);
  }
  return v;
}

// Length of the union of [ts, end) spans.
inline double UnionLength(std::vector<HtaSpan> spans) {
  std::sort(spans.begin(), spans.end(), [](const HtaSpan& a, const HtaSpan& b) { return a.ts < b.ts; });
  double total = 0, end = -1;
  bool open = false;
  for (const HtaSpan& s : spans) {
    if (!open || s.ts > end) {
      total += s.end - s.ts;
      end = s.end;
      open = true;
    } else if (s.end > end) {
      total += s.end - end;
      end = s.end;
    }
  }
  return total;
}

struct HtaIdle {
  double host_wait = 0, kernel_wait = 0, other = 0;
};

// get_idle_time_breakdown: per stream, gaps between consecutive ops (by start): host_wait
// when the op's launching call started after the previous op ended; else kernel_wait when
// the gap is under consecutive_kernel_delay (30, in the trace's µs); else other.
inline std::map<uint32_t, HtaIdle> HtaIdleByStream(const HtaView& v, double consecutive_kernel_delay = 30) {
  std::map<uint32_t, std::vector<HtaSpan>> by;
  for (const HtaSpan& s : v.work) by[s.stream].push_back(s);
  std::map<uint32_t, HtaIdle> out;
  for (auto& [stream, ops] : by) {
    std::stable_sort(ops.begin(), ops.end(), [](const HtaSpan& a, const HtaSpan& b) { return a.ts < b.ts; });
    HtaIdle& idle = out[stream];
    for (size_t i = 1; i < ops.size(); ++i) {
      const double prev_end = ops[i - 1].end, gap = ops[i].ts - prev_end;
      if (!std::isnan(ops[i].runtime_ts) && ops[i].runtime_ts > prev_end) idle.host_wait += gap;
      else if (gap < consecutive_kernel_delay) idle.kernel_wait += gap;
      else idle.other += gap;
    }
  }
  return out;
}

struct HtaTemporal {
  double idle = 0, compute = 0, non_compute = 0, span = 0;
};

// get_temporal_breakdown: span = first start to last end of everything with a stream (sync
// records included); idle = span - their union; compute = union of computation kernels
// (neither NCCL nor memory); non-compute = the rest.
inline HtaTemporal HtaTemporalOf(const HtaView& v) {
  std::vector<HtaSpan> all = v.work;
  all.insert(all.end(), v.syncs.begin(), v.syncs.end());
  std::vector<HtaSpan> compute;
  for (const HtaSpan& s : v.work)
    if (s.kernel && !s.comm) compute.push_back(s);
  HtaTemporal t;
  double lo = INFINITY, hi = -INFINITY;
  for (const HtaSpan& s : all) {
    lo = std::min(lo, s.ts);
    hi = std::max(hi, s.end);
  }
  t.span = hi - lo;
  t.idle = t.span - UnionLength(all);
  t.compute = UnionLength(compute);
  t.non_compute = t.span - t.compute - t.idle;
  return t;
}

// get_comm_comp_overlap: |union(NCCL kernels) ∩ union(compute kernels)| / |union(NCCL
// kernels)|, in percent (NAN without NCCL kernels).
inline double HtaCommCompOverlapPct(const HtaView& v) {
  std::vector<HtaSpan> comm, comp;
  for (const HtaSpan& s : v.work)
    if (s.kernel) (s.comm ? comm : comp).push_back(s);
  const double c = UnionLength(comm);
  if (c == 0) return NAN;
  // |A ∩ B| = |A| + |B| - |A ∪ B|
  std::vector<HtaSpan> both = comm;
  both.insert(both.end(), comp.begin(), comp.end());
  return 100 * (c + UnionLength(comp) - UnionLength(both)) / c;
}

}  // namespace gwtest
